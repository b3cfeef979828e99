import { checked } from "../core/schema.js";
import { FIBONACCI_CHECKS } from "./checks.js";
import { baseAndMax, capped, markFactories, SECOND } from "./common.js";
import type { Backoff } from "./types.js";

export interface FibonacciOptions {
  /** v_base in ms. Default 1000. */
  base?: number;
  /** v_max in ms. Default Infinity. */
  max?: number;
  /** The weight of Fib(x) in ms. Default 1000 (the seeds count Fib(x) in seconds). */
  step?: number;
}

// Fib(0) = 0, Fib(1) = 1. Fib(1476) is the last one a double can hold; beyond
// it the table answers Infinity, which the cap turns into v_max.
const FIB = (() => {
  const table = new Float64Array(1477);
  table[1] = 1;
  for (let i = 2; i < table.length; i++) table[i] = (table[i - 1] as number) + (table[i - 2] as number);
  return table;
})();

/** The x-th Fibonacci number, Fib(0) = 0, Fib(1) = 1; Infinity once it no longer fits a double. */
export function fib(x: number): number {
  return x < FIB.length ? (FIB[x] as number) : Number.POSITIVE_INFINITY;
}

/**
 * Fibonacci backoff: v_x = min(v_max, v_base + Fib(x) × step).
 *
 * @example
 * backoff.fibonacci({ base: 1000 }); // 1000, 2000, 2000, 3000, 4000, 6000, …
 */
export function fibonacci(options?: FibonacciOptions): Backoff {
  const { base, max } = baseAndMax(FIBONACCI_CHECKS, options);
  const step = checked(FIBONACCI_CHECKS, "step", options?.step ?? SECOND);
  return {
    name: "fibonacci",
    base,
    max,
    delay: (x) => (step === 0 ? capped(base, max) : capped(base + fib(x) * step, max)),
  };
}

// Passed uncalled (`backoff: backoff.exponential`), a factory fails at once, naming the fix.
markFactories(fibonacci);
