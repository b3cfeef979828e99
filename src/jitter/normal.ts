import { standardNormal } from "../core/random.js";
import { finiteAtLeast, knownKeys } from "../core/validate.js";
import type { Jitter } from "./types.js";

export interface NormalJitterOptions {
  /** The standard deviation as a fraction of the delay. Default 0.1 (seed 002's Jitter). */
  sigma?: number;
}

/**
 * Normally distributed jitter, seed 002: d + N(0, sigma × d), never below 0.
 *
 * @example
 * jitter.normal({ sigma: 0.1 });
 */
export function normal(options?: NormalJitterOptions): Jitter {
  knownKeys("jitter.normal", options, ["sigma"]);
  const sigma = finiteAtLeast("jitter.normal: sigma", options?.sigma ?? 0.1, 0);
  return {
    name: "normal",
    apply({ backoff, retries, random }) {
      const d = backoff.delay(retries, random);
      if (sigma === 0 || d === 0) return d;
      const jittered = d + sigma * d * standardNormal(random);
      return Math.max(jittered, 0);
    },
  };
}
