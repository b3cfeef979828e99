// cockatiel's isolate(): a breaker held open by hand until every handle is disposed.
import { BrokenCircuitError, circuitBreaker, retry, retryReport } from "robustly";
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
