/**
 * A clock that never waits: time moves only when a test says so. Timers fire in time order (ties in the
 * order they were set), and between two timers every pending promise continuation runs, so a retry loop
 * driven by `runAll()` behaves exactly as it would in real time, minus the waiting.
 */
import { type CancelTimer, type Clock, sleep } from "../core/clock.js";

interface Timer {
  at: number;
  seq: number;
  callback: () => void;
  /** Position in the heap; -1 once fired or cancelled. */
  index: number;
}

/** Lets every queued promise continuation run (setImmediate runs after the microtask queue drains). */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * @example
 * const clock = new VirtualClock();
 * const result = retry(op, { clock, random: seededRandom(1) });
 * await clock.runAll(); // hours of backoff, in milliseconds
 * await result;
 */
export class VirtualClock implements Clock {
  #now: number;
  #seq = 0;
  #heap: Timer[] = [];

  constructor(start = 0) {
    this.#now = start;
  }

  /** The virtual time in ms. */
  now(): number {
    return this.#now;
  }

  /** How many timers are set and not yet fired or cancelled. */
  get pending(): number {
    return this.#heap.length;
  }

  /** The time the next timer fires at, or undefined when none is set. */
  get next(): number | undefined {
    return this.#heap[0]?.at;
  }

  setTimer(ms: number, callback: () => void): CancelTimer {
    const timer: Timer = {
      at: this.#now + Math.max(ms, 0),
      seq: this.#seq++,
      callback,
      index: this.#heap.length,
    };
    this.#heap.push(timer);
    this.#up(timer.index);
    return () => {
      if (timer.index >= 0) this.#remove(timer.index);
    };
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
      const top = this.#heap[0];
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
      const top = this.#heap[0];
      if (top === undefined) return;
      if (fired >= limit)
        throw new Error(`runAll: more than ${limit} timers fired; is something retrying forever?`);
      this.#fire(top);
      await settle();
    }
  }

  #fire(timer: Timer): void {
    this.#remove(0);
    if (timer.at > this.#now) this.#now = timer.at;
    timer.callback();
  }

  // A binary min-heap on (at, seq), each timer knowing its index so cancellation is O(log n).
  #less(a: Timer, b: Timer): boolean {
    return a.at < b.at || (a.at === b.at && a.seq < b.seq);
  }

  #swap(i: number, j: number): void {
    const heap = this.#heap;
    const a = heap[i] as Timer;
    const b = heap[j] as Timer;
    heap[i] = b;
    heap[j] = a;
    b.index = i;
    a.index = j;
  }

  #up(i: number): void {
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!this.#less(this.#heap[i] as Timer, this.#heap[parent] as Timer)) return;
      this.#swap(i, parent);
      i = parent;
    }
  }

  #down(i: number): void {
    const heap = this.#heap;
    for (;;) {
      const left = 2 * i + 1;
      const right = left + 1;
      let smallest = i;
      if (left < heap.length && this.#less(heap[left] as Timer, heap[smallest] as Timer)) smallest = left;
      if (right < heap.length && this.#less(heap[right] as Timer, heap[smallest] as Timer)) smallest = right;
      if (smallest === i) return;
      this.#swap(i, smallest);
      i = smallest;
    }
  }

  #remove(i: number): void {
    const heap = this.#heap;
    const removed = heap[i] as Timer;
    const last = heap.pop() as Timer;
    removed.index = -1;
    if (last !== removed) {
      heap[i] = last;
      last.index = i;
      this.#down(i);
      this.#up(last.index);
    }
  }
}
