import type { Random } from "../core/random.js";

/**
 * A backoff strategy: the delay before a retry, before jitter. Pure: the delay depends only on `retries` (x, the
 * number of retries so far, 0 before the first retry) and, for random strategies, on `random`.
 * It never sleeps and holds no mutable state, so one instance can serve any number of concurrent calls.
 *
 * @example
 * const halfSecondSteps: Backoff = { name: "steps", base: 500, max: 5000, delay: (x) => Math.min(5000, 500 * (x + 1)) };
 */
export interface Backoff {
  /** A short name for messages and tables. */
  readonly name: string;
  /** v_base, the smallest delay in ms. Decorrelated jitters start from it. */
  readonly base: number;
  /** v_max, the largest delay in ms (Infinity when uncapped). */
  readonly max: number;
  /** v_x in ms, for x = `retries`. */
  delay(retries: number, random: Random): number;
  /**
   * For a stateful backoff shared across calls (such as `ResponsiveBackoff`): the retry loop calls it
   * once each time a call that uses this backoff succeeds. Pure strategies leave it out.
   */
  success?(): void;
  /**
   * For a stateful backoff: a copy whose state is this one's and changes apart from it. `delays()` asks
   * for one so that a preview never changes the live controller.
   */
  fork?(): Backoff;
}

/** A custom backoff as a bare function of x (and a `Random`); robustly treats it as base 0, max Infinity. */
export type BackoffFunction = (retries: number, random: Random) => number;

/** What every `backoff` option accepts. */
export type BackoffLike = Backoff | BackoffFunction;
