/**
 * throttled-store (the shared pacing controller's use): `workers` write a batch as fast as the strategy lets them to a store
 * with provisioned capacity that scales up under sustained throttling; how soon is the batch written, and
 * how closely does the write rate follow the capacity?
 */
import { AdaptiveLimitStep } from "../../limit/step.js";
import { Pipeline } from "../../pipeline/pipeline.js";
import { RateLimitStep } from "../../ratelimit/step.js";
import { retryPipeline } from "../../retry/retry.js";
import { Simulation } from "../engine.js";
import { Recorder } from "../metrics.js";
import { ThrottledStore } from "../servers.js";
import { budgetOption, THROTTLED_STRATEGIES } from "../strategies.js";
import { runOnSimulation } from "./clients.js";
import type { Resolved, Run, Scenario, Single } from "./scenario.js";

export const throttledStore: Scenario = {
  strategies: THROTTLED_STRATEGIES,
  defaults: { clients: [50], duration: 600_000, outage: null, think: 10_000, timeout: 2000 },
  run: runThrottled,
  parameters: (r) => ({ think: r.think, timeout: r.timeout, server: "throttled-store", batch: r.batch }),
};

function runThrottled(r: Resolved, run: Run): Single {
  const { strategy, clients: workers, onSlice } = run;
  const sim = new Simulation(run.seed);
  const recorder = new Recorder(r.duration);
  const store = new ThrottledStore(sim, recorder, r.throttledStore);
  const shared = strategy.shared?.(sim.clock, sim.random);
  const retrying = retryPipeline<unknown>({
    ...budgetOption(strategy),
    ...strategy.policy,
    ...(shared === undefined ? {} : { backoff: shared }),
  });
  // A rate limiter or an adaptive limit the workers share, inside the retry step.
  const rate = strategy.rateLimit?.(sim.clock);
  const limit = strategy.limit?.(sim.clock);
  const client =
    rate === undefined && limit === undefined
      ? retrying
      : new Pipeline([
          ...retrying.steps,
          ...(rate === undefined ? [] : [new RateLimitStep(rate)]),
          ...(limit === undefined ? [] : [new AdaptiveLimitStep(limit)]),
        ]);
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
        // The workers of the shared pacing controller sleep the shared delay after a success too.
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
  return {
    recorder,
    events: sim.events,
    recovered: null,
    recoveryTime: null,
    baseline: null,
    batchTime,
    capacityUse: capacityUse(recorder, batchTime ?? r.duration),
    makespan: null,
  };
}

/** Writes accepted over capacity offered, second by second, until `until` (ms); null if none was offered. */
function capacityUse(recorder: Recorder, until: number): number | null {
  const seconds = Math.min(recorder.seconds, Math.ceil(until / 1000));
  let accepted = 0;
  let offered = 0;
  for (let s = 0; s < seconds; s++) {
    accepted += recorder.successes[s] as number;
    offered += Number.isNaN(recorder.capacity[s] as number) ? 0 : (recorder.capacity[s] as number);
  }
  return offered === 0 ? null : accepted / offered;
}
