// `simulateInThreads`: the runs of a simulation shared among worker threads give what `simulate` gives
// on its own for the same seeds, and no thread outlives the call, whether it ends well, fails or is aborted.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { OptionError } from "../src/core/errors.js";
import { simulate } from "../src/sim/simulate.js";
import { batchSize, runningThreads, simulateInThreads } from "../src/sim/threads.js";

describe("simulateInThreads", () => {
  it("gives the single-threaded result for the same seeds, runs and points", async () => {
    const options = {
      scenario: "contention",
      clients: [5, 20, 40],
      strategies: ["no-backoff", "full-jitter", "decorrelated-aws-jitter"],
      seed: 11,
      runs: 4,
    } as const;
    const progress: number[] = [];
    const threaded = await simulateInThreads(
      { ...options, onProgress: (done, total, fraction) => progress.push((done + fraction) / total) },
      { jobs: 3 },
    );
    expect(threaded).toEqual(simulate(options));
    expect(progress.at(-1)).toBe(1);
    expect(runningThreads()).toBe(0);
  }, 60_000);

  it("for a scenario with a per-second series and a recovery judgement, too", async () => {
    const options = { clients: [200], strategies: ["fixed", "robustly-breaker"], duration: 60_000, runs: 2 };
    expect(await simulateInThreads(options, { jobs: 2 })).toEqual(simulate(options));
  }, 60_000);

  it("checks jobs and the simulation's options before any thread starts", async () => {
    for (const jobs of [0, 1.5, -1, Number.NaN, 257, "2"]) {
      await expect(simulateInThreads({}, { jobs: jobs as number })).rejects.toThrow(OptionError);
    }
    await expect(simulateInThreads({}, { jobs: 0 })).rejects.toThrow(
      "jobs must be an integer in [1, 256]; got 0",
    );
    await expect(simulateInThreads({ clients: [0] }, { jobs: 2 })).rejects.toThrow("clients[0]");
    expect(runningThreads()).toBe(0);
  });

  it("ends every thread when aborted mid-run, and rejects with the reason", async () => {
    const controller = new AbortController();
    const reason = new Error("stop");
    const run = simulateInThreads(
      {
        scenario: "contention",
        clients: [2000],
        runs: 8,
        // Abort once the threads are at work.
        onProgress: () => controller.abort(reason),
      },
      { jobs: 2, signal: controller.signal },
    );
    await expect(run).rejects.toBe(reason);
    expect(runningThreads()).toBe(0);
  }, 60_000);

  it("ends every thread when a run fails in one of them", async () => {
    // 100,000 clients cannot fit in a 16 MB heap: the threads run out of memory, and the call fails.
    const run = simulateInThreads(
      { clients: [100_000], strategies: ["fixed", "cockatiel"] },
      { jobs: 2, resourceLimits: { maxOldGenerationSizeMb: 16 } },
    );
    await expect(run).rejects.toThrow(/memory/);
    expect(runningThreads()).toBe(0);
  }, 60_000);

  it("gives the runs out in batches that shrink to single runs, a few messages per thread and doubling of runs", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 200_000 }), fc.integer({ min: 1, max: 64 }), (total, jobs) => {
        const batches: number[] = [];
        for (let left = total; left > 0; ) {
          const size = batchSize(left, jobs);
          expect(size).toBeGreaterThanOrEqual(1);
          expect(size).toBeLessThanOrEqual(left);
          // No batch holds more than a quarter of one thread's share of what is left.
          expect(size).toBeLessThanOrEqual(Math.max(1, Math.ceil(left / (4 * jobs))));
          batches.push(size);
          left -= size;
        }
        expect(batches.at(-1)).toBe(1);
        // Each batch takes 1 / (4 × jobs) of what is left: about 4 × jobs × ln(total) batches, plus the last single runs.
        expect(batches.length).toBeLessThanOrEqual(4 * jobs * (Math.log(total) + 1) + 4 * jobs);
      }),
    );
  });
});
