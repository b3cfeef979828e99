/**
 * Backoff strategies, one file each. x is the number of retries so far.
 */
export { toBackoff } from "./common.js";
export type { ConstantOptions } from "./constant.js";
export type { ExponentialOptions } from "./exponential.js";
export type { FibonacciOptions } from "./fibonacci.js";
export { fib } from "./fibonacci.js";
export type { LinearOptions } from "./linear.js";
export type { PolynomialOptions } from "./polynomial.js";
export type { RandomOptions } from "./random.js";
export type { SlottedOptions } from "./slotted.js";
/**
 * Every built-in backoff strategy, and the functions that build backoffs from backoffs: a read-only
 * namespace, of which a bundler keeps only what an app calls.
 *
 * @example
 * const b = backoff.exponential({ base: 500, max: 10_000 });
 */
export * as backoff from "./strategies.js";
export type { Backoff, BackoffFunction, BackoffLike } from "./types.js";
