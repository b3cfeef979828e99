import { uniform } from "../core/random.js";
import { EQUAL_CHECKS } from "./checks.js";
import { type JitterMode, markFactories, mode } from "./common.js";
import type { Jitter } from "./types.js";

export interface EqualJitterOptions {
  /** "uniform" (default): b/2 + uniform(0, b/2), as AWS does. "choice": b/2 + random_choice(0, b/2), one end or the other. */
  mode?: JitterMode;
}

/**
 * Equal jitter: half the backoff for sure, the other half jittered (AWS Architecture Blog, "Exponential Backoff And Jitter", 2015).
 *
 * @example
 * jitter.equal();
 */
export function equal(options?: EqualJitterOptions): Jitter {
  const m = mode(EQUAL_CHECKS, options);
  return {
    name: m === "uniform" ? "equal" : "equal-choice",
    apply({ backoff, retries, random }) {
      const half = backoff.delay(retries, random) / 2;
      if (m === "uniform") return half + uniform(random, 0, half);
      return random() < 0.5 ? half : half * 2;
    },
  };
}

// Passed uncalled (`backoff: backoff.exponential`), a factory fails at once, naming the fix.
markFactories(equal);
