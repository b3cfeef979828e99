/**
 * The retry budget every retry loop draws on unless its options name another (`budget: retryBudget(…)`)
 * or none (`budget: false`): retries may add at most 20 % to the calls of the last 10 s, plus 10 retries a
 * second that are always allowed. Those are the defaults of Finagle's RetryBudget (ttl 10 s,
 * minRetriesPerSec 10, percentCanRetry 0.2), which Linkerd ships too.
 *
 * A default budget belongs to a target: each `wrap`ped function, each retry step (so each pipeline that
 * has one), each `robustFetch` origin, and one for the process that every short-form `retry` call shares.
 * Within a target, each clock has its own: calls on a `VirtualClock` count in that clock's virtual time,
 * never in the process's.
 *
 * Kept small, because every `retry` carries it: ten buckets of a second in a ring, no store, no restore.
 * `retryBudget()` makes the full ratio budget, which a fleet can share.
 */
import { type Clock, systemClock, unrefClock } from "../core/clock.js";
import { OptionError } from "../core/errors.js";
import { type Disposable, safeCall, warnOnce } from "../core/events.js";

/** Retries allowed per call over the window (Finagle's percentCanRetry). */
export const DEFAULT_BUDGET_RATIO = 0.2;
/** Retries allowed per second whatever the traffic (Finagle's minRetriesPerSec). */
export const DEFAULT_BUDGET_MIN_PER_SECOND = 10;
/** The window, ms (Finagle's ttl): ten buckets of a second. */
export const DEFAULT_BUDGET_WINDOW = 10_000;
const BUCKETS = 10;
const WIDTH = DEFAULT_BUDGET_WINDOW / BUCKETS;
/** The retries a window allows with no calls at all. */
const FLOOR = (DEFAULT_BUDGET_MIN_PER_SECOND * DEFAULT_BUDGET_WINDOW) / 1000;
/** Bucket number `bucket`'s slot in the ring. */
const slot = (bucket: number) => ((bucket % BUCKETS) + BUCKETS) % BUCKETS;

/** What a default budget reports: `refused`, with its state, when it turns a retry down. */
export interface DefaultBudgetEvents extends Record<string, unknown> {
  refused: { readonly state: DefaultBudgetState };
}

/** A default budget's counts over its window, oldest bucket first, and the number of its latest bucket. */
export interface DefaultBudgetState {
  readonly kind: "ratio";
  readonly requests: readonly number[];
  readonly retries: readonly number[];
  readonly bucketAt: number;
}

/**
 * One default budget: Finagle's ratio and floor over a 10 s window, on one clock. It has the methods a call
 * draws on (`request`, `tryRetry`, `success`, `failure`), so it can also be passed as `budget` to share
 * a target's default with others.
 */
export class DefaultBudget {
  readonly kind = "ratio";
  readonly clock: Clock;
  readonly #requests = new Array<number>(BUCKETS).fill(0);
  readonly #retries = new Array<number>(BUCKETS).fill(0);
  #requested = 0;
  #retried = 0;
  /** The latest bucket's number (a time divided by the width, rounded down). */
  #head = Number.NEGATIVE_INFINITY;
  /** Its slot in the ring. */
  #slot = 0;
  /**
   * Its `refused` listeners. The one event model, without the `Events` class: every `retry` carries this
   * budget, and one event needs no map of them.
   */
  /**
   * The mark this budget's calls put on their attempts, so that a step inside that is given this budget
   * too (a hedge step) counts no call twice. One for all: a default budget hears no attempt's outcome.
   */
  readonly claim: { readonly budget: DefaultBudget; inner: boolean } = { budget: this, inner: false };
  readonly #refused = new Set<(payload: DefaultBudgetEvents["refused"]) => void>();

  constructor(clock: Clock) {
    this.clock = clock;
  }

  /**
   * Moves the window on to time `now`, emptying the buckets that left it; the head's slot. A time a little
   * before the latest bucket counts in it (a clock read by many calls need not be read in order); one
   * before the whole window (a clock stepped back, or one that read far ahead once, as fake timers that
   * were advanced and then uninstalled) starts the window again from it, so that it never stays stuck
   * ahead of the clock. A reading that is no finite number moves nothing.
   */
  #at(now: number): number {
    const bucket = Math.floor(now / WIDTH);
    const gone = bucket - this.#head;
    if ((gone > 0 || gone <= -BUCKETS) && Number.isFinite(bucket)) {
      if (gone >= BUCKETS || gone <= -BUCKETS) {
        this.#requests.fill(0);
        this.#retries.fill(0);
        this.#requested = 0;
        this.#retried = 0;
      } else {
        for (let i = 1; i <= gone; i++) {
          const s = slot(this.#head + i);
          this.#requested -= this.#requests[s] as number;
          this.#retried -= this.#retries[s] as number;
          this.#requests[s] = 0;
          this.#retries[s] = 0;
        }
      }
      this.#head = bucket;
      this.#slot = slot(bucket);
    }
    return this.#slot;
  }

  /** A call starts: it counts as traffic. `now`: the call's own reading of this budget's clock. */
  request(now?: number): void {
    const s = this.#at(now ?? this.clock.now());
    this.#requests[s] = (this.#requests[s] as number) + 1;
    this.#requested += 1;
  }

  success(): void {}

  failure(): void {}

  /** Whether a retry would be allowed now, without taking it. */
  get available(): boolean {
    this.#at(this.clock.now());
    return this.#retried + 1 <= DEFAULT_BUDGET_RATIO * this.#requested + FLOOR;
  }

  /** May one more retry happen now? If so it is counted; if not, a `refused` event says so. */
  tryRetry(): boolean {
    if (!this.available) {
      if (this.#refused.size > 0) {
        const payload = { state: this.snapshot() };
        for (const listener of [...this.#refused]) safeCall(warnOnce, "refused", () => listener(payload));
      }
      return false;
    }
    const s = this.#slot;
    this.#retries[s] = (this.#retries[s] as number) + 1;
    this.#retried += 1;
    return true;
  }

  /** Listens to `refused` (its only event) until the handle is disposed. */
  on<K extends keyof DefaultBudgetEvents>(
    event: K,
    listener: (payload: DefaultBudgetEvents[K]) => void,
  ): Disposable {
    if (event !== "refused" || typeof listener !== "function")
      throw new TypeError(
        `on("${String(event)}", listener): the event is "refused", the listener a function`,
      );
    // A wrapper, so that the same function added twice is two listeners, each with its own dispose.
    const entry = (payload: DefaultBudgetEvents["refused"]) => listener(payload);
    this.#refused.add(entry);
    return { dispose: () => this.#refused.delete(entry) };
  }

  /**
   * Its counts now, laid out as a ratio budget's `snapshot()` has them (bucket n's counts at index n mod 10,
   * `bucketAt` the latest bucket), so that a `retryBudget()` can `restore` them.
   */
  snapshot(): DefaultBudgetState {
    this.#at(this.clock.now());
    return {
      kind: "ratio",
      requests: [...this.#requests],
      retries: [...this.#retries],
      bucketAt: this.#head === Number.NEGATIVE_INFINITY ? 0 : this.#head,
    };
  }
}

/**
 * The default budgets of one target, one per clock (the real clock's timers, unref'd or not, are one). A
 * budget is kept only while its clock is: a virtual clock a test let go takes its budget with it.
 */
export class DefaultBudgets {
  #real: DefaultBudget | undefined;
  #others: WeakMap<Clock, DefaultBudget> | undefined;

  /** The target's default budget on `clock`, made at its first call. */
  of(clock: Clock): DefaultBudget {
    if (clock === systemClock || clock === unrefClock) {
      if (this.#real === undefined) this.#real = new DefaultBudget(systemClock);
      return this.#real;
    }
    if (this.#others === undefined) this.#others = new WeakMap();
    let budget = this.#others.get(clock);
    if (budget === undefined) {
      budget = new DefaultBudget(clock);
      this.#others.set(clock, budget);
    }
    return budget;
  }

  /** Forgets every budget: the next call makes a fresh one (for test runs that share one process). */
  clear(): void {
    this.#real = undefined;
    this.#others = undefined;
  }
}

/** The process's default budgets: every short-form `retry` call (and `attempts()`) draws on them. */
export const processBudgets = new DefaultBudgets();

/**
 * The default retry budget the short-form `retry` calls on `clock` share (default: the real clock): to
 * watch it (`on("refused", …)`, `snapshot()`), or to pass it as `budget` to calls that should share it.
 *
 * @example
 * defaultBudget().on("refused", ({ state }) => console.warn("retry refused", state));
 */
export function defaultBudget(clock: Clock = systemClock): DefaultBudget {
  const given = clock as Partial<Clock> | null;
  if (typeof given?.now !== "function" || typeof given.setTimer !== "function")
    throw new OptionError("defaultBudget: clock", clock, "a Clock (an object with now() and setTimer())");
  return processBudgets.of(clock);
}
