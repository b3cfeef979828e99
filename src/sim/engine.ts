/**
 * The discrete-event engine: virtual time, one queue of events, and a `Clock` over it. Events run one at
 * a time in time order (ties in the order they were scheduled) and each runs to completion before the
 * next, with no microtask in between: the retry loop it drives (the pipeline's steps) and the outcomes it settles
 * (`Outcome`) are synchronous, so a run is a plain loop and the same seed gives the same result.
 */
import type { CancelTimer, Clock } from "../core/clock.js";
import type { Random } from "../core/random.js";
import { seededRandom } from "../core/random.js";
import { type Event, EventQueue, type Timed } from "./event-queue.js";

export type { Timed } from "./event-queue.js";

/**
 * The engine as a `Clock`. Steps written for the simulator find the engine through it (`simulation`) to
 * queue their events as objects (`Simulation.schedule`) rather than as closures.
 */
export class SimulationClock implements Clock {
  readonly simulation: Simulation;

  constructor(simulation: Simulation) {
    this.simulation = simulation;
  }

  now(): number {
    return this.simulation.now;
  }

  setTimer(ms: number, callback: () => void): CancelTimer {
    return this.simulation.after(ms, callback);
  }
}

export class Simulation {
  readonly #queue = new EventQueue<Event>();
  #now = 0;
  #events = 0;
  /** The run's one source of randomness: think times, jitter, service decisions. */
  readonly random: Random;
  /** The engine as a `Clock`: what the retry loop reads and sets its timers on. */
  readonly clock: SimulationClock;

  constructor(seed: number) {
    this.random = seededRandom(seed);
    this.clock = new SimulationClock(this);
  }

  /** The virtual time in ms. */
  get now(): number {
    return this.#now;
  }

  /** Events run so far. */
  get events(): number {
    return this.#events;
  }

  /** Events scheduled and not yet run. */
  get pending(): number {
    return this.#queue.size;
  }

  /** Runs `callback` `ms` from now (at once if `ms` <= 0, after what is already due now). */
  after(ms: number, callback: () => void): CancelTimer {
    const queue = this.#queue;
    const delay = ms > 0 ? ms : 0;
    const slot = queue.pushAfter(this.#now + delay, delay, callback);
    const generation = queue.generation(slot);
    return () => queue.cancel(slot, generation);
  }

  /**
   * Fires `event` `ms` from now, as `after` would call a callback, and returns its slot in the queue:
   * `cancel(slot, generation(slot))` cancels it. Queues no closure, and returns none.
   */
  schedule(ms: number, event: Timed): number {
    const delay = ms > 0 ? ms : 0;
    return this.#queue.pushAfter(this.#now + delay, delay, event);
  }

  /** The generation of the event in `slot` (see `schedule`). */
  generation(slot: number): number {
    return this.#queue.generation(slot);
  }

  /** Cancels the event `schedule` gave `slot`, if it is still of `generation` and has not fired. */
  cancel(slot: number, generation: number): void {
    this.#queue.cancel(slot, generation);
  }

  /** Runs `callback` at time `at` (now, if `at` has passed). */
  at(at: number, callback: () => void): CancelTimer {
    return this.after(at - this.#now, callback);
  }

  /**
   * Runs every event due up to `until`, then sets the time to `until`. `onSlice` is called about every
   * `slice` ms of virtual time (for progress reports).
   *
   * While it runs, errors are made without a stack trace (`Error.stackTraceLimit` is 0, and restored
   * after): a simulated failure's stack shows only the engine's loop, and capturing and formatting it
   * (a circuit breaker's refusal, the retry loop's call site) cost more than the rest of the event.
   * The run is synchronous, so no code outside the simulation sees the change.
   */
  run(until: number, onSlice?: (now: number) => void, slice = 1000): void {
    const errorClass = Error as { stackTraceLimit?: number };
    const limit = errorClass.stackTraceLimit;
    errorClass.stackTraceLimit = 0;
    try {
      this.#run(until, onSlice, slice);
    } finally {
      errorClass.stackTraceLimit = limit;
    }
  }

  #run(until: number, onSlice: ((now: number) => void) | undefined, slice: number): void {
    const queue = this.#queue;
    let nextSlice = onSlice === undefined ? Number.POSITIVE_INFINITY : this.#now + slice;
    for (;;) {
      const at = queue.peekTime();
      if (at > until) break;
      const event = queue.pop();
      if (event === undefined) break;
      if (at > this.#now) this.#now = at;
      this.#events += 1;
      if (typeof event === "function") event();
      else event.fire();
      if (this.#now >= nextSlice) {
        onSlice?.(this.#now);
        nextSlice = this.#now + slice;
      }
    }
    if (until > this.#now) this.#now = until;
  }
}
