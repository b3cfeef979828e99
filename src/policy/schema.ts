/**
 * The retry options, described once: `retry(operation, options)`, `wrap`, `steps.retry` and a rule of
 * `rules`. `fromConfig`, the command line and the docs' table are read off these descriptions; each spreads
 * the check of its option (`checks.ts`), which is all that the checks run when options are given read.
 */
import type { Field, Schema } from "../core/schema.js";
import { POLICY_CHECKS, SHORT_FORM_CHECKS, STEP_CHECKS, WHEN_CHECK } from "./checks.js";

/** What a policy (the top level or a rule) sets: how many retries, for how long, how far apart. */
const POLICY_FIELDS = {
  maxRetries: {
    ...POLICY_CHECKS.maxRetries,
    default: "3",
    doc: "Retries allowed: 0 for none, negative or Infinity for no limit.",
    brief: "retries allowed; negative = no limit",
    flag: "N",
    config: true,
  },
  maxElapsed: {
    ...POLICY_CHECKS.maxElapsed,
    ms: true,
    default: "no limit",
    doc: "Time since the first attempt began: a retry whose backoff would end later is refused. 0 for no retry, negative or Infinity for no limit.",
    brief: "total time allowed since the first attempt; negative = no limit",
    flag: "T",
    config: true,
  },
  maxElapsedCountsWait: {
    ...POLICY_CHECKS.maxElapsedCountsWait,
    default: "true",
    doc: "Whether maxElapsed counts the wait before the next attempt (true: a retry whose wait would end past it is refused, tenacity's stop_before_delay) or only the time gone (false: retrying stops once it has passed, tenacity's stop_after_delay, p-retry's maxRetryTime).",
    config: true,
  },
  backoff: {
    ...POLICY_CHECKS.backoff,
    default: "backoff.exponential({ base: 1000, max: 30000 })",
    doc: "How long to wait before retry x, before jitter.",
    config: true,
  },
  jitter: {
    ...POLICY_CHECKS.jitter,
    default: "jitter.full()",
    doc: "How the wait is randomized.",
    config: true,
  },
  scale: {
    ...POLICY_CHECKS.scale,
    default: "1",
    doc: "Multiplies every jittered delay.",
    brief: "multiplies every delay",
    flag: "F",
    config: true,
  },
  delayFrom: {
    ...POLICY_CHECKS.delayFrom,
    doc: "(errorOrValue, { attempt, retries, elapsed, delay, rule }) => ms | { exactly: ms } | undefined, Polly's delay generator: a number is the least wait (the server's hint, e.g. retryAfter(response)) with the policy's jittered delay on top; { exactly: ms } replaces the policy's delay for this retry; undefined keeps it. The wait counts against maxElapsed.",
  },
} as const satisfies Record<string, Field>;

/** A rule of `rules`: the errors it is for, and the policy it sets for them. */
export const RULE_SCHEMA: Schema = {
  name: "rule",
  takenBy: "a rule of `rules`",
  where: "rules[i]",
  label: (key) => key,
  fields: {
    when: {
      ...WHEN_CHECK,
      doc: "The errors this rule is for: an error class, a name or code, a list of those, or a predicate (which may answer with a promise: it is waited for, and a throw or rejection ends the call with that error).",
      config: true,
    },
    ...POLICY_FIELDS,
    maxRetries: { ...POLICY_FIELDS.maxRetries, default: "the top level's" },
    maxElapsed: { ...POLICY_FIELDS.maxElapsed, default: "the top level's" },
    maxElapsedCountsWait: { ...POLICY_FIELDS.maxElapsedCountsWait, default: "the top level's" },
    backoff: { ...POLICY_FIELDS.backoff, default: "the top level's" },
    jitter: { ...POLICY_FIELDS.jitter, default: "the top level's" },
    scale: { ...POLICY_FIELDS.scale, default: "the top level's" },
    delayFrom: { ...POLICY_FIELDS.delayFrom, default: "the top level's" },
  },
};

const STEP_FIELDS = {
  ...POLICY_FIELDS,
  retryOn: {
    ...STEP_CHECKS.retryOn,
    default: "every error",
    doc: 'Which errors the top-level policy retries: an error class, a name or code ("ECONNRESET"), a list of those, or a predicate, which may answer with a promise (it is waited for; a throw or rejection ends the call with that error). A PermanentError and the caller\'s abort are never retried.',
    brief: "error names or codes to retry, e.g. ECONNRESET,TimeoutError",
    flag: "NAMES",
    config: true,
  },
  retryOnResult: {
    ...STEP_CHECKS.retryOnResult,
    doc: "(value) => boolean, or a promise of one (waited for): true retries a value that came back; a throw or rejection is that attempt's error, retried as any other.",
  },
  shouldConsumeRetry: {
    ...STEP_CHECKS.shouldConsumeRetry,
    default: "every retry counts",
    doc: "(error) => boolean, or a promise of one: false makes this retry free: maxRetries does not count it and the backoff does not advance. maxElapsed and a budget still count it; at most 100 retries of a call (MAX_FREE_RETRIES) are free. A throw or rejection ends the call with that error.",
  },
  delayFirstAttempt: {
    ...STEP_CHECKS.delayFirstAttempt,
    default: "false",
    doc: "Wait before the first attempt too: the top-level policy's first delay, after which the retries go on from the second (as exponential-backoff's delayFirstAttempt). The wait is no retry: maxRetries, retries, elapsed and maxElapsed count from the first attempt.",
    config: true,
  },
  rules: {
    ...STEP_CHECKS.rules,
    doc: "Policies for specific errors, tried in order; what a rule leaves out is the top level's.",
    config: true,
  },
  onAttempt: {
    ...STEP_CHECKS.onAttempt,
    doc: "(event) => void before each attempt, the first too (tenacity's before), with attempt, retries, retriesLeft and elapsed.",
  },
  onSuccess: {
    ...STEP_CHECKS.onSuccess,
    doc: "(value, stats) => void, once, when an attempt succeeds; stats: attempts, elapsed and idle (ms slept in backoffs).",
  },
  onError: { ...STEP_CHECKS.onError, doc: "(error, retries) => void, after every failed attempt." },
  onRetry: {
    ...STEP_CHECKS.onRetry,
    doc: "(event) => void before each wait, with error, retries, delay, attempt, elapsed and rule.",
  },
  onGiveUp: {
    ...STEP_CHECKS.onGiveUp,
    doc: "(event) => void once when retrying stops, with reason (retries, elapsed, not-retryable, permanent, budget, aborted, breaker), outcome, isValue, attempts, elapsed and idle.",
  },
  onCallbackError: {
    ...STEP_CHECKS.onCallbackError,
    default: "one warning line",
    doc: "(error, callbackName) => void, for a callback or event listener that throws or rejects.",
  },
  budget: {
    ...STEP_CHECKS.budget,
    default: "the target's default budget",
    doc: "A shared retry budget: a retry it refuses ends the call with the last error. Default: the target's own (each wrapped function, retry step and robustFetch origin, and one for the process's retry calls, per clock): retries at most 20% of the calls of the last 10 s, plus 10 a second. false: none.",
  },
} as const satisfies Record<string, Field>;

/** `steps.retry(options)`: the retry step's own options. */
export const RETRY_STEP_SCHEMA: Schema = {
  name: "retry step",
  takenBy: "`steps.retry(options)`",
  where: "options",
  label: (key) => key,
  fields: STEP_FIELDS,
};

/** `retry(operation, options)` and `wrap(operation, options)`: the retry step's options and the guards it builds. */
export const RETRY_SCHEMA: Schema = {
  name: "retry",
  takenBy: "`retry(operation, options)` and `wrap(operation, options)`",
  where: "options",
  label: (key) => key,
  fields: {
    timeout: {
      ...SHORT_FORM_CHECKS.timeout,
      ms: true,
      default: "none",
      brief: "per-attempt timeout; negative = none",
      doc: "Per-attempt timeout: when it elapses the attempt's signal aborts and the attempt fails with a TimeoutError, even if the operation ignores the signal. Negative or Infinity for none; 0 (or -0) times out every attempt that has not answered by the next turn of the event loop (one that answers at once, or with a promise already settled, gets through). A timeout longer than a timer can hold (2^31 − 1 ms) is kept in full.",
      flag: "T",
      config: true,
    },
    ...STEP_FIELDS,
    unref: {
      ...SHORT_FORM_CHECKS.unref,
      default: "false",
      doc: "The real clock's timers (backoff sleeps, timeouts) do not keep the process alive, so a program with nothing else to do exits during a wait (p-retry's unref). No effect with a clock of your own.",
    },
    signal: {
      ...SHORT_FORM_CHECKS.signal,
      doc: "The caller's signal: aborting it stops at once, even in a wait, rejecting with signal.reason.",
    },
    clock: {
      ...SHORT_FORM_CHECKS.clock,
      default: "the real clock",
      doc: "Where time is read and timers are set, e.g. a VirtualClock.",
    },
    random: {
      ...SHORT_FORM_CHECKS.random,
      default: "Math.random",
      doc: "The draws in [0, 1) behind jitter and random backoffs, e.g. seededRandom(n).",
    },
    breaker: {
      ...SHORT_FORM_CHECKS.breaker,
      doc: "A shared circuit breaker each attempt passes: while open, the call fails at once with BrokenCircuitError.",
    },
    hedge: {
      ...SHORT_FORM_CHECKS.hedge,
      doc: "Each attempt is hedged by this step; the attempt's timeout and the caller's signal end all its hedges.",
    },
    chaos: {
      ...SHORT_FORM_CHECKS.chaos,
      doc: "Faults, latency or results injected into each attempt by this step, e.g. in tests.",
    },
  },
};
