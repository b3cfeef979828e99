import type { BreakerState } from "robustly";

/** A breaker's state as `snapshot()` gives it, with `changes` over a closed, empty one. */
export function breakerState(changes: object = {}): BreakerState {
  return {
    state: "closed",
    openUntil: 0,
    openings: 0,
    consecutiveFailures: 0,
    halfOpenSuccesses: 0,
    window: [],
    ...changes,
  } as BreakerState;
}
