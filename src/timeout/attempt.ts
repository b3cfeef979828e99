/**
 * Runs one attempt under a per-attempt timeout and/or the caller's signal, settling as soon as either
 * fires even if the operation ignores its signal. A late result or rejection of the operation is observed
 * and dropped, so it never surfaces as an unhandled rejection.
 */
import type { CancelTimer, Clock } from "../core/clock.js";
import { TimeoutError } from "../core/errors.js";
import type { AttemptContext } from "../policy/options.js";

const neverAborted = new AbortController().signal;

/**
 * The context handed to the operation. Its per-attempt `AbortController` is created only if the
 * operation reads `signal`, which keeps attempts that ignore it cheap.
 */
export class Attempt implements AttemptContext {
  readonly attempt: number;
  readonly retries: number;
  readonly timeout: number;
  readonly elapsed: number;
  #callerSignal: AbortSignal | undefined;
  #controller: AbortController | undefined;
  #abortReason: unknown;
  #aborted = false;

  constructor(retries: number, timeout: number, elapsed: number, callerSignal: AbortSignal | undefined) {
    this.attempt = retries + 1;
    this.retries = retries;
    this.timeout = timeout;
    this.elapsed = elapsed;
    this.#callerSignal = callerSignal;
  }

  get signal(): AbortSignal {
    if (this.timeout === Number.POSITIVE_INFINITY) return this.#callerSignal ?? neverAborted;
    if (this.#controller === undefined) {
      this.#controller = new AbortController();
      if (this.#aborted) this.#controller.abort(this.#abortReason);
    }
    return this.#controller.signal;
  }

  /** Aborts this attempt's signal (if anyone holds it) with `reason`. */
  abort(reason: unknown): void {
    if (this.#aborted) return;
    this.#aborted = true;
    this.#abortReason = reason;
    this.#controller?.abort(reason);
  }
}

/**
 * Calls `operation(attempt)` and settles with its outcome, or rejects with a `TimeoutError` once
 * `attempt.timeout` elapses, or with `signal.reason` once the caller's signal aborts, whichever is first.
 * Removes its timer and listener when it settles.
 */
export function guardAttempt<T>(
  operation: (context: AttemptContext) => T | PromiseLike<T>,
  attempt: Attempt,
  clock: Clock,
  callerSignal: AbortSignal | undefined,
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let settled = false;
    let cancelTimer: CancelTimer | undefined;
    const onAbort = () => {
      if (settled) return;
      cleanup();
      const reason = callerSignal?.reason;
      attempt.abort(reason);
      reject(reason);
    };
    const cleanup = () => {
      settled = true;
      cancelTimer?.();
      callerSignal?.removeEventListener("abort", onAbort);
    };
    if (attempt.timeout !== Number.POSITIVE_INFINITY) {
      cancelTimer = clock.setTimer(attempt.timeout, () => {
        if (settled) return;
        cleanup();
        const error = new TimeoutError(attempt.timeout);
        attempt.abort(error);
        reject(error);
      });
    }
    if (callerSignal !== undefined) callerSignal.addEventListener("abort", onAbort, { once: true });
    let result: T | PromiseLike<T>;
    try {
      result = operation(attempt);
    } catch (error) {
      cleanup();
      reject(error);
      return;
    }
    Promise.resolve(result).then(
      (value) => {
        if (settled) return;
        cleanup();
        resolve(value);
      },
      (error: unknown) => {
        if (settled) return;
        cleanup();
        reject(error);
      },
    );
  });
}
