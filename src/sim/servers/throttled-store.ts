/**
 * The throttled store: provisioned write capacity that scales up under sustained throttling.
 */
import { withoutStack } from "../../core/errors.js";
import type { Simulation } from "../engine.js";
import type { Recorder } from "../metrics.js";
import { Outcome } from "../outcome.js";
import { nameOnPrototype, type Server } from "./base.js";

/** A write the store refused: over its provisioned capacity. Named on its prototype, as `ConflictError`. */
export class ThrottledError extends Error {
  declare readonly name: "ThrottledError";
  static {
    nameOnPrototype(ThrottledError, "ThrottledError");
  }
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
 * A store with provisioned write capacity, as a DynamoDB table in provisioned mode: a token
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
