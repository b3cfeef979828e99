/**
 * A retry breaker (Marc Brooker, "Fixing retries with token buckets and circuit breakers", 2022): a
 * breaker that stops retries, not calls. While more than a set share of the recent attempts failed, no
 * call retries; every call still makes its first attempt, so the service keeps being offered its normal
 * load and the breaker sees at once when it is well again.
 *
 * It is given to `retry` as its `budget`, the hook by which `retry` asks before each retry.
 */
import type { BudgetEvents, BudgetState, RetryBudget } from "../budget/types.js";
import type { Clock } from "../core/clock.js";
import type { Disposable } from "../core/events.js";

export interface RetryBreakerOptions {
  /** Retries stop while at least this share of the attempts in the window failed. */
  failureRatio: number;
  /** …and at least this many attempts were made in it. */
  minimumThroughput: number;
  /** The window, ms, counted in 10 buckets. */
  window: number;
  clock: Clock;
}

const BUCKETS = 10;

/** A retry breaker over the attempts' outcomes of the last `window` ms. */
export function retryBreaker(options: RetryBreakerOptions): RetryBudget {
  const width = options.window / BUCKETS;
  const failures = new Array<number>(BUCKETS).fill(0);
  const attempts = new Array<number>(BUCKETS).fill(0);
  let head = Number.NEGATIVE_INFINITY;
  /** Moves the window to now, emptying the buckets it leaves behind. */
  const advance = (): number => {
    const bucket = Math.floor(options.clock.now() / width);
    if (bucket > head) {
      for (let b = Math.max(head + 1, bucket - BUCKETS + 1); b <= bucket; b++) {
        failures[b % BUCKETS] = 0;
        attempts[b % BUCKETS] = 0;
      }
      head = bucket;
    }
    return bucket % BUCKETS;
  };
  const record = (failed: boolean) => {
    const slot = advance();
    attempts[slot] = (attempts[slot] as number) + 1;
    if (failed) failures[slot] = (failures[slot] as number) + 1;
  };
  const open = (): boolean => {
    advance();
    const total = attempts.reduce((a, b) => a + b, 0);
    const failed = failures.reduce((a, b) => a + b, 0);
    return total >= options.minimumThroughput && failed >= options.failureRatio * total;
  };
  const nothing: Disposable = { dispose: () => {} };
  return {
    kind: "ratio",
    request: () => {},
    success: () => record(false),
    failure: () => record(true),
    tryRetry: () => !open(),
    get available() {
      return !open();
    },
    on: <K extends keyof BudgetEvents>(_event: K, _listener: (payload: BudgetEvents[K]) => void) => nothing,
    snapshot: (): BudgetState => ({ kind: "tokens", tokens: open() ? 0 : 1 }),
    restore: () => {},
    shared: false,
    ready: () => Promise.resolve(),
    close: () => Promise.resolve(),
  };
}
