import { MAX_TIMER_DELAY } from "../core/clock.js";
import { OptionError } from "../core/errors.js";
import { standardNormal } from "../core/random.js";
import { checked, checkKeys } from "../core/schema.js";
import { NORMAL_CHECKS } from "./checks.js";
import { markFactories } from "./common.js";
import type { Jitter } from "./types.js";

export interface NormalJitterOptions {
  /** The standard deviation as a fraction of the delay. Default 0.1. */
  sigma?: number;
  /**
   * The standard deviation in ms, the same for every delay, instead of `sigma`: the reference client of the
   * overload experiment adds N(0, 0.1 s) whatever the delay (`stddev: 100`).
   */
  stddev?: number;
}

/**
 * Normally distributed jitter: d + N(0, sigma × d), or d + N(0, stddev) with `stddev`, never
 * below 0. The normal draw is Box–Muller's.
 *
 * @example
 * jitter.normal({ sigma: 0.1 }); // 1000 ms becomes 1000 ± 100 (one standard deviation)
 * jitter.normal({ stddev: 100 }); // any delay ± 100 ms
 */
export function normal(options?: NormalJitterOptions): Jitter {
  checkKeys(NORMAL_CHECKS, options);
  if (options?.sigma !== undefined && options?.stddev !== undefined) {
    throw new OptionError(
      "jitter.normal: stddev",
      options.stddev,
      "left out when sigma is given (one or the other)",
    );
  }
  const stddev = checked(NORMAL_CHECKS, "stddev", options?.stddev);
  const sigma = checked(NORMAL_CHECKS, "sigma", options?.sigma ?? 0.1);
  return {
    name: "normal",
    apply({ backoff, retries, random }) {
      const d = backoff.delay(retries, random);
      // No spread, no draw: stddev 0, or sigma's share of 0 (sigma 0, or a delay of 0).
      if (stddev === undefined ? sigma === 0 || d === 0 : stddev === 0) return d;
      return Math.min(Math.max(d + (stddev ?? sigma * d) * standardNormal(random), 0), MAX_TIMER_DELAY);
    },
  };
}

// Passed uncalled (`backoff: backoff.exponential`), a factory fails at once, naming the fix.
markFactories(normal);
