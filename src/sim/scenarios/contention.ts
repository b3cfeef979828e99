/**
 * contention: every client reads a row and writes it back under optimistic concurrency, once, all at
 * t = 0 (the experiment of AWS's "Exponential Backoff And Jitter"); how much work, and how long, until
 * every write lands?
 */
import { VersionedStore } from "../servers.js";
import { AWS_STUDY_STRATEGIES, CONTENTION_STRATEGIES } from "../strategies.js";
import { runClients } from "./clients.js";
import type { Scenario } from "./scenario.js";

export const contention: Scenario = {
  strategies: CONTENTION_STRATEGIES,
  defaults: {
    clients: [10, 50, 100],
    strategies: AWS_STUDY_STRATEGIES,
    // The study averages 100 runs per point; its 10 to 190 clients (10:190:10) take half a minute, too
    // long for a default, so the default sweep keeps three of its points.
    runs: 100,
    duration: 600_000,
    outage: null,
    think: 10_000,
    timeout: 2000,
  },
  run: (r, run) =>
    runClients(
      r,
      run,
      (sim, recorder) => {
        const store = new VersionedStore(sim, recorder, r.store);
        return {
          server: store,
          operation: () => store.read().then((version) => store.write(version)),
          once: true,
          openLoop: false,
          think: 0,
          timeout: -1,
        };
      },
      false,
    ),
  parameters: () => ({ think: null, timeout: null, server: "versioned-store", batch: null }),
};
