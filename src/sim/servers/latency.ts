/**
 * The latency server of the overload experiment: it slows down as its concurrency grows past a limit.
 */
import type { Simulation, Timed } from "../engine.js";
import type { Recorder } from "../metrics.js";
import { Outcome } from "../outcome.js";
import { Base, type Pause } from "./base.js";

export interface LatencyServerOptions {
  /** Service time at or below the concurrency limit, ms. The overload experiment's: 100. */
  minDelay: number;
  /** Concurrency up to which service takes `minDelay`. The overload experiment's: 30. */
  limit: number;
  /** Growth of the service time above the limit. The overload experiment's: 1.05. */
  factor: number;
  /** K: how many requests above the limit multiply the service time by `factor`. The overload experiment's: 15. */
  k: number;
  /** How often the server checks each request, from its acceptance, for whether it has been served long enough, ms. The overload experiment's: 50. */
  tick: number;
  /**
   * Requests that can wait to be accepted while the server is paused (a listen queue). The overload
   * experiment's run showed about 1,040 requests in the server the second it resumed. The default is 512: see docs/simulator.md
   * for how the outcome depends on it.
   * Requests beyond it are dropped and their clients time out.
   */
  backlog: number;
  /** An outage, if any. */
  pause?: Pause | undefined;
}

/** Requests whose checks fall within `tick / PHASES` of each other are checked together. */
const PHASES = 50;

/**
 * The slow-under-load server of the overload experiment: a request needs `minDelay` while concurrency c <= limit, and
 * minDelay × factor^((c − limit) / K) above it, judged from the concurrency at each check. Each request
 * is checked every `tick` ms from its own acceptance, as the reference server's handler re-checks it
 * every 50 ms, and answered at the first check at which it has been served at least that long: alone,
 * a request takes 100 ms. Requests whose schedules fall within tick / 50 of each other are checked
 * together (the oldest first), which keeps a run of thousands of concurrent requests cheap: at most 50
 * checks per tick, whatever the concurrency.
 * A request whose client gave up is still served and still counts, but the server lets go of its outcome
 * at once: it keeps only when the request arrived and was accepted.
 *
 * A pause is the experiment's SIGSTOP: nothing is accepted or answered. Requests that arrive meanwhile wait in
 * the listen queue (up to `backlog`; the rest are dropped) and are all accepted when the pause ends, their
 * service time counted from then, as the reference server's handler starts its clock when it runs.
 */
export class LatencyServer extends Base {
  readonly #options: LatencyServerOptions;
  // Accepted requests by the phase of their check schedule (acceptance time modulo tick).
  readonly #phases: PhaseQueue[];
  // Requests waiting in the listen queue during a pause.
  #queued: { arrival: number; outcome: ServedOutcome }[] = [];
  /** The service time computed at the last check, ms (what the reference server prints as "last delay"). */
  lastDelay = 0;

  constructor(sim: Simulation, recorder: Recorder, timeout: number, options: LatencyServerOptions) {
    super(sim, recorder, timeout);
    this.#options = options;
    // Each phase queue is its own check event: a check queues no closure.
    const check = (queue: PhaseQueue) => this.#check(queue);
    this.#phases = Array.from({ length: PHASES }, () => new PhaseQueue(check));
    const pause = options.pause;
    if (pause !== undefined) sim.at(pause.end, () => this.#resume());
  }

  /** The service time at concurrency c, the reference server's formula. */
  static serviceTime(
    c: number,
    o: Pick<LatencyServerOptions, "minDelay" | "limit" | "factor" | "k">,
  ): number {
    return c <= o.limit ? o.minDelay : o.minDelay * o.factor ** ((c - o.limit) / o.k);
  }

  /**
   * The knee: the concurrency above which the service time exceeds the clients' `timeout`, so that every
   * answer comes too late; null without a timeout or when the service time never grows.
   */
  static knee(
    timeout: number,
    o: Pick<LatencyServerOptions, "minDelay" | "limit" | "factor" | "k">,
  ): number | null {
    if (!(timeout >= 0 && Number.isFinite(timeout)) || !(o.factor > 1)) return null;
    if (timeout < o.minDelay) return 0;
    return o.limit + (o.k * Math.log(timeout / o.minDelay)) / Math.log(o.factor);
  }

  /** Requests accepted and not yet answered whose clients still wait for the answer. */
  get waitedFor(): number {
    let waitedFor = 0;
    for (const queue of this.#phases) waitedFor += queue.waitedFor;
    return waitedFor;
  }

  #paused(now: number): boolean {
    const pause = this.#options.pause;
    return pause !== undefined && now >= pause.start && now < pause.end;
  }

  request(): Outcome<string> {
    const now = this.sim.now;
    const outcome = new ServedOutcome();
    if (this.#paused(now)) {
      this.recorder.offer(now);
      if (this.#queued.length < this.#options.backlog) this.#queued.push({ arrival: now, outcome });
      return outcome;
    }
    this.arrive();
    this.#accept(now, now, outcome);
    return outcome;
  }

  /** The checks a request waits before its first possible answer: none can come before minDelay. */
  #firstCheck(): number {
    return Math.max(1, Math.ceil(this.#options.minDelay / this.#options.tick));
  }

  #accept(arrival: number, accepted: number, outcome: ServedOutcome): void {
    const tick = this.#options.tick;
    const phase = accepted - Math.floor(accepted / tick) * tick;
    const queue = this.#phases[Math.min(PHASES - 1, Math.floor((phase / tick) * PHASES))] as PhaseQueue;
    queue.push(arrival, accepted, outcome);
    if (!queue.scheduled) {
      queue.scheduled = true;
      this.#checkAt(accepted + this.#firstCheck() * tick, queue);
    }
  }

  #resume(): void {
    const now = this.sim.now;
    const queued = this.#queued;
    this.#queued = [];
    for (const { arrival, outcome } of queued) {
      this.recorder.work += 1;
      this.concurrency += 1;
      this.#accept(arrival, now, outcome);
    }
    if (this.concurrency > this.recorder.peakConcurrency) this.recorder.peakConcurrency = this.concurrency;
  }

  /** The checks of one phase: answers its requests served long enough, oldest first, and plans the next. */
  #check(queue: PhaseQueue): void {
    const now = this.sim.now;
    const tick = this.#options.tick;
    const pause = this.#options.pause;
    if (pause !== undefined && this.#paused(now)) {
      // Nothing is answered while paused: the next check is the oldest's first one after the pause.
      const oldest = queue.oldestAccepted();
      const checks = Math.ceil((pause.end - oldest) / tick);
      this.#checkAt(oldest + checks * tick, queue);
      return;
    }
    const delay = LatencyServer.serviceTime(this.concurrency, this.#options);
    this.lastDelay = delay;
    // Every request of the phase is checked now, after a whole number of ticks since its acceptance. The
    // queue is read afresh for each request: an answer runs its client's code, which may send another.
    while (queue.size > 0) {
      const served = Math.round((now - queue.oldestAccepted()) / tick) * tick;
      if (served < tick || served < delay) break;
      const arrival = queue.oldestArrival();
      this.answer(queue.shift(), arrival, undefined);
    }
    if (queue.size === 0) {
      queue.scheduled = false;
      return;
    }
    const next = queue.oldestAccepted();
    const checks = Math.max(Math.round((now - next) / tick) + 1, this.#firstCheck());
    this.#checkAt(next + checks * tick, queue);
  }

  /** Checks `queue` at time `at`, as `sim.at` would call a callback. */
  #checkAt(at: number, queue: PhaseQueue): void {
    this.sim.schedule(at - this.sim.now, queue);
  }
}

/** Requests a phase's ring holds at first; it doubles as needed. */
const INITIAL = 64;

/**
 * The accepted requests of one phase of the check schedule, oldest first, and whether a check is
 * scheduled: a ring indexed by each request's number of acceptance in the phase, with when it was
 * accepted and when it arrived side by side in a typed array, and its outcome, emptied once its client
 * gives up on it (see `ServedOutcome`). An overloaded server can hold millions of requests whose clients
 * have left; each then costs 16 bytes of numbers and an empty slot, not an object for the collector to trace.
 */
class PhaseQueue implements Timed {
  readonly #check: (queue: PhaseQueue) => void;
  #times = new Float64Array(2 * INITIAL);
  #outcomes: (ServedOutcome | undefined)[] = new Array(INITIAL).fill(undefined);
  #mask = INITIAL - 1;
  /** The number of the oldest request not yet answered, and of the next one to be accepted. */
  #head = 0;
  #tail = 0;
  /** Requests held whose clients still wait for them. */
  waitedFor = 0;
  scheduled = false;

  constructor(check: (queue: PhaseQueue) => void) {
    this.#check = check;
  }

  /** Its check is due. */
  fire(): void {
    this.#check(this);
  }

  get size(): number {
    return this.#tail - this.#head;
  }

  push(arrival: number, accepted: number, outcome: ServedOutcome): void {
    if (this.#tail - this.#head > this.#mask) this.#grow();
    const number = this.#tail++;
    const i = number & this.#mask;
    this.#times[2 * i] = accepted;
    this.#times[2 * i + 1] = arrival;
    // A request queued during a pause may have been given up on already.
    if (!outcome.waitedFor) return;
    outcome.queue = this;
    outcome.number = number;
    this.#outcomes[i] = outcome;
    this.waitedFor += 1;
  }

  /** When the oldest request was accepted (the queue is not empty). */
  oldestAccepted(): number {
    return this.#times[2 * (this.#head & this.#mask)] as number;
  }

  /** When the oldest request arrived (the queue is not empty). */
  oldestArrival(): number {
    return this.#times[2 * (this.#head & this.#mask) + 1] as number;
  }

  /** Removes the oldest request; gives its outcome, unless its client has given up on it. */
  shift(): ServedOutcome | undefined {
    const i = this.#head++ & this.#mask;
    const outcome = this.#outcomes[i];
    if (outcome === undefined) return undefined;
    this.#outcomes[i] = undefined;
    outcome.queue = undefined;
    this.waitedFor -= 1;
    return outcome;
  }

  /** Lets go of request `number`'s outcome: its client no longer waits for it. */
  release(number: number): void {
    if (number < this.#head || number >= this.#tail) return;
    const i = number & this.#mask;
    if (this.#outcomes[i] === undefined) return;
    this.#outcomes[i] = undefined;
    this.waitedFor -= 1;
  }

  /** Doubles the ring, keeping each request at its number's place in the bigger one. */
  #grow(): void {
    const size = 2 * (this.#mask + 1);
    const mask = size - 1;
    const times = new Float64Array(2 * size);
    const outcomes: (ServedOutcome | undefined)[] = new Array(size).fill(undefined);
    for (let number = this.#head; number < this.#tail; number++) {
      const from = number & this.#mask;
      const to = number & mask;
      times[2 * to] = this.#times[2 * from] as number;
      times[2 * to + 1] = this.#times[2 * from + 1] as number;
      outcomes[to] = this.#outcomes[from];
    }
    this.#times = times;
    this.#outcomes = outcomes;
    this.#mask = mask;
  }
}

/** A latency server's answer to one request: it tells the server when nobody waits for it any more. */
class ServedOutcome extends Outcome<string> {
  /** The phase queue holding it once accepted, while its client waits; its number of acceptance there. */
  queue: PhaseQueue | undefined;
  number = -1;
  /** False once its client has given up on it. */
  waitedFor = true;

  protected override abandoned(): void {
    this.waitedFor = false;
    this.queue?.release(this.number);
    this.queue = undefined;
  }
}
