/**
 * A sliding window of two counts (a breaker's calls and failures, a ratio budget's requests and retries),
 * kept as `BUCKETS` buckets of window / BUCKETS ms each, in a ring: bucket number n (a time divided by the
 * width, rounded down) lives in slot n mod BUCKETS. Moving the window on empties at most `BUCKETS` slots
 * however long the silence was, and the totals are kept as counts come, so a decision costs the same
 * whatever the window and whatever state was taken over.
 */

/** [clock time of the bucket, calls, failures]. */
export type Bucket = [number, number, number];

/** How many buckets a window is kept in. */
export const BUCKETS = 10;

const slot = (bucket: number) => ((bucket % BUCKETS) + BUCKETS) % BUCKETS;

export class SlidingCounts {
  /** A bucket's width, ms. */
  readonly width: number;
  readonly #first = new Array<number>(BUCKETS).fill(0);
  readonly #second = new Array<number>(BUCKETS).fill(0);
  #firstTotal = 0;
  #secondTotal = 0;
  /** The latest bucket's number: the window is buckets head − BUCKETS + 1 to head (none before the first). */
  #head = Number.NEGATIVE_INFINITY;
  /** Its slot, kept as the window moves, so that no count needs a division. */
  #headSlot = 0;

  constructor(width: number) {
    this.width = width;
  }

  /** The number of the bucket that clock time `time` falls in. */
  bucketOf(time: number): number {
    return Math.floor(time / this.width);
  }

  /** The latest bucket's number. */
  get head(): number {
    return this.#head;
  }

  /** The first count over the window. */
  get first(): number {
    return this.#firstTotal;
  }

  /** The second count over the window. */
  get second(): number {
    return this.#secondTotal;
  }

  /** Moves the window on to bucket `bucket` (never back), emptying the buckets that leave it. */
  advance(bucket: number): void {
    const gone = bucket - this.#head;
    if (!(gone > 0)) return;
    if (gone >= BUCKETS) {
      this.clear();
      this.#headSlot = slot(bucket);
    } else {
      let s = this.#headSlot;
      for (let i = 0; i < gone; i++) {
        s = s + 1 === BUCKETS ? 0 : s + 1;
        this.#first[s] = 0;
        this.#second[s] = 0;
      }
      this.#headSlot = s;
      this.#sum();
    }
    this.#head = bucket;
  }

  /** Moves the window on to clock time `now`. */
  advanceTo(now: number): void {
    this.advance(this.bucketOf(now));
  }

  /** Whether bucket `bucket` is in the window. */
  holds(bucket: number): boolean {
    return bucket <= this.#head && bucket > this.#head - BUCKETS;
  }

  /** Moves the window on to clock time `now` and counts `first` and `second` in its latest bucket. */
  count(now: number, first: number, second: number): void {
    this.advance(Math.floor(now / this.width));
    this.#add(this.#headSlot, first, second);
  }

  /** Counts `first` and `second` in bucket `bucket`, if it is in the window. */
  add(bucket: number, first: number, second: number): void {
    if (this.holds(bucket)) this.#add(this.#slot(bucket), first, second);
  }

  #add(s: number, first: number, second: number): void {
    this.#first[s] = (this.#first[s] as number) + first;
    this.#second[s] = (this.#second[s] as number) + second;
    this.#firstTotal += first;
    this.#secondTotal += second;
  }

  /** Takes up to `n` back from the second count of bucket `bucket`, if it is in the window. */
  takeSecond(bucket: number, n: number): void {
    if (!this.holds(bucket)) return;
    const s = this.#slot(bucket);
    const was = this.#second[s] as number;
    const left = Math.max(0, was - n);
    this.#second[s] = left;
    this.#secondTotal -= was - left;
  }

  /** Bucket `bucket`'s counts ([0, 0] outside the window). */
  at(bucket: number): [number, number] {
    if (!this.holds(bucket)) return [0, 0];
    const s = this.#slot(bucket);
    return [this.#first[s] as number, this.#second[s] as number];
  }

  /** Empties every bucket, the latest being the one of clock time `now`. */
  reset(now: number): void {
    this.clear();
    this.#head = this.bucketOf(now);
    this.#headSlot = slot(this.#head);
  }

  /** Empties every bucket. */
  clear(): void {
    this.#first.fill(0);
    this.#second.fill(0);
    this.#firstTotal = 0;
    this.#secondTotal = 0;
  }

  /** The buckets that hold a count, oldest first, as [clock time of the bucket, first, second]. */
  entries(): Bucket[] {
    const out: Bucket[] = [];
    for (let i = 1 - BUCKETS; i <= 0; i++) {
      const bucket = this.#head + i;
      const [first, second] = this.at(bucket);
      if (first !== 0 || second !== 0) out.push([bucket * this.width, first, second]);
    }
    return out;
  }

  /** Both counts slot by slot (slot = bucket number mod BUCKETS), for a state to store. */
  slots(): { first: number[]; second: number[] } {
    return { first: [...this.#first], second: [...this.#second] };
  }

  /** Takes over `first` and `second` slot by slot, the latest bucket being `head`. */
  load(head: number, first: readonly number[], second: readonly number[]): void {
    this.#head = head;
    this.#headSlot = slot(head);
    for (let s = 0; s < BUCKETS; s++) {
      this.#first[s] = first[s] ?? 0;
      this.#second[s] = second[s] ?? 0;
    }
    this.#sum();
  }

  /** The slot of bucket `bucket`, which is in the window. */
  #slot(bucket: number): number {
    const s = this.#headSlot - (this.#head - bucket);
    return s < 0 ? s + BUCKETS : s;
  }

  #sum(): void {
    let first = 0;
    let second = 0;
    for (let s = 0; s < BUCKETS; s++) {
      first += this.#first[s] as number;
      second += this.#second[s] as number;
    }
    this.#firstTotal = first;
    this.#secondTotal = second;
  }
}

/**
 * The outcomes of the last `size` calls, in a ring: a window counted in calls rather than in time
 * (resilience4j's COUNT_BASED sliding window, cockatiel's `CountBreaker`). A new outcome pushes the oldest
 * out once the ring is full, and the counts are kept as outcomes come, so a decision costs the same
 * whatever the size.
 */
export class CallWindow {
  readonly size: number;
  /** 1 for a failure, 0 for a success, slot by slot. */
  readonly #failed: Uint8Array;
  /** The slot the next outcome goes in. */
  #next = 0;
  #calls = 0;
  #failures = 0;

  constructor(size: number) {
    this.size = size;
    this.#failed = new Uint8Array(size);
  }

  /** The calls in the window (at most `size`). */
  get calls(): number {
    return this.#calls;
  }

  /** The failures among them. */
  get failures(): number {
    return this.#failures;
  }

  /** Records `n` outcomes alike (of which only the last `size` can stay). */
  record(failed: boolean, n = 1): void {
    const bit = failed ? 1 : 0;
    for (let i = Math.min(n, this.size); i > 0; i--) {
      if (this.#calls === this.size) this.#failures -= this.#failed[this.#next] as number;
      else this.#calls += 1;
      this.#failed[this.#next] = bit;
      this.#failures += bit;
      this.#next = this.#next + 1 === this.size ? 0 : this.#next + 1;
    }
  }

  /** Empties the window. */
  clear(): void {
    this.#next = 0;
    this.#calls = 0;
    this.#failures = 0;
  }

  /** The outcomes in the window, oldest first, 1 for a failure. */
  outcomes(): (0 | 1)[] {
    const out: (0 | 1)[] = [];
    const start = this.#calls === this.size ? this.#next : 0;
    for (let i = 0; i < this.#calls; i++) out.push(this.#failed[(start + i) % this.size] as 0 | 1);
    return out;
  }

  /** Takes over `outcomes` (oldest first, 1 for a failure): the last `size` of them. */
  load(outcomes: readonly number[]): void {
    this.clear();
    for (const outcome of outcomes.slice(-this.size)) this.record(outcome === 1);
  }
}
