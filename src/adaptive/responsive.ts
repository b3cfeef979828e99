/**
 * Responsive (adaptive) exponential backoff, a shared pacing controller: one delay shared by many workers that grows on
 * failures and shrinks after runs of successes, so that together they find the pace a rate-limited
 * resource can take, and speed up again as it scales.
 */

import type { Backoff } from "../backoff/types.js";
import { type Clock, clockOption, sleep } from "../core/clock.js";
import { OptionError } from "../core/errors.js";
import { type Disposable, Events } from "../core/events.js";
import { checkedRandom, type Random, systemRandom } from "../core/random.js";
import { checkKeys, read } from "../core/schema.js";
import { finiteAtLeast, integerAtLeast, knownKeys } from "../core/validate.js";
import { MAX_SKEW, type SharingOptions, scratchOptions, sharingOptions } from "../store/replica.js";
import { forEachRun, type RunBatch, replayingRandom } from "../store/run-log.js";
import { restoreShared, SharedPolicy, SharedRuns, type StoreEvents } from "../store/shared-policy.js";
import { RESPONSIVE_CHECKS } from "./checks.js";

export interface ResponsiveBackoffOptions extends SharingOptions {
  /** The delay after the first failure, ms; below it a shrinking delay drops to 0. Default 500. */
  base?: number;
  /** The largest delay, ms. Default 900,000 (15 min). */
  max?: number;
  /** Each new delay is uniform in [i − δ, i + δ], δ = min(factor × i, maxSpread). In [0, 1]; default 0.3. */
  spread?: number;
  /** The cap on δ, ms. Default 120,000 (2 min). */
  maxSpread?: number;
  /** Multiplies the delay on a failure; >= 1. Default 1.5. */
  upMultiplier?: number;
  /** Multiplies the delay after `downThreshold` successes; in (0, 1]. Default 0.9. */
  downMultiplier?: number;
  /** Successes in a row that shrink the delay once; an integer >= 1. Default 10. */
  downThreshold?: number;
  /**
   * robustly's addition to the plain controller: count a burst of failures as one. With many workers sharing the delay, every request
   * already in flight when the resource starts refusing fails too, and the plain controller multiplies the
   * delay once for each of them (50 workers: 1.5^50). With `coalesce`, a failure less than the current delay after the
   * last increase is taken as part of the same burst: it waits the current delay but does not raise it.
   * Default false (the plain controller).
   */
  coalesce?: boolean;
  /** Where `sleepOnFailure` and `sleepOnSuccess` wait (and, with `coalesce`, what tells the time). Default: the real clock. */
  clock?: Clock;
  /** The randomization's source. Default `Math.random`. */
  random?: Random;
}

/** Everything a responsive backoff knows: one plain object, to read, store and restore. */
export interface ResponsiveState {
  /** The delay now, ms; 0 before the first failure and after shrinking below the base delay. */
  current: number;
  /** Successes since the delay last shrank (or since it was 0). */
  successes: number;
  invocations: number;
  wentUp: number;
  wentDown: number;
  slept: number;
  /** Sum of the delays handed out, ms. */
  totalSleep: number;
}

/** What a responsive backoff reports, `store-down` and `store-up` too when it shares its delay through a store. */
export interface ResponsiveEvents extends StoreEvents {
  /** The delay went up (a failure) or down (after `downThreshold` successes). */
  change: { readonly direction: "up" | "down"; readonly from: number; readonly to: number };
}

/** What a shared responsive backoff keeps in its store. */
interface SharedResponsive {
  readonly state: ResponsiveState;
  /** When the delay last went up (store time), for `coalesce`. */
  readonly raisedAt: number | null;
}

const SUCCESS = 0;
const FAILURE = 1;

/** The controller's counters, and the current delay. */
export interface ResponsiveMetrics {
  readonly invocations: number;
  readonly wentUp: number;
  readonly wentDown: number;
  readonly slept: number;
  readonly totalSleep: number;
  readonly current: number;
}

const STATE_KEYS = [
  "current",
  "successes",
  "invocations",
  "wentUp",
  "wentDown",
  "slept",
  "totalSleep",
] as const;

export const RESPONSIVE_DEFAULTS = Object.freeze({
  base: 500,
  max: 900_000,
  spread: 0.3,
  maxSpread: 120_000,
  upMultiplier: 1.5,
  downMultiplier: 0.9,
  downThreshold: 10,
});

/**
 * A shared pacing controller: `failure()` and `success()` update one shared delay and return what to wait;
 * `sleepOnFailure()` and `sleepOnSuccess()` wait it too. Every method runs to completion synchronously, so
 * any number of concurrent async workers can share one instance.
 *
 * With a `store` (and a `key`), the delay is shared by every process that names the same store and key
 * (`SharingOptions`).
 *
 * It is also a `Backoff` whose state outlives a call: `retry(op, { backoff: responsive, jitter: jitter.none() })`
 * asks it for a delay on each failure (counting it as one) and tells it when a call succeeds.
 *
 * @example
 * const pace = new ResponsiveBackoff({ base: 100 });
 * const put = throttle((item) => table.put(item), pace); // every worker shares `pace`
 */
export class ResponsiveBackoff extends SharedPolicy implements Backoff {
  readonly name = "responsive";
  /** v_base, for jitters that read it: the base delay. */
  readonly base: number;
  readonly max: number;
  readonly #base: number;
  readonly #factor: number;
  readonly #maxSpread: number;
  readonly #up: number;
  readonly #down: number;
  readonly #threshold: number;
  readonly #coalesce: boolean;
  /** When the delay last went up (clock time), for `coalesce`. */
  #raisedAt = Number.NEGATIVE_INFINITY;
  readonly #clock: Clock;
  readonly #random: Random;
  readonly #events = new Events<ResponsiveEvents>();
  readonly #options: ResponsiveBackoffOptions | undefined;
  /** Shared mode: SUCCESS and FAILURE in the order seen since the last exchange, and the draws made. */
  readonly #runs = new SharedRuns();
  #state: ResponsiveState = {
    current: 0,
    successes: 0,
    invocations: 0,
    wentUp: 0,
    wentDown: 0,
    slept: 0,
    totalSleep: 0,
  };

  constructor(options?: ResponsiveBackoffOptions) {
    super();
    checkKeys(RESPONSIVE_CHECKS, options);
    const o = { ...RESPONSIVE_DEFAULTS, ...options };
    // Each value checked as its description says (undefined: the default; null or anything else: an error).
    const field = <V>(key: keyof ResponsiveBackoffOptions, fallback?: V): V =>
      read<V | undefined>(RESPONSIVE_CHECKS, key, (options as Record<string, unknown> | undefined)?.[key]) ??
      (fallback as V);
    this.#base = field("base", RESPONSIVE_DEFAULTS.base);
    this.max = field("max", RESPONSIVE_DEFAULTS.max);
    if (this.max < this.#base)
      throw new OptionError("ResponsiveBackoff: max", o.max, `>= base (${this.#base})`);
    this.base = this.#base;
    this.#factor = field("spread", RESPONSIVE_DEFAULTS.spread);
    this.#maxSpread = field("maxSpread", RESPONSIVE_DEFAULTS.maxSpread);
    this.#up = field("upMultiplier", RESPONSIVE_DEFAULTS.upMultiplier);
    this.#down = field("downMultiplier", RESPONSIVE_DEFAULTS.downMultiplier);
    this.#threshold = field("downThreshold", RESPONSIVE_DEFAULTS.downThreshold);
    this.#coalesce = field("coalesce", false);
    const clock = clockOption(
      "ResponsiveBackoff: clock",
      options?.clock,
      "a Clock with now() and setTimer(ms, callback)",
    );
    const given = field<Random | undefined>("random");
    const random = given === undefined ? systemRandom : checkedRandom(given, "ResponsiveBackoff: random");
    this.#random = random;
    this.#options = options;
    const sharing = sharingOptions("ResponsiveBackoff", o);
    // `coalesce` compares times of failures seen by different processes: on the store's clock.
    this.#clock = this.share("responsive", sharing, clock, this.#events, () =>
      this.#runs.hooks(
        checkSharedResponsive,
        (shared, batch, now, recovering) => this.#merge(shared, batch, now, recovering),
        (shared: SharedResponsive) => this.#adopt(shared),
      ),
    );
  }

  /** The shared state with `outcomes` replayed on it, in order, by this very controller's rules. */
  #merge(shared: unknown, batch: RunBatch, now: number, recovering: boolean): SharedResponsive {
    // The same draws as this process made, so that its own outcomes move the fleet's delay as they moved its own.
    const random = replayingRandom(batch.draws, this.#random);
    const scratch = new ResponsiveBackoff({ ...scratchOptions(this.#options, now), random });
    restoreShared(shared, (state) => {
      const found = state as SharedResponsive;
      scratch.restore(found.state);
      // Not later than now (and MAX_SKEW): no process of the fleet raised it later.
      scratch.#raisedAt =
        typeof found.raisedAt === "number"
          ? Math.min(found.raisedAt, now + MAX_SKEW)
          : Number.NEGATIVE_INFINITY;
    });
    if (!recovering) scratch.#replay(batch.runs);
    const raisedAt = scratch.#raisedAt;
    return { state: scratch.snapshot(), raisedAt: Number.isFinite(raisedAt) ? raisedAt : null };
  }

  #adopt(shared: SharedResponsive): void {
    const from = this.#state.current;
    this.restore(shared.state);
    this.#raisedAt = shared.raisedAt ?? Number.NEGATIVE_INFINITY;
    this.#runs.replayOwn(this.#random, (runs) => this.#replay(runs));
    const to = this.#state.current;
    if (from !== to && this.#events.count("change") > 0) {
      this.#events.emit("change", { direction: to > from ? "up" : "down", from, to });
    }
  }

  /** Applies runs of outcomes [outcome, count, …] (from `#record`), one by one, so the delays are drawn as they would be. */
  #replay(runs: readonly number[]): void {
    forEachRun(runs, (outcome, count) => {
      for (let i = 0; i < count; i++) outcome === FAILURE ? this.failure() : this.success();
    });
  }

  /** Records a failure: the delay grows (from 0 to the base delay). Returns the delay to wait, ms. */
  failure(): number {
    this.#runs.record(FAILURE);
    const s = this.#state;
    s.invocations += 1;
    if (this.#coalesce) {
      const now = this.#clock.now();
      // Part of the burst that the last increase answered: wait, but do not raise again.
      if (s.current > 0 && now - this.#raisedAt < s.current) return this.#slept();
      this.#raisedAt = now;
    }
    s.wentUp += 1;
    const from = s.current;
    if (s.current === 0) {
      s.current = this.#base;
    } else {
      const next = this.#randomize(s.current * this.#up);
      s.current = next > this.max ? this.max : next;
    }
    // Told of a change only: a failure at max leaves the delay where it was.
    if (s.current !== from && this.#events.count("change") > 0 && !this.#runs.quiet)
      this.#events.emit("change", { direction: "up", from, to: s.current });
    return this.#slept();
  }

  /**
   * Records a success: every `downThreshold` successes the delay shrinks, to 0 below the base delay.
   * Returns the delay to wait, ms (0, and not counted as a sleep, while the delay is 0).
   */
  success(): number {
    this.#runs.record(SUCCESS);
    const s = this.#state;
    s.invocations += 1;
    if (s.current === 0) return 0;
    s.successes += 1;
    if (s.successes === this.#threshold) {
      s.wentDown += 1;
      s.successes = 0;
      const from = s.current;
      const next = this.#randomize(s.current * this.#down);
      // The spread may draw above the delay it shrinks from: never above max, as on the way up.
      s.current = next < this.#base ? 0 : next > this.max ? this.max : next;
      if (s.current !== from && this.#events.count("change") > 0 && !this.#runs.quiet)
        this.#events.emit("change", { direction: "down", from, to: s.current });
    }
    return this.#slept();
  }

  /** `failure()`, then waits the delay on the clock; rejects with `signal.reason` if it aborts. */
  sleepOnFailure(signal?: AbortSignal): Promise<void> {
    return this.#wait(this.failure(), signal);
  }

  /** `success()`, then waits the delay on the clock; rejects with `signal.reason` if it aborts. */
  sleepOnSuccess(signal?: AbortSignal): Promise<void> {
    return this.#wait(this.success(), signal);
  }

  /** Calls `listener` each time the delay goes up or down, until disposed. */
  on<K extends keyof ResponsiveEvents>(
    event: K,
    listener: (payload: ResponsiveEvents[K]) => void,
  ): Disposable {
    return this.#events.on(event, listener);
  }

  /** The counters and the current delay. */
  metrics(): ResponsiveMetrics {
    const { invocations, wentUp, wentDown, slept, totalSleep, current } = this.#state;
    return { invocations, wentUp, wentDown, slept, totalSleep, current };
  }

  /** A copy of the whole state. */
  /**
   * A copy of this controller that shares nothing with it (no store, a clock frozen at now): to preview
   * delays (`delays()` uses it) without counting failures that never happened.
   */
  fork(): ResponsiveBackoff {
    const copy = new ResponsiveBackoff({
      ...scratchOptions(this.#options, this.#clock.now()),
      random: this.#random,
    });
    copy.restore(this.snapshot());
    copy.#raisedAt = this.#raisedAt;
    return copy;
  }

  snapshot(): ResponsiveState {
    return { ...this.#state };
  }

  /**
   * Replaces the state with `state` (from `snapshot()`, perhaps of another process), checked, and held to
   * what this controller could have reached: a delay no longer than its `max`, fewer successes than
   * `downThreshold`.
   */
  restore(state: ResponsiveState): void {
    checkResponsiveState(state);
    this.#state = {
      ...state,
      current: Math.min(state.current, this.max),
      successes: Math.min(state.successes, this.#threshold - 1),
    };
  }

  /** As a `Backoff`: every delay asked for is a failure. x is ignored: the shared state decides. */
  delay(): number {
    return this.failure();
  }

  #slept(): number {
    const s = this.#state;
    // The store is out of reach and the fleet's pace unknown: the most careful pace.
    const delay = this.replica?.refusing ? this.max : s.current;
    s.slept += 1;
    s.totalSleep += delay;
    return delay;
  }

  /** Uniform in [i − δ, i + δ], δ = min(factor × i, maxSpread) (the randomization factor of Google's
   * ExponentialBackOff, with δ capped). */
  #randomize(interval: number): number {
    if (this.#factor === 0) return interval;
    const delta = Math.min(this.#factor * interval, this.#maxSpread);
    return interval - delta + 2 * delta * this.#runs.draw(this.#random);
  }

  #wait(ms: number, signal: AbortSignal | undefined): Promise<void> {
    if (ms === 0 && !signal?.aborted) return Promise.resolve();
    return sleep(this.#clock, ms, signal);
  }
}

/** Checks `state` (from `snapshot()`, perhaps of another process) whole. */
function checkResponsiveState(state: ResponsiveState): void {
  knownKeys("ResponsiveBackoff.restore", state, STATE_KEYS);
  for (const key of STATE_KEYS) {
    const value = state[key];
    const option = `ResponsiveBackoff.restore: ${key}`;
    if (key === "current" || key === "totalSleep") finiteAtLeast(option, value, 0);
    else integerAtLeast(option, value, 0);
  }
}

/** Checks a shared responsive backoff's state as read from the store; throws when it is not one. */
function checkSharedResponsive(shared: unknown): void {
  const found = shared as Partial<SharedResponsive> | undefined;
  if (typeof found !== "object" || found === null || typeof found.state !== "object") {
    throw new OptionError("ResponsiveBackoff: shared state", shared, "{ state, raisedAt }");
  }
  checkResponsiveState(found.state as ResponsiveState);
  if (found.raisedAt !== null)
    finiteAtLeast("ResponsiveBackoff: raisedAt", found.raisedAt, Number.NEGATIVE_INFINITY);
}

/**
 * Paces every call of `fn` with `controller`, as a shared pacing controller is used: after a call that throws, it waits the
 * failure delay and rethrows; after one that succeeds, it waits the success delay and returns the value.
 * Workers that share `controller` share one pace.
 *
 * @example
 * const pace = new ResponsiveBackoff();
 * const write = throttle((row: Row) => table.put(row), pace);
 * await Promise.all(workers.map(async (rows) => { for (const row of rows) await retry(() => write(row)); }));
 */
export function throttle<A extends unknown[], T>(
  fn: (...args: A) => T | PromiseLike<T>,
  controller: ResponsiveBackoff,
  options?: { signal?: AbortSignal },
): (...args: A) => Promise<T> {
  if (typeof fn !== "function") throw new OptionError("throttle: fn", fn, "a function");
  if (!(controller instanceof ResponsiveBackoff))
    throw new OptionError("throttle: controller", controller, "a ResponsiveBackoff");
  return async (...args: A) => {
    let value: T;
    try {
      value = await fn(...args);
    } catch (error) {
      await controller.sleepOnFailure(options?.signal);
      throw error;
    }
    await controller.sleepOnSuccess(options?.signal);
    return value;
  };
}
