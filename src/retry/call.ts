/**
 * The one retry loop (seed 000's access_wrapper), written with callbacks rather than `await`: attempt
 * under a timeout, classify the outcome, ask the policy, compute the delay, sleep on the clock, again.
 *
 * Callbacks, not an `async` function, because the same loop must run in two worlds: under `retry`, where
 * operations return promises and the clock is real (or a `VirtualClock`), and in the simulator, where an
 * operation returns a thenable that the simulator settles synchronously and the clock is the simulator's
 * event queue. Nothing here waits for a microtask, so the simulator runs this very code, event by event.
 */
import type { CancelTimer } from "../core/clock.js";
import { PermanentError, RetryableResultError, TimeoutError, withoutStack } from "../core/errors.js";
import { type GiveUpReason, RetryState } from "../policy/decide.js";
import type { AttemptContext, ResolvedOptions } from "../policy/options.js";
import { Attempt } from "../timeout/attempt.js";

type Callback = "onSuccess" | "onError" | "onRetry";

/** Calls a user callback so that neither a throw nor a rejected promise can disturb the loop. */
export function safely<T>(options: ResolvedOptions<T>, name: Callback, call: () => unknown): void {
  try {
    const result = call();
    if (isThenable(result)) result.then(undefined, (error: unknown) => report(options, name, error));
  } catch (error) {
    report(options, name, error);
  }
}

function report<T>(options: ResolvedOptions<T>, name: Callback, error: unknown): void {
  try {
    options.onCallbackError(error, name);
  } catch {
    // The error reporter itself failed; there is nowhere left to send this, and the loop must go on.
  }
}

export function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (
    value !== null &&
    (typeof value === "object" || typeof value === "function") &&
    typeof (value as PromiseLike<unknown>).then === "function"
  );
}

/**
 * Calls `run` and reports its outcome through exactly one of `onValue` or `onError`: a synchronous value
 * or throw at once, a thenable's when it settles (a thenable whose `then` throws reports that error).
 * Written with callbacks so that a thenable that settles synchronously (the simulator's) is reported
 * synchronously too.
 */
export function invoke<T>(
  run: () => T | PromiseLike<T>,
  onValue: (value: T) => void,
  onError: (error: unknown) => void,
): void {
  let result: T | PromiseLike<T>;
  try {
    result = run();
  } catch (error) {
    onError(error);
    return;
  }
  if (!isThenable(result)) {
    onValue(result as T);
    return;
  }
  try {
    (result as PromiseLike<T>).then(onValue, onError);
  } catch (error) {
    onError(error);
  }
}

/** True when `value` ends the call (retryOnResult does not ask for another attempt); calls onSuccess then. */
export function accepted<T>(options: ResolvedOptions<T>, value: T): boolean {
  if (options.retryOnResult?.(value)) return false;
  // Stateful backoffs (a shared ResponsiveBackoff) learn of the success first.
  for (const backoff of options.successHooks) backoff.succeeded?.();
  if (options.onSuccess !== undefined) {
    const onSuccess = options.onSuccess;
    safely(options, "onSuccess", () => onSuccess(value));
  }
  return true;
}

/** What `retryReport` tells about an error a call ended with. */
export interface RetryReport {
  /** Why the call stopped: the error was not retryable, a limit was reached, or a PermanentError stopped it. */
  readonly reason: GiveUpReason;
  /** How many attempts the call made. */
  readonly attempts: number;
  /** Milliseconds from the first attempt to the decision to stop. */
  readonly elapsed: number;
}

// Reports live beside the errors, never on them: the caller's error object is passed through unchanged.
const reports = new WeakMap<object, RetryReport>();

/**
 * Tells why a call of `retry` (or of a wrapped function) ended with `error`, without touching the error
 * itself. Undefined for errors robustly did not end a call with (and for non-object errors).
 *
 * @example
 * try { await retry(op, { maxRetries: 2 }); } catch (error) { retryReport(error); // { reason: "max-retries", attempts: 3, elapsed: 3012 } }
 */
export function retryReport(error: unknown): RetryReport | undefined {
  return typeof error === "object" && error !== null ? reports.get(error) : undefined;
}

/**
 * One call of the retry loop. Create it, then call `begin()` to make the first attempt, or `resume()` to
 * go on from a first attempt that already failed. It settles through `resolve` or `reject`, exactly once,
 * and leaves no timer and no listener behind.
 */
export class RetryCall<T> {
  readonly #operation: (context: AttemptContext) => T | PromiseLike<T>;
  readonly #options: ResolvedOptions<T>;
  readonly #start: number;
  readonly #resolve: (value: T) => void;
  readonly #reject: (error: unknown) => void;
  #retries = 0;
  #state: RetryState | undefined;
  /** The attempt in progress, undefined while sleeping or once settled. */
  #attempt: Attempt | undefined;
  /** Cancels the attempt's timeout or the backoff sleep, whichever is running. */
  #cancelTimer: CancelTimer | undefined;
  #listening = false;
  #done = false;

  constructor(
    operation: (context: AttemptContext) => T | PromiseLike<T>,
    options: ResolvedOptions<T>,
    start: number,
    resolve: (value: T) => void,
    reject: (error: unknown) => void,
  ) {
    this.#operation = operation;
    this.#options = options;
    this.#start = start;
    this.#resolve = resolve;
    this.#reject = reject;
  }

  /** Makes the first attempt. */
  begin(): void {
    this.#options.budget?.request();
    if (this.#listen()) this.#attemptNow();
  }

  /**
   * Starts listening to the caller's signal (once per call). False, with the call ended, when it has
   * aborted already.
   */
  #listen(): boolean {
    const signal = this.#options.signal;
    if (signal === undefined || this.#listening) return true;
    if (signal.aborted) {
      this.#finish();
      this.#reject(signal.reason);
      return false;
    }
    signal.addEventListener("abort", this.#onAbort);
    this.#listening = true;
    return true;
  }

  /** Goes on from a first attempt that failed with `error` (run outside, with no timeout and no signal). */
  resume(failed: Attempt, error: unknown): void {
    this.#attempt = failed;
    this.#failed(failed, error);
  }

  #attemptNow(): void {
    const options = this.#options;
    if (options.breaker !== undefined) {
      try {
        options.breaker.acquire();
      } catch (open) {
        // The circuit is open: fail at once, without an attempt.
        this.#finish();
        if (typeof open === "object" && open !== null) {
          reports.set(open, {
            reason: "breaker-open",
            attempts: this.#retries,
            elapsed: options.clock.now() - this.#start,
          });
        }
        this.#reject(open);
        return;
      }
    }
    const elapsed = this.#retries === 0 ? 0 : options.clock.now() - this.#start;
    const attempt = new Attempt(this.#retries, options.timeout, elapsed);
    this.#attempt = attempt;
    if (options.timeout !== Number.POSITIVE_INFINITY) {
      this.#cancelTimer = options.clock.setTimer(options.timeout, this.#onTimeout);
    }
    invoke(
      () => this.#operation(attempt),
      (value) => this.#succeeded(attempt, value),
      (error) => this.#failed(attempt, error),
    );
  }

  /** Ends `attempt` if it is still the one in progress; false for a late or repeated outcome. */
  #end(attempt: Attempt): boolean {
    if (this.#attempt !== attempt) return false;
    this.#attempt = undefined;
    this.#cancelTimer?.();
    this.#cancelTimer = undefined;
    return true;
  }

  // The timeout timer is cancelled whenever an attempt ends, so when it fires, the attempt in progress is
  // the one it was set for: one callback serves every attempt of the call.
  readonly #onTimeout = (): void => {
    this.#cancelTimer = undefined;
    const attempt = this.#attempt;
    if (attempt !== undefined) this.#timedOut(attempt);
  };

  #timedOut(attempt: Attempt): void {
    if (!this.#end(attempt)) return;
    // Made in a timer callback, where a stack says nothing about the caller: none is captured.
    const timeout = this.#options.timeout;
    const error = withoutStack(() => new TimeoutError(timeout));
    attempt.abort(error);
    this.#afterFailure(attempt, error);
  }

  #succeeded(attempt: Attempt, value: T): void {
    if (!this.#end(attempt)) return;
    let error: unknown;
    try {
      if (accepted(this.#options, value)) {
        this.#options.breaker?.success();
        this.#options.budget?.succeeded();
        this.#finish();
        this.#resolve(value);
        return;
      }
      error = new RetryableResultError(value);
    } catch (thrown) {
      // retryOnResult threw: that is this attempt's error.
      error = thrown;
    }
    this.#afterFailure(attempt, error);
  }

  #failed(attempt: Attempt, error: unknown): void {
    if (!this.#end(attempt)) return;
    this.#afterFailure(attempt, error);
  }

  #afterFailure(attempt: Attempt, error: unknown): void {
    const options = this.#options;
    const { clock, signal } = options;
    if (signal?.aborted) {
      this.#finish();
      this.#reject(signal.reason);
      return;
    }
    options.breaker?.failure();
    options.budget?.failed();
    if (options.onError !== undefined) {
      const onError = options.onError;
      const retries = this.#retries;
      safely(options, "onError", () => onError(error, retries));
      // onError may have aborted the caller's signal, which ended the call.
      if (this.#done) return;
    }
    if (error instanceof PermanentError) {
      this.#giveUp(
        error.cause === undefined ? error : error.cause,
        "permanent",
        attempt,
        clock.now() - this.#start,
      );
      return;
    }
    const elapsed = clock.now() - this.#start;
    this.#state ??= new RetryState(options.policies);
    let decision: ReturnType<RetryState["decide"]>;
    try {
      decision = this.#state.decide(error, elapsed, options.random);
    } catch (broken) {
      // A matcher or a custom strategy threw (or a strategy returned no number): end the call with that
      // error rather than leave it hanging.
      this.#finish();
      this.#reject(broken);
      return;
    }
    if (typeof decision === "string") {
      this.#giveUp(error, decision, attempt, elapsed);
      return;
    }
    if (options.budget !== undefined && !options.budget.tryRetry()) {
      this.#giveUp(error, "budget", attempt, elapsed);
      return;
    }
    const { delay } = decision;
    if (options.onRetry !== undefined) {
      const onRetry = options.onRetry;
      const last = options.policies.length - 1;
      const event = {
        error,
        retries: this.#retries,
        delay,
        attempt: attempt.attempt,
        elapsed,
        rule: decision.policy === last ? -1 : decision.policy,
      };
      safely(options, "onRetry", () => onRetry(event));
    }
    // A callback may have aborted the caller's signal: stop before sleeping.
    if (this.#done || !this.#listen()) return;
    this.#cancelTimer = clock.setTimer(delay, this.#wake);
  }

  readonly #wake = (): void => {
    this.#cancelTimer = undefined;
    if (this.#done) return;
    this.#retries += 1;
    this.#attemptNow();
  };

  readonly #onAbort = (): void => {
    if (this.#done) return;
    const reason = this.#options.signal?.reason;
    const attempt = this.#attempt;
    this.#attempt = undefined;
    this.#finish();
    attempt?.abort(reason);
    this.#reject(reason);
  };

  /** Ends the call with the last outcome: the value `retryOnResult` kept rejecting, or the error as it was. */
  #giveUp(error: unknown, reason: GiveUpReason, attempt: Attempt, elapsed: number): void {
    this.#finish();
    if (error instanceof RetryableResultError) {
      this.#resolve(error.value as T);
      return;
    }
    if (typeof error === "object" && error !== null) {
      reports.set(error, { reason, attempts: attempt.attempt, elapsed });
    }
    this.#reject(error);
  }

  /** Marks the call settled and removes its timer and its listener. */
  #finish(): void {
    this.#done = true;
    this.#cancelTimer?.();
    this.#cancelTimer = undefined;
    if (this.#listening) {
      this.#options.signal?.removeEventListener("abort", this.#onAbort);
      this.#listening = false;
    }
  }
}
