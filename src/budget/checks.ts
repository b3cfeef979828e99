/**
 * What `retryBudget(options)`'s options (the ratio and the token forms) take, checked when they are given. Their descriptions (docs, `--help`) are in
 * `schema.ts`; a test holds the two to the same options and kinds, so that the texts reach only the
 * bundles that print them.
 */
import { MAX_TIMER_DELAY } from "../core/clock.js";
import type { Checks } from "../core/schema.js";
import { SHARING_CHECKS } from "../store/checks.js";

export const RATIO_BUDGET_CHECKS: Checks = {
  name: "ratio budget",
  where: "retryBudget",
  label: (key) => `retryBudget: ${key}`,
  fields: {
    ratio: { kind: { type: "number", min: 0, max: 1000 } },
    minPerSecond: { kind: { type: "number", min: 0 } },
    window: { kind: { type: "number", min: 1, max: MAX_TIMER_DELAY } },
    clock: { kind: { type: "other", allowed: "a Clock with now() and setTimer(ms, callback)" } },
    ...SHARING_CHECKS,
  },
};

export const TOKEN_BUDGET_CHECKS: Checks = {
  name: "token budget",
  where: "retryBudget",
  label: (key) => `retryBudget: ${key}`,
  fields: {
    maxTokens: { kind: { type: "number", min: 0, exclusive: true } },
    tokenRatio: { kind: { type: "number", min: 0, exclusive: true } },
    clock: { kind: { type: "other", allowed: "a Clock with now() and setTimer(ms, callback)" } },
    ...SHARING_CHECKS,
  },
};
