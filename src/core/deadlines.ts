/**
 * Time limits that share timers: a FIFO per duration. On a monotonic clock every deadline of one duration
 * is due after all those of the same duration set before it, so each duration keeps its deadlines in a
 * linked list in the order they were set (append and remove are O(1)) and one timer for the earliest.
 * Most deadlines are removed long before they are due (the operation answered), so a timer usually finds
 * its deadline gone and re-arms for the one that is now first: a few timers a second in all, however
 * many calls set a limit, where a timer per call would cost a `setTimeout` and a `clearTimeout` each.
 */

/** A time limit in a `DeadlineQueue`: extend it and override `expire`. */
export class Deadline {
  /** When it is due, on the queue's clock. */
  at = 0;
  /** Its neighbours in its lane; its lane while it is queued. */
  prev: Deadline | undefined = undefined;
  next: Deadline | undefined = undefined;
  lane: Lane | undefined = undefined;

  /** Called once, when it comes due while still queued (it has left the queue by then). */
  expire(): void {}
}

/** The timers a queue runs on: the real ones, or, in tests, a virtual clock's. */
export interface DeadlineHost {
  now(): number;
  /** Calls `callback` once after `ms` ms; returns a handle for `stop`. */
  start(ms: number, callback: () => void): unknown;
  stop(handle: unknown): void;
  /**
   * Where a timer can be told not to keep the process alive (a real timer's `unref`): `park` lets a lane
   * that has emptied keep its timer without holding the process, and `unpark` holds it again when a
   * deadline comes. Without them an emptied lane stops its timer.
   */
  park?(handle: unknown): void;
  unpark?(handle: unknown): void;
  /**
   * The host whose clock and timers are in use now, where they can be replaced (a test's fake timers take
   * over the real ones, and give them back): a deadline is queued in a lane of the host it was read from,
   * so that it is never compared with another clock's readings nor left waiting on a timer that will not
   * fire. Without it, the host itself.
   */
  current?(exact?: boolean): DeadlineHost;
}

/** The deadlines of one duration, oldest first, and the timer set for (at most) the first's due time. */
class Lane {
  readonly host: DeadlineHost;
  head: Deadline | undefined = undefined;
  tail: Deadline | undefined = undefined;
  timer: unknown = undefined;
  /**
   * The deadline the timer was set for, if it was set for the whole of its time: due when the timer fires,
   * whatever the clock says (fake timers may run on a clock of their own while the clock read stays real).
   */
  armedFor: Deadline | undefined = undefined;
  parked = false;
  readonly fire: () => void;

  constructor(
    readonly ms: number,
    queue: DeadlineQueue,
    host: DeadlineHost,
  ) {
    this.host = host;
    this.fire = () => queue.fired(this);
  }
}

/** A lane's timer while it runs what came due: a deadline queued meanwhile does not arm another. */
const FIRING: unique symbol = Symbol("firing");

/** A timer may fire up to a millisecond before `performance.now()` says it is due (timers count whole ms). */
const EARLY = 1;

/** The longest a real timer can wait (2^31 − 1 ms); a longer deadline's timer fires early and re-arms. */
const LONGEST = 2_147_483_647;

export class DeadlineQueue {
  readonly #host: DeadlineHost;
  readonly #lanes = new Map<number, Lane>();
  #size = 0;

  constructor(host: DeadlineHost) {
    this.#host = host;
  }

  /**
   * The host whose clock and timers a deadline queued now runs on (see `DeadlineHost.current`); `exact`:
   * checked in full, not only by the quick check made between full ones.
   */
  currentHost(exact = false): DeadlineHost {
    return this.#host.current?.(exact) ?? this.#host;
  }

  /** Deadlines queued. */
  get size(): number {
    return this.#size;
  }

  /** Timers set (parked ones too). */
  get timers(): number {
    let n = 0;
    for (const lane of this.#lanes.values()) if (lane.timer !== undefined) n += 1;
    return n;
  }

  /**
   * Queues `deadline` to expire `ms` ms from now (`ms` >= 0 and finite); it must not be queued already.
   * Returns the time it read as now.
   */
  add(deadline: Deadline, ms: number): number {
    const host = this.currentHost();
    let lane = this.#lanes.get(ms);
    if (lane === undefined || lane.host !== host) {
      // A lane of another host (timers replaced since) goes on alone with what it holds.
      lane = new Lane(ms, this, host);
      this.#lanes.set(ms, lane);
    }
    const now = host.now();
    deadline.at = now + ms;
    deadline.lane = lane;
    deadline.next = undefined;
    const tail = lane.tail;
    deadline.prev = tail;
    if (tail === undefined) lane.head = deadline;
    else tail.next = deadline;
    lane.tail = deadline;
    this.#size += 1;
    if (lane.timer === undefined) this.#arm(lane, ms);
    else if (lane.parked) {
      // The parked timer is set for a deadline that came before this one: it fires early, and re-arms.
      lane.parked = false;
      host.unpark?.(lane.timer);
    }
    return now;
  }

  /** Takes `deadline` out of the queue, if it is in it; it will not expire. */
  remove(deadline: Deadline): void {
    const lane = deadline.lane;
    if (lane === undefined) return;
    // Not held on to (with all it holds) until the timer fires.
    if (lane.armedFor === deadline) lane.armedFor = undefined;
    this.#unlink(lane, deadline);
    if (lane.head !== undefined || lane.timer === FIRING) return;
    const host = lane.host;
    if (host.park !== undefined) {
      lane.parked = true;
      host.park(lane.timer);
    } else {
      host.stop(lane.timer);
      lane.timer = undefined;
      this.#forget(lane);
    }
  }

  #unlink(lane: Lane, deadline: Deadline): void {
    const { prev, next } = deadline;
    if (prev === undefined) lane.head = next;
    else prev.next = next;
    if (next === undefined) lane.tail = prev;
    else next.prev = prev;
    deadline.prev = undefined;
    deadline.next = undefined;
    deadline.lane = undefined;
    this.#size -= 1;
  }

  #arm(lane: Lane, ms: number): void {
    lane.parked = false;
    lane.armedFor = ms <= LONGEST ? lane.head : undefined;
    lane.timer = lane.host.start(Math.min(Math.max(ms, 0), LONGEST), lane.fire);
  }

  /** A lane's timer fired: expires what is due, in order, and re-arms for the next (or lets the lane go). */
  fired(lane: Lane): void {
    lane.timer = FIRING;
    lane.parked = false;
    const now = lane.host.now();
    const due = lane.armedFor;
    lane.armedFor = undefined;
    try {
      for (
        let first = lane.head;
        first !== undefined && (first === due || first.at - now < EARLY);
        first = lane.head
      ) {
        this.#unlink(lane, first);
        first.expire();
      }
    } finally {
      lane.timer = undefined;
      this.#rearm(lane, now);
    }
  }

  /** Arms a lane's timer for its first deadline, or lets the lane go when it has none. */
  #rearm(lane: Lane, now: number): void {
    const first = lane.head;
    if (first === undefined) this.#forget(lane);
    else this.#arm(lane, first.at - now);
  }

  /** Lets an emptied lane go (unless another host's lane of its duration took its place). */
  #forget(lane: Lane): void {
    if (this.#lanes.get(lane.ms) === lane) this.#lanes.delete(lane.ms);
  }
}
