/**
 * Every built-in jitter strategy: the `jitter` namespace. A namespace of re-exports, not an object, so
 * that an app's bundle holds only the jitters it calls.
 */
export { decorrelated, decorrelatedAws, decorrelatedPolly } from "./decorrelated.js";
export { equal } from "./equal.js";
export { full } from "./full.js";
export { none } from "./none.js";
export { normal } from "./normal.js";
export { proportional } from "./proportional.js";
