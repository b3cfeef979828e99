import type { Backoff } from "../backoff/types.js";
import type { Random } from "../core/random.js";

/** What a jitter strategy sees before one retry. */
export interface JitterInput {
  /** The backoff strategy in force, so a jitter can compute (or recompute) v_x. */
  readonly backoff: Backoff;
  /** x, the retries so far as the backoff counts them (a decorrelated jitter may have reset it earlier). */
  readonly retries: number;
  /** The randomness to draw from. */
  readonly random: Random;
  /** The jittered delay chosen before the previous retry under the same rule, unscaled; undefined before the first. */
  readonly previous: number | undefined;
  /** The `state` this jitter answered with before the previous retry under the same rule; undefined before the first. */
  readonly state?: number | undefined;
}

/**
 * A jitter's answer when it also changed x (a jitter may change the retry count the backoff sees), or
 * keeps a number for the next retry (as a sum carried from one retry to the next).
 */
export interface JitterResult {
  /** The jittered delay in ms, before scaling. */
  readonly delay: number;
  /** The x the backoff used (the x it was given, unless it changed it); the next retry continues from `retries + 1`. */
  readonly retries: number;
  /** A number to find in `input.state` before the next retry under the same rule. */
  readonly state?: number;
}

/**
 * A jitter strategy: given the backoff and x, returns the jittered delay (or a
 * `JitterResult` when it changes x). Pure apart from drawing on `input.random`.
 *
 * @example
 * const tenPercentMore: Jitter = { name: "plus10", apply: ({ backoff, retries, random }) => backoff.delay(retries, random) * (1 + 0.1 * random()) };
 */
export interface Jitter {
  readonly name: string;
  apply(input: JitterInput): number | JitterResult;
}

/** A custom jitter as a bare function of the raw backoff delay v_x (and a `Random`). */
export type JitterFunction = (delay: number, random: Random) => number;

/** What every `jitter` option accepts. */
export type JitterLike = Jitter | JitterFunction;
