/**
 * fleet: the outage scenario's clients spread over many processes, each process with its own retry
 * budget and circuit breaker (as a service's replicas each hold their own), against the same paused
 * server. `local`: each process decides on what it alone has seen. `shared`: the processes keep their
 * budget's and breaker's state in one store (an in-memory store on the virtual clock, exchanging every
 * 100 ms as a Redis store would), so that one process's failures count against every process's
 * retries, and a breaker one process opens opens for all.
 *
 * The store's exchanges are promise continuations, so a run goes slice by slice (`runInSlices`).
 */
import type { Clock } from "../../core/clock.js";
import type { Random } from "../../core/random.js";
import { memoryStore } from "../../store/memory.js";
import type { Store } from "../../store/store.js";
import { Simulation } from "../engine.js";
import { Recorder } from "../metrics.js";
import { runInSlices } from "../sliced.js";
import { halfFailing, OUTAGE_STRATEGIES, type Strategy, tenPercent } from "../strategies.js";
import { judgeOutage, populate, sampleEverySecond, serverTarget } from "./clients.js";
import type { Scenario } from "./scenario.js";

/** A fleet's strategy: robustly's defaults with a budget and a breaker in each process, shared or not. */
export interface FleetStrategy extends Strategy {
  /** Whether the processes share their budget's and breaker's state through a store. */
  readonly shares: boolean;
}

const robustly = OUTAGE_STRATEGIES.find((s) => s.name === "robustly") as Strategy;
const GUARDS =
  "a retry budget (retries at most 10% of requests + 1/s) and a circuit breaker (opens at 50% failures, ≥ 20 calls in 10 s, for 1 s, then longer)";

export const FLEET_STRATEGIES: readonly FleetStrategy[] = [
  {
    ...robustly,
    name: "local",
    description: `robustly's defaults; each process ${GUARDS} of its own`,
    source: "robustly's DEFAULTS, with the outage scenario's budget and breaker in every process",
    shares: false,
  },
  {
    ...robustly,
    name: "shared",
    description: `robustly's defaults; ${GUARDS} whose state every process shares through a store (sync every 100 ms)`,
    source:
      "the same, with the budget's and breaker's `store` option (an in-memory store on the virtual clock)",
    shares: true,
  },
];

/** One process's budget and breaker: its own, or kept under one key of `store`. */
function processGuards(clock: Clock, random: Random, store: Store | undefined) {
  const sharing = store === undefined ? undefined : { store, key: "fleet" };
  return { ...tenPercent(clock, random, sharing), ...halfFailing(clock, random, sharing) };
}

export const fleet: Scenario = {
  strategies: FLEET_STRATEGIES,
  defaults: {
    clients: [50],
    processes: 20,
    duration: 120_000,
    outage: { start: 20_000, length: 30_000 },
    think: 10_000,
    timeout: 2000,
  },
  awaits: true,
  run: async (r, run) => {
    const sim = new Simulation(run.seed);
    const recorder = new Recorder(r.duration);
    const target = serverTarget(r.server, r, null, false)(sim, recorder);
    const store = (run.strategy as FleetStrategy).shares ? memoryStore({ clock: sim.clock }) : undefined;
    for (let process = 0; process < r.processes; process++) {
      populate(sim, recorder, {
        clients: run.clients,
        think: target.think,
        once: false,
        openLoop: target.openLoop,
        timeout: target.timeout,
        strategy: { ...run.strategy, guards: (clock, random) => processGuards(clock, random, store) },
        operation: target.operation,
      });
    }
    sampleEverySecond(sim, recorder, target.server);
    await runInSlices(sim, r.duration, (now) => run.onSlice(now / r.duration));
    return {
      recorder,
      events: sim.events,
      ...judgeOutage(r, recorder, target.knee ?? null),
      batchTime: null,
      capacityUse: null,
      makespan: null,
    };
  },
  parameters: (r) => ({ think: r.think, timeout: r.timeout, server: r.server, batch: null }),
};
