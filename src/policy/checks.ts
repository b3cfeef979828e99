/**
 * What the retry options take, checked when they are given: `retry(operation, options)`, `wrap`,
 * `steps.retry` and a rule of `rules`. Their descriptions (docs, `--help`, the JSON form) are in
 * `schema.ts`, which spreads these checks into each field, so that a check is written once and the texts
 * reach only the bundles that print them.
 */
import type { Check, Checks } from "../core/schema.js";

const fn = { kind: { type: "function" } } as const;
const yesNo = { kind: { type: "boolean" } } as const;
/** An option checked by the code that takes it; `allowed` is what the docs and its error say it takes. */
const other = <A extends string>(allowed: A) => ({ kind: { type: "other", allowed } }) as const;
const limit = <I extends boolean>(integer: I) => ({ kind: { type: "limit", integer } }) as const;
/** How a bad value is labelled in an error: by its own name. */
const own = (key: string) => key;

/** What a policy (the top level or a rule) sets: how many retries, for how long, how far apart. */
export const POLICY_CHECKS = {
  maxRetries: limit(true),
  maxElapsed: limit(false),
  maxElapsedCountsWait: yesNo,
  backoff: other("a backoff (from backoff.*), an object with delay(retries, random), or a function"),
  jitter: other("a jitter (from jitter.*), an object with apply(…), or a function"),
  scale: { kind: { type: "number", min: 0, exclusive: true } },
  delayFrom: fn,
} as const satisfies Record<string, Check>;

/** What a rule's `when` takes. */
export const WHEN_CHECK = other("an ErrorMatcher (required)") satisfies Check;

/** A rule of `rules`: the errors it is for, and the policy it sets for them. */
export const RULE_CHECKS: Checks = {
  name: "rule",
  where: "rules[i]",
  label: own,
  fields: { when: WHEN_CHECK, ...POLICY_CHECKS },
};

/** The retry step's own options, beside its policy. */
export const STEP_CHECKS = {
  ...POLICY_CHECKS,
  retryOn: other("an ErrorMatcher"),
  retryOnResult: fn,
  shouldConsumeRetry: fn,
  delayFirstAttempt: yesNo,
  rules: other("an array of { when, …policy } rules"),
  onAttempt: fn,
  onSuccess: fn,
  onError: fn,
  onRetry: fn,
  onGiveUp: fn,
  onCallbackError: fn,
  budget: other("a retry budget (from retryBudget()), or false for none"),
} as const satisfies Record<string, Check>;

/** `steps.retry(options)`. */
export const RETRY_STEP_CHECKS: Checks = {
  name: "retry step",
  where: "options",
  label: own,
  fields: STEP_CHECKS,
};

/** What `retry` and `wrap` take beside the retry step's options: the guards it builds, and the execution's. */
export const SHORT_FORM_CHECKS = {
  timeout: limit(false),
  unref: yesNo,
  signal: other("an AbortSignal"),
  clock: other("a Clock with now() and setTimer(ms, callback) methods"),
  random: fn,
  breaker: other("a circuit breaker (from circuitBreaker())"),
  hedge: other("a hedge step (steps.hedge({ delay }))"),
  chaos: other("a chaos step (steps.chaos({ fault: { rate, error } }))"),
} as const satisfies Record<string, Check>;

const { timeout, ...guards } = SHORT_FORM_CHECKS;

/**
 * `retry(operation, options)` and `wrap(operation, options)`, in the order the docs list them: the
 * timeout, the retry step's options, then the other guards and the execution's.
 */
export const RETRY_CHECKS: Checks = {
  name: "retry",
  where: "options",
  label: own,
  fields: { timeout, ...STEP_CHECKS, ...guards },
};
