// cockatiel's isolate(): a breaker held open by hand until every handle is disposed.
import {
  BrokenCircuitError,
  circuitBreaker,
  pipeline,
  retry,
  retryReport,
  steps,
  TimeoutError,
} from "robustly";
import { describe, expect, it } from "vitest";
import { drive, VirtualClock } from "../support/drive.js";

describe("breaker.isolate()", () => {
  it("refuses every call until each handle is disposed, then lets calls through as before", async () => {
    const clock = new VirtualClock();
    const breaker = circuitBreaker({ clock });
    const rejected: number[] = [];
    breaker.on("rejected", ({ retryAfter }) => rejected.push(retryAfter));
    const first = breaker.isolate();
    const second = breaker.isolate();
    expect(breaker.isolated).toBe(true);
    expect(() => breaker.acquire()).toThrow(BrokenCircuitError);
    first.dispose();
    first.dispose(); // a second dispose changes nothing
    expect(() => breaker.acquire()).toThrow(/isolated/);
    second.dispose();
    expect(breaker.isolated).toBe(false);
    expect(() => breaker.acquire()).not.toThrow();
    breaker.success();
    expect(breaker.state).toBe("closed");
    expect(rejected).toEqual([0, 0]);
  });

  it("a call through retry while isolated fails at once with BrokenCircuitError, reason breaker", async () => {
    const clock = new VirtualClock();
    const breaker = circuitBreaker({ clock });
    const handle = breaker.isolate();
    let ran = 0;
    const result = await drive(
      clock,
      retry(
        () => {
          ran += 1;
          return "ok";
        },
        { breaker, clock },
      ),
    );
    expect(ran).toBe(0);
    const error = (result as { error: unknown }).error;
    expect(error).toBeInstanceOf(BrokenCircuitError);
    expect(retryReport(error)?.reason).toBe("breaker");
    handle.dispose();
    expect(
      await drive(
        clock,
        retry(() => "ok", { breaker, clock }),
      ),
    ).toEqual({ ok: true, value: "ok" });
  });
});

describe("cooperative and aggressive timeouts", () => {
  /** An operation that ignores its signal for `ms`, then answers. */
  const slow = (clock: VirtualClock, ms: number) => () =>
    new Promise<string>((resolve) => clock.setTimer(ms, () => resolve("late")));

  it("aggressive (the default): the step rejects with a TimeoutError at the limit", async () => {
    const clock = new VirtualClock();
    const p = pipeline(steps.timeout(100));
    const result = await drive(clock, p.execute(slow(clock, 300), { clock }));
    expect((result as { error: unknown }).error).toBeInstanceOf(TimeoutError);
  });

  it("cooperative: the signal aborts at the limit, and the operation's own outcome is the step's", async () => {
    const clock = new VirtualClock();
    const p = pipeline(steps.timeout({ ms: 100, cooperative: true }));
    const seen: unknown[] = [];
    const late = await drive(
      clock,
      p.execute(
        (ctx) => {
          ctx.signal.addEventListener("abort", () => seen.push([clock.now(), ctx.signal.reason]));
          return slow(clock, 300)();
        },
        { clock },
      ),
    );
    expect(late).toEqual({ ok: true, value: "late" });
    expect(clock.now()).toBe(300);
    expect(seen).toHaveLength(1);
    expect((seen[0] as [number, unknown])[0]).toBe(100);
    expect((seen[0] as [number, unknown])[1]).toBeInstanceOf(TimeoutError);
    // An operation that obeys its signal ends with the TimeoutError it was given.
    const obeying = await drive(
      clock,
      p.execute(
        (ctx) =>
          new Promise<never>((_resolve, reject) =>
            ctx.signal.addEventListener("abort", () => reject(ctx.signal.reason)),
          ),
        { clock },
      ),
    );
    expect((obeying as { error: unknown }).error).toBeInstanceOf(TimeoutError);
    expect(clock.pending).toBe(0);
  });
});
