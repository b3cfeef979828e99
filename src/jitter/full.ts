import { uniform } from "../core/random.js";
import { type JitterMode, mode } from "./common.js";
import type { Jitter } from "./types.js";

export interface FullJitterOptions {
  /** "uniform" (default): uniform(0, b), as AWS and seed 000's sample code do. "choice": seed 000's random_choice(0, b). */
  mode?: JitterMode;
}

/**
 * Full jitter: uniform(0, backoff) (AWS Architecture Blog, "Exponential Backoff And Jitter", 2015), or
 * seed 000's literal random_choice(0, backoff) with `mode: "choice"`.
 *
 * @example
 * jitter.full();
 */
export function full(options?: FullJitterOptions): Jitter {
  const m = mode("full", options);
  return {
    name: m === "uniform" ? "full" : "full-choice",
    apply({ backoff, retries, random }) {
      const b = backoff.delay(retries, random);
      if (m === "uniform") return uniform(random, 0, b);
      return random() < 0.5 ? 0 : b;
    },
  };
}
