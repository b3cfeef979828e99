/**
 * The simulated servers. Each takes requests (`request()` returns an `Outcome` that settles when it
 * answers), records what it is offered and what it answers in time in a `Recorder`, and keeps its
 * concurrency: the requests inside it, abandoned ones included.
 */
import { withoutStack } from "../core/errors.js";
import { standardNormal } from "../core/random.js";
import type { Simulation } from "./engine.js";
import type { Recorder } from "./metrics.js";
import { Outcome } from "./outcome.js";

/** The error a simulated server answers with. */
export class ServerError extends Error {
  override readonly name = "ServerError";
}

/** A write that lost the race: the version it read is no longer current. */
export class ConflictError extends Error {
  override readonly name = "ConflictError";
}

export interface Server {
  /** A request arrives now. */
  request(): Outcome<string>;
  /** Requests inside the server now. */
  readonly concurrency: number;
}

/** A pause: the server serves nothing from `start` to `end` (ms), while requests still arrive and count. */
export interface Pause {
  readonly start: number;
  readonly end: number;
}

/** Shared by the servers: counts, concurrency and the client's timeout, to tell answered-in-time apart. */
abstract class Base implements Server {
  protected readonly sim: Simulation;
  protected readonly recorder: Recorder;
  /** The client's per-attempt timeout, ms: an answer later than this is one the client no longer waits for. */
  protected readonly timeout: number;
  concurrency = 0;

  constructor(sim: Simulation, recorder: Recorder, timeout: number) {
    this.sim = sim;
    this.recorder = recorder;
    this.timeout = timeout;
  }

  abstract request(): Outcome<string>;

  protected arrive(): void {
    this.recorder.offer(this.sim.now);
    this.recorder.work += 1;
    this.concurrency += 1;
    if (this.concurrency > this.recorder.peakConcurrency) this.recorder.peakConcurrency = this.concurrency;
  }

  protected answer(outcome: Outcome<string>, arrival: number, error: Error | undefined): void {
    this.concurrency -= 1;
    const now = this.sim.now;
    const latency = now - arrival;
    if (latency < this.timeout) this.recorder.answered(now, error === undefined, latency);
    if (error === undefined) outcome.resolve("OK");
    else outcome.reject(error);
  }
}

export interface LatencyServerOptions {
  /** Service time at or below the concurrency limit, ms. Seed 002: 100. */
  minDelay: number;
  /** Concurrency up to which service takes `minDelay`. Seed 002: 30. */
  limit: number;
  /** Growth of the service time above the limit. Seed 002: 1.05. */
  factor: number;
  /** Seed 002's K: how many requests above the limit multiply the service time by `factor`. 15. */
  k: number;
  /** How often the server checks whether a request has been served long enough, ms. Seed 002's server: 50. */
  tick: number;
  /**
   * Requests that can wait to be accepted while the server is paused (a listen queue). Seed 002's run
   * showed about 1,040 requests in the server the second it resumed. The default is 512: see the README
   * for how the outcome depends on it.
   * Requests beyond it are dropped and their clients time out.
   */
  backlog: number;
  /** An outage, if any. */
  pause?: Pause | undefined;
}

/**
 * Seed 002's server: a request needs `minDelay` while concurrency c <= limit, and
 * minDelay × factor^((c − limit) / K) above it, judged from the concurrency at each check. Every `tick` ms
 * the server computes that delay from its current concurrency and answers every request it has been
 * serving for at least that long (its reference implementation re-checks each request every 50 ms; here
 * one check serves all requests, which is what keeps a run of thousands of concurrent requests cheap).
 * A request whose client gave up is still served and still counts.
 *
 * A pause is seed 002's SIGSTOP: nothing is accepted or answered. Requests that arrive meanwhile wait in
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
  /** The service time computed at the last check, ms (what seed 002's server prints as "last delay"). */
  lastDelay = 0;

  constructor(sim: Simulation, recorder: Recorder, timeout: number, options: LatencyServerOptions) {
    super(sim, recorder, timeout);
    this.#options = options;
    const pause = options.pause;
    if (pause !== undefined) sim.at(pause.end, () => this.#resume());
  }

  /** The service time at concurrency c, seed 002's formula. */
  static serviceTime(
    c: number,
    o: Pick<LatencyServerOptions, "minDelay" | "limit" | "factor" | "k">,
  ): number {
    return c <= o.limit ? o.minDelay : o.minDelay * o.factor ** ((c - o.limit) / o.k);
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

export interface FlakyServerOptions {
  /** The chance that a request fails, whatever the load, in [0, 1]. */
  failureProbability: number;
  /** The service time of every request, ms. */
  latency: number;
}

/** A server that fails each request with a fixed probability whatever its load, after a fixed latency. */
export class FlakyServer extends Base {
  readonly #options: FlakyServerOptions;

  constructor(sim: Simulation, recorder: Recorder, timeout: number, options: FlakyServerOptions) {
    super(sim, recorder, timeout);
    this.#options = options;
  }

  request(): Outcome<string> {
    this.arrive();
    const outcome = new Outcome<string>();
    const arrival = this.sim.now;
    const fails = this.sim.random() < this.#options.failureProbability;
    this.sim.after(this.#options.latency, () =>
      this.answer(
        outcome,
        arrival,
        fails ? withoutStack(() => new ServerError("the server failed the request")) : undefined,
      ),
    );
    return outcome;
  }
}

export interface CapacityServerOptions {
  /** Requests per second the server can take at its normal latency. */
  capacity: number;
  /** The service time within capacity, ms; above capacity it is ten times longer. */
  latency: number;
  /** An outage: requests that arrive meanwhile are lost (never answered; their clients time out). */
  pause?: Pause | undefined;
  /** The window over which the arrival rate is measured, ms. Default 1000. */
  window?: number;
}

/**
 * A server with a fixed capacity: while the arrival rate (over the last `window` ms) is within `capacity`
 * requests per second, a request takes `latency`; above it, ten times as long.
 */
export class CapacityServer extends Base {
  readonly #options: CapacityServerOptions;
  // Arrival times of the last second, oldest first.
  #recent: number[] = [];
  #head = 0;

  constructor(sim: Simulation, recorder: Recorder, timeout: number, options: CapacityServerOptions) {
    super(sim, recorder, timeout);
    this.#options = options;
  }

  request(): Outcome<string> {
    const now = this.sim.now;
    const pause = this.#options.pause;
    if (pause !== undefined && now >= pause.start && now < pause.end) {
      this.recorder.offer(now);
      return new Outcome<string>();
    }
    this.arrive();
    const recent = this.#recent;
    recent.push(now);
    const window = this.#options.window ?? 1000;
    while (this.#head < recent.length && (recent[this.#head] as number) <= now - window) this.#head += 1;
    if (this.#head > 4096 && this.#head * 2 > recent.length) {
      this.#recent = recent.slice(this.#head);
      this.#head = 0;
    }
    const rate = ((this.#recent.length - this.#head) * 1000) / window;
    const latency = rate <= this.#options.capacity ? this.#options.latency : 10 * this.#options.latency;
    const outcome = new Outcome<string>();
    this.sim.after(latency, () => this.answer(outcome, now, undefined));
    return outcome;
  }
}

export interface VersionedStoreOptions {
  /** Mean one-way network delay, ms. 10 in AWS's experiment. */
  networkMean: number;
  /** Its standard deviation, ms. 2 in AWS's experiment. */
  networkSd: number;
}

/**
 * One row under optimistic concurrency (the experiment of AWS's "Exponential Backoff And Jitter"): a
 * client reads the row's version, then writes with it; a write whose version is no longer current fails
 * with a `ConflictError`. Each call crosses the network both ways, each way taking |N(mean, sd)| ms.
 * `work` counts writes.
 */
export class VersionedStore {
  readonly #sim: Simulation;
  readonly #recorder: Recorder;
  readonly #options: VersionedStoreOptions;
  version = 0;
  concurrency = 0;

  constructor(sim: Simulation, recorder: Recorder, options: VersionedStoreOptions) {
    this.#sim = sim;
    this.#recorder = recorder;
    this.#options = options;
  }

  #network(): number {
    return Math.abs(this.#options.networkMean + this.#options.networkSd * standardNormal(this.#sim.random));
  }

  read(): Outcome<number> {
    const outcome = new Outcome<number>();
    this.#sim.after(this.#network(), () => {
      const version = this.version;
      this.#sim.after(this.#network(), () => outcome.resolve(version));
    });
    return outcome;
  }

  write(version: number): Outcome<string> {
    const outcome = new Outcome<string>();
    const sent = this.#sim.now;
    this.#sim.after(this.#network(), () => {
      const now = this.#sim.now;
      this.#recorder.offer(now);
      this.#recorder.work += 1;
      const ok = version === this.version;
      if (ok) this.version += 1;
      this.#sim.after(this.#network(), () => {
        this.#recorder.answered(this.#sim.now, ok, this.#sim.now - sent);
        if (ok) outcome.resolve("OK");
        else outcome.reject(withoutStack(() => new ConflictError(`version ${version} is stale`)));
      });
    });
    return outcome;
  }
}

/** A write the store refused: over its provisioned capacity. */
export class ThrottledError extends Error {
  override readonly name = "ThrottledError";
}

export interface ThrottledStoreOptions {
  /** Provisioned writes per second at the start (the token bucket's rate and size). */
  capacity: number;
  /** The most it scales to. */
  maxCapacity: number;
  /** Each scale-up multiplies the capacity by this. */
  scaleFactor: number;
  /** How often it judges whether throttling is sustained, ms. */
  checkEvery: number;
  /** The share of writes refused over the last check period that asks for more capacity. */
  scaleAt: number;
  /** How long a scale-up takes to arrive, ms. */
  scaleDelay: number;
  /** A write's round trip, ms. */
  latency: number;
}

/**
 * A store with provisioned write capacity, as a DynamoDB table in provisioned mode (seed 003): a token
 * bucket of `capacity` tokens refilled at `capacity` per second; a write that finds no token is refused
 * with a `ThrottledError`. Every `checkEvery` ms, if at least `scaleAt` of the writes since the last check
 * were refused, it asks for `scaleFactor` × its capacity (up to `maxCapacity`), which arrives `scaleDelay`
 * ms later, one scale-up at a time, as an auto-scaling table does.
 */
export class ThrottledStore implements Server {
  readonly #sim: Simulation;
  readonly #recorder: Recorder;
  readonly #options: ThrottledStoreOptions;
  capacity: number;
  #tokens: number;
  #refilledAt = 0;
  #attempts = 0;
  #refused = 0;
  #scaling = false;
  concurrency = 0;

  constructor(sim: Simulation, recorder: Recorder, options: ThrottledStoreOptions) {
    this.#sim = sim;
    this.#recorder = recorder;
    this.#options = options;
    this.capacity = options.capacity;
    this.#tokens = options.capacity;
    sim.after(options.checkEvery, this.#check);
  }

  request(): Outcome<string> {
    const sim = this.#sim;
    const now = sim.now;
    this.#refill(now);
    this.#recorder.offer(now);
    this.#recorder.work += 1;
    this.#attempts += 1;
    const accepted = this.#tokens >= 1;
    if (accepted) this.#tokens -= 1;
    else this.#refused += 1;
    this.concurrency += 1;
    if (this.concurrency > this.#recorder.peakConcurrency) this.#recorder.peakConcurrency = this.concurrency;
    const outcome = new Outcome<string>();
    sim.after(this.#options.latency, () => {
      this.concurrency -= 1;
      this.#recorder.answered(sim.now, accepted, sim.now - now);
      if (accepted) outcome.resolve("OK");
      else outcome.reject(withoutStack(() => new ThrottledError("provisioned throughput exceeded")));
    });
    return outcome;
  }

  #refill(now: number): void {
    const elapsed = now - this.#refilledAt;
    this.#refilledAt = now;
    this.#tokens = Math.min(this.capacity, this.#tokens + (elapsed / 1000) * this.capacity);
  }

  readonly #check = (): void => {
    const o = this.#options;
    const sustained = this.#attempts > 0 && this.#refused / this.#attempts >= o.scaleAt;
    this.#attempts = 0;
    this.#refused = 0;
    if (sustained && !this.#scaling && this.capacity < o.maxCapacity) {
      this.#scaling = true;
      this.#sim.after(o.scaleDelay, () => {
        this.#refill(this.#sim.now);
        this.capacity = Math.min(o.maxCapacity, this.capacity * o.scaleFactor);
        this.#scaling = false;
      });
    }
    this.#sim.after(o.checkEvery, this.#check);
  };
}
