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

describe("an emitter's listeners", () => {
  it("are counted per event and over all, as they are added, disposed (once) and cleared", () => {
    const events = new Events<Sample>();
    expect([events.any(), events.has("ping"), events.count("ping"), events.size]).toEqual([
      false,
      false,
      0,
      0,
    ]);
    const listener = () => {};
    const first = events.on("ping", listener);
    const second = events.on("ping", listener);
    events.on("pong", listener);
    expect([events.any(), events.has("ping"), events.count("ping"), events.size]).toEqual([true, true, 2, 3]);
    first.dispose();
    first.dispose();
    expect([events.has("ping"), events.count("ping"), events.size]).toEqual([true, 1, 2]);
    second.dispose();
    expect([events.any(), events.has("ping"), events.count("ping"), events.size]).toEqual([
      true,
      false,
      0,
      1,
    ]);
    events.clear();
    expect([events.any(), events.has("pong"), events.size]).toEqual([false, false, 0]);
  });

  it("cleared, are no longer called, and a handle disposed after the clear takes nothing off a later listener", () => {
    const events = new Events<Sample>();
    const heard: unknown[] = [];
    const before = events.on("ping", (payload) => heard.push(["before", payload.n]));
    events.clear();
    events.emit("ping", { n: 1 });
    const after = events.on("ping", (payload) => heard.push(["after", payload.n]));
    before.dispose();
    expect(events.any()).toBe(true);
    events.emit("ping", { n: 2 });
    expect(heard).toEqual([["after", 2]]);
    after.dispose();
    expect(events.any()).toBe(false);
  });

  it("refuse a listener that is no function, naming the event", () => {
    const events = new Events<Sample>();
    expect(() => events.on("ping", 5 as never)).toThrow(
      new TypeError('on("ping", listener): listener must be a function'),
    );
    expect(events.size).toBe(0);
  });

  it("each hear an event, the same function added twice twice; one that throws or rejects is reported, the rest still hear it", async () => {
    const reported: unknown[] = [];
    const events = new Events<Sample>((error, name) => reported.push([(error as Error).message, name]));
    const heard: number[] = [];
    const listener = (payload: { n: number }) => heard.push(payload.n);
    events.on("ping", listener);
    events.on("ping", () => {
      throw new Error("threw");
    });
    events.on("ping", () => Promise.reject(new Error("rejected")));
    events.on("ping", listener);
    events.emit("ping", { n: 7 });
    await Promise.resolve();
    expect(heard).toEqual([7, 7]);
    expect(reported).toEqual([
      ["threw", "ping"],
      ["rejected", "ping"],
    ]);
  });
});

describe("the default report of a listener's or callback's failure", () => {
  it("is one process warning naming the callback or the event, or one console line where there is no process.emitWarning", () => {
    const warnings: unknown[] = [];
    const emitWarning = process.emitWarning;
    const consoleError = console.error;
    try {
      process.emitWarning = ((message: string, options: { type: string }) =>
        warnings.push([message, options.type])) as unknown as typeof process.emitWarning;
      const events = new Events<Sample>();
      events.on("pong", () => {
        throw new Error("broken listener");
      });
      events.emit("pong", "x");
      expect(warnings).toEqual([
        ['a "pong" listener threw (robustly went on): broken listener', "RobustlyCallbackWarning"],
      ]);
      (process as { emitWarning?: unknown }).emitWarning = undefined;
      console.error = (line: unknown) => warnings.push(line);
      events.emit("pong", "y");
      expect(warnings[1]).toBe('robustly: a "pong" listener threw (robustly went on): broken listener');
    } finally {
      process.emitWarning = emitWarning;
      console.error = consoleError;
    }
  });
});
