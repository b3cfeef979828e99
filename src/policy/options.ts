/**
 * The retry options: their types, their defaults, and their validation (once, up front, loudly).
 */

import { toBackoff } from "../backoff/common.js";
import { exponential } from "../backoff/exponential.js";
import type { Backoff, BackoffLike } from "../backoff/types.js";
import type { CircuitBreaker } from "../breaker/circuit-breaker.js";
import type { RetryBudget } from "../budget/retry-budget.js";
import type { ChaosStep } from "../chaos/chaos.js";
import { type Clock, systemClock, unrefClock } from "../core/clock.js";
import { OptionError } from "../core/errors.js";
import { warnOnce } from "../core/events.js";
import { checkedRandom, type Random, systemRandom } from "../core/random.js";
import type { RetryStats } from "../core/report.js";
import { keysOf, read } from "../core/schema.js";
import { knownKeys } from "../core/validate.js";
import type { HedgeStep } from "../hedge/hedge.js";
import { toJitter } from "../jitter/common.js";
import { full } from "../jitter/full.js";
import type { Jitter, JitterLike } from "../jitter/types.js";
import type { ExecutionContext } from "../pipeline/context.js";
import { SHORT_FORM_STEP, STEP_KIND, type Step } from "../pipeline/step.js";
import { RETRY_CHECKS, RETRY_STEP_CHECKS, RULE_CHECKS, SHORT_FORM_CHECKS } from "./checks.js";
import type { AttemptEvent, GiveUpEvent } from "./events.js";
import { compileRetryMatcher, type MatchAnswer, type RetryMatcher } from "./matcher.js";

/**
 * What the operation receives on each attempt: the execution context (signal, attempt, retries, elapsed,
 * timeout, clock, random).
 */
export type AttemptContext = ExecutionContext;

/** What `onRetry` receives, before the backoff sleep. */
export interface RetryEvent {
  /** The error of the attempt that failed. */
  readonly error: unknown;
  /** Retries so far, not counting the one about to happen. */
  readonly retries: number;
  /** The final delay (backoff → jitter → scale) about to be slept, in ms. */
  readonly delay: number;
  /** The attempt that failed, 1-based. */
  readonly attempt: number;
  /** Milliseconds since the first attempt began. */
  readonly elapsed: number;
  /** The index of the rule in `rules` that allowed the retry, or -1 for the top-level policy. */
  readonly rule: number;
}

/** The settings a rule may override; any it leaves out come from the top level. */
export interface RetryPolicy {
  /** Retries allowed: 0 = none, negative or Infinity = no limit. Default 3. */
  maxRetries?: number;
  /** Total time allowed since the first attempt, in ms: 0 = no retry, negative or Infinity = no limit. Default: no limit. */
  maxElapsed?: number;
  /**
   * Whether `maxElapsed` counts the wait before the next attempt (true, the default: a retry whose wait
   * would end past the limit is refused, as tenacity's `stop_before_delay`) or only the time already gone
   * (false: retrying stops once the limit has passed, and the last wait may end beyond it, as tenacity's
   * `stop_after_delay` and p-retry's `maxRetryTime`).
   */
  maxElapsedCountsWait?: boolean;
  /** Default `backoff.exponential({ base: 1000, max: 30_000 })`. */
  backoff?: BackoffLike;
  /** Default `jitter.full()`. */
  jitter?: JitterLike;
  /** Multiplies every jittered delay; > 0. Default 1. */
  scale?: number;
  /**
   * The delay generator (Polly's DelayGenerator): given the failed attempt's error (or, for
   * `retryOnResult`, its value) and a `DelayContext` (the attempt, the retries so far, the time elapsed,
   * the rule, and the delay the policy computed), return one of:
   * - a number: the least wait in ms (the server's word, e.g. `retryAfter(response)`), with the computed,
   *   jittered delay on top, so a fleet told the same time spreads out;
   * - `{ exactly: ms }`: this wait instead of the computed delay, for this retry only;
   * - undefined (or garbage: NaN, a negative): the computed delay.
   * The wait still counts against maxElapsed, and the backoff's x advances either way.
   */
  delayFrom?: DelayFrom;
}

/** What `delayFrom` receives beside the outcome: the retry about to be decided. */
export interface DelayContext {
  /** The attempt that failed, 1-based. */
  readonly attempt: number;
  /** Retries so far, not counting the one about to happen (Polly's `AttemptNumber`). */
  readonly retries: number;
  /** Milliseconds since the first attempt began. */
  readonly elapsed: number;
  /** The delay the policy computed for this retry (backoff → jitter → scale), in ms. */
  readonly delay: number;
  /** The index of the rule in `rules` whose policy this is, or -1 for the top-level policy. */
  readonly rule: number;
}

/** `delayFrom`'s answer: a least wait in ms, `{ exactly: ms }` to replace the computed delay, or undefined. */
export type DelayAnswer = number | { readonly exactly: number } | undefined;

/** A delay generator: see `RetryPolicy.delayFrom`. */
export type DelayFrom = (outcome: unknown, context: DelayContext) => DelayAnswer;

/** A rule: the policy for the errors that `when` matches. Rules are tried in order; the first match wins. */
export interface RetryRule extends RetryPolicy {
  /** The errors this rule is for; a predicate may answer with a promise, which is waited for. */
  when: RetryMatcher;
}

/** What a retry step (`steps.retry`) accepts: the policy, what it retries, its callbacks and its budget. */
export interface RetryStepOptions<T = unknown> extends RetryPolicy {
  /**
   * Which errors the top-level policy retries. Default: all but `PermanentError` and the caller's abort.
   * A predicate may answer with a promise: the step waits for it, and one that throws or rejects ends the
   * call with that error.
   */
  retryOn?: RetryMatcher;
  /**
   * Return true to retry a successful value. When retries run out, the step answers with the last value.
   * It may answer with a promise, which is waited for; a throw or a rejection is that attempt's error
   * (retried as any other).
   */
  retryOnResult?: (value: T) => boolean | PromiseLike<boolean>;
  /**
   * Whether a failure the policy retries uses up a retry (p-retry's `shouldConsumeRetry`): false makes
   * this retry free: `maxRetries` does not count it and the backoff does not advance (it waits what the
   * next counted retry would). `maxElapsed` and a budget still count it, and at most `MAX_FREE_RETRIES`
   * retries of a call are free. It sees what `retryOn` sees and may answer with a promise; a throw or
   * rejection ends the call with that error. Default: every retry counts.
   */
  shouldConsumeRetry?: (error: unknown) => boolean | PromiseLike<boolean>;
  /**
   * Wait before the first attempt too (exponential-backoff's `delayFirstAttempt`): the top-level policy's
   * first delay (backoff for x = 0, jittered and scaled), after which the retries go on from x = 1. The
   * wait is no retry: `maxRetries`, `retries`, `elapsed` and `maxElapsed` count from the first attempt.
   * Default false.
   */
  delayFirstAttempt?: boolean;
  /** Policies for specific errors, first match wins; errors no rule matches fall to the top-level policy. */
  rules?: readonly RetryRule[];
  /** Called before each attempt, the first too (tenacity's `before`); the `attempt` event's short form. */
  onAttempt?: (event: AttemptEvent) => void;
  /**
   * Called once when an attempt succeeds, with the call's statistics (attempts, elapsed, idle); the
   * `success` event's short form.
   */
  onSuccess?: (value: T, stats: RetryStats) => void;
  /** Called after every failed attempt, the last one too; `retries` = retries so far. */
  onError?: (error: unknown, retries: number) => void;
  /** Called before each backoff sleep; the `retry` event's short form. */
  onRetry?: (event: RetryEvent) => void;
  /** Called once when the step stops retrying, with the reason; the `giveUp` event's short form. */
  onGiveUp?: (event: GiveUpEvent) => void;
  /**
   * Receives what a callback or event listener threw (or rejected with), and its name. It never changes
   * the call's outcome. Default: one `process.emitWarning` line (`console.error` where there is no process).
   */
  onCallbackError?: (error: unknown, callback: string) => void;
  /**
   * A retry budget shared by many calls (`retryBudget()`): each retry must be granted by it, and a retry it
   * refuses ends the call with the last error. Given to a hedge step inside too, it is charged once per
   * extra attempt, and hears of each execution once.
   */
  budget?: RetryBudget;
}

/**
 * Everything `retry` and `wrap` accept: a retry step's options, plus the steps the short form puts inside
 * it (breaker → timeout → hedge → chaos → operation) and the execution's signal, clock and randomness.
 * All times are in milliseconds.
 */
export interface RetryOptions<T = unknown> extends RetryStepOptions<T> {
  /** Per-attempt timeout: negative or Infinity = none (default); otherwise that many ms. */
  timeout?: number;
  /** The caller's signal: aborting it stops everything at once, rejecting with `signal.reason`. */
  signal?: AbortSignal;
  /** The clock to read and sleep on. Default: the real one. */
  clock?: Clock;
  /**
   * The real clock's timers (backoff sleeps, timeouts) do not keep the process alive (p-retry's `unref`).
   * Default false. Has no effect with a `clock` of your own.
   */
  unref?: boolean;
  /** Randomness for jitter and random backoffs, a function returning [0, 1). Default `Math.random`. */
  random?: Random;
  /** A circuit breaker shared by many calls (`circuitBreaker()`): each attempt passes it; while open, the call fails at once with `BrokenCircuitError`. */
  breaker?: CircuitBreaker;
  /**
   * Hedge every attempt: a hedge step, `steps.hedge({ delay })`. Within one attempt, another starts if the
   * first has not answered within the delay; the attempt's timeout and the caller's signal cover them all.
   * A step, not plain options, so that hedging's code reaches only the apps that hedge.
   */
  hedge?: HedgeStep;
  /**
   * Inject faults, latency or results into each attempt, e.g. in a test: a chaos step,
   * `steps.chaos({ fault: { rate, error } })`.
   */
  chaos?: ChaosStep<unknown>;
}

/** A policy with every default filled in and every value checked. */
export interface ResolvedPolicy {
  /** True or false, or a promise of the answer (from an async predicate). */
  readonly match: (error: unknown) => MatchAnswer;
  /** Infinity for no limit. */
  readonly maxRetries: number;
  /** Infinity for no limit. */
  readonly maxElapsed: number;
  readonly maxElapsedCountsWait: boolean;
  readonly backoff: Backoff;
  readonly jitter: Jitter;
  readonly scale: number;
  readonly delayFrom: DelayFrom | undefined;
}

/** A retry step's options with every default filled in and every value checked. */
export interface ResolvedRetry<T> {
  /** The rules, then the top-level policy last. */
  readonly policies: readonly ResolvedPolicy[];
  readonly retryOnResult: ((value: T) => boolean | PromiseLike<boolean>) | undefined;
  readonly shouldConsumeRetry: ((error: unknown) => boolean | PromiseLike<boolean>) | undefined;
  readonly delayFirstAttempt: boolean;
  readonly onAttempt: ((event: AttemptEvent) => void) | undefined;
  readonly onSuccess: ((value: T, stats: RetryStats) => void) | undefined;
  readonly onError: ((error: unknown, retries: number) => void) | undefined;
  readonly onRetry: ((event: RetryEvent) => void) | undefined;
  readonly onGiveUp: ((event: GiveUpEvent) => void) | undefined;
  readonly onCallbackError: (error: unknown, callback: string) => void;
  /** The distinct backoffs of the policies that want to hear of a success (`Backoff.success`). */
  readonly successHooks: readonly Backoff[];
  readonly budget: RetryBudget | undefined;
  /** The top-level policy's `maxRetries` (Infinity for no limit): `retriesLeft` at the first attempt. */
  readonly maxRetries: number;
  /** Whether a policy has a `maxElapsed`: a decision then depends on when the call began. */
  readonly timeBound: boolean;
  /**
   * Whether, as far as the policy goes, a first attempt needs nothing but a context and its outcome: no
   * budget, first delay or success hook (a call's callbacks and listeners aside).
   */
  readonly plainPolicy: boolean;
}

/**
 * The callbacks and predicates a call tells and asks: a resolved retry's, or an options object whose
 * functions were checked (see `callbacksOnly`).
 */
export type Callbacks<T> = Pick<
  RetryStepOptions<T>,
  | "retryOnResult"
  | "shouldConsumeRetry"
  | "onAttempt"
  | "onSuccess"
  | "onError"
  | "onRetry"
  | "onGiveUp"
  | "onCallbackError"
>;

/** The short form's options, checked: the retry step's, and what the other steps and the execution take. */
export interface ResolvedOptions<T> {
  readonly retry: ResolvedRetry<T>;
  /** Infinity for none. */
  readonly timeout: number;
  readonly signal: AbortSignal | undefined;
  readonly clock: Clock;
  readonly random: Random;
  readonly breaker: CircuitBreaker | undefined;
  /** A hedge step (`steps.hedge`), checked. */
  readonly hedge: Step | undefined;
  /** A chaos step (`steps.chaos`), checked. */
  readonly chaos: Step | undefined;
}

const RULE_KEYS = keysOf(RULE_CHECKS);
const STEP_KEYS = keysOf(RETRY_STEP_CHECKS);
const OPTION_KEYS = keysOf(RETRY_CHECKS);

/** The defaults, documented in docs/retry.md. */
export const DEFAULTS = Object.freeze({
  maxRetries: 3,
  maxElapsed: -1,
  timeout: -1,
  scale: 1,
  backoffBase: 1000,
  backoffMax: 30_000,
});
/**
 * The most retries of one call that `shouldConsumeRetry` may make free; past it, every retry counts
 * against `maxRetries`, so that a failure it keeps calling free cannot retry forever.
 */
export const MAX_FREE_RETRIES = 100;

const defaultBackoff = exponential({ base: DEFAULTS.backoffBase, max: DEFAULTS.backoffMax });
const defaultJitter = full();
const retryEverything = () => true;

function resolvePolicy(
  where: string,
  value: RetryPolicy,
  fallback: ResolvedPolicy | undefined,
  match: (e: unknown) => MatchAnswer,
): ResolvedPolicy {
  const prefix = where === "" ? "" : `${where}.`;
  // None of a policy's options is required: one left out needs no look at its check (nor a label).
  const field = <V>(key: string, value: V): V =>
    value === undefined ? value : read(RULE_CHECKS, key, value, `${prefix}${key}`);
  return {
    match,
    maxRetries: field("maxRetries", value.maxRetries) ?? fallback?.maxRetries ?? DEFAULTS.maxRetries,
    maxElapsed: field("maxElapsed", value.maxElapsed) ?? fallback?.maxElapsed ?? Number.POSITIVE_INFINITY,
    maxElapsedCountsWait:
      field("maxElapsedCountsWait", value.maxElapsedCountsWait) ?? fallback?.maxElapsedCountsWait ?? true,
    backoff:
      value.backoff === undefined
        ? (fallback?.backoff ?? defaultBackoff)
        : toBackoff(value.backoff, `${prefix}backoff`),
    jitter:
      value.jitter === undefined
        ? (fallback?.jitter ?? defaultJitter)
        : toJitter(value.jitter, `${prefix}jitter`),
    scale: field("scale", value.scale) ?? fallback?.scale ?? DEFAULTS.scale,
    delayFrom: field("delayFrom", value.delayFrom) ?? fallback?.delayFrom,
  };
}

/** Checks a retry step's options and fills in the defaults. Throws an `OptionError` naming the first bad one. */
export function resolveRetry<T>(
  options: RetryStepOptions<T> | undefined,
  known: readonly string[] = STEP_KEYS,
): ResolvedRetry<T> {
  const o = options ?? {};
  knownKeys("options", options, known);
  for (let i = 0; i < STEP_FUNCTIONS.length; i++) {
    const key = STEP_FUNCTIONS[i] as (typeof STEP_FUNCTIONS)[number];
    checkFunction(key, (o as Record<string, unknown>)[key]);
  }
  if (o.budget !== undefined && (typeof o.budget !== "object" || typeof o.budget?.tryRetry !== "function")) {
    throw new OptionError("budget", o.budget, "a retry budget (from retryBudget())");
  }
  const top = resolvePolicy(
    "",
    o,
    undefined,
    o.retryOn === undefined ? retryEverything : compileRetryMatcher("retryOn", o.retryOn),
  );
  const policies: ResolvedPolicy[] = [];
  if (o.rules !== undefined) {
    if (!Array.isArray(o.rules))
      throw new OptionError("rules", o.rules, "an array of { when, …policy } rules");
    o.rules.forEach((rule: RetryRule, i: number) => {
      const where = `rules[${i}]`;
      knownKeys(where, rule, RULE_KEYS);
      if (rule?.when === undefined)
        throw new OptionError(`${where}.when`, undefined, "an ErrorMatcher (required)");
      policies.push(resolvePolicy(where, rule, top, compileRetryMatcher(`${where}.when`, rule.when)));
    });
  }
  policies.push(top);
  // The distinct backoffs that hear of a success; with no rules, the top level's alone (no set to build).
  const successHooks =
    policies.length === 1
      ? typeof top.backoff.success === "function"
        ? [top.backoff]
        : []
      : [...new Set(policies.map((p) => p.backoff))].filter((b) => typeof b.success === "function");
  const delayFirstAttempt =
    o.delayFirstAttempt === undefined
      ? false
      : read<boolean>(RETRY_STEP_CHECKS, "delayFirstAttempt", o.delayFirstAttempt);
  return {
    successHooks,
    budget: o.budget,
    policies,
    retryOnResult: o.retryOnResult,
    shouldConsumeRetry: o.shouldConsumeRetry,
    delayFirstAttempt,
    onAttempt: o.onAttempt,
    onSuccess: o.onSuccess,
    onError: o.onError,
    onRetry: o.onRetry,
    onGiveUp: o.onGiveUp,
    onCallbackError: o.onCallbackError ?? warnOnce,
    maxRetries: top.maxRetries,
    timeBound: policies.some((policy) => policy.maxElapsed !== Number.POSITIVE_INFINITY),
    plainPolicy: successHooks.length === 0 && o.budget === undefined && !delayFirstAttempt,
  };
}

/**
 * The options that are functions or objects resolved on their own, from nothing but their value: the
 * callbacks, the predicates the retry step asks (`retryOn` compiled into the policy's matcher, `delayFrom`
 * kept on it), the backoff and the jitter (a new one each call when written inline). Options that differ
 * from resolved ones only in these need only these checked (see `withFunctions`).
 */
const STEP_FUNCTIONS = [
  "retryOnResult",
  "shouldConsumeRetry",
  "onAttempt",
  "onSuccess",
  "onError",
  "onRetry",
  "onGiveUp",
  "onCallbackError",
] as const;
export const FUNCTION_KEYS: ReadonlySet<string> = new Set([
  ...STEP_FUNCTIONS,
  "retryOn",
  "delayFrom",
  "backoff",
  "jitter",
]);

/**
 * The callbacks and predicates of `options` (`Callbacks`), each read once and checked: the options object
 * may change while a call runs. Throws an `OptionError` naming a bad one.
 */
function checkedCallbacks<T>(options: RetryStepOptions<T>): Callbacks<T> {
  // Each read once, by name: a read by a computed key costs more here than all the rest.
  const { retryOnResult, shouldConsumeRetry, onAttempt, onSuccess, onError, onRetry, onGiveUp } = options;
  const onCallbackError = options.onCallbackError;
  checkFunction("retryOnResult", retryOnResult);
  checkFunction("shouldConsumeRetry", shouldConsumeRetry);
  checkFunction("onAttempt", onAttempt);
  checkFunction("onSuccess", onSuccess);
  checkFunction("onError", onError);
  checkFunction("onRetry", onRetry);
  checkFunction("onGiveUp", onGiveUp);
  checkFunction("onCallbackError", onCallbackError);
  return {
    retryOnResult,
    shouldConsumeRetry,
    onAttempt,
    onSuccess,
    onError,
    onRetry,
    onGiveUp,
    onCallbackError: onCallbackError ?? warnOnce,
  };
}

/**
 * What a call on options that hold what `resolved` was resolved from but for their functions
 * (`FUNCTION_KEYS`) runs with, their functions checked here: when they differ from it only in their
 * callbacks and predicates, those (`Callbacks`), for a call that runs on `resolved`; otherwise (a policy's
 * function given: `retryOn`, `backoff`, `jitter`, `delayFrom`) `resolved` with all of them in place of its
 * own. Undefined when `resolved` has rules. Throws an `OptionError` naming a bad one.
 */
export function withFunctions<T>(
  resolved: ResolvedRetry<T>,
  options: RetryStepOptions<T>,
): ResolvedRetry<T> | Callbacks<T> | undefined {
  if (resolved.policies.length !== 1) return undefined;
  const callbacks = checkedCallbacks(options);
  const { retryOn, backoff, jitter, delayFrom } = options;
  const top = resolved.policies[0] as ResolvedPolicy;
  // Options without a function of the policy's, for a policy made without any: the same policy.
  const same =
    retryOn === undefined &&
    backoff === undefined &&
    jitter === undefined &&
    delayFrom === undefined &&
    top.match === retryEverything &&
    top.backoff === defaultBackoff &&
    top.jitter === defaultJitter &&
    top.delayFrom === undefined;
  if (same) return callbacks;
  // Built field by field, in the order `resolvePolicy` and `resolveRetry` make them (a spread is slower).
  const policy: ResolvedPolicy = {
    match: retryOn === undefined ? retryEverything : compileRetryMatcher("retryOn", retryOn),
    maxRetries: top.maxRetries,
    maxElapsed: top.maxElapsed,
    maxElapsedCountsWait: top.maxElapsedCountsWait,
    backoff: backoff === undefined ? defaultBackoff : toBackoff(backoff, "backoff"),
    jitter: jitter === undefined ? defaultJitter : toJitter(jitter, "jitter"),
    scale: top.scale,
    delayFrom:
      delayFrom === undefined
        ? undefined
        : read<DelayFrom | undefined>(RULE_CHECKS, "delayFrom", delayFrom, "delayFrom"),
  };
  const successHooks = typeof policy.backoff.success === "function" ? [policy.backoff] : [];
  const { retryOnResult, shouldConsumeRetry, onAttempt, onSuccess, onError, onRetry, onGiveUp } = callbacks;
  return {
    successHooks,
    budget: resolved.budget,
    policies: [policy],
    retryOnResult,
    shouldConsumeRetry,
    delayFirstAttempt: resolved.delayFirstAttempt,
    onAttempt,
    onSuccess,
    onError,
    onRetry,
    onGiveUp,
    onCallbackError: callbacks.onCallbackError ?? warnOnce,
    maxRetries: resolved.maxRetries,
    timeBound: resolved.timeBound,
    plainPolicy: successHooks.length === 0 && resolved.budget === undefined && !resolved.delayFirstAttempt,
  };
}

/**
 * Checks the value of one of `STEP_FUNCTIONS`, none required, each a function in the schema: only a value
 * given that is not a function needs the schema's look (which throws the error naming it).
 */
function checkFunction(key: (typeof STEP_FUNCTIONS)[number], value: unknown): void {
  if (value !== undefined && typeof value !== "function") read(RETRY_STEP_CHECKS, key, value);
}

/**
 * A step the short form puts inside its retry step (`hedge`, `chaos`): a step of that kind, made by the
 * feature's own function. Plain options (what these options took before) and steps of another kind (a
 * chaos step as `hedge`, a retry step, a pipeline) are refused with the way to make the step, since the
 * short form no longer carries the features' code.
 */
function stepOption(option: "hedge" | "chaos", value: unknown): Step | undefined {
  if (value === undefined) return undefined;
  if (
    value === null ||
    typeof value !== "object" ||
    (value as { [STEP_KIND]?: unknown })[STEP_KIND] !== option ||
    typeof (value as Step).execute !== "function"
  ) {
    // What the docs and --help say it takes, word for word.
    throw new OptionError(option, value, SHORT_FORM_CHECKS[option].kind.allowed);
  }
  return value as Step;
}

/** Checks every option of the short form and fills in the defaults. Throws an `OptionError` naming the first bad one. */
export function resolveOptions<T>(options: RetryOptions<T> | undefined): ResolvedOptions<T> {
  const o = options ?? {};
  const retry = resolveRetry(options, OPTION_KEYS);
  if (o.signal !== undefined && !(o.signal instanceof AbortSignal))
    throw new OptionError("signal", o.signal, "an AbortSignal");
  if (
    o.clock !== undefined &&
    (typeof o.clock?.now !== "function" || typeof o.clock?.setTimer !== "function")
  ) {
    throw new OptionError("clock", o.clock, "a Clock with now() and setTimer(ms, callback) methods");
  }
  // Options left out need no look at their checks.
  if (o.random !== undefined) read(RETRY_CHECKS, "random", o.random);
  const unref = o.unref !== undefined && read<boolean>(RETRY_CHECKS, "unref", o.unref);
  if (
    o.breaker !== undefined &&
    (typeof o.breaker !== "object" || typeof o.breaker?.[SHORT_FORM_STEP] !== "function")
  ) {
    throw new OptionError("breaker", o.breaker, "a circuit breaker (from circuitBreaker())");
  }
  return {
    retry,
    timeout:
      o.timeout === undefined ? Number.POSITIVE_INFINITY : read<number>(RETRY_CHECKS, "timeout", o.timeout),
    signal: o.signal,
    clock: o.clock ?? (unref ? unrefClock : systemClock),
    random: o.random === undefined ? systemRandom : checkedRandom(o.random),
    breaker: o.breaker,
    hedge: stepOption("hedge", o.hedge),
    chaos: stepOption("chaos", o.chaos),
  };
}
