/**
 * The simulator's queue of events: a 4-ary min-heap in one typed array, ordered by due time, ties in the
 * order the events were queued (a run's determinism rests on that order).
 *
 * Each heap entry is three numbers kept side by side (due time, sequence number, slot), so a sift
 * compares numbers in one flat array, near each other in memory, and allocates nothing; the callbacks live in a plain array indexed by
 * slot. A cancellation only empties its slot (lazy deletion): the entry stays in the heap, costs nothing
 * until it comes up, and is skipped then. Retries cancel most of their timeout timers, so this saves
 * the O(log n) removal that would otherwise be paid for nearly every attempt.
 */

const INITIAL = 1024;

/**
 * An event as an object: the engine calls its `fire()`. A model that keeps per-event state in an object
 * of its own (a simulated attempt's timeout) queues that object instead of a closure over it.
 */
export interface Timed {
  fire(): void;
}

/** What the queue holds for each event: a callback, or an object to fire. */
export type Event = (() => void) | Timed;
/** Numbers per heap entry: due time, sequence number, slot. */
const STRIDE = 3;
/** Children per node: a 4-ary heap is half as deep as a binary one, and a node's children sit side by side. */
const ARITY = 4;

/** `E`: what it holds for each event; the engine's queue holds both callbacks and `Timed` objects. */
export class EventQueue<E extends Event = () => void> {
  /** The heap, entry i at [STRIDE × i]: its due time, its sequence number and its slot, side by side. */
  #heap = new Float64Array(INITIAL * STRIDE);
  /** Entries in the heap, cancelled ones included. */
  #length = 0;
  /** Events by slot; undefined once run, cancelled or never used. */
  #callbacks: (E | undefined)[] = [];
  /** Each slot's generation: a cancellation names the generation it was given, so a reused slot is safe. */
  #generation = new Int32Array(INITIAL);
  /** Slots free for reuse. */
  #free = new Int32Array(INITIAL);
  #freeCount = 0;
  #nextSlot = 0;
  #nextSeq = 0;
  /** Entries that will still run. */
  #live = 0;

  /** Events queued and not cancelled. */
  get size(): number {
    return this.#live;
  }

  /** Queues `callback` at time `at`; returns its slot, for `cancel` with `generation(slot)`. */
  push(at: number, callback: E): number {
    const slot = this.#takeSlot();
    this.#callbacks[slot] = callback;
    this.#live += 1;
    let i = this.#length;
    if ((i + 1) * STRIDE > this.#heap.length) this.#growHeap();
    this.#length = i + 1;
    const seq = this.#nextSeq++;
    const heap = this.#heap;
    // Sift up: move parents down until the new entry's place is found.
    while (i > 0) {
      const parent = ((i - 1) / ARITY) | 0;
      const p = parent * STRIDE;
      const pAt = heap[p] as number;
      if (pAt < at || (pAt === at && (heap[p + 1] as number) < seq)) break;
      const j = i * STRIDE;
      heap[j] = pAt;
      heap[j + 1] = heap[p + 1] as number;
      heap[j + 2] = heap[p + 2] as number;
      i = parent;
    }
    const j = i * STRIDE;
    heap[j] = at;
    heap[j + 1] = seq;
    heap[j + 2] = slot;
    return slot;
  }

  /** The generation `slot` is in now; pass it to `cancel`. */
  generation(slot: number): number {
    return this.#generation[slot] as number;
  }

  /** Cancels the event in `slot` if it is still the one of `generation` and has not run. */
  cancel(slot: number, generation: number): void {
    if (this.#generation[slot] !== generation || this.#callbacks[slot] === undefined) return;
    this.#callbacks[slot] = undefined;
    this.#live -= 1;
  }

  /** The due time of the earliest event that will run, or Infinity when none will. */
  peekTime(): number {
    this.#dropCancelled();
    return this.#length === 0 ? Number.POSITIVE_INFINITY : (this.#heap[0] as number);
  }

  /**
   * Removes the earliest event that will run and returns it (its due time is what `peekTime`
   * said just before); undefined when none is left.
   */
  pop(): E | undefined {
    this.#dropCancelled();
    if (this.#length === 0) return undefined;
    const slot = this.#heap[2] as number;
    const callback = this.#callbacks[slot];
    this.#release(slot);
    this.#removeTop();
    this.#live -= 1;
    return callback;
  }

  #dropCancelled(): void {
    while (this.#length > 0) {
      const slot = this.#heap[2] as number;
      if (this.#callbacks[slot] !== undefined) return;
      this.#release(slot);
      this.#removeTop();
    }
  }

  #takeSlot(): number {
    if (this.#freeCount > 0) return this.#free[--this.#freeCount] as number;
    const slot = this.#nextSlot++;
    if (slot === this.#generation.length) {
      const bigger = new Int32Array(slot * 2);
      bigger.set(this.#generation);
      this.#generation = bigger;
    }
    return slot;
  }

  #release(slot: number): void {
    this.#callbacks[slot] = undefined;
    this.#generation[slot] = ((this.#generation[slot] as number) + 1) | 0;
    if (this.#freeCount === this.#free.length) {
      const bigger = new Int32Array(this.#free.length * 2);
      bigger.set(this.#free);
      this.#free = bigger;
    }
    this.#free[this.#freeCount++] = slot;
  }

  /** Replaces the top with the last entry and sifts it down. */
  #removeTop(): void {
    const n = --this.#length;
    if (n === 0) return;
    const heap = this.#heap;
    const last = n * STRIDE;
    const at = heap[last] as number;
    const seq = heap[last + 1] as number;
    const slot = heap[last + 2] as number;
    let i = 0;
    for (;;) {
      const first = i * ARITY + 1;
      if (first >= n) break;
      // The smallest of up to ARITY children.
      let child = first;
      let c = first * STRIDE;
      let cAt = heap[c] as number;
      let cSeq = heap[c + 1] as number;
      const end = first + ARITY < n ? first + ARITY : n;
      for (let k = first + 1; k < end; k++) {
        const o = k * STRIDE;
        const kAt = heap[o] as number;
        if (kAt < cAt || (kAt === cAt && (heap[o + 1] as number) < cSeq)) {
          child = k;
          c = o;
          cAt = kAt;
          cSeq = heap[o + 1] as number;
        }
      }
      if (at < cAt || (at === cAt && seq < cSeq)) break;
      const j = i * STRIDE;
      heap[j] = cAt;
      heap[j + 1] = cSeq;
      heap[j + 2] = heap[c + 2] as number;
      i = child;
    }
    const j = i * STRIDE;
    heap[j] = at;
    heap[j + 1] = seq;
    heap[j + 2] = slot;
  }

  #growHeap(): void {
    const bigger = new Float64Array(this.#heap.length * 2);
    bigger.set(this.#heap);
    this.#heap = bigger;
  }
}
