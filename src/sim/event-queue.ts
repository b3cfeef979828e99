/**
 * The simulator's queue of events: a binary min-heap over typed arrays, ordered by due time, ties in the
 * order the events were queued (a run's determinism rests on that order).
 *
 * Each heap entry is three numbers kept side by side (due time, sequence number, slot), so a sift
 * compares numbers in flat arrays and allocates nothing; the callbacks live in a plain array indexed by
 * slot. A cancellation only empties its slot (lazy deletion): the entry stays in the heap, costs nothing
 * until it comes up, and is skipped then. Retries cancel most of their timeout timers, so this saves
 * the O(log n) removal that would otherwise be paid for nearly every attempt.
 */

const INITIAL = 1024;

export class EventQueue {
  /** Heap order: the due time, the sequence number and the slot of each entry. */
  #at = new Float64Array(INITIAL);
  #seq = new Float64Array(INITIAL);
  #slot = new Int32Array(INITIAL);
  /** Entries in the heap, cancelled ones included. */
  #length = 0;
  /** Callbacks by slot; undefined once run, cancelled or never used. */
  #callbacks: ((() => void) | undefined)[] = [];
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
  push(at: number, callback: () => void): number {
    const slot = this.#takeSlot();
    this.#callbacks[slot] = callback;
    this.#live += 1;
    let i = this.#length;
    if (i === this.#at.length) this.#growHeap();
    this.#length = i + 1;
    const seq = this.#nextSeq++;
    const atArr = this.#at;
    const seqArr = this.#seq;
    const slotArr = this.#slot;
    // Sift up: move parents down until the new entry's place is found.
    while (i > 0) {
      const parent = (i - 1) >> 1;
      const pAt = atArr[parent] as number;
      if (pAt < at || (pAt === at && (seqArr[parent] as number) < seq)) break;
      atArr[i] = pAt;
      seqArr[i] = seqArr[parent] as number;
      slotArr[i] = slotArr[parent] as number;
      i = parent;
    }
    atArr[i] = at;
    seqArr[i] = seq;
    slotArr[i] = slot;
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
    return this.#length === 0 ? Number.POSITIVE_INFINITY : (this.#at[0] as number);
  }

  /**
   * Removes the earliest event that will run and returns its callback (its due time is what `peekTime`
   * said just before); undefined when none is left.
   */
  pop(): (() => void) | undefined {
    this.#dropCancelled();
    if (this.#length === 0) return undefined;
    const slot = this.#slot[0] as number;
    const callback = this.#callbacks[slot];
    this.#release(slot);
    this.#removeTop();
    this.#live -= 1;
    return callback;
  }

  #dropCancelled(): void {
    while (this.#length > 0) {
      const slot = this.#slot[0] as number;
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
    const atArr = this.#at;
    const seqArr = this.#seq;
    const slotArr = this.#slot;
    const at = atArr[n] as number;
    const seq = seqArr[n] as number;
    const slot = slotArr[n] as number;
    let i = 0;
    for (;;) {
      let child = 2 * i + 1;
      if (child >= n) break;
      let cAt = atArr[child] as number;
      let cSeq = seqArr[child] as number;
      const right = child + 1;
      if (right < n) {
        const rAt = atArr[right] as number;
        const rSeq = seqArr[right] as number;
        if (rAt < cAt || (rAt === cAt && rSeq < cSeq)) {
          child = right;
          cAt = rAt;
          cSeq = rSeq;
        }
      }
      if (at < cAt || (at === cAt && seq < cSeq)) break;
      atArr[i] = cAt;
      seqArr[i] = cSeq;
      slotArr[i] = slotArr[child] as number;
      i = child;
    }
    atArr[i] = at;
    seqArr[i] = seq;
    slotArr[i] = slot;
  }

  #growHeap(): void {
    const size = this.#at.length * 2;
    const at = new Float64Array(size);
    at.set(this.#at);
    this.#at = at;
    const seq = new Float64Array(size);
    seq.set(this.#seq);
    this.#seq = seq;
    const slot = new Int32Array(size);
    slot.set(this.#slot);
    this.#slot = slot;
  }
}
