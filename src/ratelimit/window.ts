/**
 * A sliding window: at most `rate` starts in any `per` ms, kept exactly as a log of the last `rate` start
 * times (a ring). A start is allowed when fewer than `rate` starts are in the log, or when the oldest of
 * them is at least `per` ms old.
 *
 * Time is read through `read`, which makes it safe to decide on: a reading that is no finite number
 * counts as the last good one, and one behind the newest start by more than `per` (a clock stepped back,
 * fake timers uninstalled) forgets the log, since every start in it would be in the future. A start is
 * recorded no earlier than the newest before it, so the log stays in time order when the clock goes back
 * a little; it then expires later than the clock's reading says, never sooner.
 */

/** The most starts a sliding window may count (its log holds one number per start). */
export const MAX_WINDOW_RATE = 100_000;

/** How far past its due time a start may be judged due, for floating-point rounding: relative to the time's size. */
function slack(now: number): number {
  return Math.max(1e-6, Math.abs(now) * 2 ** -48);
}

/** What `take` replaced, to put back if nothing ran. */
export type Undo = number | undefined;

export class SlidingLog {
  readonly rate: number;
  readonly per: number;
  readonly #starts: Float64Array;
  /** Index of the oldest start, and how many the log holds. */
  #head = 0;
  #count = 0;
  /** The last reading that was a finite number (or 0 before any). */
  #last = 0;

  constructor(rate: number, per: number) {
    this.rate = rate;
    this.per = per;
    this.#starts = new Float64Array(rate);
  }

  /** A clock reading made safe to decide on (see the module's note). */
  read(reading: number): number {
    if (!Number.isFinite(reading)) return this.#last;
    if (this.#count > 0 && this.#at(this.#count - 1) - reading > this.per) this.#count = 0;
    this.#last = reading;
    return reading;
  }

  /** The i-th start of the log, oldest first. */
  #at(i: number): number {
    return this.#starts[(this.#head + i) % this.rate] as number;
  }

  /** Starts still within the window at `now` (a safe reading). */
  inWindow(now: number): number {
    let n = this.#count;
    while (n > 0 && this.#at(this.#count - n) + this.per <= now + slack(now)) n -= 1;
    return n;
  }

  /** Whether a call may start at `now`. */
  free(now: number): boolean {
    return this.#count < this.rate || this.#at(0) + this.per <= now + slack(now);
  }

  /** Records a start at `now` (which `free(now)` allowed); returns what to give `undo` if nothing ran. */
  take(now: number): Undo {
    let undo: Undo;
    const at = this.#count === 0 ? now : Math.max(now, this.#at(this.#count - 1));
    if (this.#count === this.rate) {
      undo = this.#at(0);
      this.#head = (this.#head + 1) % this.rate;
      this.#count -= 1;
    }
    this.#starts[(this.#head + this.#count) % this.rate] = at;
    this.#count += 1;
    return undo;
  }

  /** Takes back the newest start (nothing ran for it), putting back the oldest it pushed out. */
  undo(undo: Undo): void {
    if (this.#count === 0) return;
    this.#count -= 1;
    if (undo !== undefined) {
      this.#head = (this.#head + this.rate - 1) % this.rate;
      this.#starts[this.#head] = undo;
      this.#count += 1;
    }
  }

  /**
   * Milliseconds from `now` until the k-th start from now may happen (k ≥ 1), every start before it
   * happening as soon as it may: the j-th is due when the start `rate` places before it is `per` old.
   */
  until(k: number, now: number): number {
    const free = this.rate - this.#count;
    if (k <= free) return 0;
    // The first `rate` starts from now: the first `free` at once, the rest as the log's starts expire;
    // every later one `per` after the one `rate` places before it.
    const i = (k - 1) % this.rate;
    const rounds = Math.floor((k - 1) / this.rate);
    const first = i < free ? now : Math.max(now, this.#at(i - free) + this.per);
    return Math.max(0, first + rounds * this.per - now);
  }
}
