/**
 * `simulate`: runs a built-in scenario for each of its strategies (and each client count or failure
 * probability asked for) and reports what each did to the server. Simulated clients call the library's
 * pipeline (`retryPipeline`, the very one `retry` builds) with the strategy's options, on the engine's clock.
 */
import { OptionError, TimeoutError } from "../core/errors.js";
import { settleWith } from "../core/invoke.js";
import type { Random } from "../core/random.js";
import { Scope } from "../pipeline/context.js";
import type { Pipeline } from "../pipeline/pipeline.js";
import { retryPipeline } from "../retry/retry.js";
import { Simulation } from "./engine.js";
import { Recorder, recovery, type Second } from "./metrics.js";
import {
  CapacityServer,
  type CapacityServerOptions,
  FlakyServer,
  type FlakyServerOptions,
  LatencyServer,
  type LatencyServerOptions,
  type Server,
  ThrottledStore,
  type ThrottledStoreOptions,
  VersionedStore,
  type VersionedStoreOptions,
} from "./servers.js";
import {
  AMPLIFICATION_STRATEGIES,
  CONTENTION_STRATEGIES,
  METASTABLE_STRATEGIES,
  OUTAGE_WITH_GUARDS,
  type Strategy,
  THROTTLED_STRATEGIES,
} from "./strategies.js";

export const SCENARIOS = {
  outage: OUTAGE_WITH_GUARDS,
  contention: CONTENTION_STRATEGIES,
  amplification: AMPLIFICATION_STRATEGIES,
  "throttled-store": THROTTLED_STRATEGIES,
  metastable: METASTABLE_STRATEGIES,
} as const;

export type ScenarioName = keyof typeof SCENARIOS;

export type ServerKind = "latency" | "flaky" | "capacity";

export interface SimulateOptions {
  /** Default "outage". */
  scenario?: ScenarioName;
  /** Strategy names of the scenario; default all of them. */
  strategies?: readonly string[];
  /** Client counts, one run per count. Defaults: outage 1000, contention [10, 50, 100], amplification 100. */
  clients?: readonly number[];
  /** Failure probabilities for the amplification scenario. Default 0, 0.1, …, 1. */
  failureProbability?: readonly number[];
  /** Default 1. */
  seed?: number;
  /** Seeds per point (seed, seed + 1, …), averaged. Default 1. */
  runs?: number;
  /** Virtual duration, ms. Defaults: outage 300 s, contention 600 s (or until every client is done), amplification 60 s. */
  duration?: number;
  /** The outage, ms: default 30 s from t = 20 s; null for none. */
  outage?: { start: number; length: number } | null;
  /**
   * Mean think time between a client's requests, ms. Defaults: outage 10 s (after each request ends, as
   * seed 002's client does), amplification 100 ms (between the starts of requests: 10 per second each,
   * whether or not earlier ones are still retrying).
   */
  think?: number;
  /** Per-attempt timeout, ms. Default 2 s (seed 002's client). */
  timeout?: number;
  /** The server of the outage scenario. Default "latency" (seed 002's). */
  server?: ServerKind;
  latencyServer?: Partial<LatencyServerOptions>;
  flakyServer?: Partial<FlakyServerOptions>;
  capacityServer?: Partial<CapacityServerOptions>;
  store?: Partial<VersionedStoreOptions>;
  throttledStore?: Partial<ThrottledStoreOptions>;
  /** throttled-store: the writes to make, shared among the workers (`clients`). Default 20,000. */
  batch?: number;
  /** Called as virtual time passes: how many runs are done, of how many, and the progress of this one (0–1). */
  onProgress?: (runsDone: number, runsTotal: number, fraction: number) => void;
}

/** One strategy at one parameter point (averaged over the seeds when there are several). */
export interface RunResult {
  readonly strategy: string;
  readonly description: string;
  readonly source: string;
  readonly clients: number;
  readonly failureProbability: number | null;
  readonly seeds: readonly number[];
  /** Whether goodput came back after the outage and stayed (majority of seeds); null without an outage. */
  readonly recovered: boolean | null;
  /** ms from the end of the outage to recovery (mean over the seeds that recovered); null if none did. */
  readonly recoveryTime: number | null;
  readonly peakConcurrency: number;
  /** Attempts per logical request. */
  readonly amplification: number;
  /** Logical requests that succeeded, of all that started (those still unfinished at the end count as not). */
  readonly successRate: number;
  /** Logical requests still unfinished when the run ended. */
  readonly unfinished: number;
  /** Requests the server handled; for contention, writes. */
  readonly work: number;
  /** Mean ms for a logical request to finish; null when none finished. */
  readonly completionTime: number | null;
  readonly logicalRequests: number;
  readonly attempts: number;
  /** The pre-outage goodput, successes per second; null without an outage. */
  readonly baseline: number | null;
  /** Engine events processed. */
  readonly events: number;
  /** throttled-store: ms until the whole batch was written (mean over seeds); null if it never was. */
  readonly batchTime: number | null;
  /** Attempts the server refused or failed (throttled writes, errors). */
  readonly rejected: number;
  /**
   * throttled-store: how closely the write rate followed the capacity, the writes accepted over the
   * capacity offered, summed over the seconds until the batch was done; null for other scenarios.
   */
  readonly capacityUse: number | null;
  /** Per-second figures of the first seed. */
  readonly series: readonly Second[];
}

export interface SimulationResult {
  readonly scenario: ScenarioName;
  readonly seed: number;
  readonly parameters: Record<string, unknown>;
  readonly runs: readonly RunResult[];
}

/** One seed's raw figures. */
interface Single {
  batchTime: number | null;
  capacityUse: number | null;
  recorder: Recorder;
  events: number;
  recovered: boolean | null;
  recoveryTime: number | null;
  baseline: number | null;
}

/** An exponentially distributed draw with the given mean (inverse transform). */
function exponentialDraw(random: Random, mean: number): number {
  return -Math.log(1 - random()) * mean;
}

interface Population {
  clients: number;
  /** Mean think time before each request, ms; 0 with `once` starts every client at t = 0. */
  think: number;
  /** Each client makes one logical request and stops. */
  once: boolean;
  /**
   * Open loop: a client starts its next request a think time after starting the last one, whether or not
   * that one has finished (a steady offered rate). Closed loop (seed 002's client): after it finishes.
   */
  openLoop: boolean;
  timeout: number;
  strategy: Strategy;
  operation: () => PromiseLike<unknown>;
}

/** Starts `clients` simulated clients, each calling the retry loop with the strategy's policy. */
function populate(sim: Simulation, recorder: Recorder, p: Population): void {
  // A simulated client is a pipeline on the simulation's clock, the very one `retry` builds.
  const client = retryPipeline<unknown>({
    ...p.strategy.policy,
    ...p.strategy.guards?.(sim.clock, sim.random),
    timeout: p.timeout,
    onError: (error) => {
      if (error instanceof TimeoutError) recorder.timedOut(sim.now);
    },
  });
  const operation = () => {
    recorder.attempts += 1;
    return p.operation();
  };
  const start = () => {
    const started = sim.now;
    recorder.started += 1;
    const closedLoop = !p.once && !p.openLoop;
    if (p.openLoop) sim.after(exponentialDraw(sim.random, p.think), start);
    const finish = (ok: boolean) => {
      if (ok) recorder.succeeded += 1;
      else recorder.failed += 1;
      recorder.completionTotal += sim.now - started;
      if (closedLoop) sim.after(exponentialDraw(sim.random, p.think), start);
    };
    runOnSimulation(
      client,
      operation,
      sim,
      () => finish(true),
      () => finish(false),
    );
  };
  for (let i = 0; i < p.clients; i++) {
    if (p.once) sim.after(0, start);
    else sim.after(exponentialDraw(sim.random, p.think), start);
  }
}

/**
 * Runs one call of `client` on the simulation's clock and randomness. The simulated operations settle
 * synchronously, and so do the steps over them: the outcome is reported before this returns to the event
 * loop, with no microtask in between.
 */
function runOnSimulation(
  client: Pipeline,
  operation: () => PromiseLike<unknown>,
  sim: Simulation,
  onValue: () => void,
  onError: () => void,
): void {
  const scope = new Scope(sim.clock, sim.random);
  let result: unknown;
  try {
    result = client.execute(operation, scope);
  } catch {
    onError();
    return;
  }
  settleWith(result, onValue, onError);
}

/** Samples the server's concurrency at the end of every second. */
function sampleEverySecond(
  sim: Simulation,
  recorder: Recorder,
  server: { readonly concurrency: number },
): void {
  const sample = () => {
    recorder.sampleConcurrency(sim.now - 0.5, server.concurrency);
    if (sim.now + 1000 <= recorder.seconds * 1000) sim.after(1000, sample);
  };
  sim.after(1000, sample);
}

interface Resolved {
  scenario: ScenarioName;
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
}

/**
 * throttled-store (seed 003's use): `workers` write a batch as fast as the strategy lets them to a store
 * with provisioned capacity that scales up under sustained throttling.
 */
function runThrottled(
  r: Resolved,
  strategy: Strategy,
  workers: number,
  seed: number,
  onSlice: (fraction: number) => void,
): Single {
  const sim = new Simulation(seed);
  const recorder = new Recorder(r.duration);
  const store = new ThrottledStore(sim, recorder, r.throttledStore);
  const shared = strategy.shared?.(sim.clock, sim.random);
  const client = retryPipeline<unknown>({
    ...strategy.policy,
    ...(shared === undefined ? {} : { backoff: shared }),
  });
  const operation = () => {
    recorder.attempts += 1;
    return store.request();
  };
  let remaining = r.batch;
  let written = 0;
  let batchTime: number | null = null;
  const worker = () => {
    if (remaining === 0) return;
    remaining -= 1;
    const started = sim.now;
    recorder.started += 1;
    runOnSimulation(
      client,
      operation,
      sim,
      () => {
        recorder.succeeded += 1;
        recorder.completionTotal += sim.now - started;
        written += 1;
        if (written === r.batch) batchTime = sim.now;
        // Seed 003's workers sleep the shared delay after a success too.
        sim.after(shared === undefined ? 0 : shared.metrics().current, worker);
      },
      () => {
        recorder.failed += 1;
        sim.after(0, worker);
      },
    );
  };
  for (let i = 0; i < workers; i++) sim.after(0, worker);
  const sample = () => {
    recorder.sampleConcurrency(sim.now - 0.5, store.concurrency);
    recorder.sampleCapacity(sim.now - 0.5, store.capacity);
    if (sim.now + 1000 <= recorder.seconds * 1000) sim.after(1000, sample);
  };
  recorder.sampleCapacity(0, store.capacity);
  sim.after(1000, sample);
  sim.run(r.duration, (now) => onSlice(now / r.duration), 5000);
  // Capacity use: writes accepted over capacity offered, second by second, until the batch was done.
  const until = Math.min(recorder.seconds, Math.ceil((batchTime ?? r.duration) / 1000));
  let accepted = 0;
  let offered = 0;
  for (let s = 0; s < until; s++) {
    accepted += recorder.successes[s] as number;
    offered += Number.isNaN(recorder.capacity[s] as number) ? 0 : (recorder.capacity[s] as number);
  }
  return {
    recorder,
    events: sim.events,
    recovered: null,
    recoveryTime: null,
    baseline: null,
    batchTime,
    capacityUse: offered === 0 ? null : accepted / offered,
  };
}

function runOne(
  r: Resolved,
  strategy: Strategy,
  clients: number,
  failureProbability: number | null,
  seed: number,
  onSlice: (fraction: number) => void,
): Single {
  if (r.scenario === "throttled-store") return runThrottled(r, strategy, clients, seed, onSlice);
  const sim = new Simulation(seed);
  const recorder = new Recorder(r.duration);
  let server: Server | VersionedStore;
  let operation: () => PromiseLike<unknown>;
  let once = false;
  let think = r.think;
  let timeout = r.timeout;
  if (r.scenario === "contention") {
    const store = new VersionedStore(sim, recorder, r.store);
    server = store;
    operation = () => store.read().then((version) => store.write(version));
    once = true;
    think = 0;
    timeout = -1;
  } else {
    const pause =
      r.outage === null ? undefined : { start: r.outage.start, end: r.outage.start + r.outage.length };
    const kind =
      r.scenario === "amplification" ? "flaky" : r.scenario === "metastable" ? "capacity" : r.server;
    const made =
      kind === "flaky"
        ? new FlakyServer(sim, recorder, timeout, {
            ...r.flakyServer,
            failureProbability: failureProbability ?? r.flakyServer.failureProbability,
          })
        : kind === "capacity"
          ? new CapacityServer(sim, recorder, timeout, { ...r.capacityServer, pause })
          : new LatencyServer(sim, recorder, timeout, { ...r.latencyServer, pause });
    server = made;
    operation = () => made.request();
  }
  const openLoop = r.scenario === "amplification" || r.scenario === "metastable";
  populate(sim, recorder, { clients, think, once, openLoop, timeout, strategy, operation });
  sampleEverySecond(sim, recorder, server);
  sim.run(r.duration, (now) => onSlice(now / r.duration), 5000);
  let recovered: boolean | null = null;
  let recoveryTime: number | null = null;
  let baseline: number | null = null;
  if ((r.scenario === "outage" || r.scenario === "metastable") && r.outage !== null) {
    const startS = Math.floor(r.outage.start / 1000);
    const endS = Math.ceil((r.outage.start + r.outage.length) / 1000);
    const warmupS = Math.min(10, Math.floor(startS / 2));
    const judged = recovery(recorder.successes, warmupS, startS, endS);
    recovered = judged.recovered;
    recoveryTime = judged.recoveryTimeMs;
    baseline = judged.baseline;
  }
  return {
    recorder,
    events: sim.events,
    recovered,
    recoveryTime,
    baseline,
    batchTime: null,
    capacityUse: null,
  };
}

const mean = (values: readonly number[]) => values.reduce((a, b) => a + b, 0) / values.length;

function summarize(
  strategy: Strategy,
  clients: number,
  failureProbability: number | null,
  seeds: readonly number[],
  singles: readonly Single[],
): RunResult {
  const first = singles[0] as Single;
  const per = (f: (s: Single) => number) => mean(singles.map(f));
  const finished = (s: Single) => s.recorder.succeeded + s.recorder.failed;
  const withFinished = singles.filter((s) => finished(s) > 0);
  const recoveredSeeds = singles.filter((s) => s.recovered === true);
  return {
    strategy: strategy.name,
    description: strategy.description,
    source: strategy.source,
    clients,
    failureProbability,
    seeds,
    recovered: first.recovered === null ? null : recoveredSeeds.length * 2 > singles.length,
    recoveryTime:
      recoveredSeeds.length === 0 ? null : mean(recoveredSeeds.map((s) => s.recoveryTime as number)),
    peakConcurrency: per((s) => s.recorder.peakConcurrency),
    amplification: per((s) => (s.recorder.started === 0 ? 0 : s.recorder.attempts / s.recorder.started)),
    successRate: per((s) => (s.recorder.started === 0 ? 0 : s.recorder.succeeded / s.recorder.started)),
    unfinished: per((s) => s.recorder.started - finished(s)),
    work: per((s) => s.recorder.work),
    completionTime:
      withFinished.length === 0
        ? null
        : mean(withFinished.map((s) => s.recorder.completionTotal / finished(s))),
    logicalRequests: per((s) => s.recorder.started),
    attempts: per((s) => s.recorder.attempts),
    baseline: first.baseline === null ? null : per((s) => s.baseline as number),
    events: per((s) => s.events),
    batchTime: singles.every((s) => s.batchTime !== null) ? per((s) => s.batchTime as number) : null,
    rejected: per((s) => s.recorder.errors.reduce((a, b) => a + b, 0)),
    capacityUse: first.capacityUse === null ? null : per((s) => s.capacityUse ?? 0),
    series: first.recorder.series(),
  };
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
/**
 * The metastable scenario's server: 300 requests per second at 100 ms, ten times slower above (1 s). The
 * rate is judged over 5 s: at 280 offered per second, a 1 s window would see Poisson noise above 300 one
 * second in nine and slow down for no reason.
 */
const METASTABLE_CAPACITY: CapacityServerOptions = { capacity: 300, latency: 100, window: 5000 };
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
  if (!Array.isArray(values) || values.length === 0)
    throw new OptionError(option, value, `a non-empty list of ${allowed}`);
  values.forEach((v, i) => {
    if (!check(v)) throw new OptionError(`${option}[${i}]`, v, allowed);
  });
  return values;
}

/**
 * Runs a scenario and returns one result per strategy and parameter point.
 *
 * @example
 * const { runs } = simulate({ scenario: "outage", strategies: ["fixed", "exponential"], seed: 7 });
 * runs.map((r) => [r.strategy, r.recovered]); // [["fixed", false], ["exponential", true]]
 */
export function simulate(options: SimulateOptions = {}): SimulationResult {
  const scenario = options.scenario ?? "outage";
  if (!(scenario in SCENARIOS)) {
    throw new OptionError("scenario", scenario, `one of ${Object.keys(SCENARIOS).join(", ")}`);
  }
  const known = SCENARIOS[scenario];
  const names = options.strategies ?? known.map((s) => s.name);
  const strategies = names.map((name, i) => {
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
  const positiveInteger = (v: number) => Number.isInteger(v) && v > 0;
  const clients = list(
    "clients",
    options.clients,
    scenario === "contention"
      ? [10, 50, 100]
      : scenario === "amplification"
        ? [100]
        : scenario === "throttled-store"
          ? [50]
          : scenario === "metastable"
            ? [280]
            : [1000],
    positiveInteger,
    "positive integers",
  );
  const probabilities: readonly (number | null)[] =
    scenario === "amplification"
      ? list(
          "failureProbability",
          options.failureProbability,
          [0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1],
          (p) => typeof p === "number" && p >= 0 && p <= 1,
          "numbers in [0, 1]",
        )
      : [null];
  const seed = options.seed ?? 1;
  if (!Number.isInteger(seed)) throw new OptionError("seed", seed, "an integer");
  const runs = options.runs ?? 1;
  if (!positiveInteger(runs)) throw new OptionError("runs", runs, "a positive integer");
  const duration =
    options.duration ??
    (scenario === "contention" || scenario === "throttled-store"
      ? 600_000
      : scenario === "amplification"
        ? 60_000
        : scenario === "metastable"
          ? 120_000
          : 300_000);
  if (!(typeof duration === "number" && duration > 0 && Number.isFinite(duration))) {
    throw new OptionError("duration", duration, "a finite number of ms > 0");
  }
  const outage =
    scenario !== "outage" && scenario !== "metastable"
      ? null
      : options.outage === undefined
        ? scenario === "metastable"
          ? { start: 20_000, length: 10_000 }
          : { start: 20_000, length: 30_000 }
        : options.outage;
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
  const think =
    options.think ?? (scenario === "amplification" ? 100 : scenario === "metastable" ? 1000 : 10_000);
  if (!(think > 0 && Number.isFinite(think)))
    throw new OptionError("think", think, "a finite number of ms > 0");
  const timeout = options.timeout ?? (scenario === "metastable" ? 1000 : 2000);
  if (!(typeof timeout === "number" && !Number.isNaN(timeout)))
    throw new OptionError("timeout", timeout, "a number of ms (negative for none)");
  const server = options.server ?? "latency";
  if (!["latency", "flaky", "capacity"].includes(server)) {
    throw new OptionError("server", server, "one of latency, flaky, capacity");
  }
  const resolved: Resolved = {
    scenario,
    duration,
    outage,
    think,
    timeout,
    server,
    latencyServer: { ...DEFAULT_LATENCY, ...options.latencyServer },
    flakyServer: { ...DEFAULT_FLAKY, ...options.flakyServer },
    capacityServer: {
      ...(scenario === "metastable" ? METASTABLE_CAPACITY : DEFAULT_CAPACITY),
      ...options.capacityServer,
    },
    store: { ...DEFAULT_STORE, ...options.store },
    throttledStore: { ...DEFAULT_THROTTLED, ...options.throttledStore },
    batch: options.batch ?? 20_000,
  };
  if (!(Number.isInteger(resolved.batch) && resolved.batch > 0)) {
    throw new OptionError("batch", resolved.batch, "a positive integer");
  }
  const seeds = Array.from({ length: runs }, (_, i) => seed + i);
  const total = strategies.length * clients.length * probabilities.length * runs;
  let done = 0;
  const results: RunResult[] = [];
  for (const probability of probabilities) {
    for (const count of clients) {
      for (const strategy of strategies) {
        const singles = seeds.map((s) => {
          const single = runOne(resolved, strategy, count, probability, s, (fraction) =>
            options.onProgress?.(done, total, fraction),
          );
          done += 1;
          options.onProgress?.(done, total, 0);
          return single;
        });
        results.push(summarize(strategy, count, probability, seeds, singles));
      }
    }
  }
  return {
    scenario,
    seed,
    parameters: {
      duration,
      outage,
      think: scenario === "contention" ? null : think,
      timeout: scenario === "contention" ? null : timeout,
      server:
        scenario === "outage"
          ? server
          : scenario === "amplification"
            ? "flaky"
            : scenario === "throttled-store"
              ? "throttled-store"
              : scenario === "metastable"
                ? "capacity"
                : "versioned-store",
      throttledStore: resolved.throttledStore,
      batch: scenario === "throttled-store" ? resolved.batch : null,
      latencyServer: resolved.latencyServer,
      flakyServer: resolved.flakyServer,
      capacityServer: resolved.capacityServer,
      store: resolved.store,
      runs,
    },
    runs: results,
  };
}
