/**
 * What a rate limiter counts its calls with: a token bucket (`burst` at once, then `rate` per `per` on
 * average), or a sliding window (at most `rate` calls in any `per` ms). Both read the time they are given
 * and keep no timer; the limiter keeps the queue.
 */

/** A limiter's count of its calls. */
export interface Meter {
  /** Whether a call may start at `now` (within `slack` of a whole turn: float rounding). */
  free(now: number, slack: number): boolean;
  /** A call starts at `now` (after `free` said it may). */
  take(now: number): void;
  /** The call that last started did not run after all: its turn goes back. */
  giveBack(): void;
  /** Milliseconds from `now` until the `n`th next call may start (the first `n − 1` starting on time). */
  until(n: number, now: number): number;
  /** Calls that may start at `now`. */
  available(now: number): number;
}

/**
 * The token bucket: it holds up to `burst` tokens, gains `rate` every `per` ms, and starts full. Time that
 * goes back a little (or a reading that is no number) adds nothing and moves nothing: the tokens come again
 * once the clock passes the last reading. Time that goes back by more than the bucket takes to fill (a
 * clock stepped back, or one that read far ahead once, as fake timers advanced and then uninstalled) adds
 * nothing either, and the bucket goes on from the new reading, so that it is never stuck ahead of the
 * clock.
 */
export class TokenBucket implements Meter {
  readonly #burst: number;
  /** Milliseconds per token. */
  readonly #interval: number;
  #tokens: number;
  /** When `#tokens` was last brought up to date. */
  #at: number;

  constructor(rate: number, per: number, burst: number, now: number) {
    this.#burst = burst;
    this.#interval = per / rate;
    this.#tokens = burst;
    this.#at = now;
  }

  #refill(now: number): void {
    if (now > this.#at) {
      this.#tokens = Math.min(this.#burst, this.#tokens + (now - this.#at) / this.#interval);
      this.#at = now;
    } else if (this.#at - now > this.#burst * this.#interval || Number.isNaN(this.#at)) {
      // Far back, or no reading yet that was a number: go on from this one.
      this.#at = now;
    }
  }

  free(now: number, slack: number): boolean {
    this.#refill(now);
    return this.#tokens >= 1 - slack;
  }

  take(): void {
    this.#tokens = Math.max(0, this.#tokens - 1);
  }

  giveBack(): void {
    this.#tokens = Math.min(this.#burst, this.#tokens + 1);
  }

  until(n: number, now: number): number {
    this.#refill(now);
    return Math.max(0, (n - this.#tokens) * this.#interval);
  }

  available(now: number): number {
    this.#refill(now);
    return this.#tokens;
  }
}

/**
 * The sliding window: the start times of the last `rate` calls, in a ring. A call may start when fewer
 * than `rate` started in the `per` ms before it. A start recorded later than the clock now by more than
 * `per` (a clock stepped back, or one that read far ahead once) is forgotten with the rest of the window,
 * so that it is never stuck ahead of the clock.
 */
export class SlidingWindow implements Meter {
  readonly #rate: number;
  readonly #per: number;
  readonly #starts: Float64Array;
  /** Starts recorded (at most `rate`). */
  #count = 0;
  /** Where the next start goes: the oldest one when the ring is full. */
  #next = 0;

  constructor(rate: number, per: number) {
    this.#rate = rate;
    this.#per = per;
    this.#starts = new Float64Array(rate);
  }

  /** The start `k` places after the oldest kept (k = 0: the oldest). */
  #start(k: number): number {
    const first = this.#count < this.#rate ? 0 : this.#next;
    return this.#starts[(first + k) % this.#rate] as number;
  }

  /** Forgets the window when its newest start is later than `now` by more than `per`. */
  #check(now: number): void {
    if (this.#count === 0) return;
    const newest = this.#starts[(this.#next - 1 + this.#rate) % this.#rate] as number;
    if (newest - now > this.#per) {
      this.#count = 0;
      this.#next = 0;
    }
  }

  free(now: number, slack: number): boolean {
    this.#check(now);
    return this.#count < this.#rate || now - this.#start(0) >= this.#per - slack;
  }

  /** What the last `take` wrote over (the oldest start, when the ring was full), for `giveBack`. */
  #overwritten: number | undefined;

  take(now: number): void {
    this.#overwritten = this.#count < this.#rate ? undefined : (this.#starts[this.#next] as number);
    this.#starts[this.#next] = now;
    this.#next = (this.#next + 1) % this.#rate;
    if (this.#count < this.#rate) this.#count += 1;
  }

  giveBack(): void {
    // Only right after `take`: the start it recorded is taken out, and what it wrote over put back.
    this.#next = (this.#next - 1 + this.#rate) % this.#rate;
    if (this.#overwritten === undefined) this.#count -= 1;
    else this.#starts[this.#next] = this.#overwritten;
  }

  until(n: number, now: number): number {
    this.#check(now);
    // The nth next call takes the place of the (n − 1 − free)th oldest start kept, one window later for
    // each time round the ring.
    const free = this.#rate - this.#count;
    if (n <= free) return 0;
    const k = n - free - 1;
    const round = Math.floor(k / this.#rate);
    return Math.max(0, this.#start(k % this.#rate) + this.#per * (round + 1) - now);
  }

  available(now: number): number {
    this.#check(now);
    let free = this.#rate - this.#count;
    for (let k = 0; k < this.#count && now - this.#start(k) >= this.#per; k++) free += 1;
    return free;
  }
}
