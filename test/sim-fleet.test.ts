import { describe, expect, it } from "vitest";
import { backoff } from "../src/backoff/index.js";
import { circuitBreaker } from "../src/breaker/circuit-breaker.js";
import { SIMULATE_HELP, simulateOptions } from "../src/cli/simulate.js";
import { OptionError } from "../src/core/errors.js";
import { Simulation } from "../src/sim/engine.js";
import { type SimulateOptions, simulate, simulateAsync } from "../src/sim/simulate.js";
import { runInSlices } from "../src/sim/sliced.js";
import { simulateInThreads } from "../src/sim/threads.js";
import { memoryStore } from "../src/store/memory.js";

/** Two processes' breakers sharing one in-memory store on the simulation's clock; the first opens at t = 1 s. */
function twoProcesses(sim: Simulation) {
  const store = memoryStore({ clock: sim.clock });
  const make = () =>
    circuitBreaker({
      store,
      key: "api",
      clock: sim.clock,
      random: sim.random,
      failureRatio: 0.5,
      minimumThroughput: 4,
      window: 10_000,
      openFor: backoff.constant({ base: 60_000 }),
    });
  const [a, b] = [make(), make()];
  const storeDown: unknown[] = [];
  b.on("store-down", ({ error }) => storeDown.push(error));
  sim.at(1000, () => {
    for (let i = 0; i < 4; i++) {
      a.acquire();
      a.failure();
    }
  });
  return { a, b, storeDown };
}

describe("runInSlices", () => {
  it("lets a store's exchanges finish within the run: a breaker opened in one process opens in the other", async () => {
    const sim = new Simulation(1);
    const { a, b, storeDown } = twoProcesses(sim);
    await runInSlices(sim, 2000);
    expect(sim.now).toBe(2000);
    expect(a.state).toBe("open");
    expect(b.state).toBe("open");
    expect(b.shared).toBe(true);
    expect(storeDown).toEqual([]);
  });

  it("where one synchronous run would time every exchange out first, and each process decide alone", async () => {
    const sim = new Simulation(1);
    const { a, b, storeDown } = twoProcesses(sim);
    sim.run(2000);
    await Promise.resolve();
    expect(a.state).toBe("open");
    expect(b.state).toBe("closed");
    expect(b.shared).toBe(false);
    expect(storeDown.length).toBe(1);
  });

  it("refuses a slice that is not a finite number of ms > 0", async () => {
    await expect(runInSlices(new Simulation(1), 100, undefined, 0)).rejects.toThrow(RangeError);
  });
});

/** A small fleet: 10 processes of 20 clients, a 20 s outage from t = 10 s, 60 s in all. */
const SMALL: SimulateOptions = {
  scenario: "fleet",
  processes: 10,
  clients: [20],
  duration: 60_000,
  outage: { start: 10_000, length: 20_000 },
};

/** Attempts that reached the server from the outage's start until 10 s after it ended. */
const attemptsAround = (series: readonly { t: number; offered: number }[]) =>
  series.filter((s) => s.t >= 10 && s.t < 40).reduce((sum, s) => sum + s.offered, 0);

describe("the fleet scenario", () => {
  it("gives the same numbers for the same seed, and others for another", { timeout: 30_000 }, async () => {
    const first = await simulateAsync({ ...SMALL, strategies: ["shared"], seed: 3 });
    const again = await simulateAsync({ ...SMALL, strategies: ["shared"], seed: 3 });
    const other = await simulateAsync({ ...SMALL, strategies: ["shared"], seed: 4 });
    expect(again).toEqual(first);
    expect(other.runs[0]?.attempts).not.toBe(first.runs[0]?.attempts);
    expect(first.parameters.processes).toBe(10);
  });

  it("shared state spares the paused server: a lower peak and fewer attempts around the outage, on every seed", {
    timeout: 60_000,
  }, async () => {
    for (const seed of [1, 2, 3]) {
      const { runs } = await simulateAsync({ ...SMALL, seed });
      const [local, shared] = runs;
      if (local === undefined || shared === undefined) throw new Error("two rows expected");
      expect([local.strategy, shared.strategy]).toEqual(["local", "shared"]);
      // Each of 10 processes sees a tenth of the calls: its own breaker rarely reaches 20 calls in 10 s.
      expect(shared.peakConcurrency, `seed ${seed}`).toBeLessThan(local.peakConcurrency * 0.75);
      expect(attemptsAround(shared.series), `seed ${seed}`).toBeLessThan(attemptsAround(local.series));
      expect(shared.recovered && local.recovered, `seed ${seed}`).toBe(true);
    }
  });

  it("is refused by the synchronous simulate, and --processes by the other scenarios", () => {
    expect(() => simulate(SMALL)).toThrow(OptionError);
    expect(() => simulate(SMALL)).toThrow(/simulateAsync/);
    expect(() => simulate({ scenario: "outage", processes: 2 })).toThrow(
      "processes must be given only with the fleet scenario",
    );
    expect(() => simulate({ ...SMALL, processes: 0 })).toThrow(OptionError);
    expect(() => simulate({ ...SMALL, processes: 1000, clients: [101] })).toThrow(
      "processes must be at most 990 with 101 clients each (100000 clients in all)",
    );
  });

  it("runs in worker threads with the same result", { timeout: 60_000 }, async () => {
    const options: SimulateOptions = { ...SMALL, processes: 4, duration: 40_000, seed: 5, runs: 2 };
    const threaded = await simulateInThreads(options, { jobs: 2 });
    expect(threaded).toEqual(await simulateAsync(options));
  });
});

describe("robustly simulate --scenario fleet", () => {
  it("takes --processes for the fleet only, and --help lists the fleet's rows", () => {
    expect(simulateOptions(["--scenario", "fleet", "--processes", "3"]).options).toMatchObject({
      scenario: "fleet",
      processes: 3,
    });
    expect(() => simulateOptions(["--scenario", "outage", "--processes", "3"])).toThrow(
      "--processes is for --scenario fleet",
    );
    expect(SIMULATE_HELP).toContain("  fleet: local, shared");
    expect(SIMULATE_HELP).toContain("--processes N");
  });
});
