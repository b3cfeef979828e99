/** Hedged requests: `hedge` and the `latencyTracker` its delay may read. */
export {
  type HedgeContext,
  type HedgeDelay,
  type HedgeEvent,
  HedgeLostError,
  type HedgeOptions,
  type HedgeTrigger,
  hedge,
  type PercentileDelay,
} from "./hedge.js";
export { type LatencyTracker, type LatencyTrackerOptions, latencyTracker } from "./latency-tracker.js";
