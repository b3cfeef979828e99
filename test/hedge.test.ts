import fc from "fast-check";
import { OptionError, PermanentError, retryBudget } from "robustly";
import { seededRandom } from "robustly/testing";
import { describe, expect, it } from "vitest";
import {
  type HedgeEvent,
  HedgeLostError,
  type HedgeOptions,
  hedge,
  latencyTracker,
} from "../src/hedge/index.js";
import { abortListeners, drive, type Settled, VirtualClock } from "./support/drive.js";

/** How attempt k behaves: it answers after `ms` of virtual time, with a value or an error. */
interface Plan {
  ms: number;
  ok: boolean;
}

interface Started {
  attempt: number;
  start: number;
  signal: AbortSignal;
}

/** An operation following `plans` (attempt k follows plans[k - 1]; beyond them an attempt hangs). */
function scripted(clock: VirtualClock, plans: readonly Plan[]) {
  const started: Started[] = [];
  const errors: Error[] = [];
  const operation = async ({ attempt, signal }: { attempt: number; signal: AbortSignal }) => {
    started.push({ attempt, start: clock.now(), signal });
    const plan = plans[attempt - 1] ?? { ms: 1e9, ok: true };
    await clock.sleep(plan.ms, signal);
    if (!plan.ok) {
      const error = new Error(`attempt ${attempt} failed`);
      errors[attempt] = error;
      throw error;
    }
    return `value ${attempt}`;
  };
  return { operation, started, errors };
}

interface Run<T> {
  result: Settled<T>;
  /** The virtual time, the timers set and the caller's abort listeners at the moment the call settled. */
  at: { time: number; timers: number; listeners: number };
}

/** Drives `call` to the end, noting what was left behind at the moment it settled (before runAll goes on). */
async function run<T>(clock: VirtualClock, call: Promise<T>, signal?: AbortSignal): Promise<Run<T>> {
  let at: Run<T>["at"] | undefined;
  const observe = () => {
    at = {
      time: clock.now(),
      timers: clock.pending,
      listeners: signal === undefined ? 0 : abortListeners(signal),
    };
  };
  call.then(observe, observe);
  const result = await drive(clock, call);
  if (at === undefined) throw new Error("the call never settled");
  return { result, at };
}

const ok = (ms: number): Plan => ({ ms, ok: true });
const fail = (ms: number): Plan => ({ ms, ok: false });

describe("hedge", () => {
  it("takes a fast first attempt's answer and never hedges", async () => {
    const clock = new VirtualClock();
    const { operation, started } = scripted(clock, [ok(50), ok(1)]);
    const hedges: HedgeEvent[] = [];
    const { result, at } = await run(
      clock,
      hedge(operation, { delay: 100, clock, onHedge: (event) => hedges.push(event) }),
    );
    expect(result).toEqual({ ok: true, value: "value 1" });
    expect(at).toEqual({ time: 50, timers: 0, listeners: 0 });
    expect(started).toHaveLength(1);
    expect(hedges).toEqual([]);
  });

  it("hedges a slow first attempt after exactly `delay` ms; the faster hedge wins and the first is aborted", async () => {
    const clock = new VirtualClock();
    const { operation, started } = scripted(clock, [ok(1000), ok(30)]);
    const hedges: HedgeEvent[] = [];
    const { result, at } = await run(
      clock,
      hedge(operation, { delay: 100, clock, onHedge: (event) => hedges.push(event) }),
    );
    expect(result).toEqual({ ok: true, value: "value 2" });
    expect(at).toEqual({ time: 130, timers: 0, listeners: 0 });
    expect(started.map((s) => [s.attempt, s.start])).toEqual([
      [1, 0],
      [2, 100],
    ]);
    expect(hedges).toEqual([{ attempt: 2, after: 100, trigger: "delay" }]);
    const first = started[0]?.signal as AbortSignal;
    expect(first.aborted).toBe(true);
    expect(first.reason).toBeInstanceOf(HedgeLostError);
    expect((first.reason as HedgeLostError).settledBy).toBe(2);
    expect(started[1]?.signal.aborted).toBe(false);
  });

  it("keeps the first attempt when it still answers before the hedge", async () => {
    const clock = new VirtualClock();
    const { operation, started } = scripted(clock, [ok(150), ok(100)]);
    const { result, at } = await run(clock, hedge(operation, { delay: 100, clock }));
    expect(result).toEqual({ ok: true, value: "value 1" });
    expect(at.time).toBe(150);
    expect(started[1]?.signal.aborted).toBe(true);
  });

  it("starts at most maxHedges hedges, each `delay` after the one before", async () => {
    const clock = new VirtualClock();
    const { operation, started } = scripted(clock, [ok(10_000), ok(10_000), ok(10_000), ok(10_000), ok(1)]);
    const { result, at } = await run(clock, hedge(operation, { delay: 100, maxHedges: 3, clock }));
    expect(result).toEqual({ ok: true, value: "value 1" });
    expect(at).toEqual({ time: 10_000, timers: 0, listeners: 0 });
    expect(started.map((s) => s.start)).toEqual([0, 100, 200, 300]);
    expect(started.slice(1).every((s) => s.signal.aborted)).toBe(true);

    const none = scripted(clock, [ok(10_000), ok(1)]);
    const alone = await run(clock, hedge(none.operation, { delay: 100, maxHedges: 0, clock }));
    expect(alone.result).toEqual({ ok: true, value: "value 1" });
    expect(none.started).toHaveLength(1);
  });

  it("defaults to one hedge", async () => {
    const clock = new VirtualClock();
    const { operation, started } = scripted(clock, [ok(10_000), ok(10_000), ok(1)]);
    await run(clock, hedge(operation, { delay: 100, clock }));
    expect(started).toHaveLength(2);
  });

  it("rejects with the last error, in time, once every attempt has failed", async () => {
    const clock = new VirtualClock();
    // The hedge fails first (at 150), the first attempt last (at 300).
    const { operation, started, errors } = scripted(clock, [fail(300), fail(50)]);
    const { result, at } = await run(clock, hedge(operation, { delay: 100, clock }));
    expect(result).toEqual({ ok: false, error: errors[1] });
    expect(at).toEqual({ time: 300, timers: 0, listeners: 0 });
    expect(started).toHaveLength(2);
  });

  it("a failure does not end the call while another attempt may still succeed", async () => {
    const clock = new VirtualClock();
    const { operation } = scripted(clock, [ok(300), fail(50)]);
    const { result, at } = await run(clock, hedge(operation, { delay: 100, clock }));
    expect(result).toEqual({ ok: true, value: "value 1" });
    expect(at.time).toBe(300);
  });

  it("starts the next hedge at once when an attempt fails (hedgeOnFailure, the default)", async () => {
    const clock = new VirtualClock();
    const { operation, started } = scripted(clock, [fail(20), fail(30), ok(40)]);
    const hedges: HedgeEvent[] = [];
    const { result, at } = await run(
      clock,
      hedge(operation, { delay: 100, maxHedges: 2, clock, onHedge: (event) => hedges.push(event) }),
    );
    expect(result).toEqual({ ok: true, value: "value 3" });
    expect(at.time).toBe(90);
    expect(started.map((s) => s.start)).toEqual([0, 20, 50]);
    expect(hedges.map((h) => h.trigger)).toEqual(["failure", "failure"]);
  });

  it("with hedgeOnFailure: false, a failure starts nothing and the call fails once all attempts so far failed", async () => {
    const clock = new VirtualClock();
    const { operation, started, errors } = scripted(clock, [fail(20), ok(5)]);
    const { result, at } = await run(
      clock,
      hedge(operation, { delay: 100, maxHedges: 2, hedgeOnFailure: false, clock }),
    );
    expect(result).toEqual({ ok: false, error: errors[1] });
    expect(at).toEqual({ time: 20, timers: 0, listeners: 0 });
    expect(started).toHaveLength(1);
  });

  it("a failure-started hedge restarts the delay for the next one", async () => {
    const clock = new VirtualClock();
    const { operation, started } = scripted(clock, [fail(60), ok(1000), ok(1000), ok(5)]);
    await run(clock, hedge(operation, { delay: 100, maxHedges: 3, clock }));
    expect(started.map((s) => s.start)).toEqual([0, 60, 160, 260]);
  });

  it("ends at once on a PermanentError, with the error it wraps, aborting the others", async () => {
    const clock = new VirtualClock();
    const cause = new Error("not found");
    const signals: AbortSignal[] = [];
    const { result, at } = await run(
      clock,
      hedge(
        async ({ attempt, signal }) => {
          signals.push(signal);
          await clock.sleep(attempt === 1 ? 1000 : 10, signal);
          throw new PermanentError(cause);
        },
        { delay: 100, maxHedges: 2, clock },
      ),
    );
    expect(result).toEqual({ ok: false, error: cause });
    expect(at).toEqual({ time: 110, timers: 0, listeners: 0 });
    expect(signals).toHaveLength(2);
    expect(signals[0]?.reason).toBeInstanceOf(HedgeLostError);
  });

  it("accepts a synchronous operation, its value and its throw", async () => {
    const clock = new VirtualClock();
    await expect(hedge(() => 7, { delay: 10, clock })).resolves.toBe(7);
    let calls = 0;
    const last = new Error("second");
    const settled = await run(
      clock,
      hedge(
        () => {
          calls += 1;
          throw calls === 1 ? new Error("first") : last;
        },
        { delay: 10, clock },
      ),
    );
    expect(settled.result).toEqual({ ok: false, error: last });
    expect(settled.at).toEqual({ time: 0, timers: 0, listeners: 0 });
    expect(calls).toBe(2);
  });

  it("aborts everything when the caller aborts, rejecting with its reason and leaving nothing behind", async () => {
    const clock = new VirtualClock();
    const controller = new AbortController();
    const { operation, started } = scripted(clock, [ok(1000), ok(1000)]);
    clock.setTimer(150, () => controller.abort(new Error("caller gave up")));
    const { result, at } = await run(
      clock,
      hedge(operation, { delay: 100, clock, signal: controller.signal }),
      controller.signal,
    );
    expect(result.ok).toBe(false);
    expect(result.ok ? undefined : result.error).toBe(controller.signal.reason);
    expect(at).toEqual({ time: 150, timers: 0, listeners: 0 });
    expect(started.map((s) => s.signal.reason)).toEqual([controller.signal.reason, controller.signal.reason]);
  });

  it("never calls the operation when the caller's signal has already aborted", async () => {
    const clock = new VirtualClock();
    const reason = new Error("already");
    let calls = 0;
    const call = hedge(
      () => {
        calls += 1;
        return 1;
      },
      { delay: 100, clock, signal: AbortSignal.abort(reason) },
    );
    await expect(call).rejects.toBe(reason);
    expect(calls).toBe(0);
    expect(clock.pending).toBe(0);
  });

  it("removes its listener from the caller's signal when it succeeds", async () => {
    const clock = new VirtualClock();
    const controller = new AbortController();
    const { operation } = scripted(clock, [ok(1000), ok(10)]);
    const { at } = await run(
      clock,
      hedge(operation, { delay: 100, clock, signal: controller.signal }),
      controller.signal,
    );
    expect(at).toEqual({ time: 110, timers: 0, listeners: 0 });
  });

  it("a listener that aborts the call from onHedge stops the hedge from starting", async () => {
    const clock = new VirtualClock();
    const controller = new AbortController();
    const { operation, started } = scripted(clock, [ok(1000), ok(10)]);
    const { result, at } = await run(
      clock,
      hedge(operation, {
        delay: 100,
        clock,
        signal: controller.signal,
        onHedge: () => controller.abort(new Error("stop")),
      }),
      controller.signal,
    );
    expect(result.ok).toBe(false);
    expect(at).toEqual({ time: 100, timers: 0, listeners: 0 });
    expect(started).toHaveLength(1);
  });
});

describe("hedge with a budget", () => {
  it("counts one request per call and asks tryRetry before each hedge; a refusal prevents the hedge", async () => {
    const clock = new VirtualClock();
    const budget = retryBudget({ ratio: 0, minPerSecond: 0, clock });
    const { operation, started } = scripted(clock, [ok(1000), ok(10)]);
    const refusals: unknown[] = [];
    budget.on("refused", (event) => refusals.push(event));
    const { result, at } = await run(clock, hedge(operation, { delay: 100, maxHedges: 3, clock, budget }));
    expect(result).toEqual({ ok: true, value: "value 1" });
    expect(at).toEqual({ time: 1000, timers: 0, listeners: 0 });
    expect(started).toHaveLength(1);
    // Refused once: the call then stops asking.
    expect(refusals).toHaveLength(1);
  });

  it("hedges while the budget grants it, and counts the hedges as retries", async () => {
    const clock = new VirtualClock();
    // One retry in the window (minPerSecond 0.1 over 10 s), however many requests.
    const budget = retryBudget({ ratio: 0, minPerSecond: 0.1, window: 10_000, clock });
    const { operation, started } = scripted(clock, [ok(1000), ok(1000), ok(1000)]);
    await run(clock, hedge(operation, { delay: 100, maxHedges: 2, clock, budget }));
    expect(started).toHaveLength(2);
    const state = budget.snapshot();
    expect(state.kind === "ratio" && state.requests.reduce((a, b) => a + b, 0)).toBe(1);
    expect(state.kind === "ratio" && state.retries.reduce((a, b) => a + b, 0)).toBe(1);
  });

  it("reports failed attempts and the success to a token budget", async () => {
    const clock = new VirtualClock();
    const budget = retryBudget({ maxTokens: 10, tokenRatio: 0.5 });
    const { operation } = scripted(clock, [fail(10), ok(10)]);
    await run(clock, hedge(operation, { delay: 100, clock, budget }));
    // -1 for the failure, +0.5 for the success.
    expect(budget.snapshot()).toEqual({ kind: "tokens", tokens: 9.5 });
  });
});

describe("hedge with a percentile delay", () => {
  it("hedges after the tracker's percentile", async () => {
    const clock = new VirtualClock();
    const tracker = latencyTracker();
    for (let ms = 1; ms <= 100; ms++) tracker.record(ms);
    expect(tracker.percentile(0.95)).toBe(95);
    const { operation, started } = scripted(clock, [ok(1000), ok(10)]);
    const { result, at } = await run(
      clock,
      hedge(operation, { delay: { percentile: 0.95, of: tracker, fallback: 500 }, clock }),
    );
    expect(result).toEqual({ ok: true, value: "value 2" });
    expect(started.map((s) => s.start)).toEqual([0, 95]);
    expect(at.time).toBe(105);
  });

  it("uses the fallback until the tracker holds minSamples latencies", async () => {
    const clock = new VirtualClock();
    const tracker = latencyTracker();
    const delay = { percentile: 0.5, of: tracker, fallback: 300, minSamples: 3 };
    const first = scripted(clock, [ok(1000), ok(1)]);
    await run(clock, hedge(first.operation, { delay, clock }));
    expect(first.started.map((s) => s.start)).toEqual([0, 300]);
    tracker.record(40);
    tracker.record(20);
    tracker.record(60);
    tracker.clear();
    tracker.record(7);
    const second = scripted(clock, [ok(1000), ok(1)]);
    const start = clock.now();
    await run(clock, hedge(second.operation, { delay, clock }));
    expect(second.started.map((s) => s.start - start)).toEqual([0, 300]);
  });

  it("records the winner's latency and, for each loser, the time it ran", async () => {
    const clock = new VirtualClock();
    const tracker = latencyTracker();
    const { operation } = scripted(clock, [ok(1000), ok(30)]);
    await run(clock, hedge(operation, { delay: { percentile: 0.9, of: tracker, fallback: 100 }, clock }));
    // The hedge answered in 30 ms; the first attempt ran 130 ms before it was aborted.
    expect([tracker.percentile(0), tracker.percentile(1)]).toEqual([30, 130]);

    const quiet = latencyTracker();
    const again = scripted(clock, [ok(1000), ok(30)]);
    await run(
      clock,
      hedge(again.operation, { delay: { percentile: 0.9, of: quiet, fallback: 100, record: false }, clock }),
    );
    expect(quiet.size).toBe(0);
  });

  it("keeps the delay near the true percentile over many calls; recording winners alone lets it sink", async () => {
    // 90% of attempts take 10–50 ms, 10% take 200–1000 ms: the true p95 is 600 ms.
    const simulate = async (recordLosers: boolean) => {
      const clock = new VirtualClock();
      const random = seededRandom(2024);
      const draw = () => (random() < 0.9 ? 10 + 40 * random() : 200 + 800 * random());
      const tracker = latencyTracker({ capacity: 500 });
      const delay = { percentile: 0.95, of: tracker, fallback: 600, minSamples: 100, record: recordLosers };
      let hedged = 0;
      for (let call = 0; call < 1500; call++) {
        const operation = async ({ signal }: { signal: AbortSignal }) => {
          const start = clock.now();
          await clock.sleep(draw(), signal);
          // Without hedge's own recording, only the attempts that answer (the winners) are recorded.
          if (!recordLosers) tracker.record(clock.now() - start);
          return call;
        };
        await drive(clock, hedge(operation, { delay, clock, onHedge: () => (hedged += 1) }));
      }
      return { p95: tracker.percentile(0.95) ?? 0, hedged: hedged / 1500 };
    };
    // Censored at the time they ran, the losers keep the estimate a little low (about 480 ms here) but
    // stable, and about 5–7% of calls hedge.
    const kept = await simulate(true);
    expect(kept.p95).toBeGreaterThan(400);
    expect(kept.p95).toBeLessThan(700);
    expect(kept.hedged).toBeLessThan(0.08);
    // Winners alone: the slow tail is never recorded, and the delay collapses to the fast attempts' p95.
    const sunk = await simulate(false);
    expect(sunk.p95).toBeLessThan(60);
    expect(sunk.hedged).toBeGreaterThan(0.1);
  });
});

describe("hedge, for any latencies and outcomes (property)", () => {
  it("resolves with the earliest success in virtual time, starts at most maxHedges + 1 attempts, leaves nothing", async () => {
    const plan = fc.record({ ms: fc.integer({ min: 0, max: 400 }), ok: fc.boolean() });
    await fc.assert(
      fc.asyncProperty(
        fc.array(plan, { minLength: 4, maxLength: 4 }),
        fc.integer({ min: 0, max: 3 }),
        fc.integer({ min: 0, max: 300 }),
        fc.boolean(),
        async (plans, maxHedges, delay, hedgeOnFailure) => {
          const clock = new VirtualClock();
          const { operation, started, errors } = scripted(clock, plans);
          const options: HedgeOptions = { delay, maxHedges, hedgeOnFailure, clock };
          const { result, at } = await run(clock, hedge(operation, options));
          const finish = (s: Started) => s.start + (plans[s.attempt - 1] as Plan).ms;
          const succeeds = (s: Started) => (plans[s.attempt - 1] as Plan).ok;

          expect(started.length).toBeLessThanOrEqual(maxHedges + 1);
          expect(at.timers).toBe(0);
          // Each hedge starts `delay` after the attempt before it, or as an attempt fails.
          started.forEach((s, i) => {
            const previous = started[i - 1];
            if (previous === undefined) {
              expect(s.start).toBe(0);
              return;
            }
            const afterFailure =
              hedgeOnFailure && started.slice(0, i).some((f) => !succeeds(f) && finish(f) === s.start);
            expect(s.start === previous.start + delay || afterFailure).toBe(true);
          });
          // Every attempt still running at the end was aborted.
          for (const s of started) {
            if (finish(s) > at.time) expect(s.signal.reason).toBeInstanceOf(HedgeLostError);
          }
          const last = started[started.length - 1] as Started;
          if (result.ok) {
            const successes = started.filter(succeeds).map(finish);
            const earliest = Math.min(...successes);
            expect(at.time).toBe(earliest);
            const winner = started.find((s) => result.value === `value ${s.attempt}`) as Started;
            expect(succeeds(winner) && finish(winner)).toBe(earliest);
            // No hedge was due before the end.
            if (started.length < maxHedges + 1) expect(at.time).toBeLessThanOrEqual(last.start + delay);
          } else {
            expect(started.every((s) => !succeeds(s))).toBe(true);
            const latest = Math.max(...started.map(finish));
            expect(at.time).toBe(latest);
            const failed = started.find((s) => errors[s.attempt] === result.error) as Started;
            expect(finish(failed)).toBe(latest);
            if (hedgeOnFailure) expect(started).toHaveLength(maxHedges + 1);
          }
        },
      ),
      { numRuns: 400 },
    );
  });
});

describe("latencyTracker", () => {
  it("gives nearest-rank percentiles of what it holds, undefined when empty", () => {
    const tracker = latencyTracker();
    expect(tracker.percentile(0.5)).toBeUndefined();
    for (const ms of [50, 10, 40, 20, 30]) tracker.record(ms);
    expect([0, 0.2, 0.21, 0.5, 0.8, 0.95, 1].map((p) => tracker.percentile(p))).toEqual([
      10, 10, 20, 30, 40, 50, 50,
    ]);
    expect(tracker.size).toBe(5);
  });

  it("forgets the oldest latency once full", () => {
    const tracker = latencyTracker({ capacity: 3 });
    for (const ms of [100, 1, 2, 3]) tracker.record(ms);
    expect(tracker.size).toBe(3);
    expect(tracker.percentile(1)).toBe(3);
  });

  it("matches a sort of the last `capacity` samples, for any samples (property)", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 20 }),
        fc.array(fc.integer({ min: 0, max: 50 }), { maxLength: 100 }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        (capacity, samples, p) => {
          const tracker = latencyTracker({ capacity });
          for (const ms of samples) tracker.record(ms);
          const kept = samples.slice(-capacity).sort((a, b) => a - b);
          const expected = kept.length === 0 ? undefined : kept[Math.max(0, Math.ceil(p * kept.length) - 1)];
          expect(tracker.percentile(p)).toBe(expected);
          expect(tracker.size).toBe(kept.length);
        },
      ),
    );
  });

  it("refuses bad samples, percentiles and options", () => {
    const tracker = latencyTracker();
    expect(() => tracker.record(Number.NaN)).toThrow(RangeError);
    expect(() => tracker.record(-1)).toThrow(RangeError);
    expect(() => tracker.percentile(1.5)).toThrow(OptionError);
    expect(() => latencyTracker({ capacity: 0 })).toThrow(
      "latencyTracker: capacity must be an integer >= 1; got 0",
    );
    expect(() => latencyTracker({ size: 3 } as never)).toThrow(OptionError);
  });
});

describe("hedge options", () => {
  const op = () => 1;
  const tracker = latencyTracker();
  it.each([
    [{ delay: -1 }, "hedge: delay must be a finite number >= 0; got -1"],
    [{ delay: Number.NaN }, "hedge: delay must be a finite number >= 0; got NaN"],
    [{ delay: "100" }, 'hedge: delay must be a number of ms >= 0 or { percentile, of, fallback }; got "100"'],
    [{}, "hedge: delay must be a number of ms >= 0 or { percentile, of, fallback }; got undefined"],
    [{ delay: 10, maxHedges: 1.5 }, "hedge: maxHedges must be an integer >= 0; got 1.5"],
    [{ delay: 10, maxHedges: -1 }, "hedge: maxHedges must be an integer >= 0; got -1"],
    [{ delay: 10, hedgeOnFailure: "yes" }, 'hedge: hedgeOnFailure must be true or false; got "yes"'],
    [{ delay: 10, budget: {} }, "hedge: budget must be a retry budget"],
    [{ delay: 10, signal: {} }, "hedge: signal must be an AbortSignal"],
    [{ delay: 10, onHedge: 3 }, "hedge: onHedge must be a function; got 3"],
    [{ delay: 10, clock: {} }, "hedge: clock must be a Clock"],
    [{ delay: 10, retries: 2 }, "hedge.retries must be one of the known options"],
    [
      { delay: { percentile: 95, of: tracker, fallback: 100 } },
      "hedge: delay.percentile must be a finite number in [0, 1]; got 95",
    ],
    [{ delay: { percentile: 0.95, of: {}, fallback: 100 } }, "hedge: delay.of must be a latency tracker"],
    [{ delay: { percentile: 0.95, of: tracker } }, "hedge: delay.fallback must be a finite number >= 0"],
    [
      { delay: { percentile: 0.95, of: tracker, fallback: 1, minSamples: 0 } },
      "hedge: delay.minSamples must be an integer >= 1; got 0",
    ],
  ])("rejects %j before any attempt", async (options, message) => {
    let calls = 0;
    const call = hedge(
      () => {
        calls += 1;
        return op();
      },
      options as unknown as HedgeOptions,
    );
    await expect(call).rejects.toThrow(OptionError);
    await expect(call).rejects.toThrow(message);
    expect(calls).toBe(0);
  });

  it("rejects an operation that is not a function", async () => {
    await expect(hedge(3 as never, { delay: 1 })).rejects.toThrow(
      "hedge: operation must be a function; got 3",
    );
  });
});
