/**
 * amplification: clients in an open loop (a steady offered rate) against a server that fails each
 * request with a given probability; how many attempts does each logical request cost?
 */
import { AMPLIFICATION_STRATEGIES } from "../strategies.js";
import { runClients, serverTarget } from "./clients.js";
import type { Scenario } from "./scenario.js";

export const amplification: Scenario = {
  strategies: AMPLIFICATION_STRATEGIES,
  defaults: {
    clients: [100],
    duration: 60_000,
    outage: null,
    think: 100,
    timeout: 2000,
    failureProbability: [0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1],
  },
  run: (r, run) => runClients(r, run, serverTarget("flaky", r, run.failureProbability, true), false),
  parameters: (r) => ({ think: r.think, timeout: r.timeout, server: "flaky", batch: null }),
};
