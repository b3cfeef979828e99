import { checked } from "../core/schema.js";
import { EXPONENTIAL_CHECKS } from "./checks.js";
import { baseAndMax, capped, markFactories } from "./common.js";
import type { Backoff } from "./types.js";

export interface ExponentialOptions {
  /** v_base in ms. Default 1000. */
  base?: number;
  /** v_max in ms. Default Infinity. */
  max?: number;
  /** m >= 1. Default 2. The variant v_base^(x+1), with v_base in seconds, is `multiplier` = that number of seconds (base 3000, multiplier 3). */
  multiplier?: number;
}

/**
 * Exponential backoff: v_x = min(v_max, v_base × m^x).
 *
 * @example
 * backoff.exponential({ base: 100, max: 10_000 }); // 100, 200, 400, … 10000
 */
export function exponential(options?: ExponentialOptions): Backoff {
  const { base, max } = baseAndMax(EXPONENTIAL_CHECKS, options);
  const multiplier = checked(EXPONENTIAL_CHECKS, "multiplier", options?.multiplier ?? 2);
  return {
    name: "exponential",
    base,
    max,
    // base 0 stays 0 even when m^x overflows (0 × Infinity would be NaN).
    delay: (x) => (base === 0 ? 0 : capped(base * multiplier ** x, max)),
  };
}

// Passed uncalled (`backoff: backoff.exponential`), a factory fails at once, naming the fix.
markFactories(exponential);
