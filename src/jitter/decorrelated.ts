import { MAX_TIMER_DELAY } from "../core/clock.js";
import { uniform } from "../core/random.js";
import { checkKeys, type Schema } from "../core/schema.js";
import { atLeastOrInfinity, finiteAtLeast, maxAtLeastBase } from "../core/validate.js";
import { JITTER_SCHEMAS } from "./schema.js";
import type { Jitter } from "./types.js";

/**
 * Decorrelated jitter, robustly's form: x becomes random_choice(0, x), so the backoff "forgets" past retries
 * half of the time, and the backoff is recomputed with it. The reset x carries on (the next retry uses
 * x + 1); the count held against `maxRetries` is never reset.
 *
 * @example
 * jitter.decorrelated();
 */
export function decorrelated(): Jitter {
  return {
    name: "decorrelated",
    apply({ backoff, retries, random }) {
      const x = random() < 0.5 ? 0 : retries;
      return { delay: backoff.delay(x, random), retries: x };
    },
  };
}

export interface DecorrelatedAwsOptions {
  /** The smallest delay in ms. Default: the backoff's `base`. */
  base?: number;
  /** The cap in ms. Default: the backoff's `max`. */
  max?: number;
}

/**
 * AWS's decorrelated jitter (AWS Architecture Blog, "Exponential Backoff And Jitter", 2015):
 * sleep = min(cap, uniform(base, 3 × previous sleep)), the first sleep being base. The backoff strategy
 * only lends its `base` and `max`.
 *
 * @example
 * { backoff: backoff.exponential({ base: 100, max: 20_000 }), jitter: jitter.decorrelatedAws() }
 */
export function decorrelatedAws(options?: DecorrelatedAwsOptions): Jitter {
  checkKeys(JITTER_SCHEMAS.decorrelatedAws as Schema, options);
  const ownBase =
    options?.base === undefined ? undefined : finiteAtLeast("jitter.decorrelatedAws: base", options.base, 0);
  const ownMax =
    options?.max === undefined ? undefined : atLeastOrInfinity("jitter.decorrelatedAws: max", options.max, 0);
  if (ownBase !== undefined && ownMax !== undefined) {
    maxAtLeastBase("jitter.decorrelatedAws: max", ownMax, ownBase, true);
  }
  return {
    name: "decorrelated-aws",
    apply({ backoff, previous, random }) {
      const base = ownBase ?? backoff.base;
      const max = ownMax ?? backoff.max;
      if (previous === undefined) return Math.min(base, max, MAX_TIMER_DELAY);
      return Math.min(max, uniform(random, base, Math.max(base, 3 * previous)), MAX_TIMER_DELAY);
    },
  };
}
