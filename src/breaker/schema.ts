/** `circuitBreaker(options)`, described once (see `src/core/schema.ts`). */
import { MAX_TIMER_DELAY } from "../core/clock.js";
import type { Schema } from "../core/schema.js";
import { SHARING_FIELDS } from "../store/schema.js";

export const BREAKER_SCHEMA: Schema = {
  name: "breaker",
  takenBy: "`circuitBreaker(options)`",
  where: "circuitBreaker",
  label: (key) => `circuitBreaker: ${key}`,
  fields: {
    consecutiveFailures: {
      kind: { type: "integer", min: 1 },
      default: "5 (unless failureRatio is given)",
      doc: "Open after this many failures in a row.",
    },
    failureRatio: {
      kind: { type: "number", min: 0, max: 1, exclusive: true },
      doc: "Open when the failures over window reach this share of the calls.",
    },
    minimumThroughput: {
      kind: { type: "integer", min: 1 },
      default: "10 (with windowCalls, at most windowCalls)",
      doc: "With failureRatio: the calls the window must hold before it may open.",
    },
    window: {
      kind: { type: "number", min: 1, max: MAX_TIMER_DELAY },
      ms: true,
      default: "10000",
      doc: "With failureRatio: the sliding window, kept as 10 buckets; at most 2^31 − 1 ms (about 24.8 days, the longest timer).",
    },
    windowCalls: {
      kind: { type: "integer", min: 1, max: 100_000 },
      doc: "With failureRatio, in place of window: the sliding window as the last this many calls, whenever they came (a count-based window); minimumThroughput is then at most this, by default the smaller of 10 and this.",
    },
    openFor: {
      kind: {
        type: "other",
        allowed: "a backoff (from backoff.*), an object with delay(retries, random), or a function",
      },
      default: "backoff.constant({ base: 5000 })",
      doc: "How long it stays open: a backoff of x = times opened in a row.",
    },
    halfOpenSuccesses: {
      kind: { type: "integer", min: 1 },
      default: "1",
      doc: "Successful probes that close it from half-open.",
    },
    halfOpenProbes: {
      kind: { type: "integer", min: 1 },
      default: "1",
      doc: "Probes let through at once while half-open.",
    },
    handles: {
      kind: { type: "other", allowed: "an ErrorMatcher" },
      default: "every error but PermanentError and the caller's abort",
      doc: "Which failures count against the service; an error it does not match leaves the breaker as it was. A predicate may answer with a promise (awaited before the call settles); one that throws or rejects goes to onCallbackError and the failure counts as without handles.",
    },
    onCallbackError: {
      kind: { type: "function" },
      default: "one warning line",
      doc: "Receives what handles or a listener threw or rejected with.",
    },
    clock: {
      kind: { type: "other", allowed: "a Clock" },
      default: "the real clock",
      doc: "Where time is read.",
    },
    random: { kind: { type: "function" }, default: "Math.random", doc: "For a random openFor backoff." },
    ...SHARING_FIELDS,
  },
};
