/** `rateLimiter(options)` and `steps.rateLimit(options)`, described once (see `src/core/schema.ts`). */
import type { Schema } from "../core/schema.js";
import { SHARING_FIELDS } from "../store/schema.js";
import { MAX_PERIOD, MAX_RATE } from "./checks.js";

export const RATE_LIMITER_SCHEMA: Schema = {
  name: "rate limiter",
  takenBy: "`rateLimiter(options)` and `steps.rateLimit(options)`",
  where: "rateLimiter",
  label: (key) => `rateLimiter: ${key}`,
  fields: {
    kind: {
      kind: { type: "enum", values: ["token-bucket", "sliding-window"] },
      default: '"token-bucket"',
      doc: "token-bucket: burst calls at once after a quiet spell, then rate per per ms on average. sliding-window: at most rate calls start in any per ms, an exact log of the last rate starts (rate a whole number up to 100000; no burst; not shared through a store).",
    },
    rate: {
      kind: { type: "number", min: 0, max: MAX_RATE, exclusive: true },
      required: true,
      doc: "Calls allowed per `per` ms, on average (a token bucket's refill rate); fractions allowed (0.5 per 1000 ms: one call every 2 s).",
    },
    per: {
      kind: { type: "number", min: 1, max: MAX_PERIOD },
      default: "1000",
      ms: true,
      doc: "The period `rate` counts over, ms.",
    },
    burst: {
      kind: { type: "integer", min: 1, max: MAX_RATE },
      default: "rate, rounded up",
      doc: "Calls allowed at once after a quiet spell (the bucket's size); it starts full.",
    },
    queue: {
      kind: { type: "integer", min: 0, max: MAX_RATE },
      default: "0",
      doc: "Calls that may wait for their turn, first come first served; one whose signal aborts leaves the queue. The rest are refused at once with RateLimitedError, whose retryAfter says when to come back.",
    },
    maxWait: {
      kind: { type: "number", min: 0, max: MAX_PERIOD },
      default: "2147483647 (no other limit than the queue's)",
      ms: true,
      doc: "The longest a call may wait in the queue, ms: a call whose turn would come later is refused at once.",
    },
    clock: {
      kind: { type: "other", allowed: "a Clock (now() and setTimer())" },
      default: "the real clock",
      doc: "Where the tokens' time comes from, and the queue's timer; a VirtualClock in tests.",
    },
    onCallbackError: {
      kind: { type: "function" },
      default: "one warning line",
      doc: "Receives what an event listener threw or rejected with.",
    },
    ...SHARING_FIELDS,
  },
};
