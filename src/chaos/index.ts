/** Fault injection: `chaos` wraps an operation with injected latency, faults and results. */
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
} from "./chaos.js";
