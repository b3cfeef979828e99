/**
 * What a circuit breaker takes, reports and keeps: its options, its events and its state, and the check
 * a state passes before a breaker takes it.
 */
import type { BackoffLike } from "../backoff/types.js";
import type { Clock } from "../core/clock.js";
import { OptionError } from "../core/errors.js";
import type { CallbackErrorHandler } from "../core/events.js";
import type { Random } from "../core/random.js";
import { finiteAtLeast, integerAtLeast } from "../core/validate.js";
import type { RetryMatcher } from "../policy/matcher.js";
import type { SharingOptions } from "../store/replica.js";
import type { StoreEvents } from "../store/shared-policy.js";
import type { Bucket } from "./window.js";

export type CircuitState = "closed" | "open" | "half-open";

export interface CircuitBreakerOptions extends SharingOptions {
  /** Open after this many failures in a row (an integer >= 1). Default 5 unless `failureRatio` is given. */
  consecutiveFailures?: number;
  /** Open when the failures over `window` ms reach this share of the calls, in (0, 1]. */
  failureRatio?: number;
  /** With `failureRatio`: the calls the window must hold before it may open. Default 10. */
  minimumThroughput?: number;
  /** With `failureRatio`: the sliding window, ms, in [1, 2^31 − 1] (about 24.8 days). Default 10,000. */
  window?: number;
  /**
   * With `failureRatio`, in place of `window`: the sliding window as the last this many calls, whenever
   * they came (cockatiel's `CountBreaker`, resilience4j's COUNT_BASED window), an integer in [1, 100,000].
   * `minimumThroughput` is then at most this, and by default the smaller of 10 and this.
   */
  windowCalls?: number;
  /** How long it stays open: a backoff of x = times opened in a row. Default constant 5 s. */
  openFor?: BackoffLike;
  /** Successful probes that close it from half-open. Default 1. */
  halfOpenSuccesses?: number;
  /** Probes let through at once while half-open. Default 1. */
  halfOpenProbes?: number;
  /**
   * Which failures count against the service. Default: every error but a `PermanentError` (a 404, a
   * validation error: the service answered) and the caller's own abort. An error it does not match, and a
   * call the caller aborted, leave the breaker as it was (a probe's place is given back). A predicate may
   * answer with a promise, which is awaited before the call settles; one that throws or rejects is
   * reported to `onCallbackError`, and the failure counts as it would without `handles`.
   */
  handles?: RetryMatcher;
  /** Receives what `handles` or a listener threw (or rejected with). Default: one warning line. */
  onCallbackError?: CallbackErrorHandler;
  clock?: Clock;
  random?: Random;
}

/** What a breaker reports, `store-down` and `store-up` too when it shares its state through a store. */
export interface BreakerEvents extends StoreEvents {
  /** The state changed. */
  change: { readonly from: CircuitState; readonly to: CircuitState; readonly openFor?: number };
  /** A call was refused because the circuit is open. */
  rejected: { readonly retryAfter: number };
  /**
   * A call it let through ended with a value that counts as a success; `duration`: ms since it was let
   * through, on the breaker's clock. Of calls through `execute`, a breaker step or a retry's `breaker`.
   */
  success: { readonly duration: number; readonly value: unknown };
  /**
   * A call it let through failed: with an error (or a timeout outside it), or a value `handlesResult`
   * counted (`isValue`). `handled`: whether it counted against the service (`handles` said so).
   */
  failure: {
    readonly duration: number;
    readonly outcome: unknown;
    readonly isValue: boolean;
    readonly handled: boolean;
  };
}

/** A breaker's state: one plain object, to read, store and restore. */
export interface BreakerState {
  readonly state: CircuitState;
  /** Clock time when an open circuit lets probes through. */
  readonly openUntil: number;
  /** Times opened in a row (reset when it closes). */
  readonly openings: number;
  readonly consecutiveFailures: number;
  readonly halfOpenSuccesses: number;
  /** The sliding window: [clock time of the bucket, calls, failures] for each bucket still in it. */
  readonly window: readonly (readonly [number, number, number])[];
  /** With `windowCalls`: the outcomes of the calls in the window, oldest first, 1 for a failure. */
  readonly recent?: readonly (0 | 1)[];
}

/** A breaker's state as `restore` takes it: checked whole, the window a copy of its own. */
export interface CheckedBreakerState extends BreakerState {
  readonly window: Bucket[];
}

/** Checks `state` (from `snapshot()`, perhaps of another process) whole, before any of it is taken. */
export function checkBreakerState(state: BreakerState): CheckedBreakerState {
  if (!["closed", "open", "half-open"].includes(state?.state)) {
    throw new OptionError("circuitBreaker.restore: state", state?.state, '"closed", "open" or "half-open"');
  }
  const openUntil = finiteAtLeast(
    "circuitBreaker.restore: openUntil",
    state.openUntil,
    Number.NEGATIVE_INFINITY,
  );
  const openings = integerAtLeast("circuitBreaker.restore: openings", state.openings, 0);
  const failures = integerAtLeast(
    "circuitBreaker.restore: consecutiveFailures",
    state.consecutiveFailures,
    0,
  );
  const successes = integerAtLeast("circuitBreaker.restore: halfOpenSuccesses", state.halfOpenSuccesses, 0);
  const window = state.window;
  if (
    !Array.isArray(window) ||
    !window.every(
      (b) =>
        Array.isArray(b) && b.length === 3 && b.every((n) => typeof n === "number" && Number.isFinite(n)),
    )
  ) {
    throw new OptionError(
      "circuitBreaker.restore: window",
      window,
      "a list of [time, calls, failures] buckets",
    );
  }
  const recent = state.recent;
  if (recent !== undefined && !(Array.isArray(recent) && recent.every((n) => n === 0 || n === 1))) {
    throw new OptionError("circuitBreaker.restore: recent", recent, "a list of 0 (success) and 1 (failure)");
  }
  return {
    ...(recent === undefined ? {} : { recent: [...recent] }),
    state: state.state,
    openUntil,
    openings,
    consecutiveFailures: failures,
    halfOpenSuccesses: successes,
    window: window.map((b) => [...b] as Bucket),
  };
}
