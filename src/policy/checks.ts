/**
 * What the retry options take, checked when they are given: `retry(operation, options)`, `wrap`,
 * `steps.retry` and a rule of `rules`. Their descriptions (docs, `--help`, the JSON form) are in
 * `schema.ts`, which spreads these checks into each field, so that a check is written once and the texts
 * reach only the bundles that print them.
 */
import type { Check, Checks } from "../core/schema.js";

const fn = { kind: { type: "function" } } as const;
const yesNo = { kind: { type: "boolean" } } as const;

/** What a policy (the top level or a rule) sets: how many retries, for how long, how far apart. */
export const POLICY_CHECKS = {
  maxRetries: { kind: { type: "limit", integer: true } },
  maxElapsed: { kind: { type: "limit", integer: false } },
  maxElapsedCountsWait: yesNo,
  backoff: {
    kind: {
      type: "other",
      allowed: "a backoff (from backoff.*), an object with delay(retries, random), or a function",
    },
  },
  jitter: {
    kind: { type: "other", allowed: "a jitter (from jitter.*), an object with apply(…), or a function" },
  },
  scale: { kind: { type: "number", min: 0, exclusive: true } },
  delayFrom: fn,
} as const satisfies Record<string, Check>;

/** What a rule's `when` takes. */
export const WHEN_CHECK = {
  kind: { type: "other", allowed: "an ErrorMatcher (required)" },
} as const satisfies Check;

/** A rule of `rules`: the errors it is for, and the policy it sets for them. */
export const RULE_CHECKS: Checks = {
  name: "rule",
  where: "rules[i]",
  label: (key) => key,
  fields: { when: WHEN_CHECK, ...POLICY_CHECKS },
};

/** The retry step's own options, beside its policy. */
export const STEP_CHECKS = {
  ...POLICY_CHECKS,
  retryOn: { kind: { type: "other", allowed: "an ErrorMatcher" } },
  retryOnResult: fn,
  shouldConsumeRetry: fn,
  delayFirstAttempt: yesNo,
  rules: { kind: { type: "other", allowed: "an array of { when, …policy } rules" } },
  onAttempt: fn,
  onSuccess: fn,
  onError: fn,
  onRetry: fn,
  onGiveUp: fn,
  onCallbackError: fn,
  budget: { kind: { type: "other", allowed: "a retry budget (from retryBudget())" } },
} as const satisfies Record<string, Check>;

/** `steps.retry(options)`. */
export const RETRY_STEP_CHECKS: Checks = {
  name: "retry step",
  where: "options",
  label: (key) => key,
  fields: STEP_CHECKS,
};

/** What `retry` and `wrap` take beside the retry step's options: the guards it builds, and the execution's. */
export const SHORT_FORM_CHECKS = {
  timeout: { kind: { type: "limit", integer: false } },
  unref: yesNo,
  signal: { kind: { type: "other", allowed: "an AbortSignal" } },
  clock: { kind: { type: "other", allowed: "a Clock with now() and setTimer(ms, callback) methods" } },
  random: fn,
  breaker: { kind: { type: "other", allowed: "a circuit breaker (from circuitBreaker())" } },
  hedge: { kind: { type: "other", allowed: "a hedge step (steps.hedge({ delay }))" } },
  chaos: { kind: { type: "other", allowed: "a chaos step (steps.chaos({ fault: { rate, error } }))" } },
} as const satisfies Record<string, Check>;

/** `retry(operation, options)` and `wrap(operation, options)`, in the order the docs list them. */
export const RETRY_CHECKS: Checks = {
  name: "retry",
  where: "options",
  label: (key) => key,
  fields: {
    timeout: SHORT_FORM_CHECKS.timeout,
    ...STEP_CHECKS,
    unref: SHORT_FORM_CHECKS.unref,
    signal: SHORT_FORM_CHECKS.signal,
    clock: SHORT_FORM_CHECKS.clock,
    random: SHORT_FORM_CHECKS.random,
    breaker: SHORT_FORM_CHECKS.breaker,
    hedge: SHORT_FORM_CHECKS.hedge,
    chaos: SHORT_FORM_CHECKS.chaos,
  },
};
