/**
 * The one retry loop (seed 000's access_wrapper): attempt with a timeout, classify the outcome, ask the
 * policy, compute the delay, sleep, again. `retry`, `wrap` and everything built on them drive this loop.
 */
import { sleep } from "../core/clock.js";
import { PermanentError, RetryableResultError } from "../core/errors.js";
import { type GiveUpReason, RetryState } from "../policy/decide.js";
import type { AttemptContext, ResolvedOptions } from "../policy/options.js";
import { Attempt, guardAttempt } from "../timeout/attempt.js";

type Callback = "onSuccess" | "onError" | "onRetry";

/** Calls a user callback so that neither a throw nor a rejected promise can disturb the loop. */
function safely<T>(options: ResolvedOptions<T>, name: Callback, call: () => unknown): void {
  try {
    const result = call();
    if (
      result !== null &&
      typeof result === "object" &&
      typeof (result as PromiseLike<unknown>).then === "function"
    ) {
      (result as PromiseLike<unknown>).then(undefined, (error: unknown) => report(options, name, error));
    }
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

/**
 * Runs `operation` under `options` until it succeeds, a policy gives up, or the caller aborts.
 *
 * Without a timeout or a caller's signal, the first attempt runs here without an `async` frame: the call
 * that succeeds at once (almost every call) costs one `then` on the operation's promise. Any failure goes
 * on in `continueLoop`, the one loop that retries.
 */
export function runLoop<T>(
  operation: (context: AttemptContext) => T | PromiseLike<T>,
  options: ResolvedOptions<T>,
): Promise<T> {
  const { clock, signal, timeout } = options;
  if (signal?.aborted) return Promise.reject(signal.reason);
  const start = clock.now();
  if (signal !== undefined || timeout !== Number.POSITIVE_INFINITY) {
    return continueLoop(operation, options, start, undefined, undefined);
  }
  const first = new Attempt(0, timeout, 0, undefined);
  let result: T | PromiseLike<T>;
  try {
    result = operation(first);
  } catch (error) {
    return continueLoop(operation, options, start, first, error);
  }
  const settle = (value: T): T | Promise<T> => {
    let error: unknown;
    try {
      if (accepted(options, value)) return value;
      error = new RetryableResultError(value);
    } catch (thrown) {
      // retryOnResult threw: as in the loop, that is this attempt's error.
      error = thrown;
    }
    return continueLoop(operation, options, start, first, error);
  };
  if (!isThenable(result)) return Promise.resolve(settle(result));
  return Promise.resolve(result).then(settle, (error: unknown) =>
    continueLoop(operation, options, start, first, error),
  );
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (
    value !== null &&
    (typeof value === "object" || typeof value === "function") &&
    typeof (value as PromiseLike<unknown>).then === "function"
  );
}

/** True when `value` ends the call (retryOnResult does not ask for another attempt); calls onSuccess then. */
function accepted<T>(options: ResolvedOptions<T>, value: T): boolean {
  if (options.retryOnResult?.(value)) return false;
  if (options.onSuccess !== undefined) {
    const onSuccess = options.onSuccess;
    safely(options, "onSuccess", () => onSuccess(value));
  }
  return true;
}

/**
 * The retry loop. It starts either from an attempt that already failed (`failed`, with `error`) or, when
 * `failed` is undefined, with a first attempt of its own.
 */
async function continueLoop<T>(
  operation: (context: AttemptContext) => T | PromiseLike<T>,
  options: ResolvedOptions<T>,
  start: number,
  failed: Attempt | undefined,
  failure: unknown,
): Promise<T> {
  const { clock, signal, timeout, policies } = options;
  const guarded = signal !== undefined || timeout !== Number.POSITIVE_INFINITY;
  let retries = 0;
  let state: RetryState | undefined;
  let attempt = failed;
  let error = failure;

  for (;;) {
    if (attempt === undefined) {
      attempt = new Attempt(retries, timeout, retries === 0 ? 0 : clock.now() - start, signal);
      try {
        const value = guarded
          ? await guardAttempt(operation, attempt, clock, signal)
          : await operation(attempt);
        if (accepted(options, value)) return value;
        error = new RetryableResultError(value);
      } catch (thrown) {
        error = thrown;
      }
    }
    if (signal?.aborted) throw signal.reason;
    if (options.onError !== undefined) {
      const onError = options.onError;
      const failedRetries = retries;
      const failedWith = error;
      safely(options, "onError", () => onError(failedWith, failedRetries));
    }
    if (error instanceof PermanentError) {
      return giveUp(
        error.cause === undefined ? error : error.cause,
        "permanent",
        attempt,
        clock.now() - start,
      );
    }

    const elapsed = clock.now() - start;
    state ??= new RetryState(policies);
    const decision = state.decide(error, elapsed, options.random);
    if (typeof decision === "string") return giveUp(error, decision, attempt, elapsed);
    const { delay } = decision;
    if (options.onRetry !== undefined) {
      const onRetry = options.onRetry;
      const event = {
        error,
        retries,
        delay,
        attempt: attempt.attempt,
        elapsed,
        rule: decision.policy === policies.length - 1 ? -1 : decision.policy,
      };
      safely(options, "onRetry", () => onRetry(event));
    }
    await sleep(clock, delay, signal);
    retries += 1;
    attempt = undefined;
  }
}

/** Ends the call with the last outcome: the value `retryOnResult` kept rejecting, or the error as it was. */
function giveUp<T>(error: unknown, reason: GiveUpReason, attempt: Attempt, elapsed: number): T {
  if (error instanceof RetryableResultError) return error.value as T;
  if (typeof error === "object" && error !== null) {
    reports.set(error, { reason, attempts: attempt.attempt, elapsed });
  }
  throw error;
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
