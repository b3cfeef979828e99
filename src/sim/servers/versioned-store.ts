/**
 * The versioned store: one row under optimistic concurrency.
 */
import { withoutStack } from "../../core/errors.js";
import { standardNormal } from "../../core/random.js";
import type { Simulation } from "../engine.js";
import type { Recorder } from "../metrics.js";
import { Outcome } from "../outcome.js";
import { ConflictError } from "./base.js";

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
