/**
 * The retry options: their types, their defaults, and their validation (once, up front, loudly).
 */

import { toBackoff } from "../backoff/common.js";
import { exponential } from "../backoff/exponential.js";
import type { Backoff, BackoffLike } from "../backoff/types.js";
import type { CircuitBreaker } from "../breaker/circuit-breaker.js";
import type { RetryBudget } from "../budget/retry-budget.js";
import type { ChaosOptions } from "../chaos/chaos.js";
import { type Clock, systemClock } from "../core/clock.js";
import { OptionError } from "../core/errors.js";
import { type Random, systemRandom } from "../core/random.js";
import { finiteAbove, knownKeys, limit, optionalFunction } from "../core/validate.js";
import type { HedgeOptions } from "../hedge/hedge.js";
import { toJitter } from "../jitter/common.js";
import { full } from "../jitter/full.js";
import type { Jitter, JitterLike } from "../jitter/types.js";
import { compileMatcher, type ErrorMatcher } from "./matcher.js";

/** What the operation receives on each attempt. */
export interface AttemptContext {
  /** 1 for the first attempt, 2 for the first retry, … */
  readonly attempt: number;
  /** Retries so far in this call (attempt − 1). */
  readonly retries: number;
  /** Aborts when this attempt times out (reason: a `TimeoutError`) or the caller aborts (reason: theirs). */
  readonly signal: AbortSignal;
  /** This attempt's timeout in ms; Infinity when there is none. */
  readonly timeout: number;
  /** Milliseconds since the first attempt began. */
  readonly elapsed: number;
}

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
  maxDelay?: number;
  /** Default `backoff.exponential({ base: 1000, max: 30_000 })`. */
  backoff?: BackoffLike;
  /** Default `jitter.full()`. */
  jitter?: JitterLike;
  /** Multiplies every jittered delay; > 0. Default 1. */
  scale?: number;
  /**
   * The server's word on when to retry (Polly's DelayGenerator): given the failed attempt's error (or,
   * for `retryOnResult`, its value), return a delay in ms to use instead of the computed one, or undefined
   * to keep it. `retryAfter(response)` reads an HTTP Retry-After. The delay still counts against maxDelay.
   */
  delayFrom?: (outcome: unknown) => number | undefined;
}

/** A rule: the policy for the errors that `when` matches. Rules are tried in order; the first match wins. */
export interface RetryRule extends RetryPolicy {
  when: ErrorMatcher;
}

/** Everything `retry` and `wrap` accept. All times are in milliseconds. */
export interface RetryOptions<T = unknown> extends RetryPolicy {
  /** Per-attempt timeout: negative or Infinity = none (default); otherwise that many ms. */
  timeout?: number;
  /** Which errors the top-level policy retries. Default: all but `PermanentError` and the caller's abort. */
  retryOn?: ErrorMatcher;
  /** Return true to retry a successful value. When retries run out, `retry` resolves with the last value. */
  retryOnResult?: (value: T) => boolean;
  /** Policies for specific errors, first match wins; errors no rule matches fall to the top-level policy. */
  rules?: readonly RetryRule[];
  /** Called once when an attempt succeeds (seed 000's on_success). */
  onSuccess?: (value: T) => void;
  /** Called after every failed attempt, the last one too (seed 000's on_error); `retries` = retries so far. */
  onError?: (error: unknown, retries: number) => void;
  /** Called before each backoff sleep. */
  onRetry?: (event: RetryEvent) => void;
  /** Receives an error thrown (or rejected) by onSuccess, onError or onRetry. Default: `process.emitWarning`. */
  onCallbackError?: (error: unknown, callback: "onSuccess" | "onError" | "onRetry") => void;
  /** The caller's signal: aborting it stops everything at once, rejecting with `signal.reason`. */
  signal?: AbortSignal;
  /** The clock to read and sleep on. Default: the real one. */
  clock?: Clock;
  /** Randomness for jitter and random backoffs, a function returning [0, 1). Default `Math.random`. */
  random?: Random;
  /** A retry budget shared by many calls (`retryBudget()`): a retry it refuses ends the call with the last error. */
  budget?: RetryBudget;
  /** A circuit breaker shared by many calls (`circuitBreaker()`): while open, the call fails at once with `BrokenCircuitError`. */
  breaker?: CircuitBreaker;
  /**
   * Hedge every attempt (`hedge()`'s options): within one attempt, another starts if the first has not
   * answered within the delay; the attempt's timeout and the caller's signal cover them all.
   */
  hedge?: Omit<HedgeOptions, "signal">;
  /** Inject faults, latency or results into the operation (`chaos()`'s options), e.g. in a test. */
  chaos?: ChaosOptions<T>;
}

/** A policy with every default filled in and every value checked. */
export interface ResolvedPolicy {
  readonly match: (error: unknown) => boolean;
  /** Infinity for no limit. */
  readonly maxRetries: number;
  /** Infinity for no limit. */
  readonly maxDelay: number;
  readonly backoff: Backoff;
  readonly jitter: Jitter;
  readonly scale: number;
  readonly delayFrom: ((outcome: unknown) => number | undefined) | undefined;
}

export interface ResolvedOptions<T> {
  /** Infinity for none. */
  readonly timeout: number;
  /** The rules, then the top-level policy last. */
  readonly policies: readonly ResolvedPolicy[];
  readonly retryOnResult: ((value: T) => boolean) | undefined;
  readonly onSuccess: ((value: T) => void) | undefined;
  readonly onError: ((error: unknown, retries: number) => void) | undefined;
  readonly onRetry: ((event: RetryEvent) => void) | undefined;
  readonly onCallbackError: (error: unknown, callback: "onSuccess" | "onError" | "onRetry") => void;
  readonly signal: AbortSignal | undefined;
  readonly clock: Clock;
  readonly random: Random;
  /** The distinct backoffs of the policies that want to hear of a success (`Backoff.succeeded`). */
  readonly successHooks: readonly Backoff[];
  readonly budget: RetryBudget | undefined;
  readonly breaker: CircuitBreaker | undefined;
}

const POLICY_KEYS = ["maxRetries", "maxDelay", "backoff", "jitter", "scale", "delayFrom"] as const;
const RULE_KEYS = ["when", ...POLICY_KEYS] as const;
const OPTION_KEYS = [
  ...POLICY_KEYS,
  "timeout",
  "retryOn",
  "retryOnResult",
  "rules",
  "onSuccess",
  "onError",
  "onRetry",
  "onCallbackError",
  "signal",
  "clock",
  "random",
  "budget",
  "breaker",
  "hedge",
  "chaos",
] as const;

/** The defaults, documented in the README. */
export const DEFAULTS = Object.freeze({
  maxRetries: 3,
  maxDelay: -1,
  timeout: -1,
  scale: 1,
  backoffBase: 1000,
  backoffMax: 30_000,
});
const defaultBackoff = exponential({ base: DEFAULTS.backoffBase, max: DEFAULTS.backoffMax });
const defaultJitter = full();
const retryEverything = () => true;

function reportCallbackError(error: unknown, callback: string): void {
  const message = `the ${callback} callback threw (the retry loop went on): ${error instanceof Error ? error.message : String(error)}`;
  const proc = (globalThis as { process?: { emitWarning?: (w: string, o: object) => void } }).process;
  if (typeof proc?.emitWarning === "function") {
    const detail = error instanceof Error && error.stack !== undefined ? error.stack : undefined;
    proc.emitWarning(message, { type: "RobustlyCallbackWarning", detail });
  } else {
    console.error(`robustly: ${message}`);
  }
}

function resolvePolicy(
  where: string,
  value: RetryPolicy,
  fallback: ResolvedPolicy | undefined,
  match: (e: unknown) => boolean,
): ResolvedPolicy {
  const prefix = where === "" ? "" : `${where}.`;
  return {
    match,
    maxRetries:
      value.maxRetries === undefined
        ? (fallback?.maxRetries ?? DEFAULTS.maxRetries)
        : limit(`${prefix}maxRetries`, value.maxRetries, true),
    maxDelay:
      value.maxDelay === undefined
        ? (fallback?.maxDelay ?? Number.POSITIVE_INFINITY)
        : limit(`${prefix}maxDelay`, value.maxDelay, false),
    backoff:
      value.backoff === undefined
        ? (fallback?.backoff ?? defaultBackoff)
        : toBackoff(value.backoff, `${prefix}backoff`),
    jitter:
      value.jitter === undefined
        ? (fallback?.jitter ?? defaultJitter)
        : toJitter(value.jitter, `${prefix}jitter`),
    scale:
      value.scale === undefined
        ? (fallback?.scale ?? DEFAULTS.scale)
        : finiteAbove(`${prefix}scale`, value.scale, 0),
    delayFrom:
      value.delayFrom === undefined
        ? fallback?.delayFrom
        : checkedFunction(`${prefix}delayFrom`, value.delayFrom),
  };
}

function checkedFunction<F>(option: string, value: F): F {
  optionalFunction(option, value);
  return value;
}

/** Checks every option and fills in the defaults. Throws an `OptionError` naming the first bad option. */
export function resolveOptions<T>(options: RetryOptions<T> | undefined): ResolvedOptions<T> {
  const o = options ?? {};
  knownKeys("options", options, OPTION_KEYS);
  optionalFunction("retryOnResult", o.retryOnResult);
  optionalFunction("onSuccess", o.onSuccess);
  optionalFunction("onError", o.onError);
  optionalFunction("onRetry", o.onRetry);
  optionalFunction("onCallbackError", o.onCallbackError);
  if (o.signal !== undefined && !(o.signal instanceof AbortSignal))
    throw new OptionError("signal", o.signal, "an AbortSignal");
  if (
    o.clock !== undefined &&
    (typeof o.clock?.now !== "function" || typeof o.clock?.setTimer !== "function")
  ) {
    throw new OptionError("clock", o.clock, "a Clock with now() and setTimer(ms, callback) methods");
  }
  optionalFunction("random", o.random);
  if (o.budget !== undefined && (typeof o.budget !== "object" || typeof o.budget?.tryRetry !== "function")) {
    throw new OptionError("budget", o.budget, "a retry budget (from retryBudget())");
  }
  if (
    o.breaker !== undefined &&
    (typeof o.breaker !== "object" || typeof o.breaker?.acquire !== "function")
  ) {
    throw new OptionError("breaker", o.breaker, "a circuit breaker (from circuitBreaker())");
  }
  const top = resolvePolicy(
    "",
    o,
    undefined,
    o.retryOn === undefined ? retryEverything : compileMatcher("retryOn", o.retryOn),
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
      policies.push(resolvePolicy(where, rule, top, compileMatcher(`${where}.when`, rule.when)));
    });
  }
  policies.push(top);
  const successHooks = [...new Set(policies.map((p) => p.backoff))].filter(
    (b) => typeof b.succeeded === "function",
  );
  return {
    successHooks,
    budget: o.budget,
    breaker: o.breaker,
    timeout: limit("timeout", o.timeout ?? DEFAULTS.timeout, false),
    policies,
    retryOnResult: o.retryOnResult,
    onSuccess: o.onSuccess,
    onError: o.onError,
    onRetry: o.onRetry,
    onCallbackError: o.onCallbackError ?? reportCallbackError,
    signal: o.signal,
    clock: o.clock ?? systemClock,
    random: o.random ?? systemRandom,
  };
}
