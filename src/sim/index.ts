/**
 * `robustly/sim`: the overload simulator. `simulate` runs the built-in scenarios; the engine, the servers
 * and the strategies are exported to build other experiments on the same pieces.
 */
export { Simulation } from "./engine.js";
export {
  FINE_MS,
  RECOVERY,
  Recorder,
  type RecoveryRule,
  type RecoverySignals,
  recovery,
  recoverySignals,
  type Second,
} from "./metrics.js";
export { Outcome } from "./outcome.js";
export { AWS_BACKOFF_STUDY, type PublishedFigures, type PublishedPoint } from "./published.js";
export { type RetryBreakerOptions, retryBreaker } from "./retry-breaker.js";
export { runOnSimulation } from "./scenarios/clients.js";
export { FLEET_STRATEGIES, type FleetStrategy } from "./scenarios/fleet.js";
export { SIM_LIMITS, SIMULATE_SCHEMA } from "./schema.js";
export {
  CapacityServer,
  type CapacityServerOptions,
  ConflictError,
  FlakyServer,
  type FlakyServerOptions,
  LatencyServer,
  type LatencyServerOptions,
  type Pause,
  type Server,
  ServerError,
  ThrottledError,
  ThrottledStore,
  type ThrottledStoreOptions,
  VersionedStore,
  type VersionedStoreOptions,
} from "./servers.js";
export {
  type RunResult,
  SCENARIOS,
  type ScenarioName,
  type ServerKind,
  type SimulateOptions,
  type SimulationResult,
  simulate,
  simulateAsync,
} from "./simulate.js";
export { runInSlices, SLICE_MS } from "./sliced.js";
export {
  ADAPTIVE_STRATEGIES,
  AMPLIFICATION_STRATEGIES,
  AWS_STUDY_STRATEGIES,
  CONTENTION_STRATEGIES,
  METASTABLE_STRATEGIES,
  OUTAGE_ALL,
  OUTAGE_STRATEGIES,
  OUTAGE_WITH_GUARDS,
  type Strategy,
  THROTTLED_STRATEGIES,
} from "./strategies.js";
