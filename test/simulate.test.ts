import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { OptionError } from "../src/core/errors.js";
import * as sim from "../src/sim/index.js";
import { FINE_MS, recovery, recoverySignals } from "../src/sim/metrics.js";
import { AWS_BACKOFF_STUDY } from "../src/sim/published.js";
import { LatencyServer } from "../src/sim/servers.js";
import { type RunResult, simulate } from "../src/sim/simulate.js";
import { CONTENTION_STRATEGIES } from "../src/sim/strategies.js";

describe("simulate", () => {
  it("is deterministic: the same seed gives the same result to the last number; another seed differs", () => {
    const options = {
      strategies: ["fixed", "robustly"],
      clients: [300],
      duration: 60_000,
      outage: { start: 10_000, length: 10_000 },
    };
    const a = simulate({ ...options, seed: 11 });
    const b = simulate({ ...options, seed: 11 });
    const c = simulate({ ...options, seed: 12 });
    expect(JSON.stringify(a)).toBe(JSON.stringify(b));
    expect(JSON.stringify(a.runs)).not.toBe(JSON.stringify(c.runs));
  });

  it("reproduces seed 002's claim on the default outage: fixed retries never recover, exponential backoff does", () => {
    const { runs } = simulate({ strategies: ["fixed", "exponential"], seed: 1 });
    const [fixed, exponential] = runs;
    expect(fixed?.recovered).toBe(false);
    expect(fixed?.recoveryTime).toBeNull();
    expect(exponential?.recovered).toBe(true);
    expect(exponential?.recoveryTime).toBeLessThan(30_000);
    // The meltdown: concurrency runs away and every attempt after the outage times out.
    expect(fixed?.peakConcurrency).toBeGreaterThan(10 * (exponential?.peakConcurrency ?? 0));
    const late = fixed?.series.slice(100) ?? [];
    expect(late.every((s) => s.successes === 0)).toBe(true);
    expect(late.every((s) => s.timeouts > 0)).toBe(true);
    // Before the outage both run at the steady load: 1,000 clients thinking 10 s on average, ~100 per second.
    for (const run of runs) {
      expect(run.baseline).toBeGreaterThan(85);
      expect(run.baseline).toBeLessThan(115);
    }
  }, 30_000);

  it("without an outage every strategy serves the steady load and recovery is not judged", () => {
    const { runs } = simulate({ outage: null, duration: 60_000, clients: [500], seed: 2 });
    for (const run of runs) {
      expect(run.recovered).toBeNull();
      expect(run.successRate).toBeGreaterThan(0.97);
      expect(run.amplification).toBeLessThan(1.01);
      expect(run.peakConcurrency).toBeLessThan(40);
    }
  });

  it("amplification: with 3 retries attempts per request approach 1 + p + p² + p³; with none, 1", () => {
    const probabilities = [0, 0.25, 0.5, 0.75, 1];
    const { runs } = simulate({
      scenario: "amplification",
      strategies: ["no-retries", "3-retries"],
      failureProbability: probabilities,
      duration: 600_000,
      think: 1000,
      seed: 5,
    });
    for (const run of runs) {
      const p = run.failureProbability as number;
      const expected = run.strategy === "no-retries" ? 1 : 1 + p + p ** 2 + p ** 3;
      // Requests cut off by the end of the run pull the ratio down a little.
      expect(run.amplification).toBeGreaterThan(expected * 0.97);
      expect(run.amplification).toBeLessThan(expected * 1.03);
      const success = run.strategy === "no-retries" ? 1 - p : 1 - p ** 4;
      expect(Math.abs(run.successRate - success)).toBeLessThan(0.03);
    }
    expect(runs).toHaveLength(probabilities.length * 2);
  });

  it("amplification: the budget keeps load near 1.1× at total failure and still lets needed retries through", () => {
    const { runs } = simulate({ scenario: "amplification", failureProbability: [0.1, 1], seed: 8 });
    const at = (strategy: string, p: number) => {
      const run = runs.find((r) => r.strategy === strategy && r.failureProbability === p);
      if (run === undefined) throw new Error(`no run ${strategy} ${p}`);
      return run;
    };
    // At 100% failure: 3 retries nearly quadruple the attempts, the budget holds them to about 10% more,
    // the breaker fails fast and sends almost nothing.
    expect(at("3-retries", 1).amplification).toBeGreaterThan(3.7);
    expect(at("3-retries-budget", 1).amplification).toBeGreaterThan(1.05);
    expect(at("3-retries-budget", 1).amplification).toBeLessThan(1.15);
    expect(at("3-retries-breaker", 1).amplification).toBeLessThan(0.1);
    // At 10% failure the budget grants almost every retry that is needed.
    expect(at("3-retries-budget", 0.1).successRate).toBeGreaterThan(0.98);
    expect(at("no-retries", 0.1).successRate).toBeLessThan(0.92);
  });

  it("metastable: one retry after a timeout keeps an overloaded server down after the outage; budget and breaker let it recover", () => {
    for (const seed of [1, 2]) {
      const { runs } = simulate({ scenario: "metastable", seed });
      const by = Object.fromEntries(runs.map((r) => [r.strategy, r]));
      expect(by["retry-once"]?.recovered, `seed ${seed}`).toBe(false);
      // Stuck: nearly two attempts per request and most requests failing, long after the outage.
      expect(by["retry-once"]?.amplification).toBeGreaterThan(1.5);
      const late = by["retry-once"]?.series.slice(90) ?? [];
      expect(late.every((s) => s.offered > 400)).toBe(true);
      for (const name of ["no-retries", "retry-once-budget", "retry-once-breaker"]) {
        expect(by[name]?.recovered, `${name}, seed ${seed}`).toBe(true);
      }
    }
  }, 30_000);

  it("contention: each client writes once; without backoff the work grows fastest", () => {
    const { runs } = simulate({ scenario: "contention", clients: [1, 40], seed: 3, runs: 3 });
    const alone = runs.filter((r) => r.clients === 1);
    for (const run of alone) {
      expect(run.work).toBe(1);
      expect(run.successRate).toBe(1);
    }
    const crowd = runs.filter((r) => r.clients === 40);
    for (const run of crowd) {
      expect(run.successRate).toBe(1);
      expect(run.unfinished).toBe(0);
      expect(run.work).toBeGreaterThanOrEqual(40);
    }
    const work = Object.fromEntries(crowd.map((r) => [r.strategy, r.work]));
    expect(work["no-backoff"]).toBeGreaterThan(work["aws-full-jitter"] as number);
  });

  it("throttled-store: how each strategy follows a store's capacity as it scales (seed 1, measured)", () => {
    const { runs } = simulate({ scenario: "throttled-store", seed: 1 });
    const by = Object.fromEntries(runs.map((r) => [r.strategy, r]));
    const perCall = by["exponential-full-jitter"];
    const seedExactly = by.responsive;
    const coalesced = by["responsive-coalesced"];
    if (perCall === undefined || seedExactly === undefined || coalesced === undefined)
      throw new Error("missing run");
    // Per-call backoff and the coalesced shared delay both write the 20,000; the coalesced one keeps the
    // write rate closer to the capacity, at the price of more refused writes (which is also what makes the
    // store scale).
    expect(perCall.batchTime).not.toBeNull();
    expect(coalesced.batchTime).not.toBeNull();
    expect(coalesced.capacityUse).toBeGreaterThan(perCall.capacityUse as number);
    expect(coalesced.rejected).toBeGreaterThan(perCall.rejected);
    // Seed 003's controller as it is, shared by 50 workers: the first burst of refusals raises the delay
    // once per refused write, to its 15 min cap, and the batch is not done in 10 minutes.
    expect(seedExactly.batchTime).toBeNull();
    expect(seedExactly.work).toBeLessThan(1000);
    // The capacity the store provisioned is in the series.
    expect(coalesced.series[0]?.capacity).toBe(100);
    expect(Math.max(...coalesced.series.map((s) => s.capacity ?? 0))).toBeGreaterThan(100);
  }, 30_000);

  it("averages several seeds with --runs and names them", () => {
    const { runs } = simulate({
      strategies: ["robustly"],
      clients: [200],
      duration: 30_000,
      outage: null,
      runs: 3,
      seed: 4,
    });
    expect(runs[0]?.seeds).toEqual([4, 5, 6]);
  });

  it("every logical request ends at most once: a closed-loop client never has two in flight", () => {
    fc.assert(
      fc.property(
        fc.constantFrom("fixed", "exponential", "robustly", "p-retry", "cockatiel"),
        fc.constantFrom<"latency" | "flaky" | "capacity">("latency", "flaky", "capacity"),
        fc.integer({ min: 1, max: 300 }),
        fc.integer({ min: 1, max: 1000 }),
        // From the servers' shortest service time (100 ms): a shorter timeout is refused.
        fc.integer({ min: 100, max: 3000 }),
        (strategy, server, clients, seed, timeout) => {
          const { runs } = simulate({
            strategies: [strategy],
            server,
            clients: [clients],
            seed,
            timeout,
            think: 2000,
            duration: 30_000,
            outage: { start: 5000, length: 5000 },
            flakyServer: { failureProbability: 0.3 },
            capacityServer: { capacity: 50 },
          });
          const run = runs[0];
          if (run === undefined) throw new Error("no run");
          expect(run.unfinished).toBeGreaterThanOrEqual(0);
          expect(run.unfinished).toBeLessThanOrEqual(clients);
          expect(run.attempts).toBeGreaterThanOrEqual(run.logicalRequests);
          for (const second of run.series) {
            expect(second.concurrency).toBeGreaterThanOrEqual(0);
            expect(second.successes + second.errors + second.timeouts).toBeLessThanOrEqual(run.attempts);
          }
        },
      ),
      { numRuns: 25 },
    );
  });

  it("a bad option fails at once, naming it and what is allowed", () => {
    expect(() => simulate({ scenario: "storm" as never })).toThrow(
      'scenario must be one of outage, contention, amplification, throttled-store, metastable, fleet; got "storm"',
    );
    expect(() => simulate({ strategies: ["fixed", "yolo"] })).toThrow(
      'strategies[1] must be a strategy of the outage scenario: fixed, exponential, exponential-after-think, robustly, p-retry, async-retry, exponential-backoff, cockatiel, robustly-no-budget, robustly-budget, robustly-breaker, robustly-retry-breaker, robustly-gradient2, robustly-vegas, robustly-aimd, robustly-rate; got "yolo"',
    );
    expect(() => simulate({ clients: [0] })).toThrow(OptionError);
    expect(() => simulate({ outage: { start: 290_000, length: 20_000 } })).toThrow("outage must be a window");
    expect(() => simulate({ scenario: "amplification", failureProbability: [1.5] })).toThrow(
      "failureProbability[0] must be numbers in [0, 1]; got 1.5",
    );
  });
});

describe("recovery", () => {
  const steady = (n: number, level: number) => Array<number>(n).fill(level);

  it("is the start of the first full window after the outage back at 95% of the pre-outage goodput", () => {
    const goodput = [...steady(20, 100), ...steady(10, 0), ...steady(5, 20), ...steady(40, 100)];
    expect(recovery(goodput, 5, 20, 30)).toEqual({ baseline: 100, recovered: true, recoveryTimeMs: 5000 });
  });

  it("never, when goodput stays down; and a later collapse undoes an early recovery", () => {
    expect(recovery([...steady(20, 100), ...steady(60, 10)], 5, 20, 30).recovered).toBe(false);
    const relapse = [...steady(20, 100), ...steady(10, 0), ...steady(15, 100), ...steady(30, 0)];
    expect(recovery(relapse, 5, 20, 30)).toEqual({ baseline: 100, recovered: false, recoveryTimeMs: null });
  });

  it("tolerates Poisson-sized noise after recovering", () => {
    // Back at 100, then averaging 92: within three standard deviations (9.5) of a 10 s average below 95.
    const noisy = [
      ...steady(20, 100),
      ...steady(10, 0),
      ...steady(10, 100),
      ...Array.from({ length: 60 }, (_, i) => (i % 2 ? 100 : 84)),
    ];
    expect(recovery(noisy, 5, 20, 30)).toEqual({ baseline: 100, recovered: true, recoveryTimeMs: 0 });
    // Averaging 80 is more than noise: not recovered.
    const low = [...steady(20, 100), ...steady(10, 0), ...steady(10, 100), ...steady(60, 80)];
    expect(recovery(low, 5, 20, 30).recovered).toBe(false);
  });
});

describe("recoverySignals", () => {
  // Fine series of 60 s: an outage from 20 s to 30 s; `after(i)` is the value i bins (100 ms) after it ends.
  const fine = (before: number, after: (i: number) => number) =>
    Float64Array.from({ length: 600 }, (_, i) => (i < 200 ? before : i < 300 ? 0 : after(i - 300)));
  const outage = { start: 20_000, end: 30_000 };

  it("times goodput and the requests in flight to the 100 ms, each from the end of its first full window back", () => {
    const signals = recoverySignals(
      {
        // 100 per second before; nothing for 300 ms after the outage, then 100 per second again.
        fineSuccesses: Uint32Array.from(fine(10, (i) => (i < 3 ? 0 : 10))),
        // 10 in the server before; 500 for 2 s after the outage, then 10.
        fineConcurrency: fine(10, (i) => (i < 20 ? 500 : 10)),
      },
      5000,
      outage,
      400,
    );
    expect(signals).toEqual({ goodput: 1300, inFlight: 3000, aboveKnee: 2000 });
  });

  it("a relapse after the first window back starts the search again; no knee, no time above it", () => {
    const relapse = (i: number) => (i < 20 || i >= 150 ? 10 : 0);
    const signals = recoverySignals(
      { fineSuccesses: Uint32Array.from(fine(10, relapse)), fineConcurrency: fine(10, () => 10) },
      5000,
      outage,
      null,
    );
    expect(signals.goodput).toBe(16_000);
    expect(signals.inFlight).toBe(1000);
    expect(signals.aboveKnee).toBeNull();
    const never = recoverySignals(
      { fineSuccesses: Uint32Array.from(fine(10, () => 8)), fineConcurrency: fine(10, () => 40) },
      5000,
      outage,
      null,
    );
    expect([never.goodput, never.inFlight]).toEqual([null, null]);
  });

  it("the latency server's knee is where its service time passes the timeout", () => {
    const o = { minDelay: 100, limit: 30, factor: 1.05, k: 15 };
    const knee = LatencyServer.knee(2000, o) as number;
    expect(LatencyServer.serviceTime(Math.floor(knee), o)).toBeLessThanOrEqual(2000);
    expect(LatencyServer.serviceTime(Math.ceil(knee), o)).toBeGreaterThan(2000);
    expect(LatencyServer.knee(-1, o)).toBeNull();
  });

  it("on a small outage run: fixed retries keep the server above its knee, backoff never gets there", () => {
    const small = { clients: [300], duration: 80_000, outage: { start: 10_000, length: 20_000 }, seed: 3 };
    // A listen queue longer than the knee (951 requests): the resume alone passes it.
    const [fixed] = simulate({ ...small, strategies: ["fixed"], latencyServer: { backlog: 1000 } }).runs;
    expect(fixed?.aboveKneeTime).toBeGreaterThan(45_000);
    expect(fixed?.recoveryTime).toBeNull();
    expect(fixed?.inFlightRecoveryTime).toBeNull();
    const { runs } = simulate({ ...small, strategies: ["exponential", "async-retry"] });
    for (const run of runs) {
      expect(run.aboveKneeTime).toBe(0);
      expect(run.recoveryTime).toBeGreaterThanOrEqual(1000);
      expect(run.inFlightRecoveryTime).toBeGreaterThanOrEqual(1000);
      // Resolved to 100 ms.
      expect(((run.recoveryTime ?? 0) / FINE_MS) % 1).toBe(0);
    }
  });
});

describe("robustly's defaults on the outage (docs/defaults.md, small: 80 s, three seeds)", () => {
  const small = { duration: 80_000, outage: { start: 20_000, length: 30_000 } } as const;
  const peers = ["p-retry", "async-retry", "exponential-backoff", "cockatiel"];
  const strategies = ["robustly", "robustly-no-budget", ...peers];
  const seeds = [1, 2, 3].map((seed) => {
    const { runs } = simulate({ ...small, strategies, seed });
    return Object.fromEntries(runs.map((r) => [r.strategy, r]));
  });
  // Attempts per second over the last 5 s of the pause.
  const sent = (r: RunResult | undefined) =>
    (r?.series.slice(45, 50).reduce((a, s) => a + s.offered, 0) ?? Number.NaN) / 5;
  const mean = (name: string, value: (r: RunResult) => number | null) =>
    seeds.reduce((sum, by) => sum + (value(by[name] as RunResult) ?? Number.NaN), 0) / seeds.length;

  it("without the default budget, its calls give up within the pause and start again, so it sends more than p-retry and async-retry, and peaks higher", () => {
    for (const by of seeds) {
      for (const peer of ["p-retry", "async-retry"]) {
        expect(sent(by["robustly-no-budget"])).toBeGreaterThan(1.4 * sent(by[peer]));
        expect(by["robustly-no-budget"]?.peakConcurrency).toBeGreaterThan(
          by[peer]?.peakConcurrency ?? Number.NaN,
        );
      }
    }
  });

  it("with it, as it ships, its retries are cut: it sends less, peaks lower, and brings the requests in flight back sooner than without it, and with the peers, on average", () => {
    for (const by of seeds) {
      expect(sent(by.robustly)).toBeLessThan(0.6 * sent(by["robustly-no-budget"]));
      expect(by.robustly?.peakConcurrency).toBeLessThan(
        by["robustly-no-budget"]?.peakConcurrency ?? Number.NaN,
      );
    }
    const inFlight = (r: RunResult) => r.inFlightRecoveryTime;
    expect(mean("robustly", inFlight)).toBeLessThan(mean("robustly-no-budget", inFlight));
    // At full size (docs/defaults.md) sooner than every peer's; on this short run within 100 ms of them.
    for (const peer of peers)
      expect(mean("robustly", inFlight)).toBeLessThanOrEqual(mean(peer, inFlight) + 100);
    // Without the outage nothing changes: every request that ended was served, one attempt each (those
    // still in flight when the run stops are no success yet), as without the budget.
    const [calm, calmWithout] = simulate({
      ...small,
      outage: null,
      strategies: ["robustly", "robustly-no-budget"],
      seed: 1,
    }).runs as [RunResult, RunResult];
    expect(Math.round(calm.successRate * calm.logicalRequests) + calm.unfinished).toBe(calm.logicalRequests);
    expect(calm.amplification).toBe(1);
    expect(calm.successRate).toBe(calmWithout.successRate);
  });
});

describe("an adaptive concurrency limit on the outage (docs/defaults.md, small: 80 s, three seeds)", () => {
  const small = { duration: 80_000, outage: { start: 20_000, length: 30_000 } } as const;
  const peers = ["p-retry", "async-retry", "exponential-backoff", "cockatiel"];

  it("holds the server's peak far below every peer's default and the budget alone, and changes nothing without the outage", () => {
    for (const seed of [1, 2, 3]) {
      const by = Object.fromEntries(
        simulate({
          ...small,
          strategies: ["robustly", "robustly-aimd", "robustly-gradient2", ...peers],
          seed,
        }).runs.map((r) => [r.strategy, r]),
      );
      for (const limited of ["robustly-aimd", "robustly-gradient2"]) {
        const peak = (by[limited] as RunResult).peakConcurrency;
        expect(peak).toBeLessThan(0.3 * (by.robustly as RunResult).peakConcurrency);
        for (const peer of peers) expect(peak).toBeLessThan((by[peer] as RunResult).peakConcurrency);
        expect((by[limited] as RunResult).recovered).toBe(true);
      }
    }
    const calm = simulate({
      ...small,
      outage: null,
      strategies: ["robustly", "robustly-aimd"],
      seed: 1,
    }).runs;
    expect(calm[1]?.successRate).toBe(calm[0]?.successRate);
    expect(calm[1]?.amplification).toBe(1);
  });

  it("is not run by default, and is named by --strategies", () => {
    const names = simulate({ ...small, clients: [50] }).runs.map((r) => r.strategy);
    expect(names).not.toContain("robustly-aimd");
    expect(names).not.toContain("robustly-rate");
    expect(names).toContain("robustly");
  });
});

describe("contention against the AWS study", () => {
  const strategy = (name: string) => {
    const found = CONTENTION_STRATEGIES.find((s) => s.name === name);
    if (found === undefined) throw new Error(`no strategy ${name}`);
    return found;
  };

  it("reports makespan, when the last client finished, beside the mean completion time", () => {
    const { runs } = simulate({ scenario: "contention", clients: [1, 40], seed: 2, runs: 2 });
    for (const run of runs) {
      expect(run.makespan, run.strategy).not.toBeNull();
      const makespan = run.makespan as number;
      if (run.clients === 1) expect(makespan).toBeCloseTo(run.completionTime as number, 9);
      else expect(makespan).toBeGreaterThan(run.completionTime as number);
    }
    const outage = simulate({ strategies: ["robustly"], clients: [50], duration: 60_000 });
    expect(outage.runs[0]?.makespan).toBeNull();
  });

  it("runs the study's five strategies by default, 100 runs each", () => {
    const result = simulate({ scenario: "contention", clients: [2] });
    expect(result.runs.map((r) => r.strategy)).toEqual([
      "no-backoff",
      "aws-exponential",
      "aws-full-jitter",
      "aws-equal-jitter",
      "aws-decorrelated-jitter",
    ]);
    expect(result.parameters.runs).toBe(100);
    expect(result.runs[0]?.seeds).toHaveLength(100);
  });

  it("the study's exponential sleeps 2¹ × base first (its count starts at 1); robustly's sleeps base", () => {
    const delays = (name: string) => {
      const backoff = strategy(name).policy.backoff;
      if (backoff === undefined || typeof backoff === "function") throw new Error("expected a backoff");
      return [0, 1, 2, 8, 9].map((x) => backoff.delay(x, () => 0.5));
    };
    expect(delays("aws-exponential")).toEqual([10, 20, 40, 2000, 2000]);
    expect(delays("exponential")).toEqual([5, 10, 20, 1280, 2000]);
  });

  it("the study's decorrelated jitter draws its first sleep from uniform(base, 3 × base)", () => {
    const { backoff, jitter } = strategy("aws-decorrelated-jitter").policy;
    if (
      backoff === undefined ||
      typeof backoff === "function" ||
      jitter === undefined ||
      typeof jitter === "function"
    )
      throw new Error("expected a backoff and a jitter object");
    fc.assert(
      fc.property(fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }), (u) => {
        const first = jitter.apply({ backoff, retries: 0, random: () => u, previous: undefined });
        expect(first).toBeCloseTo(5 + 10 * u, 9);
        // Later sleeps keep the rule: uniform(base, 3 × previous), capped at 2 s.
        const later = jitter.apply({ backoff, retries: 3, random: () => u, previous: 1000 });
        expect(later).toBeCloseTo(Math.min(2000, 5 + 2995 * u), 9);
      }),
    );
  });

  it("reproduces the study's calls and makespan at 100 clients within 10 % for each of its five strategies", () => {
    const { runs } = simulate({ scenario: "contention", clients: [100], runs: 30 });
    expect(runs).toHaveLength(5);
    for (const run of runs) {
      const published = AWS_BACKOFF_STUDY.strategies[run.strategy]?.find((p) => p.clients === 100);
      if (published === undefined) throw new Error(`no published figure for ${run.strategy}`);
      expect(Math.abs(run.work / published.work - 1), `${run.strategy} writes`).toBeLessThan(0.1);
      expect(
        Math.abs((run.makespan as number) / published.makespan - 1),
        `${run.strategy} makespan`,
      ).toBeLessThan(0.1);
    }
  });
});

describe("robustly/sim", () => {
  it("exports every strategy set its scenarios run, and every server they use", () => {
    const exported = Object.values(sim);
    for (const [name, strategies] of Object.entries(sim.SCENARIOS)) {
      expect(exported, name).toContain(strategies);
    }
    for (const server of [
      "LatencyServer",
      "FlakyServer",
      "CapacityServer",
      "VersionedStore",
      "ThrottledStore",
    ]) {
      expect(sim, server).toHaveProperty(server);
    }
    expect(sim).toHaveProperty("retryBreaker");
    expect(sim).toHaveProperty("AWS_BACKOFF_STUDY");
  });
});

describe("breakers: one that refuses calls, one that refuses only retries", () => {
  it("at total failure the breaker sends almost nothing; the retry breaker sends each first attempt and stops the retries", () => {
    const { runs } = simulate({
      scenario: "amplification",
      strategies: ["3-retries", "3-retries-breaker", "3-retries-retry-breaker"],
      failureProbability: [0, 1],
      duration: 20_000,
    });
    const at = (p: number, name: string) =>
      runs.find((r) => r.failureProbability === p && r.strategy === name) as sim.RunResult;
    // Healthy: neither gets in the way (only the requests the end of the run cuts off are not done).
    expect(at(0, "3-retries-breaker").successRate).toBe(at(0, "3-retries").successRate);
    expect(at(0, "3-retries-retry-breaker").successRate).toBe(at(0, "3-retries").successRate);
    // Failing: the breaker refuses first attempts too; the retry breaker lets every first attempt through.
    expect(at(1, "3-retries-breaker").amplification).toBeLessThan(0.05);
    const retryBreaker = at(1, "3-retries-retry-breaker").amplification;
    expect(retryBreaker).toBeGreaterThanOrEqual(1);
    expect(retryBreaker).toBeLessThan(1.05);
    expect(at(1, "3-retries").amplification).toBeGreaterThan(3.5);
  });
});

describe("the overload experiment's exponential client, as its code runs", () => {
  it("backs off first by the think time that preceded the request, then × e per retry", () => {
    const strategy = sim.OUTAGE_STRATEGIES.find((s) => s.name === "exponential-after-think");
    const policyAfter = strategy?.afterThink?.(7000);
    const b = policyAfter?.backoff;
    if (b === undefined || typeof b === "function") throw new Error("expected a backoff");
    expect(b.delay(0, () => 0.5)).toBe(7000);
    expect(b.delay(1, () => 0.5)).toBeCloseTo(7000 * Math.E, 6);
    expect(b.delay(10, () => 0.5)).toBe(300_000);
  });

  it("waits far longer before its first retries than the clean one, so the server recovers later", () => {
    const { runs } = simulate({ strategies: ["exponential", "exponential-after-think"], seed: 1 });
    const [clean, afterThink] = runs as [sim.RunResult, sim.RunResult];
    expect(afterThink.recovered).toBe(true);
    expect(afterThink.recoveryTime as number).toBeGreaterThan(clean.recoveryTime as number);
  });
});
