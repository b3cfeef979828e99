/**
 * Backoff strategies, one file each. x is the number of retries so far.
 */
import { capped, chain, plus, scaled } from "./combine.js";
import { markFactories } from "./common.js";
import { constant, none } from "./constant.js";
import { exponential } from "./exponential.js";
import { fibonacci } from "./fibonacci.js";
import { linear } from "./linear.js";
import { polynomial } from "./polynomial.js";
import { random } from "./random.js";
import { slotted } from "./slotted.js";

export { toBackoff } from "./common.js";
export type { ConstantOptions } from "./constant.js";
export type { ExponentialOptions } from "./exponential.js";
export type { FibonacciOptions } from "./fibonacci.js";
export { fib } from "./fibonacci.js";
export type { LinearOptions } from "./linear.js";
export type { PolynomialOptions } from "./polynomial.js";
export type { RandomOptions } from "./random.js";
export type { SlottedOptions } from "./slotted.js";
export type { Backoff, BackoffFunction, BackoffLike } from "./types.js";

/** Every built-in backoff strategy, and the functions that build backoffs from backoffs. */
export const backoff = Object.freeze({
  exponential,
  linear,
  fibonacci,
  polynomial,
  random,
  constant,
  none,
  slotted,
  chain,
  plus,
  capped,
  scaled,
});

markFactories(...Object.values(backoff));
