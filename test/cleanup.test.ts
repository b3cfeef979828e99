import { getEventListeners } from "node:events";
import fc from "fast-check";
import { backoff, type Clock, jitter, PermanentError, pipeline, retry, steps, systemClock } from "robustly";
import { seededRandom } from "robustly/testing";
import { describe, expect, it, vi } from "vitest";
import { abortListeners, drive, tick, VirtualClock } from "./support/drive.js";

type Step = "ok" | "fail" | "hang" | "permanent" | "sync-throw";

/** `clock`, with every timer robustly sets through it counted until it fires or is cancelled. */
function countingClock(clock: Clock): Clock & { readonly outstanding: number } {
  let outstanding = 0;
  return {
    get outstanding() {
      return outstanding;
    },
    now: () => clock.now(),
    setTimer(ms, callback) {
      outstanding += 1;
      let done = false;
      const finish = () => {
        if (!done) outstanding -= 1;
        done = true;
      };
      const cancel = clock.setTimer(ms, () => {
        finish();
        callback();
      });
      return () => {
        finish();
        cancel();
      };
    },
  };
}

describe("nothing is left behind", () => {
  it("after any call settles, no timer and no abort listener of robustly remains", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.constantFrom<Step>("ok", "fail", "hang", "permanent", "sync-throw"), {
          minLength: 1,
          maxLength: 8,
        }),
        fc.option(fc.integer({ min: 0, max: 500 }), { nil: undefined }),
        fc.option(fc.integer({ min: 0, max: 5000 }), { nil: undefined }),
        fc.integer({ min: 0, max: 6 }),
        fc.integer(),
        async (steps, timeout, abortAt, maxRetries, seed) => {
          const clock = new VirtualClock();
          const controller = new AbortController();
          // Without a timeout, a hanging attempt ends only through the caller's abort: always schedule one then.
          const abortTime = abortAt ?? (timeout === undefined ? 60_000 : undefined);
          if (abortTime !== undefined) clock.setTimer(abortTime, () => controller.abort(new Error("abort")));
          const op = (ctx: { attempt: number; signal: AbortSignal }) => {
            void ctx.signal; // the lazily created per-attempt signal must be cleaned up too
            const step = steps[(ctx.attempt - 1) % steps.length];
            if (step === "ok") return Promise.resolve(ctx.attempt);
            if (step === "hang") return new Promise<number>(() => {});
            if (step === "permanent") return Promise.reject(new PermanentError(new Error("no")));
            if (step === "sync-throw") throw new Error("sync");
            return Promise.reject(new Error("fail"));
          };
          // Count robustly's own timers and listeners at the moment the call settles, before the clock
          // runs on (running it would fire, and so hide, a timer left behind).
          const counted = countingClock(clock);
          let atSettle: { timers: number; listeners: number } | undefined;
          const call = retry(op, {
            clock: counted,
            random: seededRandom(seed),
            timeout: timeout ?? -1,
            maxRetries,
            signal: controller.signal,
            backoff: backoff.exponential({ base: 100, max: 2000 }),
            jitter: jitter.full(),
          });
          const observe = () => {
            atSettle = { timers: counted.outstanding, listeners: abortListeners(controller.signal) };
          };
          call.then(observe, observe);
          await drive(clock, call);
          expect(atSettle).toEqual({ timers: 0, listeners: 0 });
        },
      ),
      { numRuns: 300 },
    );
  });

  it("a real-timer call leaves no timer in the event loop once it settles", async () => {
    const counted = countingClock(systemClock);
    // Other timers of the test runner come and go, so the event loop's count may fall, never rise.
    const before = process.getActiveResourcesInfo().filter((r) => r === "Timeout").length;
    const controller = new AbortController();
    let calls = 0;
    const value = await retry(
      (ctx) => {
        calls += 1;
        return ctx.attempt < 3 ? new Promise<string>(() => {}) : "third time";
      },
      { timeout: 5, backoff: backoff.none(), signal: controller.signal, clock: counted },
    );
    expect(value).toBe("third time");
    expect(calls).toBe(3);
    expect(counted.outstanding).toBe(0);
    await tick();
    const after = process.getActiveResourcesInfo().filter((r) => r === "Timeout").length;
    expect(after).toBeLessThanOrEqual(before);
    expect(abortListeners(controller.signal)).toBe(0);
  });

  it("calls made one after another on one signal keep one listener, gone at the next turn of the event loop", async () => {
    const { signal } = new AbortController();
    const listeners = () => getEventListeners(signal, "abort").length;
    const op = async () => 1;
    for (let i = 0; i < 5; i++) {
      await retry(op, { maxRetries: 3, signal });
      await retry(op, { maxRetries: 3, timeout: 1000, signal });
      await pipeline(steps.retry({ maxRetries: 3 })).execute(op, { signal });
      expect(listeners()).toBe(1);
    }
    // Not the listener count the helper reads (it sweeps): the one Node reports, after a turn on its own.
    await new Promise<void>((resolve) => setImmediate(resolve));
    expect(listeners()).toBe(0);
  });

  it("removes the listener at once while a test's fake timers hold the timers back", async () => {
    const { signal } = new AbortController();
    vi.useFakeTimers();
    try {
      await retry(async () => 1, { maxRetries: 3, signal });
      // A turn set on the fake timers might never come; one on the real ones might come after they are back.
      expect(getEventListeners(signal, "abort")).toHaveLength(0);
      expect(vi.getTimerCount()).toBe(0);
    } finally {
      vi.useRealTimers();
    }
  });

  it("removes the listeners once fake timers that were in place when robustly loaded are gone", async () => {
    // As with a test runner's fake timers installed for every file (before any import): the turn at which
    // a listener is removed is set on those fake timers, which may be removed without ever running it.
    vi.useFakeTimers();
    let loaded: typeof import("../src/index.js");
    try {
      vi.resetModules();
      loaded = await import("../src/index.js");
      const first = new AbortController().signal;
      await loaded.retry(async () => 1, { maxRetries: 3, signal: first });
      vi.useRealTimers();
      const second = new AbortController().signal;
      await loaded.retry(async () => 1, { maxRetries: 3, signal: second });
      await loaded.pipeline(loaded.steps.retry({ maxRetries: 3 })).execute(async () => 1, { signal: second });
      await new Promise<void>((resolve) => setImmediate(resolve));
      expect(getEventListeners(first, "abort")).toHaveLength(0);
      expect(getEventListeners(second, "abort")).toHaveLength(0);
    } finally {
      vi.useRealTimers();
      vi.resetModules();
    }
  });

  it("a signal that aborts after its last call ended, before the listener went, troubles nothing", async () => {
    const controller = new AbortController();
    const aborted = vi.fn();
    await retry(async () => 1, { maxRetries: 3, signal: controller.signal, onGiveUp: aborted });
    controller.abort(new Error("late"));
    expect(getEventListeners(controller.signal, "abort")).toHaveLength(0);
    expect(aborted).not.toHaveBeenCalled();
    await expect(retry(async () => 1, { signal: controller.signal })).rejects.toThrow("late");
  });
});
