/**
 * A clock that never waits: time moves only when a test says so. Timers fire in time order (ties in the
 * order they were set), and between two timers every pending promise continuation runs, so a retry loop
 * driven by `runAll()` behaves exactly as it would in real time, minus the waiting.
 */
import { type CancelTimer, type Clock, sleep } from "../core/clock.js";
import { type QueuedTimer, TimerQueue } from "../core/timer-queue.js";

/**
 * Lets every queued promise continuation run: a macrotask runs after the microtask queue drains
 * (setImmediate where there is one, as in Node.js, Deno and Bun; a zero timeout in browsers).
 */
const settle: () => Promise<void> =
  typeof globalThis.setImmediate === "function"
    ? () => new Promise<void>((resolve) => setImmediate(resolve))
    : () => new Promise<void>((resolve) => setTimeout(resolve, 0));

/**
 * @example
 * const clock = new VirtualClock();
 * const result = retry(op, { clock, random: seededRandom(1) });
 * await clock.runAll(); // hours of backoff, in milliseconds
 * await result;
 */
export class VirtualClock implements Clock {
  #now: number;
  readonly #queue = new TimerQueue();

  constructor(start = 0) {
    this.#now = start;
  }

  /** The virtual time in ms. */
  now(): number {
    return this.#now;
  }

  /** How many timers are set and not yet fired or cancelled. */
  get pending(): number {
    return this.#queue.size;
  }

  /** The time the next timer fires at, or undefined when none is set. */
  get next(): number | undefined {
    return this.#queue.peek()?.at;
  }

  setTimer(ms: number, callback: () => void): CancelTimer {
    const timer = this.#queue.push(this.#now + Math.max(ms, 0), callback);
    return () => this.#queue.remove(timer);
  }

  /** Waits `ms` of virtual time; rejects with `signal.reason` if `signal` aborts first. */
  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return sleep(this, ms, signal);
  }

  /**
   * Moves time forward by `ms`, firing every timer due on the way, in order, and letting the code they
   * wake run before the next one (so timers that code sets within the window fire too).
   */
  async advance(ms: number): Promise<void> {
    if (!(ms >= 0)) throw new RangeError(`advance: ms must be a number >= 0; got ${ms}`);
    const target = this.#now + ms;
    await settle();
    for (;;) {
      const top = this.#queue.peek();
      if (top === undefined || top.at > target) break;
      this.#fire(top);
      await settle();
    }
    this.#now = Math.max(this.#now, target);
  }

  /**
   * Fires timers in order until none is left, letting woken code run between them. Throws after
   * `limit` timers, which catches a loop that never ends.
   */
  async runAll(limit = 10_000_000): Promise<void> {
    await settle();
    for (let fired = 0; ; fired++) {
      const top = this.#queue.peek();
      if (top === undefined) return;
      if (fired >= limit)
        throw new Error(`runAll: more than ${limit} timers fired; is something retrying forever?`);
      this.#fire(top);
      await settle();
    }
  }

  #fire(timer: QueuedTimer): void {
    this.#queue.remove(timer);
    if (timer.at > this.#now) this.#now = timer.at;
    timer.callback();
  }
}
