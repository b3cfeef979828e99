/**
 * robustly: reach unreliable resources robustly.
 *
 * `pipeline(...steps)` runs an operation through steps (retry, timeout, breaker, hedge, bulkhead,
 * fallback, chaos, or your own); `retry` and `wrap` are its short form, with per-attempt timeouts, retry
 * policies, backoff, jitter and scaling; `backoff.*` and `jitter.*` are the strategies; `delays` shows the
 * delays a policy would sleep.
 *
 * This entry runs wherever JavaScript runs (Node.js, Deno, Bun, browsers, workers): it imports no Node.js
 * module and needs no `process` or `Buffer`. The rest has entries of its own: `robustly/supervisor`
 * (workers in threads and processes: Node.js), `robustly/redis` (the Redis store, with a Redis client),
 * `robustly/fetch` (`robustFetch` and `retryAfter` alone), `robustly/testing`, `robustly/sim` and
 * `robustly/telemetry`.
 */

export {
  RESPONSIVE_DEFAULTS,
  ResponsiveBackoff,
  type ResponsiveBackoffOptions,
  type ResponsiveEvents,
  type ResponsiveMetrics,
  type ResponsiveState,
  throttle,
} from "./adaptive/responsive.js";
export type {
  Backoff,
  BackoffFunction,
  BackoffLike,
  ConstantOptions,
  ExponentialOptions,
  FibonacciOptions,
  LinearOptions,
  PolynomialOptions,
  RandomOptions,
  SlottedOptions,
} from "./backoff/index.js";
export { backoff, fib } from "./backoff/index.js";
export {
  type BreakerEvents,
  type BreakerState,
  BrokenCircuitError,
  CircuitBreaker,
  type CircuitBreakerOptions,
  type CircuitState,
  circuitBreaker,
} from "./breaker/circuit-breaker.js";
export { BreakerStep, type BreakerStepOptions } from "./breaker/step.js";
export {
  DEFAULT_BUDGET_MIN_PER_SECOND,
  DEFAULT_BUDGET_RATIO,
  DEFAULT_BUDGET_WINDOW,
  type DefaultBudget,
  type DefaultBudgetEvents,
  type DefaultBudgetState,
  defaultBudget,
} from "./budget/default.js";
export {
  type BudgetEvents,
  type BudgetState,
  type RatioBudgetOptions,
  type RetryBudget,
  retryBudget,
  type TokenBudgetOptions,
} from "./budget/retry-budget.js";
export {
  Bulkhead,
  type BulkheadEvents,
  type BulkheadOptions,
  BulkheadRejectedError,
  bulkhead,
  MAX_BULKHEAD,
} from "./bulkhead/bulkhead.js";
export { BulkheadStep } from "./bulkhead/step.js";
export {
  type ChaosEvent,
  type ChaosMetrics,
  type ChaosOperation,
  type ChaosOptions,
  ChaosStep,
  type ChaosStepOptions,
  chaos,
  type FaultInjection,
  type LatencyInjection,
  type ResultInjection,
} from "./chaos/index.js";
export {
  type BackoffConfig,
  backoffFromConfig,
  fromConfig,
  type JitterConfig,
  jitterFromConfig,
  type PolicyConfig,
  parseTime,
  type RetryConfig,
} from "./config/from-config.js";
export {
  type CancelTimer,
  type Clock,
  MAX_TIMER_DELAY,
  sleep,
  systemClock,
  unrefClock,
} from "./core/clock.js";
export {
  OptionError,
  PermanentError,
  RETRY_AFTER,
  RetryableResultError,
  TimeoutError,
} from "./core/errors.js";
export type { CallbackErrorHandler, Disposable, EventSource } from "./core/events.js";
export { once } from "./core/events.js";
export { type Random, seededRandom, systemRandom } from "./core/random.js";
export { type GiveUpReason, type RetryReport, type RetryStats, retryReport } from "./core/report.js";
export {
  type FallbackEvent,
  type FallbackOptions,
  FallbackStep,
  type FallbackValue,
} from "./fallback/fallback.js";
export {
  type HedgeContext,
  type HedgeDelay,
  type HedgeEvent,
  type HedgeEvents,
  HedgeLostError,
  type HedgeOptions,
  HedgeStep,
  type HedgeStepOptions,
  type HedgeTrigger,
  hedge,
  type LatencyTracker,
  type LatencyTrackerOptions,
  latencyTracker,
  type PercentileDelay,
} from "./hedge/index.js";
export {
  FETCH_DEFAULTS,
  type FetchLike,
  isNetworkError,
  type RetryAfterOptions,
  type RetryAfterSource,
  type RobustFetch,
  type RobustFetchOptions,
  retryAfter,
  robustFetch,
  withRetry,
} from "./http/index.js";
export type {
  DecorrelatedAwsOptions,
  DecorrelatedPollyOptions,
  EqualJitterOptions,
  FullJitterOptions,
  Jitter,
  JitterFunction,
  JitterInput,
  JitterLike,
  JitterMode,
  JitterResult,
  NormalJitterOptions,
  ProportionalJitterOptions,
} from "./jitter/index.js";
export { jitter } from "./jitter/index.js";
export {
  AdaptiveLimit,
  type AdaptiveLimitEvents,
  type AdaptiveLimitOptions,
  type AdaptiveLimitState,
  adaptiveLimit,
  ConcurrencyLimitError,
  type LeaveLimit,
  type LimitPermit,
} from "./limit/adaptive-limit.js";
export {
  type AimdOptions,
  aimd,
  type Gradient2Options,
  gradient2,
  type LimitAlgorithm,
  type LimitReason,
  type LimitSample,
  type LimitUpdate,
  type VegasOptions,
  vegas,
} from "./limit/algorithms.js";
export { AdaptiveLimitStep } from "./limit/step.js";
export type { ExecutionContext } from "./pipeline/context.js";
export { type ExecuteOptions, type Operation, Pipeline, pipeline } from "./pipeline/pipeline.js";
export type { Next, Step } from "./pipeline/step.js";
/**
 * The built-in steps, by name: a read-only namespace, of which a bundler keeps only the steps an app makes.
 *
 * @example
 * const p = pipeline(steps.timeout(10_000), steps.retry({ maxRetries: 5 }), steps.breaker(breaker), steps.timeout(2000));
 */
export * as steps from "./pipeline/steps.js";
export type { ErrorClass, ErrorMatcher, RetryMatcher } from "./policy/matcher.js";
export {
  type AttemptContext,
  DEFAULTS,
  type DelayAnswer,
  type DelayContext,
  type DelayFrom,
  MAX_FREE_RETRIES,
  type RetryEvent,
  type RetryOptions,
  type RetryPolicy,
  type RetryRule,
  type RetryStepOptions,
} from "./policy/options.js";
export {
  type Leave,
  RateLimitedError,
  RateLimiter,
  type RateLimiterEvents,
  type RateLimiterOptions,
  type RateLimiterState,
  rateLimiter,
} from "./ratelimit/rate-limiter.js";
export { RateLimitStep } from "./ratelimit/step.js";
export { type Attempt, type AttemptsOptions, attempts } from "./retry/attempts.js";
export { delays } from "./retry/delays.js";
export { retry, retryPipeline, wrap } from "./retry/retry.js";
export {
  type AttemptErrorEvent,
  type AttemptEvent,
  type GiveUpEvent,
  type RetryEvents,
  RetryStep,
  type SuccessEvent,
} from "./retry/step.js";
export {
  MAX_SKEW,
  type MemoryStoreOptions,
  memoryStore,
  type SharingOptions,
  type Store,
  type StoreEntry,
  StoreTimeoutError,
  type StoreWrite,
} from "./store/index.js";
export {
  type TimeoutEvent,
  type TimeoutEvents,
  TimeoutStep,
  type TimeoutStepOptions,
} from "./timeout/step.js";
