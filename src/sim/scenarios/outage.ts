/**
 * outage: clients in a closed loop (each thinks, then calls, as the overload experiment's reference client does) against a server
 * that stops for a while; does goodput come back after it resumes, and how soon?
 */
import { OUTAGE_ALL, OUTAGE_WITH_GUARDS } from "../strategies.js";
import { runClients, serverTarget } from "./clients.js";
import type { Scenario } from "./scenario.js";

export const outage: Scenario = {
  strategies: OUTAGE_ALL,
  defaults: {
    // The adaptive limits are asked for by name (--strategies robustly-gradient2,…): not run by default.
    strategies: OUTAGE_WITH_GUARDS.map((s) => s.name),
    clients: [1000],
    duration: 300_000,
    outage: { start: 20_000, length: 30_000 },
    think: 10_000,
    timeout: 2000,
  },
  run: (r, run) => runClients(r, run, serverTarget(r.server, r, run.failureProbability, false), true),
  parameters: (r) => ({ think: r.think, timeout: r.timeout, server: r.server, batch: null }),
};
