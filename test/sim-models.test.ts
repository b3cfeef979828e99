import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { backoff } from "../src/backoff/index.js";
import { jitter } from "../src/jitter/index.js";
import { Pipeline } from "../src/pipeline/pipeline.js";
import { retryPipeline } from "../src/retry/retry.js";
import { Simulation } from "../src/sim/engine.js";
import { Recorder } from "../src/sim/metrics.js";
import type { Outcome } from "../src/sim/outcome.js";
import { retryBreaker } from "../src/sim/retry-breaker.js";
import { runOnSimulation } from "../src/sim/scenarios/clients.js";
import {
  CapacityServer,
  ConflictError,
  FlakyServer,
  LatencyServer,
  ServerError,
  ThrottledError,
  VersionedStore,
} from "../src/sim/servers.js";
import { isSimulatedTimeout, SimulatedTimeoutStep } from "../src/sim/timeout.js";

const seed002 = { minDelay: 100, limit: 30, factor: 1.05, k: 15, tick: 50, backlog: 512 };

/** Sends `n` requests now and records when each is answered. */
function burst(sim: Simulation, server: { request(): Outcome<string> }, n: number): number[] {
  const answered: number[] = [];
  for (let i = 0; i < n; i++) server.request().then(() => answered.push(sim.now));
  return answered;
}

describe("seed 002's server", () => {
  it("service time is minDelay up to the limit and minDelay × factor^((c − limit) / K) above it", () => {
    expect(LatencyServer.serviceTime(1, seed002)).toBe(100);
    expect(LatencyServer.serviceTime(30, seed002)).toBe(100);
    expect(LatencyServer.serviceTime(45, seed002)).toBeCloseTo(105, 10);
    expect(LatencyServer.serviceTime(330, seed002)).toBeCloseTo(100 * 1.05 ** 20, 8);
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 5000 }), (c) => {
        const d = LatencyServer.serviceTime(c, seed002);
        expect(d).toBe(c <= 30 ? 100 : 100 * 1.05 ** ((c - 30) / 15));
        expect(LatencyServer.serviceTime(c + 1, seed002)).toBeGreaterThanOrEqual(d);
      }),
    );
  });

  it("answers a burst at the first check after the service time for its concurrency", () => {
    for (const n of [1, 30, 31, 200, 1000]) {
      const sim = new Simulation(1);
      const recorder = new Recorder(600_000);
      const server = new LatencyServer(sim, recorder, 2000, seed002);
      const answered = burst(sim, server, n);
      sim.run(600_000);
      const d = LatencyServer.serviceTime(n, seed002);
      // Checks fall every 50 ms; all n are answered together at the first check at or after d.
      expect(answered).toHaveLength(n);
      expect(new Set(answered)).toEqual(new Set([Math.ceil(d / 50) * 50]));
      expect(server.concurrency).toBe(0);
      expect(recorder.work).toBe(n);
      expect(recorder.peakConcurrency).toBe(n);
      // Answers slower than the 2 s timeout are not counted as answered in time.
      const inTime = recorder.successes.reduce((a, b) => a + b, 0);
      expect(inTime).toBe(Math.ceil(d / 50) * 50 < 2000 ? n : 0);
    }
  });

  it("checks each request on its own schedule from its acceptance: alone, a request takes minDelay", () => {
    fc.assert(
      fc.property(fc.double({ min: 0, max: 10_000, noNaN: true }), (at) => {
        const sim = new Simulation(1);
        const recorder = new Recorder(60_000);
        const server = new LatencyServer(sim, recorder, 2000, seed002);
        let answered = Number.NaN;
        sim.at(at, () => server.request().then(() => (answered = sim.now)));
        sim.run(60_000);
        expect(answered - at).toBeCloseTo(100, 6);
      }),
      { examples: [[30], [49.9], [0.5]] },
    );
  });

  it("a request arriving among slow ones is checked at its own ticks, every 50 ms after its acceptance", () => {
    const sim = new Simulation(1);
    const recorder = new Recorder(60_000);
    const server = new LatencyServer(sim, recorder, 2000, seed002);
    const early = burst(sim, server, 60);
    const late: number[] = [];
    sim.at(20, () => server.request().then(() => late.push(sim.now)));
    sim.run(60_000);
    // With 61 in the server the service time is 100 × 1.05^(31/15) ≈ 111 ms: the burst is not done at its
    // check at 100 ms, and is answered at 150; the late request's checks fall at 120 (61 in the server:
    // not yet) and 170 (alone by then: 150 ms served ≥ 100), not on the burst's ticks.
    expect(LatencyServer.serviceTime(61, seed002)).toBeCloseTo(110.6, 1);
    expect(early).toEqual(Array.from({ length: 60 }, () => 150));
    expect(late).toEqual([170]);
  });

  it("while paused accepts nothing; on resuming accepts the listen queue, counting service from then", () => {
    const sim = new Simulation(1);
    const recorder = new Recorder(60_000);
    const server = new LatencyServer(sim, recorder, 2000, {
      ...seed002,
      backlog: 40,
      pause: { start: 1000, end: 5000 },
    });
    const answered: number[] = [];
    sim.at(2000, () => {
      for (let i = 0; i < 50; i++) server.request().then(() => answered.push(sim.now));
    });
    sim.at(4000, () => expect(server.concurrency).toBe(0));
    sim.run(60_000);
    // 40 waited in the queue; 10 were dropped and never answered.
    expect(answered).toHaveLength(40);
    const d = LatencyServer.serviceTime(40, seed002);
    expect(new Set(answered)).toEqual(new Set([5000 + Math.ceil(d / 50) * 50]));
    expect(recorder.offered.reduce((a, b) => a + b, 0)).toBe(50);
    expect(recorder.work).toBe(40);
  });

  it("lets go of the requests whose clients timed out, and still serves and counts them", () => {
    const sim = new Simulation(1);
    const recorder = new Recorder(600_000);
    // Far over the limit: nothing is answered before every client's 200 ms timeout.
    const server = new LatencyServer(sim, recorder, 200, {
      ...seed002,
      backlog: 10,
      pause: { start: 0, end: 300 },
    });
    const client = new Pipeline([new SimulatedTimeoutStep(200)]);
    const ends: string[] = [];
    const send = (n: number) => {
      for (let i = 0; i < n; i++) {
        runOnSimulation(
          client,
          () => server.request(),
          sim,
          () => ends.push("ok"),
          () => ends.push("timed out"),
        );
      }
    };
    // 5 wait in the listen queue and are given up on there; 1,000 more arrive after it resumes, 100 in
    // each of ten milliseconds, so on ten schedules of checks.
    sim.at(50, () => send(5));
    for (let ms = 0; ms < 10; ms++) sim.at(350 + ms, () => send(100));
    sim.at(360, () => expect(server.waitedFor).toBe(1000));
    sim.at(600, () => {
      expect(server.concurrency).toBe(1005);
      expect(server.waitedFor).toBe(0);
    });
    sim.run(600_000);
    expect(ends).toEqual(new Array(1005).fill("timed out"));
    expect(server.concurrency).toBe(0);
    expect(server.waitedFor).toBe(0);
    expect(recorder.work).toBe(1005);
  });

  it("concurrency never goes negative and every accepted request is answered exactly once", () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: 20_000 }), { minLength: 1, maxLength: 300 }),
        fc.option(
          fc.record({
            start: fc.integer({ min: 0, max: 10_000 }),
            length: fc.integer({ min: 1, max: 10_000 }),
          }),
          {
            nil: undefined,
          },
        ),
        (times, pause) => {
          const sim = new Simulation(1);
          const recorder = new Recorder(200_000);
          const server = new LatencyServer(sim, recorder, 2000, {
            ...seed002,
            backlog: 100,
            pause: pause === undefined ? undefined : { start: pause.start, end: pause.start + pause.length },
          });
          const answers = new Map<number, number>();
          times.forEach((t, i) => {
            sim.at(t, () => {
              server.request().then(() => answers.set(i, (answers.get(i) ?? 0) + 1));
              expect(server.concurrency).toBeGreaterThanOrEqual(0);
            });
          });
          let minimum = 0;
          const watch = () => {
            minimum = Math.min(minimum, server.concurrency);
            if (sim.pending > 0) sim.after(10, watch);
          };
          sim.after(0, watch);
          sim.run(200_000);
          expect(minimum).toBe(0);
          expect(server.concurrency).toBe(0);
          expect([...answers.values()].every((n) => n === 1)).toBe(true);
          expect(answers.size).toBe(recorder.work);
        },
      ),
      { numRuns: 60, examples: [[[0], { start: 1, length: 50 }]] },
    );
  });
});

describe("the other servers", () => {
  it("the flaky server fails about the given share of requests, whatever the load, after its latency", () => {
    const sim = new Simulation(7);
    const recorder = new Recorder(10_000);
    const server = new FlakyServer(sim, recorder, 2000, { failureProbability: 0.3, latency: 10 });
    let ok = 0;
    let failed = 0;
    const n = 20_000;
    for (let i = 0; i < n; i++) {
      server.request().then(
        () => {
          ok += 1;
          expect(sim.now).toBe(10);
        },
        () => {
          failed += 1;
        },
      );
    }
    sim.run(10_000);
    expect(ok + failed).toBe(n);
    // 6 standard errors of a 30% share over 20,000 draws.
    expect(Math.abs(failed / n - 0.3)).toBeLessThan(6 * Math.sqrt((0.3 * 0.7) / n));
  });

  it("the capacity server answers within its latency up to capacity and ten times slower above it", () => {
    const sim = new Simulation(1);
    const recorder = new Recorder(10_000);
    const server = new CapacityServer(sim, recorder, 5000, { capacity: 10, latency: 100 });
    const answered = burst(sim, server, 12);
    sim.run(10_000);
    expect(answered.slice(0, 10)).toEqual(Array(10).fill(100));
    expect(answered.slice(10)).toEqual([1000, 1000]);
  });

  it("the versioned store lets one of two racing writers win; the loser's version is stale", () => {
    const sim = new Simulation(3);
    const recorder = new Recorder(10_000);
    const store = new VersionedStore(sim, recorder, { networkMean: 10, networkSd: 2 });
    const results: string[] = [];
    for (const name of ["a", "b"]) {
      store
        .read()
        .then((v) => store.write(v))
        .then(
          () => results.push(`${name} ok`),
          (e: unknown) => results.push(`${name} ${(e as Error).name}`),
        );
    }
    sim.run(10_000);
    expect(results.sort()).toEqual(
      results.some((r) => r === "a ok") ? ["a ok", "b ConflictError"] : ["a ConflictError", "b ok"],
    );
    expect(store.version).toBe(1);
    expect(recorder.work).toBe(2);
  });
});

describe("the simulated servers' errors", () => {
  it("name themselves as built-in errors do: in the name, the message and the stack, not as an own key", () => {
    for (const [ErrorClass, name] of [
      [ConflictError, "ConflictError"],
      [ServerError, "ServerError"],
      [ThrottledError, "ThrottledError"],
    ] as const) {
      const error = new ErrorClass("what happened");
      expect(error).toBeInstanceOf(Error);
      expect(error.name).toBe(name);
      expect(String(error)).toBe(`${name}: what happened`);
      expect(error.stack?.split("\n")[0]).toBe(`${name}: what happened`);
      expect(Object.keys(error)).toEqual([]);
    }
  });
});

describe("a simulated client's per-attempt timeout", () => {
  /** Clients that call `client` in bursts against a server that slows down under load; what each call saw. */
  function calls(client: Pipeline, seed: number, made?: (sim: Simulation) => void): string[] {
    const sim = new Simulation(seed);
    made?.(sim);
    const server = new LatencyServer(sim, new Recorder(60_000), 300, {
      ...seed002,
      limit: 5,
      factor: 2,
      k: 10,
    });
    const seen: string[] = [];
    for (let i = 0; i < 200; i++) {
      sim.after(sim.random() * 1000, () =>
        runOnSimulation(
          client,
          () => server.request(),
          sim,
          () => seen.push(`${i} ok at ${sim.now}`),
          () => seen.push(`${i} failed at ${sim.now}`),
        ),
      );
    }
    sim.run(60_000);
    return seen;
  }
  const policy = { maxRetries: 2, backoff: backoff.constant({ base: 50 }), jitter: jitter.full() };

  it("fails and retries exactly as the library's timeout step does, with a plain record instead of an Error", () => {
    const errors: unknown[] = [];
    const simulated = new Pipeline([
      ...retryPipeline({ ...policy, onError: (e) => errors.push(e) }).steps,
      new SimulatedTimeoutStep(300),
    ]);
    for (const seed of [1, 2, 3]) {
      const library = calls(retryPipeline({ ...policy, timeout: 300 }), seed);
      expect(calls(simulated, seed)).toEqual(library);
      expect(library.some((line) => line.includes("failed"))).toBe(true);
    }
    expect(errors.length).toBeGreaterThan(0);
    for (const error of errors) {
      expect(isSimulatedTimeout(error)).toBe(true);
      expect(error).not.toBeInstanceOf(Error);
      expect(error).toEqual({ name: "SimulatedTimeout", timeout: 300 });
    }
  });

  it("tells onTimeout of each timeout as it elapses: when, and as often as, the retry loop hears of one", () => {
    for (const seed of [1, 2, 3]) {
      const heard: number[] = [];
      const told: number[] = [];
      let sim: Simulation | undefined;
      const simulated = new Pipeline([
        ...retryPipeline({ ...policy, onError: (e) => isSimulatedTimeout(e) && heard.push(sim?.now ?? -1) })
          .steps,
        new SimulatedTimeoutStep(300, () => told.push(sim?.now ?? -1)),
      ]);
      calls(simulated, seed, (made) => {
        sim = made;
      });
      expect(heard.length).toBeGreaterThan(0);
      expect(told).toEqual(heard);
    }
  });
});

describe("the retry breaker", () => {
  it("refuses retries while at least the failure share of the window's attempts failed, and only then", () => {
    let now = 0;
    const clock = { now: () => now, setTimer: () => () => {} };
    const breaker = retryBreaker({ failureRatio: 0.5, minimumThroughput: 20, window: 10_000, clock });
    for (let i = 0; i < 19; i++) breaker.failure();
    // Too few attempts to judge: retries go on.
    expect(breaker.tryRetry()).toBe(true);
    breaker.failure();
    expect(breaker.tryRetry()).toBe(false);
    expect(breaker.available).toBe(false);
    // Successes bring the share of failures under the ratio.
    for (let i = 0; i < 21; i++) breaker.success();
    expect(breaker.tryRetry()).toBe(true);
    // The window forgets: 10 s on, the 20 failures of a later burst alone count.
    now = 11_000;
    for (let i = 0; i < 20; i++) breaker.failure();
    expect(breaker.tryRetry()).toBe(false);
    now = 22_000;
    expect(breaker.tryRetry()).toBe(true);
  });
});
