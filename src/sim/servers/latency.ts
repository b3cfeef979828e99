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

/** An accepted request, waiting to be answered. */
interface Pending {
  readonly arrival: number;
  readonly accepted: number;
  readonly outcome: Outcome<string>;
}

/** Requests that share a phase of the check schedule, oldest first, and whether a check is scheduled. */
interface PhaseQueue {
  items: Pending[];
  head: number;
  scheduled: boolean;
}

/**
 * The slow-under-load server of the overload experiment: a request needs `minDelay` while concurrency c <= limit, and
 * minDelay × factor^((c − limit) / K) above it, judged from the concurrency at each check. Each request
 * is checked every `tick` ms from its own acceptance, as the reference server's handler re-checks it
 * every 50 ms, and answered at the first check at which it has been served at least that long: alone,
 * a request takes 100 ms. Requests whose schedules fall within tick / 50 of each other are checked
 * together (the oldest first), which keeps a run of thousands of concurrent requests cheap: at most 50
 * checks per tick, whatever the concurrency.
 * A request whose client gave up is still served and still counts.
 *
 * A pause is the experiment's SIGSTOP: nothing is accepted or answered. Requests that arrive meanwhile wait in
 * the listen queue (up to `backlog`; the rest are dropped) and are all accepted when the pause ends, their
 * service time counted from then, as the reference server's handler starts its clock when it runs.
 */
export class LatencyServer extends Base {
  readonly #options: LatencyServerOptions;
  // Accepted requests by the phase of their check schedule (acceptance time modulo tick).
  readonly #phases: PhaseQueue[] = Array.from({ length: PHASES }, () => ({
    items: [],
    head: 0,
    scheduled: false,
  }));
  // Requests waiting in the listen queue during a pause.
  #queued: { arrival: number; outcome: Outcome<string> }[] = [];
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

  #paused(now: number): boolean {
    const pause = this.#options.pause;
    return pause !== undefined && now >= pause.start && now < pause.end;
  }

  request(): Outcome<string> {
    const now = this.sim.now;
    const outcome = new Outcome<string>();
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

  #accept(arrival: number, accepted: number, outcome: Outcome<string>): void {
    const tick = this.#options.tick;
    const phase = accepted - Math.floor(accepted / tick) * tick;
    const queue = this.#phases[Math.min(PHASES - 1, Math.floor((phase / tick) * PHASES))] as PhaseQueue;
    queue.items.push({ arrival, accepted, outcome });
    if (!queue.scheduled) {
      queue.scheduled = true;
      this.sim.at(accepted + this.#firstCheck() * tick, () => this.#check(queue));
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
    let head = queue.head;
    const items = queue.items;
    const oldest = items[head] as Pending;
    if (pause !== undefined && this.#paused(now)) {
      // Nothing is answered while paused: the next check is the oldest's first one after the pause.
      const checks = Math.ceil((pause.end - oldest.accepted) / tick);
      this.sim.at(oldest.accepted + checks * tick, () => this.#check(queue));
      return;
    }
    const delay = LatencyServer.serviceTime(this.concurrency, this.#options);
    this.lastDelay = delay;
    // Every request of the phase is checked now, after a whole number of ticks since its acceptance.
    while (head < items.length) {
      const item = items[head] as Pending;
      const served = Math.round((now - item.accepted) / tick) * tick;
      if (served < tick || served < delay) break;
      items[head] = undefined as unknown as Pending;
      this.answer(item.outcome, item.arrival, undefined);
      head += 1;
    }
    // Drop the answered prefix now and then, so the queue does not grow without bound.
    if (head > 1024 && head * 2 > items.length) {
      queue.items = items.slice(head);
      head = 0;
    }
    queue.head = head;
    if (head === queue.items.length) {
      queue.scheduled = false;
      return;
    }
    const next = queue.items[head] as Pending;
    const checks = Math.max(Math.round((now - next.accepted) / tick) + 1, this.#firstCheck());
    this.sim.at(next.accepted + checks * tick, () => this.#check(queue));
  }
}
