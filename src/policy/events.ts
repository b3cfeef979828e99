/**
 * What the retry options' `onAttempt` and `onGiveUp` receive, which the retry step's `attempt` and
 * `giveUp` events carry too. They live here, beside the options that name them, because src/retry/
 * depends on src/policy/ and never the reverse: src/retry/step.ts re-exports them.
 */
import type { GiveUpReason } from "../core/report.js";

/** What the `giveUp` event and `onGiveUp` receive when a retry step stops retrying. */
export interface GiveUpEvent {
  /** Why it stopped: `retries` or `elapsed` (a limit), `not-retryable`, `permanent`, `budget`, `aborted`, `breaker`. */
  readonly reason: GiveUpReason;
  /** The outcome it ends with: the last error, or the last value `retryOnResult` asked to retry. */
  readonly outcome: unknown;
  /** True when the outcome is a value (`retryOnResult` kept asking for retries), false for an error. */
  readonly isValue: boolean;
  /** Attempts made. */
  readonly attempts: number;
  /** Milliseconds from the first attempt to the decision. */
  readonly elapsed: number;
  /** Of `elapsed`, the milliseconds slept in backoffs. */
  readonly idle: number;
}

/** What the `attempt` event and `onAttempt` receive before each attempt. */
export interface AttemptEvent {
  /** The attempt about to start, 1-based. */
  readonly attempt: number;
  /** Retries so far (those `maxRetries` counts). */
  readonly retries: number;
  /** Retries the top-level policy still allows after this attempt (Infinity for no limit). */
  readonly retriesLeft: number;
  /** Milliseconds since the first attempt began (0 for the first). */
  readonly elapsed: number;
}
