import { checked } from "../core/schema.js";
import { LINEAR_CHECKS } from "./checks.js";
import { baseAndMax, capped, markFactories, SECOND } from "./common.js";
import type { Backoff } from "./types.js";

export interface LinearOptions {
  /** v_base in ms. Default 1000. */
  base?: number;
  /** v_max in ms. Default Infinity. */
  max?: number;
  /** L >= 0, the growth per retry in ms. Default 1000. The variant base × (x+1) is `interval` = `base`. */
  interval?: number;
}

/**
 * Linear (interval) backoff: v_x = min(v_max, v_base + L × x).
 *
 * @example
 * backoff.linear({ base: 0, interval: 1000 }); // 0, 1000, 2000, … (the common linear strategy)
 */
export function linear(options?: LinearOptions): Backoff {
  const { base, max } = baseAndMax(LINEAR_CHECKS, options);
  const interval = checked(LINEAR_CHECKS, "interval", options?.interval ?? SECOND);
  return { name: "linear", base, max, delay: (x) => capped(base + interval * x, max) };
}

// Passed uncalled (`backoff: backoff.exponential`), a factory fails at once, naming the fix.
markFactories(linear);
