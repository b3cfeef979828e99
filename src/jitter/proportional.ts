import { uniform } from "../core/random.js";
import { atLeastOrInfinity, finiteAtLeast, knownKeys } from "../core/validate.js";
import type { Jitter } from "./types.js";

export interface ProportionalJitterOptions {
  /** The randomization factor, in [0, 1]. Default 0.3 (seed 003). */
  factor?: number;
  /** The cap on δ in ms (Infinity allowed). Default 120000, two minutes (seed 003). */
  maxDelta?: number;
}

/**
 * Seed 003's randomization factor with a cap: uniform in [d − δ, d + δ] where δ = min(factor × d, maxDelta).
 *
 * @example
 * jitter.proportional({ factor: 0.2 }); // 1000 becomes anything in [800, 1200]
 */
export function proportional(options?: ProportionalJitterOptions): Jitter {
  knownKeys("jitter.proportional", options, ["factor", "maxDelta"]);
  const factor = finiteAtLeast("jitter.proportional: factor", options?.factor ?? 0.3, 0, 1);
  const maxDelta = atLeastOrInfinity("jitter.proportional: maxDelta", options?.maxDelta ?? 120_000, 0);
  return {
    name: "proportional",
    apply({ backoff, retries, random }) {
      const d = backoff.delay(retries, random);
      const delta = proportionalDelta(d, factor, maxDelta);
      return delta === 0 ? d : uniform(random, d - delta, d + delta);
    },
  };
}

/** δ for a delay d (exported for the responsive backoff, which applies the same rule). */
export function proportionalDelta(d: number, factor: number, maxDelta: number): number {
  return Math.min(factor * d, maxDelta);
}
