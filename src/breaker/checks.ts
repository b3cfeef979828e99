/**
 * What `circuitBreaker(options)`'s options take, checked when they are given. Their descriptions (docs, `--help`) are in
 * `schema.ts`; a test holds the two to the same options and kinds, so that the texts reach only the
 * bundles that print them.
 */
import { MAX_TIMER_DELAY } from "../core/clock.js";
import type { Checks } from "../core/schema.js";
import { SHARING_CHECKS } from "../store/checks.js";

export const BREAKER_CHECKS: Checks = {
  name: "breaker",
  where: "circuitBreaker",
  label: (key) => `circuitBreaker: ${key}`,
  fields: {
    consecutiveFailures: { kind: { type: "integer", min: 1 } },
    failureRatio: { kind: { type: "number", min: 0, max: 1, exclusive: true } },
    minimumThroughput: { kind: { type: "integer", min: 1 } },
    window: { kind: { type: "number", min: 1, max: MAX_TIMER_DELAY } },
    windowCalls: { kind: { type: "integer", min: 1, max: 100000 } },
    openFor: {
      kind: {
        type: "other",
        allowed: "a backoff (from backoff.*), an object with delay(retries, random), or a function",
      },
    },
    halfOpenSuccesses: { kind: { type: "integer", min: 1 } },
    halfOpenProbes: { kind: { type: "integer", min: 1 } },
    handles: { kind: { type: "other", allowed: "an ErrorMatcher" } },
    onCallbackError: { kind: { type: "function" } },
    clock: { kind: { type: "other", allowed: "a Clock" } },
    random: { kind: { type: "function" } },
    ...SHARING_CHECKS,
  },
};
