import { MAX_TIMER_DELAY } from "../core/clock.js";
import { OptionError } from "../core/errors.js";
import { uniform } from "../core/random.js";
import { RANDOM_CHECKS } from "./checks.js";
import { baseAndMax, markFactories } from "./common.js";
import type { Backoff } from "./types.js";

export interface RandomOptions {
  /** v_base in ms. Default 0. */
  base?: number;
  /** v_max in ms: required, finite. */
  max: number;
}

/**
 * Random backoff: v_x = random(v_base, v_max), uniform, whatever x is.
 *
 * @example
 * backoff.random({ base: 100, max: 2000 });
 */
export function random(options: RandomOptions): Backoff {
  const { base, max } = baseAndMax(RANDOM_CHECKS, options, 0);
  if (!Number.isFinite(max))
    throw new OptionError("backoff.random: max", options?.max, "a finite number >= base (required)");
  return {
    name: "random",
    base,
    max,
    delay: (_x, rand) => Math.min(uniform(rand, base, max), MAX_TIMER_DELAY),
  };
}

// Passed uncalled (`backoff: backoff.exponential`), a factory fails at once, naming the fix.
markFactories(random);
