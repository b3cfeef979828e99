/** Hedged requests: `hedge` and the `latencyTracker` its delay may read. */
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
  type PercentileDelay,
} from "./hedge.js";
export { type LatencyTracker, type LatencyTrackerOptions, latencyTracker } from "./latency-tracker.js";
