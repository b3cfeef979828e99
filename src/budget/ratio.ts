/**
 * The ratio budget (Finagle's RetryBudget): within the last `window` ms, retries may be at most
 * `ratio` × requests + `minPerSecond` × window / 1000. The window is kept as buckets, so that it slides
 * (the breaker's `SlidingCounts`: a decision costs the same whatever the window).
 */

import { BUCKETS, SlidingCounts } from "../breaker/window.js";
import { type Clock, systemClock } from "../core/clock.js";
import { OptionError } from "../core/errors.js";
import { read } from "../core/schema.js";
import { MAX_SKEW } from "../store/replica.js";
import { BudgetBase } from "./base.js";
import { RATIO_BUDGET_CHECKS } from "./checks.js";
import type { BudgetState, RatioBudgetOptions } from "./types.js";

export class RatioBudget extends BudgetBase {
  readonly kind = "ratio";
  readonly #ratio: number;
  readonly #floor: number;
  readonly #clock: Clock;
  /** Requests (first) and retries (second) over the window, in BUCKETS buckets of window / BUCKETS ms. */
  readonly #window: SlidingCounts;

  constructor(options: RatioBudgetOptions) {
    super();
    const field = <V>(key: keyof RatioBudgetOptions) =>
      read<V | undefined>(RATIO_BUDGET_CHECKS, key, options[key]);
    this.#ratio = field<number>("ratio") ?? 0.2;
    const minPerSecond = field<number>("minPerSecond") ?? 10;
    const window = field<number>("window") ?? 10_000;
    this.#floor = (minPerSecond * window) / 1000;
    this.#clock = options.clock ?? systemClock;
    this.#window = new SlidingCounts(window / BUCKETS);
    this.#window.advanceTo(this.#clock.now());
  }

  /** Moves the window to now, emptying the buckets that fell out of it; returns the current bucket. */
  #advance(): number {
    const window = this.#window;
    window.advanceTo(this.#clock.now());
    return window.head;
  }

  request(): void {
    this.#window.count(this.#clock.now(), 1, 0);
  }

  /** Shared mode: counts `requests` and `retries` in the current bucket. */
  add(requests: number, retries: number): void {
    this.#window.count(this.#clock.now(), requests, retries);
  }

  /** Shared mode: takes back `retries` counted in bucket number `bucket`, if it is still in the window. */
  unretry(retries: number, bucket: number): void {
    this.#advance();
    if (retries > 0) this.#window.takeSecond(bucket, retries);
  }

  /** Shared mode: the retries the window allows now (negative: more are counted than it allows). */
  room(): number {
    this.#advance();
    return Math.floor(this.#ratio * this.#window.first + this.#floor - this.#window.second);
  }

  /** Shared mode: counts `retries` in bucket number `bucket`, if it is in the window. */
  addAt(bucket: number, retries: number): void {
    this.#advance();
    if (retries > 0) this.#window.add(bucket, 0, retries);
  }

  /**
   * Shared mode: the room and the capacity of the window as it will be in the next bucket, without the
   * oldest bucket's requests and retries (requests made meanwhile only add to it).
   */
  next(): { room: number; capacity: number } {
    const window = this.#window;
    const [oldRequests, oldRetries] = window.at(this.#advance() - BUCKETS + 1);
    const capacity = Math.floor(this.#ratio * (window.first - oldRequests) + this.#floor);
    return { room: capacity - (window.second - oldRetries), capacity };
  }

  /** Shared mode: counts `requests` in bucket number `bucket`, if it is in the window. */
  addRequestsAt(bucket: number, requests: number): void {
    this.#advance();
    if (requests > 0) this.#window.add(bucket, requests, 0);
  }

  /** Shared mode: the retries the window allows in all, spent or not. */
  capacity(): number {
    this.#advance();
    return Math.floor(this.#ratio * this.#window.first + this.#floor);
  }

  /** The current bucket's number as of the last count or check, without reading the clock again. */
  get lastBucket(): number {
    return this.#window.head;
  }

  /** A bucket's width, ms. */
  get width(): number {
    return this.#window.width;
  }

  /** The current bucket's number. */
  get bucket(): number {
    return this.#advance();
  }

  success(): void {}

  failure(): void {}

  get available(): boolean {
    this.#advance();
    return this.#window.second + 1 <= this.#ratio * this.#window.first + this.#floor;
  }

  tryRetry(): boolean {
    if (!this.available) return this.refuse();
    this.#window.count(this.#clock.now(), 0, 1);
    return true;
  }

  snapshot(): BudgetState {
    const bucketAt = this.#advance();
    const { first, second } = this.#window.slots();
    return { kind: "ratio", requests: first, retries: second, bucketAt };
  }

  /** Takes `state` (checked whole); a window dated later than now (and `MAX_SKEW`) is taken as dated then. */
  restore(state: BudgetState): void {
    const checked = checkRatioState(state);
    const latest = this.#window.bucketOf(this.#clock.now() + MAX_SKEW);
    this.#window.load(Math.min(checked.bucketAt, latest), checked.requests, checked.retries);
  }
}

/** Checks `state` (from a ratio budget's `snapshot()`, perhaps of another process) whole, before any of it is taken. */
export function checkRatioState(state: unknown): Extract<BudgetState, { kind: "ratio" }> {
  const found = state as Partial<Extract<BudgetState, { kind: "ratio" }>> | undefined;
  const count = (n: unknown) => typeof n === "number" && Number.isFinite(n) && n >= 0;
  if (
    found?.kind !== "ratio" ||
    !Array.isArray(found.requests) ||
    !Array.isArray(found.retries) ||
    found.requests.length !== BUCKETS ||
    found.retries.length !== BUCKETS ||
    !found.requests.every(count) ||
    !found.retries.every(count) ||
    typeof found.bucketAt !== "number" ||
    !Number.isFinite(found.bucketAt)
  ) {
    throw new OptionError("retryBudget.restore", state, `the state of a ratio budget (${BUCKETS} buckets)`);
  }
  return found as Extract<BudgetState, { kind: "ratio" }>;
}
