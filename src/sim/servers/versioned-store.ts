/**
 * The versioned store: one row under optimistic concurrency.
 */
import { withoutStack } from "../../core/errors.js";
import { standardNormal } from "../../core/random.js";
import type { Simulation, Timed } from "../engine.js";
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
  readonly #link: Link;
  version = 0;
  concurrency = 0;

  constructor(sim: Simulation, recorder: Recorder, options: VersionedStoreOptions) {
    this.#link = new Link(this, sim, recorder, options);
  }

  read(): Outcome<number> {
    const read = new Read(this.#link);
    this.#link.sim.schedule(this.#link.network(), read);
    return read;
  }

  write(version: number): Outcome<string> {
    const write = new Write(this.#link, version);
    this.#link.sim.schedule(this.#link.network(), write);
    return write;
  }
}

/** What a store's calls share: the store, the engine, the recorder and the network's delays. */
class Link {
  readonly store: VersionedStore;
  readonly sim: Simulation;
  readonly recorder: Recorder;
  readonly #options: VersionedStoreOptions;

  constructor(store: VersionedStore, sim: Simulation, recorder: Recorder, options: VersionedStoreOptions) {
    this.store = store;
    this.sim = sim;
    this.recorder = recorder;
    this.#options = options;
  }

  /** One way across the network, ms: |N(mean, sd)|. */
  network(): number {
    return Math.abs(this.#options.networkMean + this.#options.networkSd * standardNormal(this.sim.random));
  }
}

/**
 * A read in flight: its outcome, and the event of each leg (fired on reaching the store, then on coming
 * back), as one object. A contention run makes millions of calls: no closures per call.
 */
class Read extends Outcome<number> implements Timed {
  readonly #link: Link;
  #version = -1;

  constructor(link: Link) {
    super();
    this.#link = link;
  }

  fire(): void {
    if (this.#version < 0) {
      this.#version = this.#link.store.version;
      this.#link.sim.schedule(this.#link.network(), this);
    } else this.resolve(this.#version);
  }
}

/** A write in flight, as `Read`: it lands if the version it read is still current. */
class Write extends Outcome<string> implements Timed {
  readonly #link: Link;
  readonly #version: number;
  readonly #sent: number;
  /** Undefined until it reaches the store; then whether it landed. */
  #ok: boolean | undefined;

  constructor(link: Link, version: number) {
    super();
    this.#link = link;
    this.#version = version;
    this.#sent = link.sim.now;
  }

  fire(): void {
    const { sim, recorder, store } = this.#link;
    const now = sim.now;
    if (this.#ok === undefined) {
      recorder.offer(now);
      recorder.work += 1;
      const ok = this.#version === store.version;
      if (ok) store.version += 1;
      this.#ok = ok;
      sim.schedule(this.#link.network(), this);
      return;
    }
    recorder.answered(now, this.#ok, now - this.#sent);
    if (this.#ok) this.resolve("OK");
    else {
      const version = this.#version;
      this.reject(withoutStack(() => new ConflictError(`version ${version} is stale`)));
    }
  }
}
