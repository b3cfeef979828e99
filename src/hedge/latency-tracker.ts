/**
 * A latency tracker: the last `capacity` latencies in a ring, kept sorted beside it, so that a percentile
 * is read in constant time and a new sample costs one binary search and one shift of the sorted copy.
 * `hedge` reads its delay from one (`delay: { percentile: 0.95, of: tracker, fallback: 100 }`), which is
 * the hedged request of Dean and Barroso's "The Tail at Scale" (CACM, 2013): send a second request once
 * the first has been outstanding longer than the 95th-percentile expected latency.
 */
import { finiteAtLeast, integerAtLeast, knownKeys } from "../core/validate.js";

export interface LatencyTrackerOptions {
  /** How many recent latencies it keeps, an integer >= 1. Default 1000. */
  capacity?: number;
}

/** Recent latencies and their percentiles. Share one among the calls to the same resource. */
export interface LatencyTracker {
  /** Adds a latency in ms (a finite number >= 0), forgetting the oldest one when full. */
  record(ms: number): void;
  /**
   * The `p`-th percentile (p in [0, 1]) of the latencies held, by the nearest-rank method: the smallest
   * sample that at least `p` of the samples do not exceed. Undefined while it holds none.
   */
  percentile(p: number): number | undefined;
  /** How many latencies it holds now (at most `capacity`). */
  readonly size: number;
  readonly capacity: number;
  /** Forgets every latency. */
  clear(): void;
}

/** The index of the first element of `sorted` that is >= `value` (its length when none is). */
function lowerBound(sorted: readonly number[], value: number): number {
  let low = 0;
  let high = sorted.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if ((sorted[middle] as number) < value) low = middle + 1;
    else high = middle;
  }
  return low;
}

class RingLatencyTracker implements LatencyTracker {
  readonly capacity: number;
  readonly #ring: Float64Array;
  /** Where the next sample goes in the ring; once full, also the oldest sample. */
  #next = 0;
  #sorted: number[] = [];

  constructor(capacity: number) {
    this.capacity = capacity;
    this.#ring = new Float64Array(capacity);
  }

  get size(): number {
    return this.#sorted.length;
  }

  record(ms: number): void {
    if (typeof ms !== "number" || !Number.isFinite(ms) || ms < 0) {
      throw new RangeError(`latencyTracker: a latency must be a finite number of ms >= 0; got ${String(ms)}`);
    }
    if (this.#sorted.length === this.capacity) {
      const oldest = this.#ring[this.#next] as number;
      this.#sorted.splice(lowerBound(this.#sorted, oldest), 1);
    }
    this.#ring[this.#next] = ms;
    this.#next = (this.#next + 1) % this.capacity;
    this.#sorted.splice(lowerBound(this.#sorted, ms), 0, ms);
  }

  percentile(p: number): number | undefined {
    finiteAtLeast("latencyTracker.percentile: p", p, 0, 1);
    // The nearest rank, ceil(p·n): at most n, since p ≤ 1 and a product rounds to at most the exact one;
    // an empty tracker reads index 0, which is undefined.
    return this.#sorted[Math.max(0, Math.ceil(p * this.#sorted.length) - 1)];
  }

  clear(): void {
    this.#sorted = [];
    this.#next = 0;
  }
}

/**
 * A tracker of the last `capacity` latencies (default 1000).
 *
 * @example
 * const latencies = latencyTracker();
 * await hedge(op, { delay: { percentile: 0.95, of: latencies, fallback: 200 } }); // hedge records into it
 * latencies.percentile(0.99); // the p99 of the recent attempts
 */
export function latencyTracker(options: LatencyTrackerOptions = {}): LatencyTracker {
  knownKeys("latencyTracker", options, ["capacity"]);
  return new RingLatencyTracker(integerAtLeast("latencyTracker: capacity", options.capacity ?? 1000, 1));
}
