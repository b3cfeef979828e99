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

/** `aimd(options)`. */
export const AIMD_CHECKS: Checks = {
  name: "aimd",
  where: "aimd",
  label: (key) => `aimd: ${key}`,
  fields: { backoffRatio: { kind: { type: "number", min: 0.5, max: 1, exclusive: false } } },
};

/** `vegas(options)`. */
export const VEGAS_CHECKS: Checks = {
  name: "vegas",
  where: "vegas",
  label: (key) => `vegas: ${key}`,
  fields: {
    alpha: { kind: { type: "number", min: 0, max: 1e6 } },
    beta: { kind: { type: "number", min: 0, max: 1e6 } },
  },
};

/** `gradient2(options)`. */
export const GRADIENT2_CHECKS: Checks = {
  name: "gradient2",
  where: "gradient2",
  label: (key) => `gradient2: ${key}`,
  fields: {
    tolerance: { kind: { type: "number", min: 1, max: 100 } },
    smoothing: { kind: { type: "number", min: 0, max: 1, exclusive: true } },
    longWindow: { kind: { type: "integer", min: 1, max: 1e6 } },
  },
};
