/**
 * Why a call ended, filed beside its error (never on it): nothing is written on the caller's error object
 * (only its `stack` may gain the caller's frames: see `call-site.ts`).
 */

/** Why a retry step stopped retrying. */
export type GiveUpReason =
  | "retries"
  | "elapsed"
  | "not-retryable"
  | "permanent"
  | "budget"
  | "aborted"
  | "breaker";

/**
 * A call's statistics (tenacity's `statistics`): what `onSuccess` receives beside the value, and what
 * `retryReport` tells beside the reason.
 */
export interface RetryStats {
  /** How many attempts the call made. */
  readonly attempts: number;
  /**
   * Milliseconds from the start of the first attempt to the end (the success, or the decision to stop).
   */
  readonly elapsed: number;
  /** Of `elapsed`, the milliseconds slept in backoffs between attempts (tenacity's `idle_for`). */
  readonly idle: number;
}

/** What `retryReport` tells about an error a call ended with. */
export interface RetryReport extends RetryStats {
  /**
   * Why the call stopped retrying: `retries` (maxRetries reached), `elapsed` (maxElapsed reached),
   * `not-retryable`, `permanent` (a `PermanentError`), `budget` (refused by the retry budget), `breaker`
   * (refused by an open circuit).
   */
  readonly reason: GiveUpReason;
}

const reports = new WeakMap<object, RetryReport>();

/** Files what ended a call beside its error. */
export function report(error: unknown, what: RetryReport): void {
  if (typeof error === "object" && error !== null) reports.set(error, what);
}

/**
 * Tells why a call of `retry` (or a retry step) ended with `error`, without touching the error itself.
 * Undefined for errors robustly did not end a call with (and for non-object errors).
 *
 * @example
 * try { await retry(op, { maxRetries: 2 }); } catch (error) { retryReport(error); // { reason: "retries", attempts: 3, elapsed: 3012, idle: 3000 } }
 */
export function retryReport(error: unknown): RetryReport | undefined {
  // A WeakMap answers undefined for a key that is no object.
  return reports.get(error as object);
}
