/**
 * `simulate`: runs a built-in scenario for each of its strategies (and each client count or failure
 * probability asked for) and reports what each did to the server. Simulated clients call the library's
 * pipeline (`retryPipeline`, the very one `retry` builds) with the strategy's options, on the engine's clock.
 * Each scenario is one file under `scenarios/`; this one checks the options and dispatches.
 */

import { OptionError } from "../core/errors.js";
import { MAX_SEED } from "../core/random.js";
import { checkKeys, read } from "../core/schema.js";
import { type RunResult, summarize, type Tally, tally } from "./results.js";
import { amplification } from "./scenarios/amplification.js";
import { contention } from "./scenarios/contention.js";
import { FLEET_STRATEGIES, fleet } from "./scenarios/fleet.js";
import { metastable } from "./scenarios/metastable.js";
import { outage as outageScenario } from "./scenarios/outage.js";
import type { Resolved, Scenario, ServerKind } from "./scenarios/scenario.js";
import { throttledStore } from "./scenarios/throttled-store.js";
import { SIM_LIMITS, SIMULATE_SCHEMA } from "./schema.js";
import type {
  CapacityServerOptions,
  FlakyServerOptions,
  LatencyServerOptions,
  ThrottledStoreOptions,
  VersionedStoreOptions,
} from "./servers.js";
import {
  AMPLIFICATION_STRATEGIES,
  CONTENTION_STRATEGIES,
  METASTABLE_STRATEGIES,
  OUTAGE_ALL,
  type Strategy,
  THROTTLED_STRATEGIES,
} from "./strategies.js";

export type { RunResult } from "./results.js";
export type { ServerKind } from "./scenarios/scenario.js";

export const SCENARIOS = {
  outage: OUTAGE_ALL,
  contention: CONTENTION_STRATEGIES,
  amplification: AMPLIFICATION_STRATEGIES,
  "throttled-store": THROTTLED_STRATEGIES,
  metastable: METASTABLE_STRATEGIES,
  fleet: FLEET_STRATEGIES,
} as const;

export type ScenarioName = keyof typeof SCENARIOS;

/** Each scenario's defaults and runs. */
const RUNNERS: Readonly<Record<ScenarioName, Scenario>> = {
  outage: outageScenario,
  contention,
  amplification,
  "throttled-store": throttledStore,
  metastable,
  fleet,
};

export interface SimulateOptions {
  /** Default "outage". */
  scenario?: ScenarioName;
  /** Strategy names of the scenario; default all of them (contention: the AWS study's five). */
  strategies?: readonly string[];
  /** Client counts, one run per count. Defaults: outage 1000, contention [10, 50, 100], amplification 100. */
  clients?: readonly number[];
  /** Failure probabilities for the amplification scenario. Default 0, 0.1, …, 1. */
  failureProbability?: readonly number[];
  /** Default 1. */
  seed?: number;
  /** Seeds per point (seed, seed + 1, …), averaged. Default 1; contention 100, as the AWS study. */
  runs?: number;
  /** Virtual duration, ms. Defaults: outage 300 s, contention 600 s (or until every client is done), amplification 60 s. */
  duration?: number;
  /** The outage, ms: default 30 s from t = 20 s; null for none. */
  outage?: { start: number; length: number } | null;
  /**
   * Mean think time between a client's requests, ms. Defaults: outage 10 s (after each request ends, as
   * the reference client of the overload experiment does), amplification 100 ms (between the starts of requests: 10 per second each,
   * whether or not earlier ones are still retrying).
   */
  think?: number;
  /** Per-attempt timeout, ms. Default 2 s (the overload experiment's reference client). */
  timeout?: number;
  /** The server of the outage scenario. Default "latency" (the overload experiment's slow-under-load server). */
  server?: ServerKind;
  latencyServer?: Partial<LatencyServerOptions>;
  flakyServer?: Partial<FlakyServerOptions>;
  capacityServer?: Partial<CapacityServerOptions>;
  store?: Partial<VersionedStoreOptions>;
  throttledStore?: Partial<ThrottledStoreOptions>;
  /**
   * outage on the latency server: listen-queue sizes to sweep, every strategy run once per size (each
   * result says its `backlog`). Default: the one of `latencyServer` (512).
   */
  backlogs?: readonly number[];
  /** throttled-store: the writes to make, shared among the workers (`clients`). Default 20,000. */
  batch?: number;
  /** fleet: the processes, each running `clients` clients with its own budget and breaker. Default 20. */
  processes?: number;
  /** Called as virtual time passes: how many runs are done, of how many, and the progress of this one (0–1). */
  onProgress?: (runsDone: number, runsTotal: number, fraction: number) => void;
}

export interface SimulationResult {
  readonly scenario: ScenarioName;
  readonly seed: number;
  readonly parameters: Record<string, unknown>;
  readonly runs: readonly RunResult[];
}

const DEFAULT_LATENCY: LatencyServerOptions = {
  minDelay: 100,
  limit: 30,
  factor: 1.05,
  k: 15,
  tick: 50,
  backlog: 512,
};
const DEFAULT_FLAKY: FlakyServerOptions = { failureProbability: 0.1, latency: 10 };
const DEFAULT_CAPACITY: CapacityServerOptions = { capacity: 100, latency: 100 };
const DEFAULT_STORE: VersionedStoreOptions = { networkMean: 10, networkSd: 2 };
const DEFAULT_THROTTLED: ThrottledStoreOptions = {
  capacity: 100,
  maxCapacity: 1600,
  scaleFactor: 2,
  checkEvery: 10_000,
  scaleAt: 0.1,
  scaleDelay: 30_000,
  latency: 10,
};

function list<T>(
  option: string,
  value: readonly T[] | undefined,
  fallback: readonly T[],
  check: (v: T) => boolean,
  allowed: string,
): readonly T[] {
  const values = value ?? fallback;
  if (!Array.isArray(values) || values.length === 0 || values.length > SIM_LIMITS.points)
    throw new OptionError(option, value, `a non-empty list (at most ${SIM_LIMITS.points}) of ${allowed}`);
  values.forEach((v, i) => {
    if (!check(v)) throw new OptionError(`${option}[${i}]`, v, allowed);
  });
  return values;
}

/** The strategies named, of those the scenario has. */
function pickStrategies(
  scenario: ScenarioName,
  known: readonly Strategy[],
  names: readonly string[] | undefined,
): Strategy[] {
  return (names ?? RUNNERS[scenario].defaults.strategies ?? known.map((s) => s.name)).map((name, i) => {
    const found = known.find((s) => s.name === name);
    if (found === undefined) {
      throw new OptionError(
        `strategies[${i}]`,
        name,
        `a strategy of the ${scenario} scenario: ${known.map((s) => s.name).join(", ")}`,
      );
    }
    return found;
  });
}

/** The options every run of the scenario takes, checked, with the scenario's defaults. */
function resolve(runner: Scenario, options: SimulateOptions): Resolved {
  const d = runner.defaults;
  const duration = read<number | undefined>(SIMULATE_SCHEMA, "duration", options.duration) ?? d.duration;
  const outage = d.outage === null ? null : options.outage === undefined ? { ...d.outage } : options.outage;
  if (
    outage !== null &&
    !(outage.start >= 0 && outage.length > 0 && outage.start + outage.length <= duration)
  ) {
    throw new OptionError(
      "outage",
      outage,
      `a window { start >= 0, length > 0 } that ends within the duration (${duration} ms)`,
    );
  }
  const think = options.think ?? d.think;
  if (!(think > 0 && Number.isFinite(think)))
    throw new OptionError("think", think, "a finite number of ms > 0");
  const timeout = options.timeout ?? d.timeout;
  if (!(typeof timeout === "number" && !Number.isNaN(timeout)))
    throw new OptionError("timeout", timeout, "a number of ms (negative for none)");
  const server = options.server ?? "latency";
  if (!["latency", "flaky", "capacity"].includes(server)) {
    throw new OptionError("server", server, "one of latency, flaky, capacity");
  }
  const resolved: Resolved = {
    duration,
    outage,
    think,
    timeout,
    server,
    latencyServer: { ...DEFAULT_LATENCY, ...options.latencyServer },
    flakyServer: { ...DEFAULT_FLAKY, ...options.flakyServer },
    capacityServer: { ...(d.capacityServer ?? DEFAULT_CAPACITY), ...options.capacityServer },
    store: { ...DEFAULT_STORE, ...options.store },
    throttledStore: { ...DEFAULT_THROTTLED, ...options.throttledStore },
    batch: options.batch ?? 20_000,
    processes: read<number | undefined>(SIMULATE_SCHEMA, "processes", options.processes) ?? d.processes ?? 1,
  };
  read(SIMULATE_SCHEMA, "batch", resolved.batch);
  if (options.processes !== undefined && d.processes === undefined)
    throw new OptionError("processes", options.processes, "given only with the fleet scenario");
  return resolved;
}

/** Every strategy at every client count and failure probability, on each seed. */
interface Grid {
  readonly strategies: readonly Strategy[];
  readonly clients: readonly number[];
  readonly probabilities: readonly (number | null)[];
  readonly seeds: readonly number[];
  readonly backlogs: readonly number[];
}

/** Unit `unit` of `grid`: its point and seed. Units run seed by seed, strategy by strategy, then by count and probability. */
function unitOf(grid: Grid, unit: number) {
  const { strategies, clients, seeds } = grid;
  const seed = unit % seeds.length;
  const point = (unit - seed) / seeds.length;
  const strategy = point % strategies.length;
  const rest = (point - strategy) / strategies.length;
  const count = rest % clients.length;
  const more = (rest - count) / clients.length;
  const probability = more % grid.probabilities.length;
  const backlog = (more - probability) / grid.probabilities.length;
  return { seed, strategy, count, probability, backlog };
}

/**
 * A simulation taken apart: `total` runs (one strategy at one point on one seed), each of which `run`
 * makes on its own, in any order and in any thread, and `assemble`, which makes the result from their
 * tallies in unit order. The same units give the same result however they were shared out.
 */
export interface Plan {
  readonly total: number;
  /** Whether its runs await promises (the fleet's store): `run` then returns a promise, and `simulate` refuses it. */
  readonly awaits: boolean;
  /** The client count of unit `unit` (a rough measure of its cost). */
  clientsOf(unit: number): number;
  /** Runs unit `unit`; `onSlice` hears the fraction of it done as virtual time passes. */
  run(unit: number, onSlice?: (fraction: number) => void): Tally | Promise<Tally>;
  /** The result, from every unit's tally in unit order. */
  assemble(tallies: readonly Tally[]): SimulationResult;
}

/**
 * A per-attempt timeout below the outage server's shortest service time times every attempt out: the
 * clients of a strategy without backoff then pile up requests the server keeps serving, without end, and
 * the run grows without bound. Such a run means nothing, so it is refused up front.
 */
function checkTimeoutAgainstServer(r: Resolved): void {
  const shortest =
    r.server === "latency"
      ? r.latencyServer.minDelay
      : r.server === "flaky"
        ? r.flakyServer.latency
        : r.capacityServer.latency;
  if (r.timeout >= 0 && r.timeout < shortest) {
    throw new OptionError(
      "timeout",
      r.timeout,
      `at least the ${r.server} server's shortest service time (${shortest} ms), or negative for none: below it every attempt times out`,
    );
  }
}

/**
 * Checks `options` and takes the simulation they ask for apart into its runs (see `Plan`). `simulate` runs
 * them one after the other; the Node.js entry `robustly/sim/threads` shares them among worker threads.
 */
export function plan(options: SimulateOptions = {}): Plan {
  checkKeys(SIMULATE_SCHEMA, options);
  const scenario = options.scenario ?? "outage";
  if (!(scenario in SCENARIOS)) {
    throw new OptionError("scenario", scenario, `one of ${Object.keys(SCENARIOS).join(", ")}`);
  }
  const runner = RUNNERS[scenario];
  const strategies = pickStrategies(scenario, SCENARIOS[scenario], options.strategies);
  const clients = list(
    "clients",
    options.clients,
    runner.defaults.clients,
    (v) => Number.isInteger(v) && v >= 1 && v <= SIM_LIMITS.clients,
    `integers in [1, ${SIM_LIMITS.clients}]`,
  );
  const probabilities: readonly (number | null)[] =
    runner.defaults.failureProbability === undefined
      ? [null]
      : list(
          "failureProbability",
          options.failureProbability,
          runner.defaults.failureProbability,
          (p) => typeof p === "number" && p >= 0 && p <= 1,
          "numbers in [0, 1]",
        );
  const seed = read<number | undefined>(SIMULATE_SCHEMA, "seed", options.seed) ?? 1;
  const runs = read<number | undefined>(SIMULATE_SCHEMA, "runs", options.runs) ?? runner.defaults.runs ?? 1;
  // Run i takes seed + i: the last one must be a seed too, not wrapped round to a small one.
  if (seed + runs - 1 > MAX_SEED)
    throw new OptionError("seed", seed, `at most ${MAX_SEED} − (runs − 1) = ${MAX_SEED - runs + 1}`);
  const r = resolve(runner, options);
  if (scenario === "outage" || scenario === "fleet") checkTimeoutAgainstServer(r);
  const mostClients = Math.max(...clients);
  if (r.processes * mostClients > SIM_LIMITS.clients) {
    throw new OptionError(
      "processes",
      r.processes,
      `at most ${Math.floor(SIM_LIMITS.clients / mostClients)} with ${mostClients} clients each (${SIM_LIMITS.clients} clients in all)`,
    );
  }
  const seeds = Array.from({ length: runs }, (_, i) => seed + i);
  const latency = scenario === "outage" && r.server === "latency";
  if (options.backlogs !== undefined && !latency) {
    throw new OptionError("backlogs", options.backlogs, "only for the outage scenario on the latency server");
  }
  const backlogs = list(
    "backlogs",
    options.backlogs,
    [r.latencyServer.backlog],
    (v) => Number.isInteger(v) && v >= 0 && v <= SIM_LIMITS.clients,
    `integers in [0, ${SIM_LIMITS.clients}]`,
  );
  // One grid per listen-queue size, outermost, so that the results come grouped by it.
  const grid: Grid = { strategies, clients, probabilities, seeds, backlogs };
  const points = strategies.length * clients.length * probabilities.length * backlogs.length;
  const resolvedFor = backlogs.map((backlog) => ({ ...r, latencyServer: { ...r.latencyServer, backlog } }));
  return {
    total: points * seeds.length,
    awaits: runner.awaits === true,
    clientsOf: (unit) => (clients[unitOf(grid, unit).count] as number) * r.processes,
    run: (unit, onSlice) => {
      const u = unitOf(grid, unit);
      const single = runner.run(resolvedFor[u.backlog] as Resolved, {
        strategy: strategies[u.strategy] as Strategy,
        clients: clients[u.count] as number,
        failureProbability: probabilities[u.probability] as number | null,
        seed: seeds[u.seed] as number,
        onSlice: onSlice ?? (() => {}),
      });
      const first = u.seed === 0;
      return single instanceof Promise ? single.then((s) => tally(s, first)) : tally(single, first);
    },
    assemble: (tallies) => {
      const results: RunResult[] = [];
      for (let point = 0; point < points; point++) {
        const u = unitOf(grid, point * seeds.length);
        const run = summarize(
          strategies[u.strategy] as Strategy,
          clients[u.count] as number,
          probabilities[u.probability] as number | null,
          seeds,
          tallies.slice(point * seeds.length, (point + 1) * seeds.length),
        );
        results.push({ ...run, backlog: latency ? (backlogs[u.backlog] as number) : null });
      }
      const reported = runner.parameters(r);
      return {
        scenario,
        seed,
        parameters: {
          duration: r.duration,
          outage: r.outage,
          think: reported.think,
          timeout: reported.timeout,
          server: reported.server,
          throttledStore: r.throttledStore,
          batch: reported.batch,
          latencyServer: r.latencyServer,
          flakyServer: r.flakyServer,
          capacityServer: r.capacityServer,
          store: r.store,
          backlogs: latency ? backlogs : null,
          ...(runner.defaults.processes === undefined ? {} : { processes: r.processes }),
          runs,
        },
        runs: results,
      };
    },
  };
}

/**
 * Runs a scenario and returns one result per strategy and parameter point. Synchronous: the fleet
 * scenario, whose runs await its store, is refused (run it with `simulateAsync`).
 *
 * @example
 * const { runs } = simulate({ scenario: "outage", strategies: ["fixed", "exponential"], seed: 7 });
 * runs.map((r) => [r.strategy, r.recovered]); // [["fixed", false], ["exponential", true]]
 */
export function simulate(options: SimulateOptions = {}): SimulationResult {
  const planned = plan(options);
  if (planned.awaits) {
    throw new OptionError(
      "scenario",
      options.scenario,
      "a scenario that runs synchronously: the fleet's runs await its store, so run it with `await simulateAsync(options)`",
    );
  }
  const onProgress = options.onProgress;
  const { total } = planned;
  const tallies: Tally[] = [];
  for (let unit = 0; unit < total; unit++) {
    tallies.push(planned.run(unit, (fraction) => onProgress?.(unit, total, fraction)) as Tally);
    onProgress?.(unit + 1, total, 0);
  }
  return planned.assemble(tallies);
}

/**
 * `simulate` for every scenario, the fleet included: each run in turn, awaiting those that await a store.
 * The same options give the same result as `simulate` (or, for the fleet, as every other call).
 *
 * @example
 * const { runs } = await simulateAsync({ scenario: "fleet", clients: [10], processes: 5, duration: 60_000 });
 * runs.map((r) => [r.strategy, r.recoveryTime]);
 */
export async function simulateAsync(options: SimulateOptions = {}): Promise<SimulationResult> {
  const planned = plan(options);
  const onProgress = options.onProgress;
  const { total } = planned;
  const tallies: Tally[] = [];
  for (let unit = 0; unit < total; unit++) {
    tallies.push(await planned.run(unit, (fraction) => onProgress?.(unit, total, fraction)));
    onProgress?.(unit + 1, total, 0);
  }
  return planned.assemble(tallies);
}
