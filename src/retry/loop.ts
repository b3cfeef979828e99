/**
 * How `retry` and `wrap` start the one retry loop (`RetryCall`), and how the simulator starts it too.
 */
import { RetryableResultError } from "../core/errors.js";
import type { AttemptContext, ResolvedOptions } from "../policy/options.js";
import { Attempt } from "../timeout/attempt.js";
import { accepted, isThenable, RetryCall } from "./call.js";

export { type RetryReport, retryReport } from "./call.js";

/**
 * Runs `operation` under `options` until it succeeds, a policy gives up, or the caller aborts.
 *
 * Without a timeout or a caller's signal, the first attempt runs here: the call that succeeds at once
 * (almost every call) costs one `then` on the operation's promise. A failure goes on in a `RetryCall`.
 */
export function runLoop<T>(
  operation: (context: AttemptContext) => T | PromiseLike<T>,
  options: ResolvedOptions<T>,
): Promise<T> {
  const { clock, signal, timeout } = options;
  if (signal?.aborted) return Promise.reject(signal.reason);
  const start = clock.now();
  if (
    signal !== undefined ||
    timeout !== Number.POSITIVE_INFINITY ||
    options.budget !== undefined ||
    options.breaker !== undefined
  ) {
    return new Promise<T>((resolve, reject) =>
      new RetryCall(operation, options, start, resolve, reject).begin(),
    );
  }
  const first = new Attempt(0, timeout, 0);
  const resume = (error: unknown) =>
    new Promise<T>((resolve, reject) =>
      new RetryCall(operation, options, start, resolve, reject).resume(first, error),
    );
  const settle = (value: T): T | Promise<T> => {
    let error: unknown;
    try {
      if (accepted(options, value)) return value;
      error = new RetryableResultError(value);
    } catch (thrown) {
      // retryOnResult threw: that is this attempt's error, as in the loop.
      error = thrown;
    }
    return resume(error);
  };
  let result: T | PromiseLike<T>;
  try {
    result = operation(first);
  } catch (error) {
    return resume(error);
  }
  if (!isThenable(result)) return Promise.resolve(settle(result));
  return Promise.resolve(result).then(settle, resume);
}

/**
 * Starts one call of the retry loop without a promise around it: it reports through `resolve` or
 * `reject`. The simulator drives the loop this way, with operations that settle synchronously on its own
 * clock, so that nothing waits for the microtask queue.
 */
export function startRetry<T>(
  operation: (context: AttemptContext) => T | PromiseLike<T>,
  options: ResolvedOptions<T>,
  resolve: (value: T) => void,
  reject: (error: unknown) => void,
): void {
  new RetryCall(operation, options, options.clock.now(), resolve, reject).begin();
}
