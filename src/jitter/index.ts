/**
 * Jitter strategies, one file each.
 */
export type { JitterMode } from "./common.js";
export { toJitter } from "./common.js";
export type { DecorrelatedAwsOptions, DecorrelatedPollyOptions } from "./decorrelated.js";
export type { EqualJitterOptions } from "./equal.js";
export type { FullJitterOptions } from "./full.js";
export type { NormalJitterOptions } from "./normal.js";
export type { ProportionalJitterOptions } from "./proportional.js";
/**
 * Every built-in jitter strategy: a read-only namespace, of which a bundler keeps only what an app calls.
 *
 * @example
 * const j = jitter.full();
 */
export * as jitter from "./strategies.js";
export type { Jitter, JitterFunction, JitterInput, JitterLike, JitterResult } from "./types.js";
