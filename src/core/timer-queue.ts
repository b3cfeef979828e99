/**
 * A queue of timers ordered by due time, ties in the order they were set: a binary min-heap whose entries
 * know their index, so a cancellation is O(log n). The `VirtualClock` and the simulator both keep their
 * timers here.
 */

/** One timer in a `TimerQueue`. */
export interface QueuedTimer {
  readonly at: number;
  readonly seq: number;
  readonly callback: () => void;
  /** Position in the heap; -1 once popped or removed. */
  index: number;
}

export class TimerQueue {
  #heap: QueuedTimer[] = [];
  #seq = 0;

  /** How many timers are queued. */
  get size(): number {
    return this.#heap.length;
  }

  /** The earliest timer, or undefined when the queue is empty. */
  peek(): QueuedTimer | undefined {
    return this.#heap[0];
  }

  /** Queues `callback` to be due at `at`. */
  push(at: number, callback: () => void): QueuedTimer {
    const heap = this.#heap;
    const timer: QueuedTimer = { at, seq: this.#seq++, callback, index: heap.length };
    heap.push(timer);
    this.#up(timer.index);
    return timer;
  }

  /** Removes `timer` if it is still queued; does nothing otherwise. */
  remove(timer: QueuedTimer): void {
    if (timer.index >= 0) this.#removeAt(timer.index);
  }

  #removeAt(i: number): void {
    const heap = this.#heap;
    const removed = heap[i] as QueuedTimer;
    const last = heap.pop() as QueuedTimer;
    removed.index = -1;
    if (last !== removed) {
      heap[i] = last;
      last.index = i;
      this.#down(i);
      this.#up(last.index);
    }
  }

  #up(i: number): void {
    const heap = this.#heap;
    const item = heap[i] as QueuedTimer;
    while (i > 0) {
      const parentIndex = (i - 1) >> 1;
      const parent = heap[parentIndex] as QueuedTimer;
      if (!less(item, parent)) break;
      heap[i] = parent;
      parent.index = i;
      i = parentIndex;
    }
    heap[i] = item;
    item.index = i;
  }

  #down(i: number): void {
    const heap = this.#heap;
    const n = heap.length;
    const item = heap[i] as QueuedTimer;
    for (;;) {
      const left = 2 * i + 1;
      if (left >= n) break;
      const right = left + 1;
      let child = left;
      if (right < n && less(heap[right] as QueuedTimer, heap[left] as QueuedTimer)) child = right;
      const smallest = heap[child] as QueuedTimer;
      if (!less(smallest, item)) break;
      heap[i] = smallest;
      smallest.index = i;
      i = child;
    }
    heap[i] = item;
    item.index = i;
  }
}

function less(a: QueuedTimer, b: QueuedTimer): boolean {
  return a.at < b.at || (a.at === b.at && a.seq < b.seq);
}
