/**
 * The simulator's queue of events: a 4-ary min-heap in one typed array, ordered by due time, ties in the
 * order the events were queued (a run's determinism rests on that order), plus a few first-in-first-out
 * lanes for delays that recur.
 *
 * Each heap entry is three numbers kept side by side (due time, sequence number, slot), so a sift
 * compares numbers in one flat array, near each other in memory, and allocates nothing; the callbacks live in a plain array indexed by
 * slot. A cancellation only empties its slot (lazy deletion): the entry stays in the heap, costs nothing
 * until it comes up, and is skipped then. Retries cancel most of their timeout timers, so this saves
 * the O(log n) removal that would otherwise be paid for nearly every attempt.
 *
 * Lanes: events queued with the same delay (every attempt's timeout, a constant backoff) fall due in the
 * order they were queued, since time only moves forward. Such events wait in a lane, a ring in typed
 * arrays, and only the earliest of each lane is in the heap: queuing one costs O(1) instead of a sift
 * through a heap of every pending timeout. A delay gets a lane when it is asked for twice in a row among
 * the delays without one, and keeps it while the lane holds events; one-off delays (jittered backoffs)
 * stay in the heap. The order of events is the same either way: a lane's events are in (due time,
 * sequence) order, and its head competes in the heap under its own due time and sequence number.
 */

const INITIAL = 1024;
/** Numbers per heap entry: due time, sequence number, slot. */
const STRIDE = 3;
/** Children per node: a 4-ary heap is half as deep as a binary one, and a node's children sit side by side. */
const ARITY = 4;
/** Lanes for recurring delays. */
const LANES = 4;

/**
 * An event as an object: the engine calls its `fire()`. A model that keeps per-event state in an object
 * of its own (a simulated attempt's timeout) queues that object instead of a closure over it.
 */
export interface Timed {
  fire(): void;
}

/** What the queue holds for each event: a callback, or an object to fire. */
export type Event = (() => void) | Timed;

/** A ring of events of one delay, in the order they fall due: due time, sequence number, slot. */
class Lane {
  /** The delay it holds, or NaN when free. */
  delay = Number.NaN;
  entries = new Float64Array(64 * STRIDE);
  mask = 63;
  head = 0;
  tail = 0;

  append(at: number, seq: number, slot: number): void {
    if (this.tail - this.head > this.mask) this.#grow();
    const j = (this.tail++ & this.mask) * STRIDE;
    const entries = this.entries;
    entries[j] = at;
    entries[j + 1] = seq;
    entries[j + 2] = slot;
  }

  #grow(): void {
    const size = 2 * (this.mask + 1);
    const mask = size - 1;
    const entries = new Float64Array(size * STRIDE);
    for (let n = this.head; n < this.tail; n++) {
      const from = (n & this.mask) * STRIDE;
      const to = (n & mask) * STRIDE;
      entries[to] = this.entries[from] as number;
      entries[to + 1] = this.entries[from + 1] as number;
      entries[to + 2] = this.entries[from + 2] as number;
    }
    this.entries = entries;
    this.mask = mask;
  }
}

/** `E`: what it holds for each event; the engine's queue holds both callbacks and `Timed` objects. */
export class EventQueue<E extends Event = () => void> {
  /**
   * The heap, entry i at [STRIDE × i]: its due time, its sequence number and its slot, side by side. An
   * entry with a negative slot, −(l + 1), stands for the head of lane l.
   */
  #heap = new Float64Array(INITIAL * STRIDE);
  /** Entries in the heap, cancelled ones included. */
  #length = 0;
  /** Callbacks by slot; undefined once run, cancelled or never used. */
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
  readonly #lanes: Lane[] = Array.from({ length: LANES }, () => new Lane());
  /** The last delay queued without a lane: asked for again at once, it gets one. */
  #lastMiss = Number.NaN;

  /** Events queued and not cancelled. */
  get size(): number {
    return this.#live;
  }

  /** Queues `callback` at time `at`; returns its slot, for `cancel` with `generation(slot)`. */
  push(at: number, callback: E): number {
    const slot = this.#takeSlot(callback);
    this.#siftUp(at, this.#nextSeq++, slot);
    return slot;
  }

  /**
   * Queues `callback` at time `at`, which is `delay` after the current time (never earlier than the
   * current time of any event queued before): as `push`, in the lane of `delay` if it has one.
   */
  pushAfter(at: number, delay: number, callback: E): number {
    const lanes = this.#lanes;
    let l = 0;
    for (; l < LANES; l++) if ((lanes[l] as Lane).delay === delay) break;
    if (l === LANES) {
      if (delay !== this.#lastMiss) {
        this.#lastMiss = delay;
        return this.push(at, callback);
      }
      for (l = 0; l < LANES; l++) if ((lanes[l] as Lane).head === (lanes[l] as Lane).tail) break;
      if (l === LANES) return this.push(at, callback);
      (lanes[l] as Lane).delay = delay;
      this.#lastMiss = Number.NaN;
    }
    const lane = lanes[l] as Lane;
    const slot = this.#takeSlot(callback);
    const seq = this.#nextSeq++;
    if (lane.head === lane.tail) this.#siftUp(at, seq, -(l + 1));
    lane.append(at, seq, slot);
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
    const slot = this.#topSlot();
    const callback = this.#callbacks[slot];
    this.#release(slot);
    this.#advanceTop();
    this.#live -= 1;
    return callback;
  }

  /** The slot of the event at the top: its own, or that of the head of the lane it stands for. */
  #topSlot(): number {
    const slot = this.#heap[2] as number;
    if (slot >= 0) return slot;
    const lane = this.#lanes[-slot - 1] as Lane;
    return lane.entries[(lane.head & lane.mask) * STRIDE + 2] as number;
  }

  /** Takes the top event out: removes its entry, or puts the next of its lane in its place. */
  #advanceTop(): void {
    const slot = this.#heap[2] as number;
    if (slot >= 0) {
      this.#removeTop();
      return;
    }
    const lane = this.#lanes[-slot - 1] as Lane;
    lane.head += 1;
    if (lane.head === lane.tail) {
      this.#removeTop();
      return;
    }
    const j = (lane.head & lane.mask) * STRIDE;
    this.#siftDown(lane.entries[j] as number, lane.entries[j + 1] as number, slot);
  }

  #dropCancelled(): void {
    while (this.#length > 0) {
      const slot = this.#topSlot();
      if (this.#callbacks[slot] !== undefined) return;
      this.#release(slot);
      this.#advanceTop();
    }
  }

  #takeSlot(callback: E): number {
    let slot: number;
    if (this.#freeCount > 0) slot = this.#free[--this.#freeCount] as number;
    else {
      slot = this.#nextSlot++;
      if (slot === this.#generation.length) {
        const bigger = new Int32Array(slot * 2);
        bigger.set(this.#generation);
        this.#generation = bigger;
      }
    }
    this.#callbacks[slot] = callback;
    this.#live += 1;
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

  /** Adds an entry: moves parents down until its place is found. */
  #siftUp(at: number, seq: number, slot: number): void {
    let i = this.#length;
    if ((i + 1) * STRIDE > this.#heap.length) this.#growHeap();
    this.#length = i + 1;
    const heap = this.#heap;
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
  }

  /** Replaces the top with the last entry and sifts it down. */
  #removeTop(): void {
    const n = --this.#length;
    if (n === 0) return;
    const last = n * STRIDE;
    const heap = this.#heap;
    this.#siftDown(heap[last] as number, heap[last + 1] as number, heap[last + 2] as number);
  }

  /** Puts the entry (at, seq, slot) at the top and sifts it down to its place. */
  #siftDown(at: number, seq: number, slot: number): void {
    const n = this.#length;
    const heap = this.#heap;
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
