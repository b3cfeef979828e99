import { uniform } from "../core/random.js";
import { FULL_CHECKS } from "./checks.js";
import { type JitterMode, markFactories, mode } from "./common.js";
import type { Jitter } from "./types.js";

export interface FullJitterOptions {
  /** "uniform" (default): uniform(0, b), as AWS does. "choice": random_choice(0, b), 0 or b. */
  mode?: JitterMode;
}

/**
 * Full jitter: uniform(0, backoff) (AWS Architecture Blog, "Exponential Backoff And Jitter", 2015), or
 * random_choice(0, backoff), one end or the other, with `mode: "choice"`.
 *
 * @example
 * jitter.full();
 */
export function full(options?: FullJitterOptions): Jitter {
  const m = mode(FULL_CHECKS, options);
  return {
    name: m === "uniform" ? "full" : "full-choice",
    apply({ backoff, retries, random }) {
      const b = backoff.delay(retries, random);
      if (m === "uniform") return uniform(random, 0, b);
      return random() < 0.5 ? 0 : b;
    },
  };
}

// Passed uncalled (`backoff: backoff.exponential`), a factory fails at once, naming the fix.
markFactories(full);
