/**
 * Every built-in backoff strategy, and the functions that build backoffs from backoffs: the `backoff`
 * namespace. A namespace of re-exports, not an object, so that an app's bundle holds only the strategies
 * it calls (`backoff.exponential(…)` brings exponential.ts alone).
 */
export { capped, chain, plus, scaled } from "./combine.js";
export { constant, none } from "./constant.js";
export { exponential } from "./exponential.js";
export { fibonacci } from "./fibonacci.js";
export { linear } from "./linear.js";
export { polynomial } from "./polynomial.js";
export { random } from "./random.js";
export { slotted } from "./slotted.js";
