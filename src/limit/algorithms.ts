/**
 * How an adaptive concurrency limit moves: each algorithm hears one sample per finished call (its latency,
 * how many calls were in flight when it started, whether it was dropped: a timeout or a congestion error)
 * and answers the next limit, unclamped, with the reason. The limiter clamps it to [min, max] and rounds
 * it down for admission. Each algorithm keeps only its own few numbers; none reads a clock.
 *
 * - AIMD, the rule TCP's congestion control is built on (RFC 5681): grow by one for each call that
 *   finished while the limit was in use, cut by a ratio at each drop.
 * - Vegas, after TCP Vegas (Brakmo and Peterson, 1994) as Netflix's concurrency-limits library applies it
 *   to a server: the shortest latency seen is the latency with no queue; the calls queued at the server are
 *   estimated as limit × (1 − shortest / latest). Few queued: grow; many: shrink; a drop: shrink.
 * - Gradient2, Netflix concurrency-limits' Gradient2Limit: the ratio of a long-term average latency to the
 *   latest (the gradient, between 0.5 and 1, with a tolerance) scales the limit, and a queue allowance
 *   (√limit) is added; the result is smoothed. Latency rising above its long-term level shrinks the limit,
 *   latency at that level lets it grow by the allowance.
 */

import { OptionError } from "../core/errors.js";
import { checkKeys, read } from "../core/schema.js";
import { AIMD_CHECKS, GRADIENT2_CHECKS, VEGAS_CHECKS } from "./checks.js";

/** Checks an algorithm's options (an object or nothing), naming each bad one. */
function options<O extends object>(checks: typeof AIMD_CHECKS, given: unknown): O {
  if (given === undefined) return {} as O;
  if (typeof given !== "object" || given === null)
    throw new OptionError(checks.where, given, "an object of its options, or nothing");
  checkKeys(checks, given, checks.where);
  for (const key of Object.keys(checks.fields)) read(checks, key, (given as Record<string, unknown>)[key]);
  return given as O;
}

/** One finished call, as an algorithm hears it. */
export interface LimitSample {
  /** Its latency, ms, finite and >= 0. */
  readonly latency: number;
  /** Calls in flight when it started, itself included. */
  readonly inFlight: number;
  /** Whether it was dropped: a timeout, or an error the limiter counts as congestion. */
  readonly dropped: boolean;
}

/** Why a limit moved: `grow` (latency at its floor, or a call fit), `latency` (latency rose), `drop`. */
export type LimitReason = "grow" | "latency" | "drop";

/** An algorithm's answer: the next limit, unclamped, and why (undefined for no change of reason). */
export interface LimitUpdate {
  readonly limit: number;
  readonly reason: LimitReason;
}

/** An adaptive limit's algorithm: one per limiter (it keeps that limiter's latencies). */
export interface LimitAlgorithm {
  readonly name: string;
  /** The limit after `sample`, from `limit` now. */
  update(limit: number, sample: LimitSample): LimitUpdate;
}

/** AIMD's options. */
export interface AimdOptions {
  /** The ratio a drop multiplies the limit by, in [0.5, 1). Default 0.9. */
  readonly backoffRatio?: number;
}

/**
 * AIMD: +1 for each call that finished undropped while at least half the limit was in flight (a limit
 * that is not in use is not evidence of room), × `backoffRatio` for a dropped one.
 */
export function aimd(given?: AimdOptions): LimitAlgorithm {
  const ratio = options<AimdOptions>(AIMD_CHECKS, given).backoffRatio ?? 0.9;
  return {
    name: "aimd",
    update: (limit, sample) => {
      if (sample.dropped) return { limit: limit * ratio, reason: "drop" };
      if (sample.inFlight * 2 >= limit) return { limit: limit + 1, reason: "grow" };
      return { limit, reason: "grow" };
    },
  };
}

/** Vegas's options. */
export interface VegasOptions {
  /** Estimated queued calls under which the limit grows: alpha × log10(limit). Default 3. */
  readonly alpha?: number;
  /** Estimated queued calls over which it shrinks: beta × log10(limit). Default 6. */
  readonly beta?: number;
}

/** log10, at least 1: the step by which Vegas moves a limit (1 for limits up to 10). */
const step = (limit: number) => Math.max(1, Math.log10(limit));

/**
 * Vegas: the shortest latency seen is the latency with nothing queued; queued ≈ limit × (1 − shortest /
 * latest). Below alpha × log10(limit) queued, +log10(limit); above beta × log10(limit), −log10(limit);
 * a drop, −log10(limit) too.
 */
export function vegas(given?: VegasOptions): LimitAlgorithm {
  const o = options<VegasOptions>(VEGAS_CHECKS, given);
  const alpha = o.alpha ?? 3;
  const beta = o.beta ?? 6;
  if (beta < alpha) throw new OptionError("vegas: beta", beta, `a number at least alpha (${alpha})`);
  let shortest = Number.POSITIVE_INFINITY;
  return {
    name: "vegas",
    update: (limit, sample) => {
      if (sample.dropped) return { limit: limit - step(limit), reason: "drop" };
      // A call that took no time (a cache hit, a clock stepped back) says nothing of the server's queue,
      // and as the shortest latency it would make every later one look like a full queue.
      if (!(sample.latency > 0)) return { limit, reason: "grow" };
      shortest = Math.min(shortest, sample.latency);
      // A latency of 0 (or one as short as ever) means nothing queued.
      const queued = sample.latency > shortest ? limit * (1 - shortest / sample.latency) : 0;
      const unit = Math.max(1, Math.log10(limit));
      if (queued < alpha * unit) return { limit: limit + step(limit), reason: "grow" };
      if (queued > beta * unit) return { limit: limit - step(limit), reason: "latency" };
      return { limit, reason: "grow" };
    },
  };
}

/** Gradient2's options. */
export interface Gradient2Options {
  /** How much the latest latency may exceed the long-term average before the limit shrinks. Default 1.5. */
  readonly tolerance?: number;
  /** The weight of a new limit against the old, in (0, 1]. Default 0.2. */
  readonly smoothing?: number;
  /** The samples the long-term average spans (an exponential average's window). Default 600. */
  readonly longWindow?: number;
}

/**
 * Gradient2: gradient = clamp(tolerance × long-term average / latest, 0.5, 1); next = limit × gradient +
 * √limit, smoothed: limit × (1 − smoothing) + next × smoothing. The long-term average follows the latency
 * with weight 2 / (longWindow + 1); when it has drifted above twice the latest, it is pulled back to it.
 * A dropped call takes the gradient's floor, 0.5. While under half the limit is in flight, the limit does
 * not grow.
 */
export function gradient2(given?: Gradient2Options): LimitAlgorithm {
  const o = options<Gradient2Options>(GRADIENT2_CHECKS, given);
  const tolerance = o.tolerance ?? 1.5;
  const smoothing = o.smoothing ?? 0.2;
  const weight = 2 / ((o.longWindow ?? 600) + 1);
  let long: number | undefined;
  return {
    name: "gradient2",
    update: (limit, sample) => {
      const latest = sample.latency;
      // A call that took no time says nothing of the latency's level: it is left out of the average.
      if (!(latest > 0) && !sample.dropped) return { limit, reason: "grow" };
      long = long === undefined ? latest : long + (latest - long) * weight;
      if (long > 2 * latest) long = latest;
      // A drop is congestion whatever its latency: the gradient's floor.
      const gradient = sample.dropped
        ? 0.5
        : latest > 0
          ? Math.max(0.5, Math.min(1, (tolerance * long) / latest))
          : 1;
      let next = limit * gradient + Math.sqrt(limit);
      next = limit * (1 - smoothing) + next * smoothing;
      if (sample.dropped) return { limit: Math.min(next, limit), reason: "drop" };
      if (next > limit && sample.inFlight * 2 < limit) return { limit, reason: "grow" };
      return { limit: next, reason: next < limit ? "latency" : "grow" };
    },
  };
}

/** The algorithms by name, as `adaptiveLimit({ algorithm: "vegas" })` takes them. */
export const ALGORITHMS = { aimd, vegas, gradient2 } as const;
