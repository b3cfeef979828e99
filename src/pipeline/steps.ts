/**
 * `steps`: every built-in step, by name. A step is any object with `execute(next, context)`; these are
 * robustly's own.
 */
import { breakerStep } from "../breaker/step.js";
import { bulkheadStep } from "../bulkhead/step.js";
import { chaosStep } from "../chaos/chaos.js";
import { fallbackStep } from "../fallback/fallback.js";
import { hedgeStep } from "../hedge/hedge.js";
import { retryStep } from "../retry/step.js";
import { timeoutStep } from "../timeout/step.js";

/**
 * The built-in steps.
 *
 * @example
 * const p = pipeline(steps.timeout(10_000), steps.retry({ maxRetries: 5 }), steps.breaker(breaker), steps.timeout(2000));
 */
export const steps = Object.freeze({
  /** Runs what is inside again while the policy allows (`retry`'s options, without timeout, signal, clock or random). */
  retry: retryStep,
  /** A time limit on what is inside: `steps.timeout(2000)` or `{ ms, onTimeout }`. */
  timeout: timeoutStep,
  /** Each run of what is inside passes a circuit breaker (`circuitBreaker()`), which hears of its outcome. */
  breaker: breakerStep,
  /** Each run of what is inside is hedged (`hedge()`'s options, without signal or clock). */
  hedge: hedgeStep,
  /** At most `limit` runs of what is inside at once, `queue` more waiting; the rest refused. */
  bulkhead: bulkheadStep,
  /** A value (or a function's) instead of an error that `when` matches. */
  fallback: fallbackStep,
  /** Injected latency, faults and results (`chaos()`'s options, without signal or clock). */
  chaos: chaosStep,
});
