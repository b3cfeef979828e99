/**
 * robustly: reach unreliable resources robustly.
 *
 * `retry` and `wrap` run an operation with per-attempt timeouts, retry policies, backoff, jitter and
 * scaling (seed 000's access wrapper); `backoff.*` and `jitter.*` are the strategies; `delays` shows the
 * delays a policy would sleep.
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
export {
  type BudgetEvents,
  type BudgetState,
  type RatioBudgetOptions,
  type RetryBudget,
  retryBudget,
  type TokenBudgetOptions,
} from "./budget/retry-budget.js";
export {
  type ChaosEvent,
  type ChaosMetrics,
  type ChaosOperation,
  type ChaosOptions,
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
export { type CancelTimer, type Clock, MAX_TIMER_DELAY, sleep, systemClock } from "./core/clock.js";
export { OptionError, PermanentError, RetryableResultError, TimeoutError } from "./core/errors.js";
export type { Disposable } from "./core/events.js";
export { type Random, seededRandom, systemRandom } from "./core/random.js";
export {
  type HedgeContext,
  type HedgeDelay,
  type HedgeEvent,
  HedgeLostError,
  type HedgeOptions,
  type HedgeTrigger,
  hedge,
  type LatencyTracker,
  type LatencyTrackerOptions,
  latencyTracker,
  type PercentileDelay,
} from "./hedge/index.js";
export { type RetryAfterOptions, type RetryAfterSource, retryAfter } from "./http/retry-after.js";
export {
  FETCH_DEFAULTS,
  type FetchLike,
  isNetworkError,
  type RobustFetch,
  type RobustFetchOptions,
  robustFetch,
  withRetry,
} from "./http/robust-fetch.js";
export type {
  DecorrelatedAwsOptions,
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
export type { GiveUpReason } from "./policy/decide.js";
export type { ErrorClass, ErrorMatcher } from "./policy/matcher.js";
export {
  type AttemptContext,
  DEFAULTS,
  type RetryEvent,
  type RetryOptions,
  type RetryPolicy,
  type RetryRule,
} from "./policy/options.js";
export { delays } from "./retry/delays.js";
export { type RetryReport, retryReport } from "./retry/loop.js";
export { retry, wrap } from "./retry/retry.js";
export {
  type MemoryStoreOptions,
  memoryStore,
  type NodeRedisClientLike,
  type RedisClientLike,
  type RedisStoreOptions,
  redisStore,
  type SharingOptions,
  type Store,
  type StoreEntry,
  StoreTimeoutError,
  type StoreWrite,
} from "./store/index.js";
export {
  type DeadLetter,
  type DeadLetterReason,
  type Delivery,
  type Envelope,
  type Handler,
  inProcessWorker,
  MessageDeadLetteredError,
  MessageDroppedError,
  type ProcessWorkerOptions,
  processWorker,
  type RestartStrategy,
  type ServeOptions,
  type StopOptions,
  SUPERVISOR_DEFAULTS,
  type SuperviseOptions,
  type Supervisor,
  type SupervisorEvents,
  SupervisorGaveUpError,
  type SupervisorMetrics,
  type SupervisorState,
  SupervisorStoppedError,
  serveWorker,
  supervise,
  type ThreadWorkerOptions,
  threadWorker,
  WorkerExitError,
  type WorkerFactory,
  type WorkerHandle,
  type WorkerInfo,
  type WorkerStartContext,
  type WorkerState,
  type WorkerStatus,
} from "./supervisor/index.js";
