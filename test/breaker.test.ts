import fc from "fast-check";
import {
  BrokenCircuitError,
  backoff,
  type CircuitBreaker,
  circuitBreaker,
  jitter,
  OptionError,
  PermanentError,
  pipeline,
  retry,
  retryReport,
  steps,
} from "robustly";
import { VirtualClock } from "robustly/testing";
import { describe, expect, it } from "vitest";
import { drive } from "./support/drive.js";

const fail = () => {
  throw new Error("down");
};

const failWith = (error: unknown) => () => {
  throw error;
};

describe("circuitBreaker", () => {
  it("refuses a clock that is not one at once with an OptionError, as retry and retryBudget do, not at its first call", () => {
    for (const clock of [5, "zz", {}, { now: () => 0 }]) {
      expect(() => circuitBreaker({ clock: clock as never })).toThrow(OptionError);
      expect(() => circuitBreaker({ clock: clock as never })).toThrow(
        "circuitBreaker: clock must be a Clock",
      );
    }
    expect(circuitBreaker({ clock: new VirtualClock() }).state).toBe("closed");
  });

  it("opens after consecutive failures, fails at once while open, probes half-open, closes on success", async () => {
    const clock = new VirtualClock();
    const breaker = circuitBreaker({
      consecutiveFailures: 3,
      openFor: backoff.constant({ base: 1000 }),
      clock,
    });
    const changes: string[] = [];
    breaker.on("change", (c) => changes.push(`${c.from}→${c.to}`));
    for (let i = 0; i < 3; i++) await expect(breaker.execute(fail)).rejects.toThrow("down");
    expect(breaker.state).toBe("open");
    await expect(breaker.execute(() => "never")).rejects.toBeInstanceOf(BrokenCircuitError);
    await clock.advance(1000);
    expect(breaker.state).toBe("half-open");
    expect(await breaker.execute(() => "probe")).toBe("probe");
    expect(breaker.state).toBe("closed");
    expect(changes).toEqual(["closed→open", "open→half-open", "half-open→closed"]);
  });

  it("a failed probe opens it again, for longer: the open time follows the backoff", async () => {
    const clock = new VirtualClock();
    const opened: number[] = [];
    const breaker = circuitBreaker({
      consecutiveFailures: 1,
      openFor: backoff.exponential({ base: 1000 }),
      clock,
    });
    breaker.on("change", (c) => {
      if (c.to === "open") opened.push(c.openFor ?? -1);
    });
    await expect(breaker.execute(fail)).rejects.toThrow();
    await clock.advance(1000);
    await expect(breaker.execute(fail)).rejects.toThrow();
    await clock.advance(2000);
    await expect(breaker.execute(fail)).rejects.toThrow();
    expect(opened).toEqual([1000, 2000, 4000]);
  });

  it("lets only halfOpenProbes through at once while half-open", async () => {
    const clock = new VirtualClock();
    const breaker = circuitBreaker({
      consecutiveFailures: 1,
      openFor: backoff.constant({ base: 10 }),
      clock,
    });
    await expect(breaker.execute(fail)).rejects.toThrow();
    await clock.advance(10);
    breaker.acquire();
    expect(() => breaker.acquire()).toThrow(BrokenCircuitError);
    breaker.success();
    expect(breaker.state).toBe("closed");
  });

  it("opens on a failure ratio over the window once the minimum throughput is seen", async () => {
    const clock = new VirtualClock();
    const breaker = circuitBreaker({ failureRatio: 0.5, minimumThroughput: 10, window: 10_000, clock });
    for (let i = 0; i < 4; i++) await breaker.execute(() => 1);
    for (let i = 0; i < 5; i++) await breaker.execute(fail).catch(() => undefined);
    expect(breaker.state).toBe("closed"); // 9 calls: below the minimum
    await breaker.execute(fail).catch(() => undefined);
    expect(breaker.state).toBe("open"); // 6 of 10 failed
    // Failures that have left the window no longer count.
    const other = circuitBreaker({ failureRatio: 0.5, minimumThroughput: 4, window: 1000, clock });
    for (let i = 0; i < 3; i++) await other.execute(fail).catch(() => undefined);
    await clock.advance(1500);
    for (let i = 0; i < 3; i++) await other.execute(() => 1);
    await other.execute(fail).catch(() => undefined);
    expect(other.state).toBe("closed");
  });

  it("its state is one plain object that another breaker can take over", async () => {
    const clock = new VirtualClock();
    const a = circuitBreaker({ consecutiveFailures: 1, clock });
    await expect(a.execute(fail)).rejects.toThrow();
    const b = circuitBreaker({ consecutiveFailures: 1, clock });
    b.restore(JSON.parse(JSON.stringify(a.snapshot())));
    expect(b.state).toBe("open");
    expect(() => b.restore({ ...a.snapshot(), state: "ajar" as never })).toThrow(OptionError);
  });

  it("a `handles` predicate that answers with a promise is awaited, not taken as true", async () => {
    const clock = new VirtualClock();
    const breaker = circuitBreaker({
      consecutiveFailures: 1,
      handles: async (error) => (error as Error).message === "down",
      clock,
    });
    const ignored = new Error("not the service");
    await expect(breaker.execute(() => Promise.reject(ignored))).rejects.toBe(ignored);
    expect(breaker.state).toBe("closed");
    await expect(breaker.execute(fail)).rejects.toThrow("down");
    expect(breaker.state).toBe("open");
    // Through a pipeline's breaker step too.
    const other = circuitBreaker({ consecutiveFailures: 1, handles: async () => false, clock });
    await expect(pipeline(steps.breaker(other)).execute(fail)).rejects.toThrow("down");
    expect(other.state).toBe("closed");
  });

  it("a `handles` predicate that throws or rejects goes to onCallbackError; the failure counts as by default", async () => {
    const clock = new VirtualClock();
    const reports: [unknown, string][] = [];
    const broken = new Error("predicate broke");
    for (const handles of [() => Promise.reject(broken), failWith(broken)]) {
      const breaker = circuitBreaker({
        consecutiveFailures: 2,
        handles,
        clock,
        onCallbackError: (error, name) => reports.push([error, name]),
      });
      await expect(breaker.execute(fail)).rejects.toThrow("down");
      await expect(pipeline(steps.breaker(breaker)).execute(fail)).rejects.toThrow("down");
      expect(breaker.state).toBe("open");
      // A PermanentError still does not count, as without `handles`.
      const permanent = circuitBreaker({ consecutiveFailures: 1, handles, clock, onCallbackError: () => {} });
      await expect(permanent.execute(failWith(new PermanentError("404")))).rejects.toThrow("404");
      expect(permanent.state).toBe("closed");
    }
    expect(reports).toEqual([
      [broken, "handles"],
      [broken, "handles"],
      [broken, "handles"],
      [broken, "handles"],
    ]);
  });

  it("a `handlesResult` predicate that throws or rejects goes to onCallbackError; the value counts as a success", async () => {
    const clock = new VirtualClock();
    const reports: [unknown, string][] = [];
    const broken = new Error("predicate broke");
    for (const handlesResult of [() => Promise.reject(broken), failWith(broken)]) {
      const breaker = circuitBreaker({
        consecutiveFailures: 1,
        clock,
        onCallbackError: (error, name) => reports.push([error, name]),
      });
      const heard: string[] = [];
      breaker.on("success", () => heard.push("success"));
      breaker.on("failure", () => heard.push("failure"));
      const guarded = pipeline(steps.breaker(breaker, { handlesResult }));
      await expect(guarded.execute(() => 503)).resolves.toBe(503);
      expect(breaker.state).toBe("closed");
      expect(heard).toEqual(["success"]);
    }
    expect(reports).toEqual([
      [broken, "handlesResult"],
      [broken, "handlesResult"],
    ]);
  });

  it("emits success and failure for each call it hears of, with its duration and outcome", async () => {
    const clock = new VirtualClock();
    const reports: [unknown, string][] = [];
    const breaker = circuitBreaker({
      consecutiveFailures: 5,
      handles: (error) => (error as Error).message === "down",
      clock,
      onCallbackError: (error, name) => reports.push([error, name]),
    });
    const heard: unknown[] = [];
    breaker.on("success", (event) => heard.push(["success", event]));
    const failures = breaker.on("failure", (event) => heard.push(["failure", event]));
    const bad = new Error("listener");
    breaker.on("success", failWith(bad));
    const slow =
      <T>(ms: number, run: () => T) =>
      () =>
        clock.sleep(ms).then(run);
    await drive(clock, breaker.execute(slow(120, () => "ok")));
    const down = new Error("down");
    await drive(clock, breaker.execute(slow(30, failWith(down))));
    const other = new Error("other");
    await drive(clock, breaker.execute(slow(5, failWith(other))));
    // A value `handlesResult` counts, through a step.
    const step = steps.breaker(breaker, { handlesResult: (value) => value === 503 });
    await drive(
      clock,
      pipeline(step).execute(
        slow(40, () => 503),
        { clock },
      ),
    );
    // The caller's abort says nothing of the service: no event.
    const controller = new AbortController();
    const aborted = breaker.execute(() => clock.sleep(1000), controller.signal);
    controller.abort(new Error("caller"));
    await expect(aborted).rejects.toThrow("caller");
    failures.dispose();
    await drive(clock, breaker.execute(failWith(down)));
    expect(heard).toEqual([
      ["success", { duration: 120, value: "ok" }],
      ["failure", { duration: 30, outcome: down, isValue: false, handled: true }],
      ["failure", { duration: 5, outcome: other, isValue: false, handled: false }],
      ["failure", { duration: 40, outcome: 503, isValue: true, handled: true }],
    ]);
    expect(reports).toEqual([[bad, "success"]]);
  });

  it("a bad option fails at once", () => {
    expect(() => circuitBreaker({ consecutiveFailures: 0 })).toThrow(
      "circuitBreaker: consecutiveFailures must be an integer >= 1; got 0",
    );
    expect(() => circuitBreaker({ failureRatio: 2 })).toThrow("circuitBreaker: failureRatio");
    expect(() => circuitBreaker({ openFor: 5 as never })).toThrow("circuitBreaker: openFor");
    expect(() => circuitBreaker({ treshold: 1 } as never)).toThrow("circuitBreaker.treshold");
  });
});

describe("a count-based breaker (windowCalls)", () => {
  const recordOn = (breaker: CircuitBreaker, outcome: "ok" | "fail" | "ignored") => {
    breaker.acquire();
    if (outcome === "ok") breaker.success();
    else if (outcome === "fail") breaker.failure();
    else breaker.release();
  };

  it("opens on a failure exactly when the failures over the last windowCalls calls reach failureRatio, once minimumThroughput calls were seen (property)", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 20 }),
        fc.double({ min: 0.05, max: 1, noNaN: true }),
        fc.integer({ min: 1, max: 20 }),
        fc.array(fc.constantFrom("ok" as const, "fail" as const, "ignored" as const), { maxLength: 80 }),
        (windowCalls, failureRatio, wanted, outcomes) => {
          const minimumThroughput = Math.min(wanted, windowCalls);
          const clock = new VirtualClock();
          const breaker = circuitBreaker({ failureRatio, windowCalls, minimumThroughput, clock });
          // The model: every call recorded, in order; a call the breaker was not told the outcome of is not.
          const recorded: boolean[] = [];
          for (const outcome of outcomes) {
            recordOn(breaker, outcome);
            if (outcome !== "ignored") recorded.push(outcome === "fail");
            const last = recorded.slice(-windowCalls);
            const failures = last.filter(Boolean).length;
            // Decided as a failure is counted (a success never opens it), as with the time window.
            const shouldOpen =
              outcome === "fail" &&
              recorded.length >= minimumThroughput &&
              failures / last.length >= failureRatio;
            expect(breaker.state).toBe(shouldOpen ? "open" : "closed");
            if (shouldOpen) break;
          }
        },
      ),
      { numRuns: 500 },
    );
  });

  it("failures that have left the last windowCalls calls no longer count, however long ago they were", async () => {
    const clock = new VirtualClock();
    const breaker = circuitBreaker({ failureRatio: 0.5, windowCalls: 4, minimumThroughput: 4, clock });
    for (const outcome of ["fail", "fail", "ok", "ok", "ok", "fail"] as const) recordOn(breaker, outcome);
    // The last four: ok, ok, ok, fail (the first two failures have left).
    expect(breaker.state).toBe("closed");
    await clock.advance(3_600_000);
    recordOn(breaker, "fail");
    // ok, ok, fail, fail: 2 of 4, though an hour has passed since the others.
    expect(breaker.state).toBe("open");
  });

  it("half-open as the others: a failed probe opens it again, a good one closes it and empties the window", async () => {
    const clock = new VirtualClock();
    const breaker = circuitBreaker({
      failureRatio: 0.5,
      windowCalls: 10,
      minimumThroughput: 2,
      openFor: backoff.constant({ base: 1000 }),
      clock,
    });
    recordOn(breaker, "fail");
    recordOn(breaker, "fail");
    expect(breaker.state).toBe("open");
    await clock.advance(1000);
    recordOn(breaker, "fail");
    expect(breaker.state).toBe("open");
    await clock.advance(1000);
    recordOn(breaker, "ok");
    expect(breaker.state).toBe("closed");
    expect(breaker.snapshot().recent).toEqual([]);
    // Emptied: one failure is below the minimum again.
    recordOn(breaker, "fail");
    expect(breaker.state).toBe("closed");
  });

  it("its last calls are part of the state another breaker takes over", () => {
    const clock = new VirtualClock();
    const options = { failureRatio: 0.5, windowCalls: 4, minimumThroughput: 4, clock };
    const a = circuitBreaker(options);
    for (const outcome of ["fail", "ok", "ok", "ok", "fail"] as const) recordOn(a, outcome);
    expect(a.state).toBe("closed");
    const state = JSON.parse(JSON.stringify(a.snapshot()));
    expect(state.recent).toEqual([0, 0, 0, 1]);
    const b = circuitBreaker(options);
    b.restore(state);
    recordOn(b, "fail");
    expect(b.state).toBe("open");
    expect(() => b.restore({ ...state, recent: [0, 2] })).toThrow("circuitBreaker.restore: recent");
  });

  it("a bad option fails at once, naming it", () => {
    expect(() => circuitBreaker({ failureRatio: 0.5, windowCalls: 0 })).toThrow(
      "circuitBreaker: windowCalls must be an integer in [1, 100000]; got 0",
    );
    expect(() => circuitBreaker({ failureRatio: 0.5, windowCalls: 10, window: 1000 })).toThrow(
      "circuitBreaker: windowCalls",
    );
    expect(() => circuitBreaker({ windowCalls: 10 })).toThrow("circuitBreaker: windowCalls");
    expect(() => circuitBreaker({ failureRatio: 0.5, windowCalls: 10, minimumThroughput: 11 })).toThrow(
      "circuitBreaker: minimumThroughput",
    );
    // Left out, the minimum is at most the window.
    const small = circuitBreaker({ failureRatio: 1, windowCalls: 3, clock: new VirtualClock() });
    for (let i = 0; i < 3; i++) recordOn(small, "fail");
    expect(small.state).toBe("open");
  });
});

describe("retry with a breaker", () => {
  it("records every attempt, and once open fails the call at once with BrokenCircuitError", async () => {
    const clock = new VirtualClock();
    const breaker = circuitBreaker({
      consecutiveFailures: 2,
      openFor: backoff.constant({ base: 60_000 }),
      clock,
    });
    let attempts = 0;
    const op = () => {
      attempts += 1;
      throw new Error("down");
    };
    const first = await drive(
      clock,
      retry(op, { clock, breaker, maxRetries: 5, backoff: backoff.none(), jitter: jitter.none() }),
    );
    // Two failures open it; the third attempt is refused without running.
    expect(attempts).toBe(2);
    expect(first.ok).toBe(false);
    const error = (first as { error: unknown }).error;
    expect(error).toBeInstanceOf(BrokenCircuitError);
    expect(retryReport(error)?.reason).toBe("breaker");
    const second = await drive(clock, retry(op, { clock, breaker }));
    expect((second as { error: unknown }).error).toBeInstanceOf(BrokenCircuitError);
    expect(attempts).toBe(2);
  });
});
