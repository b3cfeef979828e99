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
  // Accepted requests in order of acceptance: the oldest is always the next to be answered.
  #accepted: number[] = [];
  #arrivals: number[] = [];
  #outcomes: Outcome<string>[] = [];
  #head = 0;
  // Requests waiting in the listen queue during a pause.
  #queued: { arrival: number; outcome: Outcome<string> }[] = [];
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

  #accept(arrival: number, accepted: number, outcome: Outcome<string>): void {
    this.#arrivals.push(arrival);
    this.#accepted.push(accepted);
    this.#outcomes.push(outcome);
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
    if (!this.#ticking && this.#head < this.#accepted.length) this.#scheduleTick();
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
    const accepted = this.#accepted;
    const arrivals = this.#arrivals;
    const outcomes = this.#outcomes;
    let head = this.#head;
    while (head < accepted.length && now - (accepted[head] as number) >= delay) {
      const outcome = outcomes[head] as Outcome<string>;
      outcomes[head] = undefined as unknown as Outcome<string>;
      this.answer(outcome, arrivals[head] as number, undefined);
      head += 1;
    }
    // Drop the answered prefix now and then, so the arrays do not grow without bound.
    if (head > 4096 && head * 2 > accepted.length) {
      this.#accepted = accepted.slice(head);
      this.#arrivals = arrivals.slice(head);
      this.#outcomes = outcomes.slice(head);
      head = 0;
    }
    this.#head = head;
    if (head < this.#accepted.length) this.#scheduleTick();
  };
}
