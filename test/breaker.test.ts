import {
  BrokenCircuitError,
  backoff,
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

  it("a bad option fails at once", () => {
    expect(() => circuitBreaker({ consecutiveFailures: 0 })).toThrow(
      "circuitBreaker: consecutiveFailures must be an integer >= 1; got 0",
    );
    expect(() => circuitBreaker({ failureRatio: 2 })).toThrow("circuitBreaker: failureRatio");
    expect(() => circuitBreaker({ openFor: 5 as never })).toThrow("circuitBreaker: openFor");
    expect(() => circuitBreaker({ treshold: 1 } as never)).toThrow("circuitBreaker.treshold");
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
