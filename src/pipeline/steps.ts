/**
 * The built-in steps, by name: the `steps` namespace (`steps.retry(…)`, `steps.timeout(2000)`, …). A step
 * is any object with `execute(next, context)`; these are robustly's own. A namespace of re-exports, not an
 * object, so that an app's bundle holds only the steps it makes.
 *
 * - `retry`: runs what is inside again while the policy allows (`retry`'s options, without timeout,
 *   signal, clock or random).
 * - `timeout`: a time limit on what is inside: `steps.timeout(2000)` or `{ ms, onTimeout }`.
 * - `breaker`: each run of what is inside passes a circuit breaker (`circuitBreaker()`), which hears of
 *   its outcome.
 * - `hedge`: each run of what is inside is hedged (`hedge()`'s options, without signal, clock or random).
 * - `bulkhead`: at most `limit` runs of what is inside at once, `queue` more waiting; the rest refused.
 * - `adaptiveLimit`: the same with a limit found from the runs' latencies and drops (`adaptiveLimit()`'s
 *   options, or a limit to share).
 * - `fallback`: a value (or a function's) instead of an error that `when` matches.
 * - `rateLimit`: each run of what is inside takes a token of a rate limiter (`rateLimiter()`'s options, or
 *   a limiter to share), waits for one, or is refused with `RateLimitedError`.
 * - `chaos`: injected latency, faults and results (`chaos()`'s options, without signal or clock).
 */
export { breakerStep as breaker } from "../breaker/step.js";
export { bulkheadStep as bulkhead } from "../bulkhead/step.js";
export { chaosStep as chaos } from "../chaos/chaos.js";
export { fallbackStep as fallback } from "../fallback/fallback.js";
export { hedgeStep as hedge } from "../hedge/hedge.js";
export { adaptiveLimitStep as adaptiveLimit } from "../limit/step.js";
export { rateLimitStep as rateLimit } from "../ratelimit/step.js";
export { retryStep as retry } from "../retry/step.js";
export { timeoutStep as timeout } from "../timeout/step.js";
