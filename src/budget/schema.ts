/** `retryBudget(options)`, its two kinds described once each (see `src/core/schema.ts`). */
import { MAX_TIMER_DELAY } from "../core/clock.js";
import type { Schema } from "../core/schema.js";
import { SHARING_FIELDS } from "../store/schema.js";

const clock = {
  kind: { type: "other", allowed: "a Clock with now() and setTimer(ms, callback)" },
  default: "the real clock",
  doc: "Where time is read (and, with a store, the exchanges are timed).",
} as const;

/** The ratio kind (Finagle's RetryBudget): retries at most ratio × requests + a floor, over a window. */
export const RATIO_BUDGET_SCHEMA: Schema = {
  name: "ratio budget",
  takenBy: "`retryBudget({ ratio, minPerSecond, window })`",
  where: "retryBudget",
  label: (key) => `retryBudget: ${key}`,
  fields: {
    ratio: {
      kind: { type: "number", min: 0, max: 1000 },
      default: "0.2",
      doc: "Retries allowed per request.",
    },
    minPerSecond: {
      kind: { type: "number", min: 0 },
      default: "10",
      doc: "Retries allowed per second whatever the traffic.",
    },
    window: {
      kind: { type: "number", min: 1, max: MAX_TIMER_DELAY },
      ms: true,
      default: "10000",
      doc: "The sliding window requests and retries are counted over, kept as 10 buckets; at most 2^31 − 1 ms (about 24.8 days, the longest timer).",
    },
    clock,
    ...SHARING_FIELDS,
  },
};

/** The token kind (gRPC's retry throttling): a bucket that failures drain and successes refill. */
export const TOKEN_BUDGET_SCHEMA: Schema = {
  name: "token budget",
  takenBy: "`retryBudget({ maxTokens, tokenRatio })`",
  where: "retryBudget",
  label: (key) => `retryBudget: ${key}`,
  fields: {
    maxTokens: {
      kind: { type: "number", min: 0, exclusive: true },
      default: "none (required)",
      doc: "The bucket; it starts full. Each failed attempt takes 1; retries stop below half of it.",
    },
    tokenRatio: {
      kind: { type: "number", min: 0, exclusive: true },
      default: "none (required)",
      doc: "Given back per success.",
    },
    clock,
    ...SHARING_FIELDS,
  },
};
