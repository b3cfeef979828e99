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

/** Runs `operation` under `options` until it succeeds, a policy gives up, or the caller aborts. */
export async function runLoop<T>(
  operation: (context: AttemptContext) => T | PromiseLike<T>,
  options: ResolvedOptions<T>,
): Promise<T> {
  const { clock, signal, timeout, policies } = options;
  if (signal?.aborted) throw signal.reason;
  const guarded = signal !== undefined || timeout !== Number.POSITIVE_INFINITY;
  const start = clock.now();
  let retries = 0;
  let state: RetryState | undefined;

  for (;;) {
    const attempt = new Attempt(retries, timeout, retries === 0 ? 0 : clock.now() - start, signal);
    let error: unknown;
    try {
      const value = guarded
        ? await guardAttempt(operation, attempt, clock, signal)
        : await operation(attempt);
      if (options.retryOnResult === undefined || !options.retryOnResult(value)) {
        if (options.onSuccess !== undefined) {
          const onSuccess = options.onSuccess;
          safely(options, "onSuccess", () => onSuccess(value));
        }
        return value;
      }
      error = new RetryableResultError(value);
    } catch (thrown) {
      error = thrown;
    }
    if (signal?.aborted) throw signal.reason;
    if (options.onError !== undefined) {
      const onError = options.onError;
      safely(options, "onError", () => onError(error, retries));
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
