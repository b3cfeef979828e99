/**
 * The retry options: their types, their defaults, and their validation (once, up front, loudly).
 */

import { toBackoff } from "../backoff/common.js";
import { exponential } from "../backoff/exponential.js";
import type { Backoff, BackoffLike } from "../backoff/types.js";
import type { CircuitBreaker } from "../breaker/circuit-breaker.js";
import type { DefaultBudget } from "../budget/default.js";
import type { RetryBudget } from "../budget/retry-budget.js";
import type { ChaosStep } from "../chaos/chaos.js";
import { type BudgetLike, isBudgetLike } from "../core/budget-like.js";
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
   * refuses ends the call with the last error (give-up reason `"budget"`). Given to a hedge step inside
   * too, it is charged once per extra attempt, and hears of each execution once.
   *
   * Default: the target's default budget (retries at most 20 % of the calls of the last 10 s, plus 10 a
   * second), one per `wrap`ped function, retry step, `robustFetch` origin, and one for the process's
   * `retry` calls, per clock. `false`: no budget.
   */
  budget?: RetryBudget | DefaultBudget | false;
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
  /** The budget the options name; undefined for none, or for the target's default. */
  readonly budget: BudgetLike | undefined;
  /** Whether retries draw on the target's default budget: the options name no budget, nor `false`. */
  readonly defaultBudget: boolean;
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

/** Options as `resolve` reads them: the retry step's, resolved, and the short form's own. */
export interface ReadOptions<T> {
  readonly retry: ResolvedRetry<T>;
  /**
   * The short form's own options but `signal` and `timeout`, as given (unchecked: see `withShortForm`);
   * undefined when none was. When one was, it holds `timeout` too.
   */
  readonly others: ShortForm | undefined;
  /** The short form's `signal`, checked. */
  readonly signal: AbortSignal | undefined;
  /** The short form's `timeout` in ms, checked (Infinity for none), when `others` is undefined. */
  readonly timeout: number;
}

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
function retryEverything(): boolean {
  return true;
}
const NO_HOOKS: readonly Backoff[] = [];

/**
 * A policy from its options (each undefined when not given), checked, with the rest from `fallback` (the
 * top level, for a rule) or the defaults. `where`: the rule's label (`rules[0]`), "" at the top level.
 */
function resolvePolicy(
  where: string,
  match: (e: unknown) => MatchAnswer,
  fallback: ResolvedPolicy | undefined,
  maxRetries: unknown,
  maxElapsed: unknown,
  countsWait: unknown,
  backoff: unknown,
  jitter: unknown,
  scale: unknown,
  delayFrom: unknown,
): ResolvedPolicy {
  return {
    match,
    maxRetries:
      maxRetries === undefined
        ? (fallback?.maxRetries ?? DEFAULTS.maxRetries)
        : (limitOf(maxRetries, true) ?? policyField(where, "maxRetries", maxRetries)),
    maxElapsed:
      maxElapsed === undefined
        ? (fallback?.maxElapsed ?? Number.POSITIVE_INFINITY)
        : (limitOf(maxElapsed, false) ?? policyField(where, "maxElapsed", maxElapsed)),
    maxElapsedCountsWait:
      countsWait === undefined
        ? (fallback?.maxElapsedCountsWait ?? true)
        : policyField(where, "maxElapsedCountsWait", countsWait),
    backoff:
      backoff === undefined
        ? (fallback?.backoff ?? defaultBackoff)
        : toBackoff(backoff as BackoffLike, label(where, "backoff")),
    jitter:
      jitter === undefined
        ? (fallback?.jitter ?? defaultJitter)
        : toJitter(jitter as JitterLike, label(where, "jitter")),
    scale: scale === undefined ? (fallback?.scale ?? DEFAULTS.scale) : policyField(where, "scale", scale),
    delayFrom: delayFrom === undefined ? fallback?.delayFrom : policyField(where, "delayFrom", delayFrom),
  };
}

/** An option's name as an error names it: `maxRetries` at the top level, `rules[0].maxRetries` in a rule. */
function label(where: string, key: string): string {
  return where === "" ? key : `${where}.${key}`;
}

/** A policy's option `key`, given, checked (`read`'s value, or its error naming the option). */
function policyField<V>(where: string, key: string, value: unknown): V {
  return read<V>(RULE_CHECKS, key, value, label(where, key));
}

/**
 * A limit's value (`maxRetries`, `maxElapsed`, `timeout`: negative or Infinity for none) as `read` makes it,
 * for a number that fits; undefined for anything else, left to `read` (which throws the error naming it).
 */
function limitOf(value: unknown, integer: boolean): number | undefined {
  if (typeof value !== "number" || Number.isNaN(value)) return undefined;
  if (integer && !Number.isInteger(value) && Number.isFinite(value)) return undefined;
  return value < 0 ? Number.POSITIVE_INFINITY : value === 0 ? 0 : value;
}

/**
 * The resolutions of options that set nothing of the retry step but `maxRetries`, by its value (0 to
 * `MAX_PLAIN`), made at the first call that needs each: a resolution holds no state, so calls share it.
 */
const PLAIN_RETRIES: (ResolvedRetry<unknown> | undefined)[] = [];
/** The same options' policies, shared also by options that add callbacks, a budget or a first delay. */
const PLAIN_POLICIES: (readonly ResolvedPolicy[] | undefined)[] = [];
const MAX_PLAIN = 32;

/** `maxRetries`'s index in `PLAIN_RETRIES` (left out: the default's), or -1 for a value it keeps none of. */
function plainIndex(maxRetries: unknown): number {
  if (maxRetries === undefined) return DEFAULTS.maxRetries;
  // Number.isInteger is true of integral numbers alone.
  const n = maxRetries as number;
  return Number.isInteger(n) && n >= 0 && n <= MAX_PLAIN ? n : -1;
}

/** A rule of `rules`, checked, its policy filled in from the top level's. */
function resolveRule(rule: RetryRule, i: number, top: ResolvedPolicy): ResolvedPolicy {
  const where = `rules[${i}]`;
  knownKeys(where, rule, RULE_KEYS);
  if (rule?.when === undefined)
    throw new OptionError(`${where}.when`, undefined, "an ErrorMatcher (required)");
  const match = compileRetryMatcher(`${where}.when`, rule.when);
  const { maxRetries, maxElapsed, maxElapsedCountsWait, backoff, jitter, scale, delayFrom } = rule;
  return resolvePolicy(
    where,
    match,
    top,
    maxRetries,
    maxElapsed,
    maxElapsedCountsWait,
    backoff,
    jitter,
    scale,
    delayFrom,
  );
}

/** Checks one of the callbacks and predicates, none required: only a value that is no function needs a look. */
function checkFunction(key: string, value: unknown): void {
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

/**
 * The `known` options of `options` (a class instance's may be accessors on its prototype), read by name,
 * each once, into a plain object; its own keys must be known ones (`where` names it in the error).
 */
export function plainCopy(
  options: unknown,
  known: readonly string[],
  where = "options",
): Record<string, unknown> {
  knownKeys(where, options, known);
  const copy: Record<string, unknown> = {};
  if (options === undefined) return copy;
  for (let i = 0; i < known.length; i++) {
    const key = known[i] as string;
    const value = (options as Record<string, unknown>)[key];
    if (value !== undefined) copy[key] = value;
  }
  return copy;
}

/** Fails for `key` of `o` unless it is inherited (no option): `knownKeys` names the first unknown key. */
function unknownKey(o: object, key: string, known: readonly string[]): void {
  if (Object.hasOwn(o, key)) knownKeys("options", o, known);
}

/**
 * Checks a retry step's options (`known`: STEP_KEYS) or the short form's (OPTION_KEYS) and fills in the
 * defaults. Throws an `OptionError` naming the first bad one: an unknown key before any value (a getter
 * that throws aside), then the values in a fixed order. `Form`: the short form's `ShortForm`, which takes
 * its own options but `signal` and `timeout`; none for a retry step, to which they are unknown keys.
 *
 * One pass over the keys given, each read once, then only those looked at: options written inline cost a
 * few keys' work at each call, and nothing a caller passed is kept (the shared resolutions of options
 * that set no more than `maxRetries` hold nothing of theirs).
 */
function resolve<T>(
  options: RetryOptions<T> | undefined,
  known: readonly string[],
  Form?: new () => ShortForm,
): ReadOptions<T> {
  let others: ShortForm | undefined;
  let signal: unknown;
  let timeout: unknown;
  let maxRetries: unknown;
  let maxElapsed: unknown;
  let countsWait: unknown;
  let backoff: unknown;
  let jitter: unknown;
  let scale: unknown;
  let delayFrom: unknown;
  let retryOn: unknown;
  let retryOnResult: unknown;
  let shouldConsumeRetry: unknown;
  let delayFirstAttempt: unknown;
  let rules: unknown;
  let onAttempt: unknown;
  let onSuccess: unknown;
  let onError: unknown;
  let onRetry: unknown;
  let onGiveUp: unknown;
  let onCallbackError: unknown;
  let budget: unknown;
  if (options !== undefined) {
    // A plain object's options are its own enumerable properties, as `{ ...options }` reads them; any other
    // object's (a class instance's, one made by `Object.create`) are read by name (see `plainCopy`).
    const o: Record<string, unknown> =
      options !== null && Object.getPrototypeOf(options) === Object.prototype
        ? (options as Record<string, unknown>)
        : plainCopy(options, known);
    for (const key in o) {
      const value = o[key];
      switch (key) {
        case "maxRetries":
          maxRetries = value;
          break;
        case "maxElapsed":
          maxElapsed = value;
          break;
        case "maxElapsedCountsWait":
          countsWait = value;
          break;
        case "backoff":
          backoff = value;
          break;
        case "jitter":
          jitter = value;
          break;
        case "scale":
          scale = value;
          break;
        case "delayFrom":
          delayFrom = value;
          break;
        case "retryOn":
          retryOn = value;
          break;
        case "retryOnResult":
          retryOnResult = value;
          break;
        case "shouldConsumeRetry":
          shouldConsumeRetry = value;
          break;
        case "delayFirstAttempt":
          delayFirstAttempt = value;
          break;
        case "rules":
          rules = value;
          break;
        case "onAttempt":
          onAttempt = value;
          break;
        case "onSuccess":
          onSuccess = value;
          break;
        case "onError":
          onError = value;
          break;
        case "onRetry":
          onRetry = value;
          break;
        case "onGiveUp":
          onGiveUp = value;
          break;
        case "onCallbackError":
          onCallbackError = value;
          break;
        case "budget":
          budget = value;
          break;
        // The short form's most common own options, kept apart from the rest (see `others`), so that a
        // call with a signal or a timeout alone needs nothing more.
        case "signal":
          if (Form === undefined) unknownKey(o, key, known);
          else signal = value;
          break;
        case "timeout":
          if (Form === undefined) unknownKey(o, key, known);
          else timeout = value;
          break;
        default:
          // One of the short form's own (taken by `others`), or an unknown key: one of its own fails,
          // naming the first (an inherited one is no option).
          if (Form !== undefined) {
            const form = others ?? new Form();
            if (form.take(key, value)) {
              others = form;
              break;
            }
          }
          unknownKey(o, key, known);
      }
    }
  }
  // Options that set nothing of a policy but a small `maxRetries` share its policies, and those that set
  // nothing else of the retry step either (most) share its whole resolution.
  const plainPolicy =
    retryOn === undefined &&
    rules === undefined &&
    maxElapsed === undefined &&
    countsWait === undefined &&
    backoff === undefined &&
    jitter === undefined &&
    scale === undefined &&
    delayFrom === undefined
      ? plainIndex(maxRetries)
      : -1;
  const plain =
    plainPolicy >= 0 &&
    retryOnResult === undefined &&
    shouldConsumeRetry === undefined &&
    onAttempt === undefined &&
    onSuccess === undefined &&
    onError === undefined &&
    onRetry === undefined &&
    onGiveUp === undefined &&
    onCallbackError === undefined &&
    budget === undefined &&
    delayFirstAttempt === undefined
      ? plainPolicy
      : -1;
  let retry = plain < 0 ? undefined : (PLAIN_RETRIES[plain] as ResolvedRetry<T> | undefined);
  if (retry === undefined) {
    checkFunction("retryOnResult", retryOnResult);
    checkFunction("shouldConsumeRetry", shouldConsumeRetry);
    checkFunction("onAttempt", onAttempt);
    checkFunction("onSuccess", onSuccess);
    checkFunction("onError", onError);
    checkFunction("onRetry", onRetry);
    checkFunction("onGiveUp", onGiveUp);
    checkFunction("onCallbackError", onCallbackError);
    if (budget !== undefined && budget !== false && !isBudgetLike(budget)) {
      throw new OptionError("budget", budget, "a retry budget (from retryBudget()), or false for none");
    }
    let policies = plainPolicy < 0 ? undefined : PLAIN_POLICIES[plainPolicy];
    if (policies === undefined) {
      const top = resolvePolicy(
        "",
        retryOn === undefined ? retryEverything : compileRetryMatcher("retryOn", retryOn as RetryMatcher),
        undefined,
        maxRetries,
        maxElapsed,
        countsWait,
        backoff,
        jitter,
        scale,
        delayFrom,
      );
      if (rules === undefined) policies = [top];
      else {
        if (!Array.isArray(rules))
          throw new OptionError("rules", rules, "an array of { when, …policy } rules");
        // Every index, holes too: a hole is a rule left out by mistake, and fails as one.
        const list: ResolvedPolicy[] = [];
        for (let i = 0; i < rules.length; i++) list.push(resolveRule(rules[i] as RetryRule, i, top));
        list.push(top);
        policies = list;
      }
      if (plainPolicy >= 0) PLAIN_POLICIES[plainPolicy] = policies;
    }
    const top = policies[policies.length - 1] as ResolvedPolicy;
    // The distinct backoffs that hear of a success; with no rules, the top level's alone (no set to build).
    const successHooks =
      policies.length === 1
        ? typeof top.backoff.success === "function"
          ? [top.backoff]
          : NO_HOOKS
        : [...new Set(policies.map((p) => p.backoff))].filter((b) => typeof b.success === "function");
    const firstDelayed =
      delayFirstAttempt !== undefined &&
      read<boolean>(RETRY_STEP_CHECKS, "delayFirstAttempt", delayFirstAttempt);
    let timeBound = top.maxElapsed !== Number.POSITIVE_INFINITY;
    for (let i = 0; i < policies.length - 1; i++)
      if ((policies[i] as ResolvedPolicy).maxElapsed !== Number.POSITIVE_INFINITY) timeBound = true;
    retry = {
      successHooks,
      budget: budget === false ? undefined : (budget as BudgetLike | undefined),
      defaultBudget: budget === undefined,
      policies,
      retryOnResult: retryOnResult as ResolvedRetry<T>["retryOnResult"],
      shouldConsumeRetry: shouldConsumeRetry as ResolvedRetry<T>["shouldConsumeRetry"],
      delayFirstAttempt: firstDelayed,
      onAttempt: onAttempt as ResolvedRetry<T>["onAttempt"],
      onSuccess: onSuccess as ResolvedRetry<T>["onSuccess"],
      onError: onError as ResolvedRetry<T>["onError"],
      onRetry: onRetry as ResolvedRetry<T>["onRetry"],
      onGiveUp: onGiveUp as ResolvedRetry<T>["onGiveUp"],
      onCallbackError: (onCallbackError as ResolvedRetry<T>["onCallbackError"] | undefined) ?? warnOnce,
      maxRetries: top.maxRetries,
      timeBound,
      plainPolicy: successHooks.length === 0 && (budget === undefined || budget === false) && !firstDelayed,
    };
    if (plain >= 0) PLAIN_RETRIES[plain] = retry as ResolvedRetry<unknown>;
  }
  // The short form's own options are checked after the retry step's, `signal` first.
  if (signal !== undefined && !(signal instanceof AbortSignal))
    throw new OptionError("signal", signal, "an AbortSignal");
  let ms = Number.POSITIVE_INFINITY;
  // With others given, the timeout is checked among them, in their order.
  if (others !== undefined) others.timeout = timeout;
  else ms = timeoutOf(timeout);
  return { retry, others, signal: signal as AbortSignal | undefined, timeout: ms };
}

/**
 * The short form's own options (not a retry step's), taken in `resolve`'s pass over the keys given and
 * checked after the retry step's; made at the first one given (most options hold none).
 */
export class ShortForm {
  timeout: unknown = undefined;
  unref: unknown = undefined;
  clock: unknown = undefined;
  random: unknown = undefined;
  breaker: unknown = undefined;
  hedge: unknown = undefined;
  chaos: unknown = undefined;

  /**
   * Takes option `key` if it is one of the short form's own but `signal` and `timeout` (which `resolve`
   * reads and checks itself, but for a timeout given beside one of these, handed over to be checked in
   * the short form's order); false otherwise.
   */
  take(key: string, value: unknown): boolean {
    switch (key) {
      case "unref":
        this.unref = value;
        return true;
      case "clock":
        this.clock = value;
        return true;
      case "random":
        this.random = value;
        return true;
      case "breaker":
        this.breaker = value;
        return true;
      case "hedge":
        this.hedge = value;
        return true;
      case "chaos":
        this.chaos = value;
        return true;
      default:
        return false;
    }
  }

  /** Checks what it took and fills in the defaults, beside the rest of the options, `given`. */
  resolve<T>(given: ReadOptions<T>): ResolvedOptions<T> {
    const { unref, clock, random, breaker } = this;
    if (
      clock !== undefined &&
      (typeof (clock as Clock | null)?.now !== "function" || typeof (clock as Clock).setTimer !== "function")
    ) {
      throw new OptionError("clock", clock, "a Clock with now() and setTimer(ms, callback) methods");
    }
    // Options left out need no look at their checks.
    if (random !== undefined) read(RETRY_CHECKS, "random", random);
    const unrefed = unref !== undefined && read<boolean>(RETRY_CHECKS, "unref", unref);
    if (
      breaker !== undefined &&
      (typeof breaker !== "object" ||
        typeof (breaker as CircuitBreaker | null)?.[SHORT_FORM_STEP] !== "function")
    ) {
      throw new OptionError("breaker", breaker, "a circuit breaker (from circuitBreaker())");
    }
    return {
      retry: given.retry,
      timeout: timeoutOf(this.timeout),
      signal: given.signal,
      clock: (clock as Clock | undefined) ?? (unrefed ? unrefClock : systemClock),
      random: random === undefined ? systemRandom : checkedRandom(random as Random),
      breaker: breaker as CircuitBreaker | undefined,
      hedge: stepOption("hedge", this.hedge),
      chaos: stepOption("chaos", this.chaos),
    };
  }
}

/** Checks a retry step's options and fills in the defaults. Throws an `OptionError` naming the first bad one. */
export function resolveRetry<T>(options: RetryStepOptions<T> | undefined): ResolvedRetry<T> {
  return resolve(options, STEP_KEYS).retry;
}

/** Checks every option of the short form and fills in the defaults. Throws an `OptionError` naming the first bad one. */
export function resolveOptions<T>(options: RetryOptions<T> | undefined): ResolvedOptions<T> {
  return withShortForm(resolveShortForm(options));
}

/**
 * The short form's options as `retry` reads them on its hot path: the retry step's, resolved, its `signal`
 * and `timeout`, checked, and its other options (`others`, unchecked) when any was given, which
 * `withShortForm` checks.
 */
export function resolveShortForm<T>(options: RetryOptions<T> | undefined): ReadOptions<T> {
  return resolve(options, OPTION_KEYS, ShortForm);
}

/** The short form's options: `read`, with its own (`read.others`) checked and the defaults filled in. */
export function withShortForm<T>(read: ReadOptions<T>): ResolvedOptions<T> {
  const others = read.others;
  if (others !== undefined) return others.resolve(read);
  const form = new ShortForm();
  form.timeout = read.timeout;
  return form.resolve(read);
}

/** The `timeout` option in ms, checked: Infinity for none (left out, negative or Infinity). */
function timeoutOf(timeout: unknown): number {
  if (timeout === undefined) return Number.POSITIVE_INFINITY;
  return limitOf(timeout, false) ?? read<number>(RETRY_CHECKS, "timeout", timeout);
}
