import {
  type BreakerEvents,
  BrokenCircuitError,
  circuitBreaker,
  once,
  pipeline,
  steps,
  type TimeoutEvent,
} from "robustly";
import { describe, expect, expectTypeOf, it } from "vitest";
import { Events } from "../src/core/events.js";
import { abortListeners, drive, VirtualClock } from "./support/drive.js";

interface Sample extends Record<string, unknown> {
  ping: { readonly n: number };
  pong: string;
}

describe("once (cockatiel's Event.toPromise)", () => {
  it("resolves with the next event's payload and removes its listener", async () => {
    const events = new Events<Sample>();
    const next = once(events, "ping");
    expect(events.count("ping")).toBe(1);
    events.emit("pong", "other event");
    events.emit("ping", { n: 1 });
    events.emit("ping", { n: 2 });
    expect(await next).toEqual({ n: 1 });
    expect(events.size).toBe(0);
  });

  it("rejects with the signal's reason when it aborts first, and leaves no listener behind", async () => {
    const events = new Events<Sample>();
    const controller = new AbortController();
    const next = once(events, "ping", { signal: controller.signal });
    expect(abortListeners(controller.signal)).toBe(1);
    controller.abort(new Error("gave up waiting"));
    await expect(next).rejects.toThrow("gave up waiting");
    expect(events.size).toBe(0);
    events.emit("ping", { n: 1 });
    // After the event, the signal's listener is gone too.
    const other = new AbortController();
    const heard = once(events, "pong", { signal: other.signal });
    events.emit("pong", "hello");
    expect(await heard).toBe("hello");
    expect(abortListeners(other.signal)).toBe(0);
    expect(events.size).toBe(0);
    // An aborted signal: rejected at once, nothing added.
    await expect(once(events, "ping", { signal: controller.signal })).rejects.toThrow("gave up waiting");
    expect(events.size).toBe(0);
  });

  it("waits for a breaker's change, typed by the breaker's events", async () => {
    const clock = new VirtualClock();
    const breaker = circuitBreaker({ consecutiveFailures: 1, clock });
    const opened = once<BreakerEvents["change"]>(breaker, "change");
    expectTypeOf(opened).resolves.toHaveProperty("to");
    expectTypeOf(once(breaker, "change")).resolves.toBeUnknown();
    await expect(breaker.execute(() => Promise.reject(new Error("down")))).rejects.toThrow("down");
    expect(await opened).toMatchObject({ from: "closed", to: "open" });
    const refused = once<BreakerEvents["rejected"]>(breaker, "rejected");
    await expect(breaker.execute(() => "never")).rejects.toBeInstanceOf(BrokenCircuitError);
    expect((await refused).retryAfter).toBeGreaterThan(0);
    // A step's events too.
    const timeout = steps.timeout(50);
    const timedOut = once<TimeoutEvent>(timeout, "timeout");
    await drive(
      clock,
      pipeline(timeout).execute(() => clock.sleep(100), { clock }),
    );
    expect(await timedOut).toEqual({ timeout: 50, attempt: 1 });
  });
});
