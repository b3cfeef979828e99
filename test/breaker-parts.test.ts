/**
 * The breaker's parts as a user meets them: what `steps.breaker` takes, what `restore` refuses (and the
 * words it refuses it with), the sliding window a snapshot shows (bucket by bucket, oldest first, through a
 * long silence, a clock that goes back or reads NaN), the last calls of a count window, the error a refused
 * call ends with, and what an abort does to a call let through, by `execute` and by the step.
 */
import fc from "fast-check";
import {
  type BreakerState,
  BrokenCircuitError,
  backoff,
  type CircuitBreaker,
  type Clock,
  circuitBreaker,
  memoryStore,
  OptionError,
  pipeline,
  retryBudget,
  type Step,
  steps,
  TimeoutError,
} from "robustly";
import { describe, expect, it } from "vitest";
import { breakerState } from "./support/breaker.js";
import { deferred, handClock, thrownBy, tick, VirtualClock } from "./support/drive.js";

const fail = () => {
  throw new Error("down");
};

/**
 * A breaker one failure opened for `openFor` ms, `waited` ms ago: by default that time is gone, and its
 * next call is a probe.
 */
async function openedOnce(openFor = 1000, waited = openFor) {
  const clock = new VirtualClock();
  const breaker = circuitBreaker({
    consecutiveFailures: 1,
    openFor: backoff.constant({ base: openFor }),
    clock,
  });
  await expect(breaker.execute(fail)).rejects.toThrow("down");
  await clock.advance(waited);
  return { clock, breaker };
}

/** Every success and failure event of `breaker`, in order. */
function heardOf(breaker: CircuitBreaker): unknown[] {
  const heard: unknown[] = [];
  breaker.on("success", (event) => heard.push(["success", event]));
  breaker.on("failure", (event) => heard.push(["failure", event]));
  breaker.on("rejected", (event) => heard.push(["rejected", event]));
  return heard;
}

describe("steps.breaker: what it takes", () => {
  it("refuses anything but a circuit breaker at once, naming the option and the value", () => {
    const allowed = "steps.breaker: breaker must be a circuit breaker (from circuitBreaker())";
    const cases: [unknown, string][] = [
      [null, "null"],
      [undefined, "undefined"],
      [5, "5"],
      ["breaker", '"breaker"'],
      [{}, "{}"],
      // The factory itself, not a breaker it made.
      [circuitBreaker, "function circuitBreaker"],
    ];
    for (const [value, shown] of cases) {
      const error = thrownBy(() => steps.breaker(value as never));
      expect(error).toBeInstanceOf(OptionError);
      expect((error as OptionError).message).toBe(`${allowed}; got ${shown}`);
      expect((error as OptionError).option).toBe("steps.breaker: breaker");
    }
  });

  it("refuses an object that lacks any of acquire, release, settle and settleResult, at once rather than at its first call", () => {
    const whole = { acquire: () => 0, release: () => {}, settle: () => {}, settleResult: () => {} };
    const lacking = Object.keys(whole).map((name) =>
      Object.fromEntries(Object.entries(whole).filter(([key]) => key !== name)),
    );
    expect(() => steps.breaker(whole as never)).not.toThrow();
    for (const gate of lacking) {
      expect(() => steps.breaker(gate as never)).toThrow(OptionError);
      expect(() => steps.breaker(gate as never)).toThrow(
        /^steps\.breaker: breaker must be a circuit breaker \(from circuitBreaker\(\)\); got \{/,
      );
    }
  });

  it("refuses an unknown option and a handlesResult that is no function, naming them", () => {
    const breaker = circuitBreaker({ clock: new VirtualClock() });
    expect(() => steps.breaker(breaker, { handlesResul: () => true } as never)).toThrow(
      "steps.breaker.handlesResul must be one of the known options (handlesResult); unknown option; got function handlesResul",
    );
    expect(() => steps.breaker(breaker, { handlesResult: 503 } as never)).toThrow(
      "steps.breaker: handlesResult must be a function; got 503",
    );
  });
});

describe("restore: a state is checked whole, and refused in words that name what is wrong", () => {
  const good: BreakerState = breakerState();
  const refusals: [string, unknown, string][] = [
    [
      "no state",
      null,
      'circuitBreaker.restore: state must be "closed", "open" or "half-open"; got undefined',
    ],
    [
      "an unknown state",
      { ...good, state: "ajar" },
      'circuitBreaker.restore: state must be "closed", "open" or "half-open"; got "ajar"',
    ],
    [
      "an openUntil that is not finite",
      { ...good, openUntil: Number.NaN },
      "circuitBreaker.restore: openUntil must be a finite number >= -Infinity; got NaN",
    ],
    [
      "a negative openings",
      { ...good, openings: -1 },
      "circuitBreaker.restore: openings must be an integer >= 0; got -1",
    ],
    [
      "a fractional consecutiveFailures",
      { ...good, consecutiveFailures: 1.5 },
      "circuitBreaker.restore: consecutiveFailures must be an integer >= 0; got 1.5",
    ],
    [
      "a halfOpenSuccesses that is a string",
      { ...good, halfOpenSuccesses: "2" },
      'circuitBreaker.restore: halfOpenSuccesses must be an integer >= 0; got "2"',
    ],
    [
      "no window",
      { ...good, window: undefined },
      "circuitBreaker.restore: window must be a list of [time, calls, failures] buckets; got undefined",
    ],
    [
      "a window that is a string",
      { ...good, window: "[]" },
      'circuitBreaker.restore: window must be a list of [time, calls, failures] buckets; got "[]"',
    ],
    [
      "a bucket that is a number",
      { ...good, window: [5] },
      "circuitBreaker.restore: window must be a list of [time, calls, failures] buckets; got [5]",
    ],
    [
      "a bucket of two numbers",
      { ...good, window: [[0, 1]] },
      "circuitBreaker.restore: window must be a list of [time, calls, failures] buckets; got [[0, 1]]",
    ],
    [
      "a bucket of four numbers",
      { ...good, window: [[0, 1, 1, 1]] },
      "circuitBreaker.restore: window must be a list of [time, calls, failures] buckets; got [[0, 1, 1, 1]]",
    ],
    [
      "a bucket that is a string of three characters",
      { ...good, window: ["abc"] },
      'circuitBreaker.restore: window must be a list of [time, calls, failures] buckets; got ["abc"]',
    ],
    [
      "a bucket holding a string",
      { ...good, window: [[0, "1", 0]] },
      'circuitBreaker.restore: window must be a list of [time, calls, failures] buckets; got [[0, "1", 0]]',
    ],
    [
      "a bucket holding NaN",
      {
        ...good,
        window: [
          [0, 1, 0],
          [100, Number.NaN, 0],
        ],
      },
      "circuitBreaker.restore: window must be a list of [time, calls, failures] buckets; got [[0, 1, 0], [100, NaN, 0]]",
    ],
    [
      "a bucket holding Infinity",
      { ...good, window: [[Number.POSITIVE_INFINITY, 1, 0]] },
      "circuitBreaker.restore: window must be a list of [time, calls, failures] buckets; got [[Infinity, 1, 0]]",
    ],
    [
      "recent outcomes other than 0 and 1",
      { ...good, recent: [0, 2] },
      "circuitBreaker.restore: recent must be a list of 0 (success) and 1 (failure); got [0, 2]",
    ],
  ];

  for (const [what, state, message] of refusals) {
    it(`refuses ${what}, and keeps the state it had`, async () => {
      const clock = new VirtualClock();
      const breaker = circuitBreaker({ consecutiveFailures: 1, failureRatio: 0.9, clock });
      await expect(breaker.execute(fail)).rejects.toThrow("down");
      const before = breaker.snapshot();
      const error = thrownBy(() => breaker.restore(state as BreakerState));
      expect(error).toBeInstanceOf(OptionError);
      expect((error as OptionError).message).toBe(message);
      expect(breaker.snapshot()).toEqual(before);
    });
  }

  it("takes each of the three states", () => {
    const clock = new VirtualClock(5000);
    for (const state of ["closed", "open", "half-open"] as const) {
      const breaker = circuitBreaker({ consecutiveFailures: 3, clock });
      breaker.restore({ ...good, state, openUntil: 6000, openings: 1 });
      expect(breaker.snapshot()).toEqual({ ...good, state, openUntil: 6000, openings: 1 });
      expect(breaker.state).toBe(state);
    }
  });
});

describe("the time window a snapshot shows", () => {
  /** A breaker on a 1000 ms window (ten buckets of 100 ms) that never opens, to watch its counts. */
  const watching = (clock: Clock) =>
    circuitBreaker({ failureRatio: 1, minimumThroughput: 1000, window: 1000, clock });
  const record = (breaker: CircuitBreaker, failed: boolean) => {
    breaker.acquire();
    if (failed) breaker.failure();
    else breaker.success();
  };

  it("lists each bucket that holds a call, oldest first, as [its start, calls, failures]; buckets leave as the window slides", () => {
    const clock = handClock();
    const breaker = watching(clock);
    const at = (t: number, failed: boolean) => {
      clock.t = t;
      record(breaker, failed);
    };
    at(0, false);
    at(150, true);
    at(199, false);
    at(420, false);
    at(999, true);
    at(999, false);
    expect(breaker.snapshot().window).toEqual([
      [0, 1, 0],
      [100, 2, 1],
      [400, 1, 0],
      [900, 2, 1],
    ]);
    // At 1099 the window is 100–1099: the first bucket has left.
    clock.t = 1099;
    expect(breaker.snapshot().window).toEqual([
      [100, 2, 1],
      [400, 1, 0],
      [900, 2, 1],
    ]);
    clock.t = 1100;
    expect(breaker.snapshot().window).toEqual([
      [400, 1, 0],
      [900, 2, 1],
    ]);
    clock.t = 1899;
    expect(breaker.snapshot().window).toEqual([[900, 2, 1]]);
    clock.t = 1900;
    expect(breaker.snapshot().window).toEqual([]);
  });

  it("shows what the window holds, whatever the calls and the gaps between them (property)", () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.integer({ min: 0, max: 400 }), fc.boolean()), { maxLength: 60 }),
        fc.integer({ min: 0, max: 1500 }),
        (calls, after) => {
          const clock = handClock(1_000_000);
          const breaker = watching(clock);
          const seen: [number, boolean][] = [];
          for (const [gap, failed] of calls) {
            clock.t += gap;
            record(breaker, failed);
            seen.push([clock.t, failed]);
          }
          clock.t += after;
          // The model: the calls of the ten buckets up to now's, bucket by bucket.
          const now = Math.floor(clock.t / 100);
          const buckets = new Map<number, [number, number]>();
          for (const [t, failed] of seen) {
            const b = Math.floor(t / 100);
            if (b <= now - 10) continue;
            const [calls, failures] = buckets.get(b) ?? [0, 0];
            buckets.set(b, [calls + 1, failures + (failed ? 1 : 0)]);
          }
          const expected = [...buckets].map(([b, [n, f]]) => [b * 100, n, f]);
          expect(breaker.snapshot().window).toEqual(expected);
        },
      ),
      { numRuns: 300 },
    );
  });

  it("after a silence longer than the window, the calls before it never count again", () => {
    const clock = handClock();
    const breaker = watching(clock);
    record(breaker, true);
    record(breaker, true);
    clock.t = 50;
    record(breaker, false);
    // Five windows of silence, then calls in three buckets in a row.
    for (const t of [5000, 5100, 5200]) {
      clock.t = t;
      record(breaker, false);
    }
    expect(breaker.snapshot().window).toEqual([
      [5000, 1, 0],
      [5100, 1, 0],
      [5200, 1, 0],
    ]);
  });

  it("once a probe closes it, the failures that opened it never count again", async () => {
    const clock = new VirtualClock();
    const breaker = circuitBreaker({
      failureRatio: 0.6,
      minimumThroughput: 2,
      window: 10_000,
      openFor: backoff.constant({ base: 1000 }),
      clock,
    });
    await expect(breaker.execute(fail)).rejects.toThrow("down");
    await expect(breaker.execute(fail)).rejects.toThrow("down");
    expect(breaker.state).toBe("open");
    await clock.advance(1000);
    expect(await breaker.execute(() => "probe")).toBe("probe");
    expect(breaker.state).toBe("closed");
    expect(breaker.snapshot().window).toEqual([]);
    // Later, in other buckets: one failure in two calls is below 0.6.
    await clock.advance(1000);
    expect(await breaker.execute(() => "ok")).toBe("ok");
    await clock.advance(1000);
    await expect(breaker.execute(fail)).rejects.toThrow("down");
    expect(breaker.state).toBe("closed");
    expect(breaker.snapshot().window).toEqual([
      [2000, 1, 0],
      [3000, 1, 1],
    ]);
  });

  it("a clock that goes back never moves the window back: a call counts in the latest bucket, which leaves when the window passes it", () => {
    const clock = handClock(550);
    const breaker = watching(clock);
    record(breaker, true);
    clock.t = 120;
    record(breaker, false);
    expect(breaker.snapshot().window).toEqual([[500, 2, 1]]);
    // Forward again: the bucket of 500 is in the window until 1500.
    clock.t = 1499;
    expect(breaker.snapshot().window).toEqual([[500, 2, 1]]);
    clock.t = 1500;
    expect(breaker.snapshot().window).toEqual([]);
  });

  it("a clock that reads NaN yields a snapshot another breaker can take", () => {
    const clock = handClock(Number.NaN);
    const breaker = watching(clock);
    const state = breaker.snapshot();
    expect(state).toEqual(breakerState());
    const other = watching(new VirtualClock());
    other.restore(JSON.parse(JSON.stringify(state)));
    expect(other.snapshot()).toEqual(state);
  });
});

describe("the last calls of a count window (windowCalls)", () => {
  const record = (breaker: CircuitBreaker, outcomes: readonly (0 | 1)[]) => {
    for (const outcome of outcomes) {
      breaker.acquire();
      if (outcome === 1) breaker.failure();
      else breaker.success();
    }
  };
  const options = { failureRatio: 1, windowCalls: 5, minimumThroughput: 5 };

  it("are listed oldest first, before the window is full as after", () => {
    const breaker = circuitBreaker({ ...options, clock: new VirtualClock() });
    expect(breaker.snapshot().recent).toEqual([]);
    record(breaker, [1, 0, 0]);
    expect(breaker.snapshot().recent).toEqual([1, 0, 0]);
    record(breaker, [1, 0, 1, 1]);
    expect(breaker.snapshot().recent).toEqual([0, 1, 0, 1, 1]);
  });

  it("restore replaces them, never adds to them, and keeps the last windowCalls of a longer list", () => {
    const breaker = circuitBreaker({ ...options, clock: new VirtualClock() });
    record(breaker, [1, 1, 0]);
    const state = breaker.snapshot();
    breaker.restore({ ...state, recent: [0, 1] });
    expect(breaker.snapshot().recent).toEqual([0, 1]);
    breaker.restore({ ...state, recent: [1, 1, 0, 1, 0, 0, 1] });
    expect(breaker.snapshot().recent).toEqual([0, 1, 0, 0, 1]);
    // A state without them (of a breaker on a time window): none.
    breaker.restore({ ...state, recent: undefined });
    expect(breaker.snapshot().recent).toEqual([]);
  });

  it("what restore took decides the next opening as if it had been recorded here (property)", () => {
    fc.assert(
      fc.property(
        fc.array(fc.constantFrom<0 | 1>(0, 1), { maxLength: 12 }),
        fc.integer({ min: 1, max: 8 }),
        (recent, windowCalls) => {
          const ratio = { failureRatio: 0.5, windowCalls, minimumThroughput: windowCalls };
          const restored = circuitBreaker({ ...ratio, clock: new VirtualClock() });
          restored.restore({
            state: "closed",
            openUntil: 0,
            openings: 0,
            consecutiveFailures: 0,
            halfOpenSuccesses: 0,
            window: [],
            recent,
          });
          expect(restored.snapshot().recent).toEqual(recent.slice(-windowCalls));
          // One more failure: open exactly when the last windowCalls, with it, are half failures or more.
          const last = [...recent, 1].slice(-windowCalls);
          const failures = last.filter((n) => n === 1).length;
          record(restored, [1]);
          const opens = last.length >= windowCalls && failures / last.length >= 0.5;
          expect(restored.state).toBe(opens ? "open" : "closed");
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe("BrokenCircuitError", () => {
  it("is what a refused call ends with: its name, its words and when to come back", async () => {
    const { breaker } = await openedOnce(1500, 499.5);
    const error = await breaker.execute(() => "never").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BrokenCircuitError);
    expect(error).toBeInstanceOf(Error);
    expect((error as BrokenCircuitError).name).toBe("BrokenCircuitError");
    expect((error as BrokenCircuitError).retryAfter).toBe(1000.5);
    expect(String(error)).toBe("BrokenCircuitError: the circuit is open; it lets a probe through in 1001 ms");
  });
});

describe("breaker.execute and the caller's signal", () => {
  it("a signal aborted before the call: rejects with its reason, runs nothing and counts nothing, open or not", async () => {
    const clock = new VirtualClock();
    const breaker = circuitBreaker({ consecutiveFailures: 1, clock });
    const heard = heardOf(breaker);
    const reason = new Error("caller gone");
    const signal = AbortSignal.abort(reason);
    let ran = 0;
    const op = () => {
      ran += 1;
      return "ran";
    };
    await expect(breaker.execute(op, signal)).rejects.toBe(reason);
    await expect(breaker.execute(fail)).rejects.toThrow("down");
    expect(breaker.state).toBe("open");
    heard.length = 0;
    await expect(breaker.execute(op, signal)).rejects.toBe(reason);
    expect(ran).toBe(0);
    expect(heard).toEqual([]);
  });

  it("a probe the caller aborts gives its place back: the next call probes at once", async () => {
    const { breaker } = await openedOnce();
    const heard = heardOf(breaker);
    const controller = new AbortController();
    const reason = new Error("caller gone");
    const probe = breaker.execute(() => new Promise<string>(() => {}), controller.signal);
    controller.abort(reason);
    await expect(probe).rejects.toBe(reason);
    expect(breaker.state).toBe("half-open");
    expect(await breaker.execute(() => "second probe")).toBe("second probe");
    expect(breaker.state).toBe("closed");
    expect(heard).toEqual([["success", { duration: 0, value: "second probe" }]]);
  });

  it("what an aborted call answers later is not counted", async () => {
    const clock = new VirtualClock();
    const breaker = circuitBreaker({ consecutiveFailures: 1, clock });
    const heard = heardOf(breaker);
    for (const settle of ["resolve", "reject"] as const) {
      const answer = deferred<string>();
      const controller = new AbortController();
      const call = breaker.execute(() => answer.promise, controller.signal);
      controller.abort(new Error("caller gone"));
      await expect(call).rejects.toThrow("caller gone");
      if (settle === "resolve") answer.resolve("late");
      else answer.reject(new Error("late"));
      await tick();
    }
    expect(breaker.state).toBe("closed");
    expect(heard).toEqual([]);
  });
});

describe("the breaker step and aborts", () => {
  it("a cooperative timeout outside: the call ends with the TimeoutError when the time is up, which counts as a failure", async () => {
    const clock = new VirtualClock();
    const breaker = circuitBreaker({ consecutiveFailures: 1, clock });
    const heard = heardOf(breaker);
    const guarded = pipeline(steps.timeout({ ms: 100, cooperative: true }), steps.breaker(breaker));
    // An operation that does not heed its signal.
    const call = guarded.execute(() => new Promise<string>(() => {}), { clock });
    const outcome = call.catch((error: unknown) => error);
    await clock.advance(100);
    const error = await outcome;
    expect(error).toBeInstanceOf(TimeoutError);
    expect(heard).toEqual([["failure", { duration: 100, outcome: error, isValue: false, handled: true }]]);
    expect(breaker.state).toBe("open");
    expect(clock.pending).toBe(0);
  });

  it("a step outside hears the caller's abort from the breaker step as its reason", async () => {
    const clock = new VirtualClock();
    const breaker = circuitBreaker({ consecutiveFailures: 1, clock });
    const heard = heardOf(breaker);
    const ended: unknown[] = [];
    const outside: Step = {
      async execute(next, context) {
        try {
          return await next(context);
        } catch (error) {
          ended.push(error);
          throw error;
        }
      },
    };
    const controller = new AbortController();
    const reason = new Error("caller gone");
    const call = pipeline(outside, steps.breaker(breaker)).execute(() => new Promise<string>(() => {}), {
      signal: controller.signal,
      clock,
    });
    controller.abort(reason);
    await expect(call).rejects.toBe(reason);
    await tick();
    expect(ended).toEqual([reason]);
    expect(heard).toEqual([]);
    expect(breaker.state).toBe("closed");
  });

  it("reached after the caller aborted, it ends with the abort's reason: nothing runs and no probe's place is taken", async () => {
    const { clock, breaker } = await openedOnce();
    const heard = heardOf(breaker);
    const gate = deferred<void>();
    const ended: unknown[] = [];
    // A step outside that waits (for a place, a token) before it runs the rest.
    const waiting: Step = {
      async execute(next, context) {
        await gate.promise;
        try {
          return await next(context);
        } catch (error) {
          ended.push(error);
          throw error;
        }
      },
    };
    let ran = 0;
    const controller = new AbortController();
    const reason = new Error("caller gone");
    const call = pipeline(waiting, steps.breaker(breaker)).execute(
      () => {
        ran += 1;
        return "ran";
      },
      { signal: controller.signal, clock },
    );
    controller.abort(reason);
    await expect(call).rejects.toBe(reason);
    gate.resolve();
    await tick();
    expect(ended).toEqual([reason]);
    expect(ran).toBe(0);
    expect(heard).toEqual([]);
    expect(breaker.state).toBe("half-open");
    // The probe's place is free.
    expect(await breaker.execute(() => "probe")).toBe("probe");
    expect(breaker.state).toBe("closed");
  });

  it("what a call answers after the caller aborted it is not counted", async () => {
    const clock = new VirtualClock();
    const breaker = circuitBreaker({ consecutiveFailures: 1, clock });
    const heard = heardOf(breaker);
    const guarded = pipeline(steps.breaker(breaker));
    for (const settle of ["resolve", "reject"] as const) {
      const answer = deferred<string>();
      const controller = new AbortController();
      const call = guarded.execute(() => answer.promise, { signal: controller.signal, clock });
      controller.abort(new Error("caller gone"));
      await expect(call).rejects.toThrow("caller gone");
      if (settle === "resolve") answer.resolve("late");
      else answer.reject(new Error("late"));
      await tick();
    }
    expect(breaker.state).toBe("closed");
    expect(heard).toEqual([]);
  });

  it("what a call answers after a timeout outside counted it is not counted again", async () => {
    const clock = new VirtualClock();
    const breaker = circuitBreaker({ consecutiveFailures: 5, clock });
    const heard = heardOf(breaker);
    const guarded = pipeline(steps.timeout(100), steps.breaker(breaker));
    for (const settle of ["resolve", "reject"] as const) {
      const answer = deferred<string>();
      const call = guarded.execute(() => answer.promise, { clock }).catch((error: unknown) => error);
      await clock.advance(100);
      expect(await call).toBeInstanceOf(TimeoutError);
      if (settle === "resolve") answer.resolve("late");
      else answer.reject(new Error("late"));
      await tick();
      // One failure each time (its duration the limit), and nothing of the late answer.
      expect(heard).toHaveLength(1);
      expect(heard[0]).toEqual([
        "failure",
        { duration: 100, outcome: expect.any(TimeoutError), isValue: false, handled: true },
      ]);
      heard.length = 0;
      expect(breaker.snapshot().consecutiveFailures).toBe(settle === "resolve" ? 1 : 2);
    }
  });
});

describe("the sliding window of a ratio budget shared through a store", () => {
  it("alone on the store, a process that asks for retries between every two exchanges gets the whole budget, as one of its own would", async () => {
    // ratio 0 and a floor of 2/s over 10 s: 20 retries in the window, whatever the traffic.
    const options = { ratio: 0, minPerSecond: 2, window: 10_000 };
    for (const burst of [1, 3, 5, 10]) {
      const clock = new VirtualClock();
      const shared = retryBudget({ ...options, store: memoryStore({ clock }), key: "api", clock });
      const own = retryBudget({ ...options, clock });
      await shared.ready();
      let sharedRetries = 0;
      let ownRetries = 0;
      // A burst every 100 ms (syncEvery), for one window.
      for (let ms = 0; ms < 10_000; ms += 100) {
        for (let i = 0; i < burst; i++) {
          if (shared.tryRetry()) sharedRetries += 1;
          if (own.tryRetry()) ownRetries += 1;
        }
        await clock.advance(100);
      }
      expect([burst, sharedRetries]).toEqual([burst, 20]);
      expect(ownRetries).toBe(20);
      await shared.close();
      expect(clock.pending).toBe(0);
    }
  });
});
