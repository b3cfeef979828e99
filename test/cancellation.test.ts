import { backoff, jitter, retry, TimeoutError } from "robustly";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { abortListeners, deferred, drive, tick, VirtualClock } from "./support/drive.js";

const steady = { backoff: backoff.constant({ base: 1000 }), jitter: jitter.none() };

let unhandled: unknown[] = [];
const collect = (reason: unknown) => unhandled.push(reason);
beforeEach(() => {
  unhandled = [];
  process.on("unhandledRejection", collect);
});
afterEach(() => {
  process.off("unhandledRejection", collect);
});

describe("per-attempt timeout", () => {
  it("aborts the attempt's signal with a TimeoutError and moves on even if the operation ignores it", async () => {
    const clock = new VirtualClock();
    const hung = deferred<string>();
    const signals: AbortSignal[] = [];
    const op = (ctx: { attempt: number; signal: AbortSignal }) => {
      signals.push(ctx.signal);
      return ctx.attempt === 1 ? hung.promise : Promise.resolve("second");
    };
    const result = await drive(clock, retry(op, { clock, ...steady, timeout: 200 }));
    expect(result).toEqual({ ok: true, value: "second" });
    expect(signals[0]?.aborted).toBe(true);
    expect(signals[0]?.reason).toBeInstanceOf(TimeoutError);
    expect(signals[1]?.aborted).toBe(false);
    expect(clock.now()).toBe(1200);

    // The first attempt settles late, with a rejection: it is ignored and never unhandled.
    hung.reject(new Error("too late"));
    await tick();
    await tick();
    expect(unhandled).toEqual([]);
  });

  it("ignores a late success of a timed-out attempt", async () => {
    const clock = new VirtualClock();
    const hung = deferred<string>();
    const result = await drive(
      clock,
      retry(() => hung.promise, { clock, ...steady, timeout: 10, maxRetries: 0 }),
    );
    expect(result.ok).toBe(false);
    expect((result as { error: unknown }).error).toBeInstanceOf(TimeoutError);
    hung.resolve("late");
    await tick();
    expect(unhandled).toEqual([]);
  });

  it("hands the operation its timeout, and Infinity when there is none", async () => {
    const seen: number[] = [];
    await retry((ctx) => seen.push(ctx.timeout));
    const clock = new VirtualClock();
    await drive(
      clock,
      retry((ctx) => seen.push(ctx.timeout), { clock, timeout: 250 }),
    );
    await drive(
      clock,
      retry((ctx) => seen.push(ctx.timeout), { clock, timeout: -5 }),
    );
    expect(seen).toEqual([Number.POSITIVE_INFINITY, 250, Number.POSITIVE_INFINITY]);
  });

  it("times out attempt after attempt until retries run out, rejecting with the last TimeoutError", async () => {
    const clock = new VirtualClock();
    let calls = 0;
    const result = await drive(
      clock,
      retry(
        () => {
          calls += 1;
          return new Promise(() => {});
        },
        { clock, ...steady, timeout: 100, maxRetries: 2 },
      ),
    );
    expect(calls).toBe(3);
    expect(result.ok).toBe(false);
    expect((result as { error: unknown }).error).toBeInstanceOf(TimeoutError);
    expect(clock.now()).toBe(100 + 1000 + 100 + 1000 + 100);
    expect(clock.pending).toBe(0);
  });
});

describe("the attempt's own signal", () => {
  it("is a fresh signal for every attempt, even with no timeout and no caller's signal", async () => {
    const clock = new VirtualClock();
    const signals: AbortSignal[] = [];
    const result = await drive(
      clock,
      retry(
        (ctx) => {
          signals.push(ctx.signal);
          // An operation that listens on its signal: the listener must go away with the attempt.
          ctx.signal.addEventListener("abort", () => {});
          if (ctx.attempt < 3) throw new Error("again");
          return "ok";
        },
        { clock, ...steady },
      ),
    );
    expect(result).toEqual({ ok: true, value: "ok" });
    expect(new Set(signals).size).toBe(3);
    expect(signals.every((s) => !s.aborted)).toBe(true);
  });

  it("aborts with the caller's reason when the caller aborts, without being the caller's signal", async () => {
    const clock = new VirtualClock();
    const controller = new AbortController();
    let attemptSignal: AbortSignal | undefined;
    const pending = retry(
      (ctx) => {
        attemptSignal = ctx.signal;
        return new Promise(() => {});
      },
      { clock, signal: controller.signal },
    );
    const reason = new Error("user left");
    clock.setTimer(50, () => controller.abort(reason));
    const result = await drive(clock, pending);
    expect(result).toEqual({ ok: false, error: reason });
    expect(attemptSignal).not.toBe(controller.signal);
    expect(attemptSignal?.aborted).toBe(true);
    expect(attemptSignal?.reason).toBe(reason);
    expect(abortListeners(controller.signal)).toBe(0);
  });
});

describe("the caller's abort", () => {
  it("stops mid-attempt at once, rejecting with signal.reason, and aborts the attempt's signal", async () => {
    const clock = new VirtualClock();
    const controller = new AbortController();
    let attemptSignal: AbortSignal | undefined;
    const pending = retry(
      (ctx) => {
        attemptSignal = ctx.signal;
        return new Promise(() => {});
      },
      { clock, ...steady, timeout: 10_000, signal: controller.signal },
    );
    const outcome = pending.then(
      () => "resolved",
      (e: unknown) => e,
    );
    await tick();
    const reason = new Error("user cancelled");
    controller.abort(reason);
    expect(await outcome).toBe(reason);
    expect(attemptSignal?.aborted).toBe(true);
    expect(attemptSignal?.reason).toBe(reason);
    expect(clock.pending).toBe(0);
    expect(abortListeners(controller.signal)).toBe(0);
  });

  it("stops mid-attempt without a timeout too: the operation sees the caller's own signal", async () => {
    const clock = new VirtualClock();
    const controller = new AbortController();
    const pending = retry(() => new Promise(() => {}), { clock, signal: controller.signal });
    const outcome = pending.then(
      () => "resolved",
      (e: unknown) => e,
    );
    await tick();
    controller.abort();
    const error = await outcome;
    expect(error).toBe(controller.signal.reason);
    expect((error as Error).name).toBe("AbortError");
    expect(abortListeners(controller.signal)).toBe(0);
  });

  it("stops mid-sleep at once, leaving no timer and no listener", async () => {
    const clock = new VirtualClock();
    const controller = new AbortController();
    let calls = 0;
    const pending = retry(
      async () => {
        calls += 1;
        throw new Error("fail");
      },
      {
        clock,
        backoff: backoff.constant({ base: 60_000 }),
        jitter: jitter.none(),
        signal: controller.signal,
      },
    );
    const outcome = pending.then(
      () => "resolved",
      (e: unknown) => e,
    );
    await clock.advance(1000);
    expect(clock.pending).toBe(1);
    controller.abort("stop");
    expect(await outcome).toBe("stop");
    expect(calls).toBe(1);
    expect(clock.pending).toBe(0);
    expect(abortListeners(controller.signal)).toBe(0);
  });

  it("an already-aborted signal rejects before the first attempt", async () => {
    let calls = 0;
    const signal = AbortSignal.abort(new Error("already"));
    await expect(retry(() => calls++, { signal })).rejects.toThrow("already");
    expect(calls).toBe(0);
  });

  it("is never retried, even when retryOn would match its reason", async () => {
    const clock = new VirtualClock();
    const controller = new AbortController();
    let calls = 0;
    const pending = retry(
      (ctx) => {
        calls += 1;
        return new Promise((_, reject) =>
          ctx.signal.addEventListener("abort", () => reject(ctx.signal.reason)),
        );
      },
      { clock, retryOn: () => true, signal: controller.signal, maxRetries: -1 },
    );
    const outcome = pending.then(
      () => "resolved",
      (e: unknown) => e,
    );
    await tick();
    controller.abort("bye");
    expect(await outcome).toBe("bye");
    expect(calls).toBe(1);
  });
});
