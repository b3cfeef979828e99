/**
 * What `adaptiveLimit(options)`'s options take, checked when they are given. Their descriptions (docs,
 * `--help`) are in `schema.ts`; a test holds the two to the same options and kinds.
 */
import type { Checks } from "../core/schema.js";

/** The greatest limit (1e6). */
export const MAX_LIMIT = 1_000_000;

export const LIMIT_CHECKS: Checks = {
  name: "adaptive limit",
  where: "adaptiveLimit",
  label: (key) => `adaptiveLimit: ${key}`,
  fields: {
    algorithm: { kind: { type: "other", allowed: '"aimd", "vegas", "gradient2", or an algorithm' } },
    min: { kind: { type: "integer", min: 1, max: MAX_LIMIT } },
    max: { kind: { type: "integer", min: 1, max: MAX_LIMIT } },
    initial: { kind: { type: "integer", min: 1, max: MAX_LIMIT } },
    queue: { kind: { type: "integer", min: 0, max: 1_000_000_000 } },
    isDrop: { kind: { type: "function" } },
    clock: { kind: { type: "other", allowed: "a Clock (now() and setTimer())" } },
    onCallbackError: { kind: { type: "function" } },
  },
};
