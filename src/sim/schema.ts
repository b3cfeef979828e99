/** `simulate(options)`, described once (see `src/core/schema.ts`). */

import { MAX_SEED } from "../core/random.js";
import type { Field, Schema } from "../core/schema.js";

/** The largest counts a simulation takes: beyond them it would run out of memory or never end. */
export const SIM_LIMITS = Object.freeze({
  /** Clients in one run. */
  clients: 100_000,
  /** Seeds averaged per point. */
  runs: 10_000,
  /** Writes of the throttled-store scenario. */
  batch: 10_000_000,
  /** Points of a list option (clients, failureProbability). */
  points: 1000,
  /** Processes of the fleet scenario. */
  processes: 1000,
  /** Virtual duration, ms: a day. */
  duration: 86_400_000,
});

const tuning = (what: string): Field => ({
  kind: { type: "other", allowed: `an object of ${what} options` },
  default: "the model's defaults",
  doc: `Changes to the ${what}'s model.`,
});

export const SIMULATE_SCHEMA: Schema = {
  name: "simulate",
  takenBy: "`simulate(options)` (from `robustly/sim`)",
  where: "simulate",
  label: (key) => key,
  fields: {
    scenario: {
      kind: {
        type: "enum",
        values: ["outage", "contention", "amplification", "throttled-store", "metastable", "fleet"],
      },
      default: '"outage"',
      doc: "What to simulate.",
    },
    strategies: {
      kind: { type: "other", allowed: "a list of the scenario's strategy names" },
      default: "all of the scenario's; contention: the AWS study's five",
      doc: "The retry strategies to compare.",
    },
    clients: {
      kind: {
        type: "other",
        allowed: `a non-empty list (at most ${SIM_LIMITS.points}) of integers in [1, ${SIM_LIMITS.clients}]`,
      },
      default: "outage 1000, contention 10, 50, 100, amplification 100, fleet 50",
      doc: "Client counts, one run per count (fleet: per process).",
    },
    failureProbability: {
      kind: {
        type: "other",
        allowed: `a non-empty list (at most ${SIM_LIMITS.points}) of numbers in [0, 1]`,
      },
      default: "0, 0.1, …, 1",
      doc: "Amplification: the probabilities that an attempt fails.",
    },
    seed: {
      kind: { type: "integer", min: 0, max: MAX_SEED },
      default: "1",
      doc: "The same seed gives the same numbers.",
    },
    runs: {
      kind: { type: "integer", min: 1, max: SIM_LIMITS.runs },
      default: "1; contention 100",
      doc: "Seeds per point (seed, seed + 1, …), averaged.",
    },
    duration: {
      kind: { type: "number", min: 0, exclusive: true, max: SIM_LIMITS.duration },
      ms: true,
      default: "outage 300000, contention until every client is done, amplification 60000, fleet 120000",
      doc: "Virtual duration.",
    },
    outage: {
      kind: { type: "other", allowed: "{ start, length } in ms, or null" },
      default: "{ start: 20000, length: 30000 }",
      doc: "When the server stops answering, and for how long; null for none.",
    },
    think: {
      kind: { type: "number", min: 0, exclusive: true },
      ms: true,
      default: "outage 10000, amplification 100",
      doc: "Mean think time between a client's requests.",
    },
    timeout: {
      kind: { type: "number", min: 0, exclusive: true },
      ms: true,
      default: "2000",
      doc: "Per-attempt timeout of a simulated client.",
    },
    server: {
      kind: { type: "enum", values: ["latency", "flaky", "capacity"] },
      default: '"latency"',
      doc: "The server of the outage scenario.",
    },
    latencyServer: tuning("latency server"),
    flakyServer: tuning("flaky server"),
    capacityServer: tuning("capacity server"),
    store: tuning("versioned store"),
    throttledStore: tuning("throttled store"),
    backlogs: {
      kind: {
        type: "other",
        allowed: `a non-empty list (at most ${SIM_LIMITS.points}) of integers in [0, ${SIM_LIMITS.clients}]`,
      },
      default: "latencyServer.backlog (512)",
      doc: "Outage on the latency server: listen-queue sizes to sweep, every strategy run once per size.",
    },
    batch: {
      kind: { type: "integer", min: 1, max: SIM_LIMITS.batch },
      default: "20000",
      doc: "Throttled-store: the writes to make, shared among the workers.",
    },
    processes: {
      kind: { type: "integer", min: 1, max: SIM_LIMITS.processes },
      default: "20",
      doc: "Fleet: the processes, each with `clients` clients and a budget and breaker of its own (shared or not).",
    },
    onProgress: {
      kind: { type: "function" },
      doc: "(runsDone, runsTotal, fraction) => void as virtual time passes.",
    },
  },
};
