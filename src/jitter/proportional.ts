import { MAX_TIMER_DELAY } from "../core/clock.js";
import { uniform } from "../core/random.js";
import { checked, checkKeys } from "../core/schema.js";
import { PROPORTIONAL_CHECKS } from "./checks.js";
import { markFactories } from "./common.js";
import type { Jitter } from "./types.js";

export interface ProportionalJitterOptions {
  /** δ as a share of the delay (a "randomization factor"), in [0, 1]. Default 0.3. */
  spread?: number;
  /** The cap on δ in ms (Infinity allowed). Default 120000, two minutes. */
  maxSpread?: number;
}

/**
 * A randomization factor with a cap (as in Google's ExponentialBackOff): uniform in [d − δ, d + δ] where
 * δ = min(spread × d, maxSpread).
 *
 * @example
 * jitter.proportional({ spread: 0.2 }); // 1000 becomes anything in [800, 1200]
 */
export function proportional(options?: ProportionalJitterOptions): Jitter {
  checkKeys(PROPORTIONAL_CHECKS, options);
  const spread = checked(PROPORTIONAL_CHECKS, "spread", options?.spread ?? 0.3);
  const maxSpread = checked(PROPORTIONAL_CHECKS, "maxSpread", options?.maxSpread ?? 120_000);
  return {
    name: "proportional",
    apply({ backoff, retries, random }) {
      const d = backoff.delay(retries, random);
      const delta = proportionalDelta(d, spread, maxSpread);
      return delta === 0 ? d : Math.min(uniform(random, d - delta, d + delta), MAX_TIMER_DELAY);
    },
  };
}

/** δ for a delay d (exported for the responsive backoff, which applies the same rule). */
export function proportionalDelta(d: number, spread: number, maxSpread: number): number {
  return Math.min(spread * d, maxSpread);
}

// Passed uncalled (`backoff: backoff.exponential`), a factory fails at once, naming the fix.
markFactories(proportional);
