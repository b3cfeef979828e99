/**
 * What `new ResponsiveBackoff(options)`'s options take, checked when they are given. Their descriptions (docs, `--help`) are in
 * `schema.ts`; a test holds the two to the same options and kinds, so that the texts reach only the
 * bundles that print them.
 */
import type { Checks } from "../core/schema.js";
import { SHARING_CHECKS } from "../store/checks.js";

export const RESPONSIVE_CHECKS: Checks = {
  name: "responsive",
  where: "ResponsiveBackoff",
  label: (key) => `ResponsiveBackoff: ${key}`,
  fields: {
    base: { kind: { type: "number", min: 0, exclusive: true } },
    max: { kind: { type: "number", min: 0 } },
    spread: { kind: { type: "number", min: 0, max: 1 } },
    maxSpread: { kind: { type: "number", min: 0 } },
    upMultiplier: { kind: { type: "number", min: 1 } },
    downMultiplier: { kind: { type: "number", min: 0, max: 1, exclusive: true } },
    downThreshold: { kind: { type: "integer", min: 1 } },
    coalesce: { kind: { type: "boolean" } },
    clock: { kind: { type: "other", allowed: "a Clock" } },
    random: { kind: { type: "function" } },
    ...SHARING_CHECKS,
  },
};
