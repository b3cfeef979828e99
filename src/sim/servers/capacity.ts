/**
 * The capacity server: it serves a rate of requests at one latency, and is slower above it.
 */
import type { Simulation } from "../engine.js";
import type { Recorder } from "../metrics.js";
import { Outcome } from "../outcome.js";
import { Base, type Pause } from "./base.js";

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
