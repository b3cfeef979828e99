/**
 * What a hedged call reads: the hedging delay, why a hedge starts, what `onHedge` receives, and the
 * resolved options. They live here, not in hedge.ts, because hedge.ts makes each `HedgedCall`: the
 * imports run hedge.ts → call.ts → types.ts and never back. hedge.ts re-exports them.
 */
import type { BudgetLike } from "../core/budget-like.js";
import type { Clock } from "../core/clock.js";
import type { CallbackErrorHandler } from "../core/events.js";
import type { Random } from "../core/random.js";
import type { LatencyTracker } from "./latency-tracker.js";

/**
 * The hedging delay read from recent latencies: the `percentile` of the latencies `of` holds, or
 * `fallback` while it holds fewer than `minSamples`.
 */
export interface PercentileDelay {
  /** In [0, 1], e.g. 0.95. */
  percentile: number;
  /** The tracker to read (`latencyTracker()`). */
  of: LatencyTracker;
  /** ms, used while the tracker holds too few latencies. */
  fallback: number;
  /** Latencies the tracker must hold before its percentile is used, an integer >= 1. Default 1. */
  minSamples?: number;
  /**
   * Whether `hedge` records the latencies it sees into the tracker. Default true. Turn it off when you
   * record into the tracker yourself.
   */
  record?: boolean;
}

/** A fixed number of ms, or a percentile of recent latencies. */
export type HedgeDelay = number | PercentileDelay;

/** Why a hedge started. */
export type HedgeTrigger = "delay" | "failure";

/** Reported by `onHedge` as a hedge starts. */
export interface HedgeEvent {
  /** The number of the attempt about to start (2 for the first hedge). */
  readonly attempt: number;
  /** ms since the call began. */
  readonly after: number;
  /** The hedging delay elapsed, or an attempt failed (with `hedgeOnFailure`). */
  readonly trigger: HedgeTrigger;
}

export interface ResolvedHedge {
  readonly delay: HedgeDelay;
  readonly maxHedges: number;
  readonly hedgeOnFailure: boolean;
  readonly budget: BudgetLike | undefined;
  readonly signal: AbortSignal | undefined;
  readonly onHedge: ((event: HedgeEvent) => void) | undefined;
  readonly onCallbackError: CallbackErrorHandler;
  readonly clock: Clock;
  readonly random: Random | undefined;
  /** The tracker `hedge` records into, when it does. */
  readonly tracker: LatencyTracker | undefined;
}
