/** `adaptiveLimit(options)` and `steps.adaptiveLimit(options)`, described once (see `src/core/schema.ts`). */
import type { Schema } from "../core/schema.js";
import { MAX_LIMIT } from "./checks.js";

export const LIMIT_SCHEMA: Schema = {
  name: "adaptive limit",
  takenBy: "`adaptiveLimit(options)` and `steps.adaptiveLimit(options)`",
  where: "adaptiveLimit",
  label: (key) => `adaptiveLimit: ${key}`,
  fields: {
    algorithm: {
      kind: { type: "other", allowed: '"aimd", "vegas", "gradient2", or an algorithm' },
      default: '"gradient2"',
      doc: "How the limit moves with each finished call's latency and drops: AIMD (+1 per call, × 0.9 per drop), Vegas (grows while the estimated queue is short), Gradient2 (scales by long-term / latest latency, plus √limit), or an object { name, update(limit, sample) }.",
    },
    min: {
      kind: { type: "integer", min: 1, max: MAX_LIMIT },
      default: "1",
      doc: "The least limit.",
    },
    max: {
      kind: { type: "integer", min: 1, max: MAX_LIMIT },
      default: "1000",
      doc: "The greatest limit, at least min.",
    },
    initial: {
      kind: { type: "integer", min: 1, max: MAX_LIMIT },
      default: "20, within [min, max]",
      doc: "The limit to start from, in [min, max].",
    },
    queue: {
      kind: { type: "integer", min: 0, max: 1e9 },
      default: "0",
      doc: "Calls that may wait for a place, first come first served; one whose signal aborts leaves the queue. The rest are refused at once with ConcurrencyLimitError.",
    },
    isDrop: {
      kind: { type: "function" },
      default: "a TimeoutError",
      doc: "(error) => boolean: whether a failed call was dropped (congestion), which shrinks the limit. Other errors leave it as it is.",
    },
    clock: {
      kind: { type: "other", allowed: "a Clock (now() and setTimer())" },
      default: "the real clock",
      doc: "Times the calls; a VirtualClock in tests.",
    },
    onCallbackError: {
      kind: { type: "function" },
      default: "one warning line",
      doc: "Receives what an event listener, isDrop or a custom algorithm threw.",
    },
  },
};
