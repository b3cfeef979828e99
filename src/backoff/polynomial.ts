import { OptionError } from "../core/errors.js";
import { checked } from "../core/schema.js";
import { POLYNOMIAL_CHECKS } from "./checks.js";
import { baseAndMax, capped, markFactories, SECOND } from "./common.js";
import type { Backoff } from "./types.js";

export interface PolynomialOptions {
  /** v_base in ms. Default 1000. */
  base?: number;
  /** v_max in ms. Default Infinity. */
  max?: number;
  /** p_1 … p_n, each > 1. Default [2] (quadratic). */
  exponents?: readonly number[];
  /** The weight of each x^p in ms. Default 1000 (the seeds count x^p in seconds). */
  step?: number;
}

/**
 * Polynomial backoff: v_x = min(v_max, v_base + (x^p1 + x^p2 + … + x^pn) × step).
 *
 * @example
 * backoff.polynomial({ base: 0, exponents: [3] }); // 0, 1000, 8000, 27000, … (the common polynomial strategy)
 */
export function polynomial(options?: PolynomialOptions): Backoff {
  const { base, max } = baseAndMax(POLYNOMIAL_CHECKS, options);
  const exponents = options?.exponents ?? [2];
  if (!Array.isArray(exponents) || exponents.length === 0) {
    throw new OptionError(
      "backoff.polynomial: exponents",
      exponents,
      "a non-empty array of finite numbers > 1",
    );
  }
  exponents.forEach((p, i) => {
    if (typeof p !== "number" || !Number.isFinite(p) || p <= 1) {
      throw new OptionError(`backoff.polynomial: exponents[${i}]`, p, "a finite number > 1");
    }
  });
  const powers = [...exponents];
  const step = checked(POLYNOMIAL_CHECKS, "step", options?.step ?? SECOND);
  return {
    name: "polynomial",
    base,
    max,
    delay(x) {
      if (step === 0) return capped(base, max);
      let sum = 0;
      for (const p of powers) sum += x ** p;
      return capped(base + sum * step, max);
    },
  };
}

// Passed uncalled (`backoff: backoff.exponential`), a factory fails at once, naming the fix.
markFactories(polynomial);
