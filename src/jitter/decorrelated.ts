import { MAX_TIMER_DELAY } from "../core/clock.js";
import { uniform } from "../core/random.js";
import { checked, checkKeys } from "../core/schema.js";
import { maxAtLeastBase } from "../core/validate.js";
import { DECORRELATED_AWS_CHECKS, DECORRELATED_POLLY_CHECKS } from "./checks.js";
import { markFactories } from "./common.js";
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
  checkKeys(DECORRELATED_AWS_CHECKS, options);
  const ownBase = checked(DECORRELATED_AWS_CHECKS, "base", options?.base);
  const ownMax = checked(DECORRELATED_AWS_CHECKS, "max", options?.max);
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

export interface DecorrelatedPollyOptions {
  /** The median first delay in ms. Default: the backoff's `base`. */
  base?: number;
  /** The cap in ms. Default: the backoff's `max`. */
  max?: number;
  /** The growth of the median per retry (cockatiel's `exponent`; Polly's is 2). Default 2. */
  multiplier?: number;
}

// Polly's constants for the formula: p = 4 in tanh(√(p·t)), and 1/1.4 to make `base` the median first delay.
const P_FACTOR = 4;
const MEDIAN_SCALE = 1 / 1.4;

/**
 * Polly's decorrelated jitter, "V2" (George Polevoy's formula in Polly.Contrib.WaitAndRetry's
 * `DecorrelatedJitterBackoffV2`, built into Polly v8 and cockatiel's default `decorrelatedJitterGenerator`):
 * for retry x, t = x + uniform(0, 1) and f(t) = m^t × tanh(√(4t)); the wait is
 * min(max, (f(t_x) − f(t_(x−1))) × base / 1.4), with f(t_(−1)) = 0. The waits add up to f(t_x) × base / 1.4,
 * so their median grows by m per retry with no run of near-equal waits, and base is about the median first
 * wait. f(t_x) is carried from one retry to the next as the jitter's `state`; the backoff strategy only
 * lends its `base` and `max`.
 *
 * @example
 * { backoff: backoff.exponential({ base: 128, max: 30_000 }), jitter: jitter.decorrelatedPolly() } // cockatiel's defaults
 */
export function decorrelatedPolly(options?: DecorrelatedPollyOptions): Jitter {
  checkKeys(DECORRELATED_POLLY_CHECKS, options);
  const ownBase = checked(DECORRELATED_POLLY_CHECKS, "base", options?.base);
  const ownMax = checked(DECORRELATED_POLLY_CHECKS, "max", options?.max);
  if (ownBase !== undefined && ownMax !== undefined) {
    maxAtLeastBase("jitter.decorrelatedPolly: max", ownMax, ownBase, true);
  }
  const multiplier = checked(DECORRELATED_POLLY_CHECKS, "multiplier", options?.multiplier ?? 2);
  return {
    name: "decorrelated-polly",
    apply({ backoff, retries, random, state }) {
      const base = ownBase ?? backoff.base;
      const max = Math.min(ownMax ?? backoff.max, MAX_TIMER_DELAY);
      const t = retries + random();
      const next = multiplier ** t * Math.tanh(Math.sqrt(P_FACTOR * t));
      // Past t ≈ 1024 (for m = 2) f(t) overflows: every wait from there on is the cap.
      if (!Number.isFinite(next)) return { delay: max, retries, state: next };
      const step = Math.max(0, next - (state ?? 0));
      // base 0 waits 0 even where the step is huge (0 × a finite number; never NaN).
      return { delay: base === 0 ? 0 : Math.min(step * MEDIAN_SCALE * base, max), retries, state: next };
    },
  };
}

// Passed uncalled (`backoff: backoff.exponential`), a factory fails at once, naming the fix.
markFactories(decorrelated, decorrelatedAws, decorrelatedPolly);
