/**
 * The latency server of the overload experiment: it slows down as its concurrency grows past a limit.
 */
import type { Simulation } from "../engine.js";
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
  /** How often the server checks whether a request has been served long enough, ms. The overload experiment's: 50. */
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

/**
 * The slow-under-load server of the overload experiment: a request needs `minDelay` while concurrency c <= limit, and
 * minDelay × factor^((c − limit) / K) above it, judged from the concurrency at each check. Every `tick` ms
 * the server computes that delay from its current concurrency and answers every request it has been
 * serving for at least that long (its reference implementation re-checks each request every 50 ms; here
 * one check serves all requests, which is what keeps a run of thousands of concurrent requests cheap).
 * A request whose client gave up is still served and still counts.
 *
 * A pause is the experiment's SIGSTOP: nothing is accepted or answered. Requests that arrive meanwhile wait in
 * the listen queue (up to `backlog`; the rest are dropped) and are all accepted when the pause ends, their
 * service time counted from then, as the reference server's handler starts its clock when it runs.
 */
export class LatencyServer extends Base {
  readonly #options: LatencyServerOptions;
  /** Accepted requests in order of acceptance: the oldest is always the next to be answered. */
  readonly #ring = new RequestRing();
  // Requests waiting in the listen queue during a pause.
  #queued: { arrival: number; outcome: ServedOutcome }[] = [];
  #ticking = false;
  /** The service time computed at the last check, ms (what the reference server prints as "last delay"). */
  lastDelay = 0;

  constructor(sim: Simulation, recorder: Recorder, timeout: number, options: LatencyServerOptions) {
    super(sim, recorder, timeout);
    this.#options = options;
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

  /** Requests accepted and not yet answered whose clients still wait for the answer. */
  get waitedFor(): number {
    return this.#ring.waitedFor;
  }

  #paused(now: number): boolean {
    const pause = this.#options.pause;
    return pause !== undefined && now >= pause.start && now < pause.end;
  }

  request(): Outcome<string> {
    const now = this.sim.now;
    const outcome = new ServedOutcome(this.#ring);
    if (this.#paused(now)) {
      this.recorder.offer(now);
      if (this.#queued.length < this.#options.backlog) this.#queued.push({ arrival: now, outcome });
      return outcome;
    }
    this.arrive();
    this.#accept(now, now, outcome);
    return outcome;
  }

  #accept(arrival: number, accepted: number, outcome: ServedOutcome): void {
    this.#ring.push(arrival, accepted, outcome);
    if (!this.#ticking) this.#scheduleTick();
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
    // Requests accepted before the pause are served again from now on, even if none arrived meanwhile.
    if (!this.#ticking && this.#ring.size > 0) this.#scheduleTick();
  }

  #scheduleTick(): void {
    this.#ticking = true;
    const tick = this.#options.tick;
    // Checks fall on a fixed grid of `tick` ms, as a ticker started with the server would.
    const next = (Math.floor(this.sim.now / tick) + 1) * tick;
    this.sim.at(next, this.#check);
  }

  readonly #check = (): void => {
    this.#ticking = false;
    const now = this.sim.now;
    if (this.#paused(now)) {
      // Nothing is answered while paused; #resume starts the checks again.
      return;
    }
    const delay = LatencyServer.serviceTime(this.concurrency, this.#options);
    this.lastDelay = delay;
    const ring = this.#ring;
    // The ring is read afresh for each request: an answer runs its client's code, which may send another.
    while (ring.size > 0 && now - ring.oldestAccepted() >= delay) {
      const arrival = ring.oldestArrival();
      this.answer(ring.shift(), arrival, undefined);
    }
    if (ring.size > 0) this.#scheduleTick();
  };
}

/** Requests in a ring at first; it doubles as needed. */
const INITIAL = 1024;

/**
 * A latency server's accepted requests, oldest first, in a ring indexed by each request's number of
 * acceptance: when it was accepted and when it arrived side by side in a typed array, and its outcome,
 * emptied once its client gives up on it (see `ServedOutcome`). An overloaded server can hold millions
 * of requests whose clients have left; each then costs 16 bytes of numbers and an empty slot, not an
 * object for the collector to trace.
 */
class RequestRing {
  #times = new Float64Array(2 * INITIAL);
  #outcomes: (ServedOutcome | undefined)[] = new Array(INITIAL).fill(undefined);
  #mask = INITIAL - 1;
  /** The number of the oldest request not yet answered, and of the next one to be accepted. */
  #head = 0;
  #tail = 0;
  waitedFor = 0;

  get size(): number {
    return this.#tail - this.#head;
  }

  push(arrival: number, accepted: number, outcome: ServedOutcome): void {
    if (this.#tail - this.#head > this.#mask) this.#grow();
    const number = this.#tail++;
    const i = number & this.#mask;
    this.#times[2 * i] = accepted;
    this.#times[2 * i + 1] = arrival;
    outcome.number = number;
    // A request queued during a pause may have been given up on already.
    if (outcome.waitedFor) {
      this.#outcomes[i] = outcome;
      this.waitedFor += 1;
    }
  }

  /** When the oldest request was accepted (the ring is not empty). */
  oldestAccepted(): number {
    return this.#times[2 * (this.#head & this.#mask)] as number;
  }

  /** When the oldest request arrived (the ring is not empty). */
  oldestArrival(): number {
    return this.#times[2 * (this.#head & this.#mask) + 1] as number;
  }

  /** Removes the oldest request; its outcome, unless its client has given up on it. */
  shift(): ServedOutcome | undefined {
    const i = this.#head++ & this.#mask;
    const outcome = this.#outcomes[i];
    if (outcome !== undefined) {
      this.#outcomes[i] = undefined;
      this.waitedFor -= 1;
    }
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

/** A latency server's answer to one request: it lets the server know when nobody waits for it any more. */
class ServedOutcome extends Outcome<string> {
  readonly #ring: RequestRing;
  /** The request's number of acceptance; -1 while it waits in the listen queue. */
  number = -1;
  /** False once the client has given up on it. */
  waitedFor = true;

  constructor(ring: RequestRing) {
    super();
    this.#ring = ring;
  }

  protected override abandoned(): void {
    this.waitedFor = false;
    if (this.number >= 0) this.#ring.release(this.number);
  }
}
