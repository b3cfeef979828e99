/**
 * A sliding window: at most `rate` starts in any `per` ms, kept exactly as a log of the last `rate` start
 * times (a ring). A start is allowed when fewer than `rate` starts are in the log, or when the oldest of
 * them is at least `per` ms old.
 *
 * Time is read through `read`, which makes it safe to decide on: a reading that is no finite number
 * counts as the last good one, and one behind the newest start by more than `per` (a clock stepped back,
 * fake timers uninstalled) forgets the log, since every start in it would be in the future. A start is
 * recorded no earlier than the newest before it, and no earlier than `per` after the start it pushes out
 * of the log, so the log keeps the rule exactly: when the clock goes back a little, a start expires later
 * than the clock's reading says, never sooner.
 */
import { MAX_PERIOD } from "./checks.js";

/** The most starts a sliding window may count (its log holds one number per start). */
export const MAX_WINDOW_RATE = 100_000;

/**
 * How far before its due time a start may be judged due: a few units in the last place of the time, so
 * that a call coming back after `retryAfter` (a whole number of ms added to a large time) is not refused
 * again for a rounding error. The log records the start at its due time all the same.
 */
function slack(due: number): number {
  return Math.abs(due) * 2 ** -51;
}

/** What `take` did, to undo it if nothing ran: the start's number, and the start it pushed out. */
export interface Undo {
  readonly seq: number;
  readonly pushedOut: number | undefined;
}

export class SlidingLog {
  readonly rate: number;
  readonly per: number;
  readonly #starts: Float64Array;
  /** Starts taken (less those undone): the newest start is number `#taken − 1`, the oldest `#taken − #count`. */
  #taken = 0;
  #count = 0;
  /** The last reading that was a finite number (or 0 before any). */
  #last = 0;
  /** A step back by more than this forgets the log: `per`, or less when `per` is so long that the starts
   * would otherwise expire more than 2^31 − 1 ms (what a retryAfter may say) after the reading. */
  readonly #forgetAfter: number;

  constructor(rate: number, per: number) {
    this.rate = rate;
    this.per = per;
    this.#starts = new Float64Array(rate);
    this.#forgetAfter = Math.min(per, MAX_PERIOD - per);
  }

  /** A clock reading made safe to decide on (see the module's note). */
  read(reading: number): number {
    if (!Number.isFinite(reading)) return this.#last;
    if (this.#count > 0 && this.#at(this.#count - 1) - reading > this.#forgetAfter) this.#count = 0;
    this.#last = reading;
    return reading;
  }

  /** Where start number `seq` is in the ring. */
  #slot(seq: number): number {
    return seq % this.rate;
  }

  /** The i-th start of the log, oldest first. */
  #at(i: number): number {
    return this.#starts[this.#slot(this.#taken - this.#count + i)] as number;
  }

  /** Starts still within the window at `now` (a safe reading). */
  inWindow(now: number): number {
    let n = this.#count;
    while (n > 0 && this.#due(this.#at(this.#count - n), now)) n -= 1;
    return n;
  }

  /** Whether a start at `start` is at least `per` old at `now`. */
  #due(start: number, now: number): boolean {
    const due = start + this.per;
    return due <= now + slack(due);
  }

  /** Whether a call may start at `now`. */
  free(now: number): boolean {
    return this.#count < this.rate || this.#due(this.#at(0), now);
  }

  /** Records a start at `now` (which `free(now)` allowed); returns what `undo` needs if nothing ran. */
  take(now: number): Undo {
    let at = this.#count === 0 ? now : Math.max(now, this.#at(this.#count - 1));
    let pushedOut: number | undefined;
    if (this.#count === this.rate) {
      pushedOut = this.#at(0);
      at = Math.max(at, pushedOut + this.per);
      this.#count -= 1;
    }
    this.#starts[this.#slot(this.#taken)] = at;
    this.#taken += 1;
    this.#count += 1;
    return { seq: this.#taken - 1, pushedOut };
  }

  /**
   * Takes back the start `take` recorded (nothing ran for it), wherever it is in the log now (a start
   * made inside a start, say, is newer), and puts back the start it pushed out, if there is room.
   */
  undo({ seq, pushedOut }: Undo): void {
    const oldest = this.#taken - this.#count;
    // Pushed out of the log since (or the log forgotten): nothing to take back.
    if (seq < oldest || seq >= this.#taken) return;
    for (let s = seq; s < this.#taken - 1; s++) {
      this.#starts[this.#slot(s)] = this.#starts[this.#slot(s + 1)] as number;
    }
    this.#taken -= 1;
    this.#count -= 1;
    if (pushedOut !== undefined && this.#count < this.rate && this.#taken > this.#count) {
      // It was older than every start left, so it goes back at the head.
      this.#count += 1;
      this.#starts[this.#slot(this.#taken - this.#count)] = pushedOut;
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
