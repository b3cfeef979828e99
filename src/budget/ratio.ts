/**
 * The ratio budget (Finagle's RetryBudget): within the last `window` ms, retries may be at most
 * `ratio` × requests + `minPerSecond` × window / 1000. The window is kept as buckets, so that it slides.
 */

import { type Clock, systemClock } from "../core/clock.js";
import { OptionError } from "../core/errors.js";
import { read } from "../core/schema.js";
import { BudgetBase } from "./base.js";
import { RATIO_BUDGET_SCHEMA } from "./schema.js";
import type { BudgetState, RatioBudgetOptions } from "./types.js";

/** The buckets a ratio budget's window is kept in. */
export const BUCKETS = 10;

export class RatioBudget extends BudgetBase {
  readonly kind = "ratio";
  readonly #ratio: number;
  readonly #floor: number;
  readonly #width: number;
  readonly #clock: Clock;
  // The window as BUCKETS buckets of window / BUCKETS ms; index = bucket number mod BUCKETS.
  #requests = new Array<number>(BUCKETS).fill(0);
  #retries = new Array<number>(BUCKETS).fill(0);
  #bucket: number;

  constructor(options: RatioBudgetOptions) {
    super();
    const field = <V>(key: keyof RatioBudgetOptions) =>
      read<V | undefined>(RATIO_BUDGET_SCHEMA, key, options[key]);
    this.#ratio = field<number>("ratio") ?? 0.2;
    const minPerSecond = field<number>("minPerSecond") ?? 10;
    const window = field<number>("window") ?? 10_000;
    this.#floor = (minPerSecond * window) / 1000;
    this.#width = window / BUCKETS;
    this.#clock = options.clock ?? systemClock;
    this.#bucket = Math.floor(this.#clock.now() / this.#width);
  }

  /** Moves the window to now, emptying the buckets that fell out of it. */
  #advance(): number {
    const bucket = Math.floor(this.#clock.now() / this.#width);
    const gone = Math.min(BUCKETS, bucket - this.#bucket);
    for (let i = 1; i <= gone; i++) {
      const index = (((this.#bucket + i) % BUCKETS) + BUCKETS) % BUCKETS;
      this.#requests[index] = 0;
      this.#retries[index] = 0;
    }
    if (bucket > this.#bucket) this.#bucket = bucket;
    return ((this.#bucket % BUCKETS) + BUCKETS) % BUCKETS;
  }

  request(): void {
    const i = this.#advance();
    this.#requests[i] = (this.#requests[i] as number) + 1;
  }

  /** Shared mode: counts `requests` and `retries` in the current bucket. */
  add(requests: number, retries: number): void {
    const i = this.#advance();
    this.#requests[i] = (this.#requests[i] as number) + requests;
    this.#retries[i] = (this.#retries[i] as number) + retries;
  }

  /** Shared mode: takes back `retries` counted in bucket number `bucket`, if it is still in the window. */
  unretry(retries: number, bucket: number): void {
    const i = this.#slot(bucket, retries);
    if (i !== undefined) this.#retries[i] = Math.max(0, (this.#retries[i] as number) - retries);
  }

  /** The window moved to now: the index of bucket number `bucket`, unless it is out of the window or `count` <= 0. */
  #slot(bucket: number, count: number): number | undefined {
    this.#advance();
    if (count <= 0 || bucket > this.#bucket || bucket <= this.#bucket - BUCKETS) return undefined;
    return ((bucket % BUCKETS) + BUCKETS) % BUCKETS;
  }

  /** Shared mode: the retries the window allows now (negative: more are counted than it allows). */
  room(): number {
    this.#advance();
    const requests = this.#requests.reduce((a, b) => a + b, 0);
    const retries = this.#retries.reduce((a, b) => a + b, 0);
    return Math.floor(this.#ratio * requests + this.#floor - retries);
  }

  /** Shared mode: counts `retries` in bucket number `bucket`, if it is in the window. */
  addAt(bucket: number, retries: number): void {
    const i = this.#slot(bucket, retries);
    if (i !== undefined) this.#retries[i] = (this.#retries[i] as number) + retries;
  }

  /**
   * Shared mode: the room and the capacity of the window as it will be in the next bucket, without the
   * oldest bucket's requests and retries (requests made meanwhile only add to it).
   */
  next(): { room: number; capacity: number } {
    this.#advance();
    const oldest = (((this.#bucket + 1) % BUCKETS) + BUCKETS) % BUCKETS;
    const requests = this.#requests.reduce((a, b) => a + b, 0) - (this.#requests[oldest] as number);
    const retries = this.#retries.reduce((a, b) => a + b, 0) - (this.#retries[oldest] as number);
    const capacity = Math.floor(this.#ratio * requests + this.#floor);
    return { room: capacity - retries, capacity };
  }

  /** Shared mode: counts `requests` in bucket number `bucket`, if it is in the window. */
  addRequestsAt(bucket: number, requests: number): void {
    const i = this.#slot(bucket, requests);
    if (i !== undefined) this.#requests[i] = (this.#requests[i] as number) + requests;
  }

  /** Shared mode: the retries the window allows in all, spent or not. */
  capacity(): number {
    this.#advance();
    const requests = this.#requests.reduce((a, b) => a + b, 0);
    return Math.floor(this.#ratio * requests + this.#floor);
  }

  /** The current bucket's number as of the last count or check, without reading the clock again. */
  get lastBucket(): number {
    return this.#bucket;
  }

  /** A bucket's width, ms. */
  get width(): number {
    return this.#width;
  }

  /** The current bucket's number. */
  get bucket(): number {
    this.#advance();
    return this.#bucket;
  }

  success(): void {}

  failure(): void {}

  get available(): boolean {
    this.#advance();
    const requests = this.#requests.reduce((a, b) => a + b, 0);
    const retries = this.#retries.reduce((a, b) => a + b, 0);
    return retries + 1 <= this.#ratio * requests + this.#floor;
  }

  tryRetry(): boolean {
    if (!this.available) return this.refuse();
    const i = this.#advance();
    this.#retries[i] = (this.#retries[i] as number) + 1;
    return true;
  }

  snapshot(): BudgetState {
    this.#advance();
    return {
      kind: "ratio",
      requests: [...this.#requests],
      retries: [...this.#retries],
      bucketAt: this.#bucket,
    };
  }

  restore(state: BudgetState): void {
    const count = (n: unknown) => typeof n === "number" && Number.isFinite(n) && n >= 0;
    if (
      state?.kind !== "ratio" ||
      !Array.isArray(state.requests) ||
      !Array.isArray(state.retries) ||
      state.requests.length !== BUCKETS ||
      state.retries.length !== BUCKETS ||
      !state.requests.every(count) ||
      !state.retries.every(count) ||
      typeof state.bucketAt !== "number" ||
      !Number.isFinite(state.bucketAt)
    ) {
      throw new OptionError("retryBudget.restore", state, `the state of a ratio budget (${BUCKETS} buckets)`);
    }
    this.#requests = [...state.requests];
    this.#retries = [...state.retries];
    this.#bucket = state.bucketAt;
  }
}
