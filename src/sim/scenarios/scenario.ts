/**
 * What a built-in scenario of `simulate` is: its strategies, its defaults, and how it runs one strategy
 * once; and the options every scenario is run with, resolved.
 */
import type { Recorder } from "../metrics.js";
import type {
  CapacityServerOptions,
  FlakyServerOptions,
  LatencyServerOptions,
  ThrottledStoreOptions,
  VersionedStoreOptions,
} from "../servers.js";
import type { Strategy } from "../strategies.js";

export type ServerKind = "latency" | "flaky" | "capacity";

/** The options of one `simulate` call, checked and with the scenario's defaults. */
export interface Resolved {
  duration: number;
  outage: { start: number; length: number } | null;
  think: number;
  timeout: number;
  server: ServerKind;
  latencyServer: LatencyServerOptions;
  flakyServer: FlakyServerOptions;
  capacityServer: CapacityServerOptions;
  store: VersionedStoreOptions;
  throttledStore: ThrottledStoreOptions;
  batch: number;
  /** fleet: the processes, each with `clients` clients and its own budget and breaker. */
  processes: number;
}

/** The raw figures of one run, on one random seed. */
export interface Single {
  batchTime: number | null;
  capacityUse: number | null;
  /** A population that makes one request per client: when the last one finished, ms; null if one never did. */
  makespan: number | null;
  recorder: Recorder;
  events: number;
  recovered: boolean | null;
  recoveryTime: number | null;
  /** ms after the outage until the requests inside the server were back at their pre-outage level. */
  inFlightRecoveryTime?: number | null;
  /** ms after the outage during which the server held more requests than its knee (null: no knee). */
  aboveKneeTime?: number | null;
  baseline: number | null;
}

/** One run of a strategy: `clients` clients (or workers), at `failureProbability` where the scenario has one. */
export interface Run {
  readonly strategy: Strategy;
  readonly clients: number;
  readonly failureProbability: number | null;
  readonly seed: number;
  /** Called as virtual time passes, with the fraction of the run done. */
  readonly onSlice: (fraction: number) => void;
}

/** The parameters a scenario's result reports beside the servers' options. */
export interface ReportedParameters {
  readonly think: number | null;
  readonly timeout: number | null;
  readonly server: string;
  readonly batch: number | null;
}

export interface Scenario {
  readonly strategies: readonly Strategy[];
  readonly defaults: {
    readonly clients: readonly number[];
    readonly duration: number;
    /** The outage when none is given; null: the scenario has none, whatever is given. */
    readonly outage: { readonly start: number; readonly length: number } | null;
    readonly think: number;
    readonly timeout: number;
    /** The failure probabilities to run at, for a scenario that has them. */
    readonly failureProbability?: readonly number[];
    /** Seeds averaged per point when `runs` is not given; default 1. */
    readonly runs?: number;
    /** The strategies to run when none are named; default all of them. */
    readonly strategies?: readonly string[];
    /** The capacity server's options, where the scenario has its own. */
    readonly capacityServer?: CapacityServerOptions;
    /** The processes the clients are spread over, for a scenario that has them (the fleet). */
    readonly processes?: number;
  };
  /**
   * Its runs await promises (a store's exchanges), so `run` returns one: `simulate` refuses the scenario,
   * `simulateAsync` and `simulateInThreads` run it.
   */
  readonly awaits?: boolean;
  /** Runs `run.strategy` once. */
  run(r: Resolved, run: Run): Single | Promise<Single>;
  /** What the result reports of the options. */
  parameters(r: Resolved): ReportedParameters;
}
