import fc from "fast-check";
import {
  backoff,
  type Clock,
  type ExecutionContext,
  HedgeStep,
  type Next,
  OptionError,
  PermanentError,
  pipeline,
  retryBudget,
  type Step,
  steps,
} from "robustly";
import { describe, expect, it, vi } from "vitest";
import { type HedgeEvent, HedgeLostError, hedge, latencyTracker } from "../src/hedge/index.js";
import { abortListeners, captureWarnings, drive, type Settled, VirtualClock } from "./support/drive.js";

/** An operation whose attempt k answers after `ms[k - 1]` ms of virtual time (beyond the list, it hangs). */
function answering(clock: VirtualClock, ms: readonly number[]) {
  const signals: AbortSignal[] = [];
  const operation = async ({ attempt, signal }: { attempt: number; signal: AbortSignal }) => {
    signals.push(signal);
    await clock.sleep(ms[attempt - 1] ?? 1e9, signal);
    return `value ${attempt}`;
  };
  return { operation, signals };
}

/** `clock`, noting the delay of each timer set through it. */
function timersOf(clock: VirtualClock): { clock: Clock; set: number[] } {
  const set: number[] = [];
  return {
    set,
    clock: {
      now: () => clock.now(),
      setTimer: (ms, callback) => {
        set.push(ms);
        return clock.setTimer(ms, callback);
      },
    },
  };
}

describe("hedge refuses malformed options at once, naming the option, the value and what is allowed", () => {
  const tracker = latencyTracker();
  const method = () => undefined;

  it.each([
    [null, "hedge: options must be an object with at least a delay; got null"],
    [undefined, "hedge: options must be an object with at least a delay; got undefined"],
    [100, "hedge: options must be an object with at least a delay; got 100"],
    ["fast", 'hedge: options must be an object with at least a delay; got "fast"'],
    [[{ delay: 10 }], "hedge: options must be an object with at least a delay; got [{"],
  ])("options %j", async (options, message) => {
    let calls = 0;
    const call = hedge(() => {
      calls += 1;
      return 1;
    }, options as never);
    await expect(call).rejects.toThrow(OptionError);
    await expect(call).rejects.toThrow(message);
    await expect(call).rejects.toMatchObject({ option: "hedge: options", value: options });
    expect(calls).toBe(0);
  });

  it.each([
    [{ delay: null }, "hedge: delay must be a number of ms >= 0 or { percentile, of, fallback }; got null"],
    [{ delay: [100] }, "hedge: delay must be a number of ms >= 0 or { percentile, of, fallback }; got [100]"],
    [{ delay: true }, "hedge: delay must be a number of ms >= 0 or { percentile, of, fallback }; got true"],
    [
      { delay: { percentile: 0.9, of: tracker, fallback: 10, p: 0.5 } },
      "hedge: delay.p must be one of the known options (percentile, of, fallback, minSamples, record); unknown option; got 0.5",
    ],
    [
      { delay: { percentile: 0.9, of: null, fallback: 10 } },
      "hedge: delay.of must be a latency tracker (from latencyTracker()); got null",
    ],
    [
      { delay: { percentile: 0.9, fallback: 10 } },
      "hedge: delay.of must be a latency tracker (from latencyTracker()); got undefined",
    ],
    [
      { delay: { percentile: 0.9, of: 5, fallback: 10 } },
      "hedge: delay.of must be a latency tracker (from latencyTracker()); got 5",
    ],
    [
      { delay: { percentile: 0.9, of: { record: method }, fallback: 10 } },
      "hedge: delay.of must be a latency tracker (from latencyTracker()); got {",
    ],
    [
      { delay: { percentile: 0.9, of: { percentile: method }, fallback: 10 } },
      "hedge: delay.of must be a latency tracker (from latencyTracker()); got {",
    ],
    [
      { delay: { percentile: 0.9, of: tracker, fallback: 10, record: "yes" } },
      'hedge: delay.record must be true or false; got "yes"',
    ],
    [{ delay: 10, onCallbackError: 3 }, "hedge: onCallbackError must be a function; got 3"],
    [{ delay: 10, random: 0.5 }, "hedge: random must be a function; got 0.5"],
    [{ delay: 10, clock: { now: method } }, "hedge: clock must be a Clock ({ now, setTimer }); got {"],
    [{ delay: 10, clock: { setTimer: method } }, "hedge: clock must be a Clock ({ now, setTimer }); got {"],
    [{ delay: 10, clock: null }, "hedge: clock must be a Clock ({ now, setTimer }); got null"],
  ])("%j", async (options, message) => {
    let calls = 0;
    const call = hedge(() => {
      calls += 1;
      return 1;
    }, options as never);
    await expect(call).rejects.toThrow(OptionError);
    await expect(call).rejects.toThrow(message);
    expect(calls).toBe(0);
  });

  it("steps.hedge names itself in what it refuses", () => {
    expect(() => steps.hedge(null as never)).toThrow(
      "steps.hedge: options must be an object with at least a delay; got null",
    );
    expect(() => steps.hedge({ delay: 10, retries: 2 } as never)).toThrow(
      expect.objectContaining({ name: "OptionError", option: "steps.hedge.retries", value: 2 }),
    );
  });

  it.each([
    ["signal", new AbortController().signal],
    ["clock", new VirtualClock()],
    ["random", () => 0.5],
  ])("steps.hedge refuses %s, which the execution provides", (key, value) => {
    expect(() => steps.hedge({ delay: 10, [key]: value } as never)).toThrow(
      `steps.hedge.${key} must be one of the known options (delay, maxHedges, hedgeOnFailure, budget, onHedge, onCallbackError); unknown option`,
    );
  });
});

describe("latencyTracker's contract", () => {
  it.each([
    ["NaN", Number.NaN, "NaN"],
    ["a negative latency", -1, "-1"],
    ["Infinity", Number.POSITIVE_INFINITY, "Infinity"],
    ["-Infinity", Number.NEGATIVE_INFINITY, "-Infinity"],
    ["a numeric string", "5", "5"],
  ])("record refuses %s, naming it", (_what, ms, shown) => {
    const tracker = latencyTracker();
    expect(() => tracker.record(ms as number)).toThrow(
      new RangeError(`latencyTracker: a latency must be a finite number of ms >= 0; got ${shown}`),
    );
    expect(tracker.size).toBe(0);
  });

  it("percentile refuses a p outside [0, 1], naming it", () => {
    const tracker = latencyTracker();
    tracker.record(5);
    for (const [p, shown] of [
      [1.5, "1.5"],
      [-0.1, "-0.1"],
      [Number.NaN, "NaN"],
    ] as const) {
      expect(() => tracker.percentile(p)).toThrow(
        `latencyTracker.percentile: p must be a finite number in [0, 1]; got ${shown}`,
      );
    }
  });

  it("reads percentiles at the boundaries: p = 0 is the least, p = 1 the greatest, one sample is every percentile", () => {
    const tracker = latencyTracker();
    expect([tracker.percentile(0), tracker.percentile(1)]).toEqual([undefined, undefined]);
    tracker.record(42);
    expect([0, 0.5, 1].map((p) => tracker.percentile(p))).toEqual([42, 42, 42]);
    tracker.record(0);
    tracker.record(7);
    expect([tracker.percentile(0), tracker.percentile(1)]).toEqual([0, 42]);
  });

  it("reads the nearest-rank percentile: the least latency at or above a share p of those held (fast-check)", () => {
    fc.assert(
      fc.property(
        fc.array(fc.double({ min: 0, max: 1e6, noNaN: true }), { minLength: 1, maxLength: 50 }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        (latencies, p) => {
          const tracker = latencyTracker({ capacity: 64 });
          for (const ms of latencies) tracker.record(ms);
          const sorted = [...latencies].sort((a, b) => a - b);
          const read = tracker.percentile(p) as number;
          expect(read).toBe(sorted[Math.max(1, Math.ceil(p * sorted.length)) - 1]);
          // At least a share p of the latencies are at or below it, and fewer than p strictly below.
          expect(sorted.filter((ms) => ms <= read).length).toBeGreaterThanOrEqual(p * sorted.length);
          expect(sorted.filter((ms) => ms < read).length).toBeLessThan(Math.max(1, p * sorted.length));
        },
      ),
    );
  });

  it("clear() forgets every latency, and it fills again from empty", () => {
    const tracker = latencyTracker({ capacity: 3 });
    for (const ms of [30, 10, 20]) tracker.record(ms);
    tracker.clear();
    expect(tracker.size).toBe(0);
    expect(tracker.percentile(0.5)).toBeUndefined();
    tracker.record(7);
    expect(tracker.size).toBe(1);
    expect([tracker.percentile(0), tracker.percentile(1)]).toEqual([7, 7]);
    for (const ms of [9, 8, 1]) tracker.record(ms);
    expect(tracker.size).toBe(3);
    expect([tracker.percentile(0), tracker.percentile(1)]).toEqual([1, 9]);
  });

  it("refuses options it does not know, naming them", () => {
    expect(() => latencyTracker({ size: 3 } as never)).toThrow(
      "latencyTracker.size must be one of the known options (capacity); unknown option; got 3",
    );
  });
});

describe("hedge's percentile delay", () => {
  it("uses the percentile as soon as the tracker holds minSamples latencies (default 1)", async () => {
    const clock = new VirtualClock();
    const one = latencyTracker();
    one.record(70);
    const first = answering(clock, [1000, 1]);
    const call = hedge(first.operation, {
      delay: { percentile: 0.5, of: one, fallback: 300, record: false },
      clock,
    });
    expect(await drive(clock, call)).toEqual({ ok: true, value: "value 2" });
    expect(clock.now()).toBe(71);

    const three = latencyTracker();
    for (const ms of [40, 20, 60]) three.record(ms);
    const second = answering(clock, [1000, 1]);
    const start = clock.now();
    await drive(
      clock,
      hedge(second.operation, {
        delay: { percentile: 0.5, of: three, fallback: 300, minSamples: 3, record: false },
        clock,
      }),
    );
    expect(clock.now() - start).toBe(41);
  });

  it("records an attempt that answers at once as 0 ms", async () => {
    const clock = new VirtualClock();
    const tracker = latencyTracker();
    await expect(
      hedge(() => "at once", { delay: { percentile: 0.9, of: tracker, fallback: 100 }, clock }),
    ).resolves.toBe("at once");
    expect(tracker.size).toBe(1);
    expect(tracker.percentile(1)).toBe(0);
  });

  it("a clock that steps back during an attempt neither fails the call nor puts a negative latency in the tracker", async () => {
    const clock = new VirtualClock();
    // Each reading 10 ms earlier than the one before, as a wall clock being set back would read.
    let reading = 1000;
    const steppingBack: Clock = {
      now: () => {
        reading -= 10;
        return reading;
      },
      setTimer: (ms, callback) => clock.setTimer(ms, callback),
    };
    const tracker = latencyTracker();
    await expect(
      hedge(() => "value", {
        delay: { percentile: 0.9, of: tracker, fallback: 100 },
        clock: steppingBack,
      }),
    ).resolves.toBe("value");
    expect(tracker.size).toBe(0);
    expect(clock.pending).toBe(0);
  });
});

describe("what hedge sets and leaves", () => {
  it("sets a timer only for a hedge it may still start", async () => {
    for (const [maxHedges, expected] of [
      [0, []],
      [1, [100]],
      [2, [100, 100]],
    ] as const) {
      const clock = new VirtualClock();
      const timers = timersOf(clock);
      const { operation, signals } = answering(clock, [1000, 1000, 1000]);
      const result = await drive(clock, hedge(operation, { delay: 100, maxHedges, clock: timers.clock }));
      expect(result, `maxHedges ${maxHedges}`).toEqual({ ok: true, value: "value 1" });
      expect(signals).toHaveLength(maxHedges + 1);
      expect(timers.set, `maxHedges ${maxHedges}`).toEqual(expected);
    }
  });

  it("removes its listener from the caller's signal when every attempt fails", async () => {
    const clock = new VirtualClock();
    const controller = new AbortController();
    const failure = new Error("down");
    let listeners = -1;
    const call = hedge(
      async ({ attempt }) => {
        await clock.sleep(attempt * 50);
        throw failure;
      },
      { delay: 100, clock, signal: controller.signal },
    );
    const settled = call.then(
      () => undefined,
      () => {
        listeners = abortListeners(controller.signal);
      },
    );
    expect(await drive(clock, call)).toEqual({ ok: false, error: failure });
    await settled;
    expect(listeners).toBe(0);
  });
});

describe("the attempts that lose", () => {
  it("are aborted with a HedgeLostError that names the attempt that answered first", async () => {
    const clock = new VirtualClock();
    const { operation, signals } = answering(clock, [1000, 30, 1000]);
    const result = await drive(clock, hedge(operation, { delay: 100, maxHedges: 2, clock }));
    expect(result).toEqual({ ok: true, value: "value 2" });
    expect(signals).toHaveLength(2);
    const reason = signals[0]?.reason as HedgeLostError;
    expect(reason).toBeInstanceOf(HedgeLostError);
    expect(reason).toBeInstanceOf(Error);
    expect(reason).toMatchObject({
      name: "HedgeLostError",
      settledBy: 2,
      message: "attempt 2 answered first; this attempt is not needed",
    });
    expect(String(reason)).toBe("HedgeLostError: attempt 2 answered first; this attempt is not needed");
  });

  it("are aborted with a HedgeLostError that says which attempt failed permanently", async () => {
    const clock = new VirtualClock();
    const cause = new Error("gone");
    const signals: AbortSignal[] = [];
    const result = await drive(
      clock,
      hedge(
        async ({ attempt, signal }) => {
          signals.push(signal);
          await clock.sleep(attempt === 1 ? 1000 : 10, signal);
          throw new PermanentError(cause);
        },
        { delay: 100, clock },
      ),
    );
    expect(result).toEqual({ ok: false, error: cause });
    expect(signals[0]?.reason).toMatchObject({
      name: "HedgeLostError",
      settledBy: 2,
      message: "attempt 2 failed permanently; this attempt is not needed",
    });
  });
});

describe("hedge and a retry budget", () => {
  it("once the budget refuses a hedge, a failed attempt ends the call with its error", async () => {
    const clock = new VirtualClock();
    const budget = retryBudget({ ratio: 0, minPerSecond: 0, clock });
    const tryRetry = vi.spyOn(budget, "tryRetry");
    const failure = vi.spyOn(budget, "failure");
    const down = new Error("down");
    let calls = 0;
    const call = hedge(
      async () => {
        calls += 1;
        await clock.sleep(30);
        throw down;
      },
      { delay: 100, maxHedges: 2, clock, budget },
    );
    expect(await drive(clock, call)).toEqual({ ok: false, error: down });
    expect(clock.now()).toBe(30);
    expect(calls).toBe(1);
    expect(tryRetry).toHaveBeenCalledTimes(1);
    expect(failure).toHaveBeenCalledTimes(1);
  });

  it("leaves the reporting of outcomes to a retry step inside that uses the same budget", async () => {
    const clock = new VirtualClock();
    const budget = retryBudget({ maxTokens: 10, tokenRatio: 0.5 });
    const spies = {
      request: vi.spyOn(budget, "request"),
      tryRetry: vi.spyOn(budget, "tryRetry"),
      success: vi.spyOn(budget, "success"),
      failure: vi.spyOn(budget, "failure"),
    };
    let calls = 0;
    const p = pipeline(
      steps.hedge({ delay: 100, budget }),
      steps.retry({ maxRetries: 2, backoff: backoff.none(), budget }),
    );
    const call = p.execute(
      async () => {
        calls += 1;
        await clock.sleep(10);
        if (calls === 1) throw new Error("once");
        return "ok";
      },
      { clock },
    );
    expect(await drive(clock, call)).toEqual({ ok: true, value: "ok" });
    expect(calls).toBe(2);
    // One execution, one retry, one failure and one success: each heard once.
    expect({
      request: spies.request.mock.calls.length,
      tryRetry: spies.tryRetry.mock.calls.length,
      success: spies.success.mock.calls.length,
      failure: spies.failure.mock.calls.length,
    }).toEqual({ request: 1, tryRetry: 1, success: 1, failure: 1 });
  });
});

describe("the hedge step", () => {
  it("tells listeners added with on() of each hedge, until they are disposed of", async () => {
    const clock = new VirtualClock();
    const step = steps.hedge({ delay: 100 });
    expect(step).toBeInstanceOf(HedgeStep);
    const heard: HedgeEvent[] = [];
    const listener = step.on("hedge", (event) => heard.push(event));
    const p = pipeline(step);
    let started = 0;
    // In a pipeline, `hedge` numbers the attempts of the hedge step.
    const operation = async ({ hedge, signal }: ExecutionContext) => {
      started += 1;
      await clock.sleep(hedge === 1 ? 1000 : 20, signal);
      return `value ${hedge}`;
    };
    expect(await drive(clock, p.execute(operation, { clock }))).toEqual({ ok: true, value: "value 2" });
    expect(heard).toEqual([{ attempt: 2, after: 100, trigger: "delay" }]);

    listener.dispose();
    expect(await drive(clock, p.execute(operation, { clock }))).toEqual({ ok: true, value: "value 2" });
    expect(started).toBe(4);
    expect(heard).toHaveLength(1);
  });

  it("reached after the execution was aborted, starts no attempt and answers with the abort's reason", async () => {
    const clock = new VirtualClock();
    const controller = new AbortController();
    const reason = new Error("caller gave up");
    const answers: Settled<unknown>[] = [];
    // A step that goes on to what is inside it after a wait of its own, without watching the signal.
    const late: Step = {
      execute<T>(next: Next<T>, context: ExecutionContext): Promise<T> {
        return clock.sleep(100).then(() =>
          Promise.resolve(next(context)).then(
            (value) => {
              answers.push({ ok: true, value });
              return value;
            },
            (error: unknown) => {
              answers.push({ ok: false, error });
              throw error;
            },
          ),
        );
      },
    };
    let calls = 0;
    clock.setTimer(50, () => controller.abort(reason));
    const call = pipeline(late, steps.hedge({ delay: 10 })).execute(
      () => {
        calls += 1;
        return "value";
      },
      { clock, signal: controller.signal },
    );
    expect(await drive(clock, call)).toEqual({ ok: false, error: reason });
    expect(answers).toEqual([{ ok: false, error: reason }]);
    expect(calls).toBe(0);
    expect(clock.pending).toBe(0);
  });
});

describe("onCallbackError", () => {
  it("receives what onHedge threw, in place of the default warning, and the call goes on", async () => {
    const clock = new VirtualClock();
    const boom = new Error("listener broke");
    const handled: [unknown, string][] = [];
    const captured = captureWarnings();
    try {
      const { operation } = answering(clock, [1000, 20]);
      const result = await drive(
        clock,
        hedge(operation, {
          delay: 100,
          clock,
          onHedge: () => {
            throw boom;
          },
          onCallbackError: (error, callback) => {
            handled.push([error, callback]);
          },
        }),
      );
      expect(result).toEqual({ ok: true, value: "value 2" });
    } finally {
      captured.restore();
    }
    expect(handled).toEqual([[boom, "hedge"]]);
    expect(captured.warnings).toEqual([]);
  });
});
