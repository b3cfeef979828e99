/** `new ResponsiveBackoff(options)`, described once (see `src/core/schema.ts`). */
import type { Schema } from "../core/schema.js";
import { SHARING_FIELDS } from "../store/schema.js";

export const RESPONSIVE_SCHEMA: Schema = {
  name: "responsive",
  takenBy: "`new ResponsiveBackoff(options)`",
  where: "ResponsiveBackoff",
  label: (key) => `ResponsiveBackoff: ${key}`,
  fields: {
    base: {
      kind: { type: "number", min: 0, exclusive: true },
      ms: true,
      default: "500",
      doc: "The delay after the first failure; a shrinking delay below it drops to 0.",
    },
    max: {
      kind: { type: "number", min: 0 },
      ms: true,
      default: "900000 (15 min)",
      doc: "The largest delay.",
    },
    spread: {
      kind: { type: "number", min: 0, max: 1 },
      default: "0.3",
      doc: "Each new delay i is uniform in [i − δ, i + δ], δ = min(spread × i, maxSpread).",
    },
    maxSpread: {
      kind: { type: "number", min: 0 },
      ms: true,
      default: "120000 (2 min)",
      doc: "The cap on δ.",
    },
    upMultiplier: {
      kind: { type: "number", min: 1 },
      default: "1.5",
      doc: "Multiplies the delay on a failure.",
    },
    downMultiplier: {
      kind: { type: "number", min: 0, max: 1, exclusive: true },
      default: "0.9",
      doc: "Multiplies the delay after downThreshold successes.",
    },
    downThreshold: {
      kind: { type: "integer", min: 1 },
      default: "10",
      doc: "Successes in a row that shrink the delay once.",
    },
    coalesce: {
      kind: { type: "boolean" },
      default: "false",
      doc: "Count a burst of failures as one: a failure less than the current delay after the last increase waits the delay but does not raise it.",
    },
    clock: {
      kind: { type: "other", allowed: "a Clock" },
      default: "the real clock",
      doc: "Where the sleeps wait and, with coalesce, what tells the time.",
    },
    random: { kind: { type: "function" }, default: "Math.random", doc: "The randomization's source." },
    ...SHARING_FIELDS,
  },
};
