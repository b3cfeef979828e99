/**
 * Jitter strategies, one file each.
 */
import { markFactories } from "./common.js";
import { decorrelated, decorrelatedAws, decorrelatedPolly } from "./decorrelated.js";
import { equal } from "./equal.js";
import { full } from "./full.js";
import { none } from "./none.js";
import { normal } from "./normal.js";
import { proportional } from "./proportional.js";

export type { JitterMode } from "./common.js";
export { toJitter } from "./common.js";
export type { DecorrelatedAwsOptions, DecorrelatedPollyOptions } from "./decorrelated.js";
export type { EqualJitterOptions } from "./equal.js";
export type { FullJitterOptions } from "./full.js";
export type { NormalJitterOptions } from "./normal.js";
export type { ProportionalJitterOptions } from "./proportional.js";
export type { Jitter, JitterFunction, JitterInput, JitterLike, JitterResult } from "./types.js";

markFactories(none, full, equal, decorrelated, decorrelatedAws, decorrelatedPolly, normal, proportional);

/** Every built-in jitter strategy. */
export const jitter = Object.freeze({
  none,
  full,
  equal,
  decorrelated,
  decorrelatedAws,
  decorrelatedPolly,
  normal,
  proportional,
});
