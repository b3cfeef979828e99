/**
 * What `rateLimiter(options)`'s options take, checked when they are given. Their descriptions (docs,
 * `--help`) are in `schema.ts`; a test holds the two to the same options and kinds.
 */
import type { Checks } from "../core/schema.js";
import { SHARING_CHECKS } from "../store/checks.js";

/** The most calls a rate, a burst or a queue may count (1e9). */
export const MAX_RATE = 1_000_000_000;
/** The longest period or wait, ms (2^31 − 1, about 24.8 days: what a timer can wait). */
export const MAX_PERIOD = 2_147_483_647;

export const RATE_LIMITER_CHECKS: Checks = {
  name: "rate limiter",
  where: "rateLimiter",
  label: (key) => `rateLimiter: ${key}`,
  fields: {
    kind: { kind: { type: "enum", values: ["token-bucket", "sliding-window"] } },
    rate: { kind: { type: "number", min: 0, max: MAX_RATE, exclusive: true }, required: true },
    per: { kind: { type: "number", min: 1, max: MAX_PERIOD } },
    burst: { kind: { type: "integer", min: 1, max: MAX_RATE } },
    queue: { kind: { type: "integer", min: 0, max: MAX_RATE } },
    maxWait: { kind: { type: "number", min: 0, max: MAX_PERIOD } },
    clock: { kind: { type: "other", allowed: "a Clock (now() and setTimer())" } },
    onCallbackError: { kind: { type: "function" } },
    ...SHARING_CHECKS,
  },
};
