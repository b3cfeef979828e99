/**
 * A limiter's `execute(fn, signal)` (the rate limiter's here; the adaptive limit's is the same code): the
 * call's outcome is fn's own, a wait ends on the caller's abort, and nothing is left on the signal.
 */
import { OptionError, rateLimiter } from "robustly";
import { VirtualClock } from "robustly/testing";
import { describe, expect, it } from "vitest";
import { abortListeners } from "./support/drive.js";

/** A limiter that admits one call now and the next one a second later. */
const oneASecond = (clock: VirtualClock) => rateLimiter({ rate: 1, per: 1000, burst: 1, queue: 10, clock });

describe("a limiter's execute", () => {
  it("refuses an fn that is no function, naming it", async () => {
    const limiter = oneASecond(new VirtualClock());
    const error = await limiter.execute(5 as never).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OptionError);
    expect((error as Error).message).toBe("rateLimiter.execute: fn must be a function; got 5");
  });

  it("rejects at once with the reason of a signal aborted before, and never runs fn", async () => {
    const limiter = oneASecond(new VirtualClock());
    const controller = new AbortController();
    controller.abort(new Error("gone"));
    let ran = 0;
    await expect(limiter.execute(() => ran++, controller.signal)).rejects.toThrow("gone");
    expect(ran).toBe(0);
    // Its token is still there for the next call.
    await expect(limiter.execute(() => "next")).resolves.toBe("next");
  });

  it("ends with fn's own outcome: its value, its throw, its rejection", async () => {
    const clock = new VirtualClock();
    const limiter = rateLimiter({ rate: 10, burst: 3, clock });
    await expect(limiter.execute(() => "value")).resolves.toBe("value");
    await expect(
      limiter.execute(() => {
        throw new Error("thrown");
      }),
    ).rejects.toThrow("thrown");
    await expect(limiter.execute(() => Promise.reject(new Error("rejected")))).rejects.toThrow("rejected");
  });

  it("takes a waiting call out of the line when its signal aborts: it rejects with the reason, and the next waiter takes its turn", async () => {
    const clock = new VirtualClock();
    const limiter = oneASecond(clock);
    await limiter.execute(() => "first");
    const controller = new AbortController();
    const starts: [string, number][] = [];
    const waiting = limiter.execute(() => starts.push(["aborted", clock.now()]), controller.signal);
    const next = limiter.execute(() => starts.push(["next", clock.now()]));
    expect(abortListeners(controller.signal)).toBe(1);
    controller.abort(new Error("caller left"));
    await expect(waiting).rejects.toThrow("caller left");
    expect(abortListeners(controller.signal)).toBe(0);
    await clock.runAll();
    await next;
    expect(starts).toEqual([["next", 1000]]);
  });

  it("once fn runs, an abort no longer ends the call: fn's outcome is the call's, and the listener is gone", async () => {
    const clock = new VirtualClock();
    const limiter = oneASecond(clock);
    await limiter.execute(() => "first");
    const controller = new AbortController();
    let finish: (value: string) => void = () => {};
    const running = limiter.execute(
      () =>
        new Promise<string>((resolve) => {
          finish = resolve;
        }),
      controller.signal,
    );
    await clock.advance(1000);
    expect(abortListeners(controller.signal)).toBe(0);
    controller.abort(new Error("too late"));
    finish("done");
    await expect(running).resolves.toBe("done");
  });
});
