/**
 * metastable: clients in an open loop just under a server's capacity, which slows down ten times above
 * it; after a short outage, do retries keep it overloaded when the trigger is gone?
 */
import type { CapacityServerOptions } from "../servers.js";
import { METASTABLE_STRATEGIES } from "../strategies.js";
import { runClients, serverTarget } from "./clients.js";
import type { Scenario } from "./scenario.js";

/**
 * The metastable scenario's server: 300 requests per second at 100 ms, ten times slower above (1 s). The
 * rate is judged over 5 s: at 280 offered per second, a 1 s window would see Poisson noise above 300 one
 * second in nine and slow down for no reason.
 */
const METASTABLE_CAPACITY: CapacityServerOptions = { capacity: 300, latency: 100, window: 5000 };

export const metastable: Scenario = {
  strategies: METASTABLE_STRATEGIES,
  defaults: {
    clients: [280],
    duration: 120_000,
    outage: { start: 20_000, length: 10_000 },
    think: 1000,
    timeout: 1000,
    capacityServer: METASTABLE_CAPACITY,
  },
  run: (r, run) => runClients(r, run, serverTarget("capacity", r, run.failureProbability, true), true),
  parameters: (r) => ({ think: r.think, timeout: r.timeout, server: "capacity", batch: null }),
};
