/**
 * `CircuitBreaker.execute`: one call through a breaker, as a promise, with the caller's abort.
 */
import { watchAbort } from "../core/abort.js";

/** What `executeThrough` needs of a breaker. */
export interface Acquirable {
  acquire(): number;
  release(): void;
  settle(outcome: unknown, failed: boolean, then?: () => void, started?: number): void;
}

/**
 * Runs `fn` through `breaker`: refused at once while `acquire()` throws; its outcome is settled exactly
 * once. With a `signal`, an abort rejects at once with its reason and is released, counting as nothing.
 */
export function executeThrough<T>(
  breaker: Acquirable,
  fn: (signal?: AbortSignal) => T | PromiseLike<T>,
  signal?: AbortSignal,
): Promise<T> {
  if (signal?.aborted) return Promise.reject(signal.reason);
  let started: number;
  try {
    started = breaker.acquire();
  } catch (error) {
    return Promise.reject(error);
  }
  return new Promise<T>((resolve, reject) => {
    let done = false;
    const unwatch =
      signal === undefined
        ? undefined
        : watchAbort(signal, () => {
            if (done) return;
            done = true;
            breaker.release();
            reject(signal.reason);
          });
    const end = (outcome: unknown, failed: boolean) => {
      if (done) return;
      done = true;
      unwatch?.();
      // Passed on once the breaker has counted it (an async `handles` answers first).
      breaker.settle(outcome, failed, () => (failed ? reject(outcome) : resolve(outcome as T)), started);
    };
    let result: T | PromiseLike<T>;
    try {
      result = fn(signal);
    } catch (error) {
      end(error, true);
      return;
    }
    Promise.resolve(result).then(
      (value) => end(value, false),
      (error) => end(error, true),
    );
  });
}
