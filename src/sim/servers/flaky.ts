/**
 * The flaky server: it fails a share of requests whatever its load.
 */
import { withoutStack } from "../../core/errors.js";
import type { Simulation } from "../engine.js";
import type { Recorder } from "../metrics.js";
import { Outcome } from "../outcome.js";
import { Base, ServerError } from "./base.js";

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
