import { backoff, HedgeLostError, jitter, OptionError, pipeline, steps, TimeoutError } from "robustly";
import { describe, expect, it, vi } from "vitest";
import { RootScope, Scope } from "../src/pipeline/context.js";
import { drive, VirtualClock } from "./support/drive.js";

describe("steps.timeout abortOnReturn (cockatiel's)", () => {
  /** Runs `answer` through `p`, keeping the signal it was given. */
  const run = async (p: ReturnType<typeof pipeline>, answer: () => Promise<unknown>, clock: VirtualClock) => {
    let signal: AbortSignal | undefined;
    const settled = await drive(
      clock,
      p.execute(
        (ctx) => {
          signal = ctx.signal;
          return answer();
        },
        { clock },
      ),
    );
    return { settled, signal: signal as AbortSignal };
  };

  it("aborts the signal once the operation has answered, so what is tied to it is released", async () => {
    const clock = new VirtualClock();
    const p = pipeline(steps.timeout({ ms: 1000, abortOnReturn: true }));
    const value = await run(p, () => clock.sleep(10).then(() => "ok"), clock);
    expect(value.settled).toEqual({ ok: true, value: "ok" });
    expect(value.signal.aborted).toBe(true);
    expect(value.signal.reason).toMatchObject({
      name: "AbortError",
      message: "the call inside steps.timeout has answered (abortOnReturn)",
    });
    const down = new Error("down");
    const error = await run(p, () => Promise.reject(down), clock);
    expect(error.settled).toEqual({ ok: false, error: down });
    expect(error.signal.aborted).toBe(true);
    // Aborted before the caller hears of the outcome.
    let abortedFirst: boolean | undefined;
    let signal: AbortSignal | undefined;
    await p
      .execute(
        (ctx) => {
          signal = ctx.signal;
          return "now";
        },
        { clock },
      )
      .then(() => {
        abortedFirst = signal?.aborted;
      });
    expect(abortedFirst).toBe(true);
    expect(clock.pending).toBe(0);
  });

  it("by default leaves the signal as it is once the operation has answered", async () => {
    const clock = new VirtualClock();
    const { settled, signal } = await run(pipeline(steps.timeout(1000)), async () => "ok", clock);
    expect(settled).toEqual({ ok: true, value: "ok" });
    expect(signal.aborted).toBe(false);
  });

  it("a timeout still aborts with its TimeoutError, not the settled reason", async () => {
    const clock = new VirtualClock();
    const p = pipeline(steps.timeout({ ms: 100, abortOnReturn: true, cooperative: true }));
    const { settled, signal } = await run(p, () => clock.sleep(300).then(() => "late"), clock);
    expect(settled).toEqual({ ok: true, value: "late" });
    expect(signal.reason).toBeInstanceOf(TimeoutError);
  });

  it("each attempt's signal, inside a retry step", async () => {
    const clock = new VirtualClock();
    const signals: AbortSignal[] = [];
    const p = pipeline(steps.retry({ maxRetries: 2 }), steps.timeout({ ms: 1000, abortOnReturn: true }));
    const settled = await drive(
      clock,
      p.execute(
        (ctx) => {
          signals.push(ctx.signal);
          if (signals.length < 3) throw new Error("again");
          // The earlier attempts' signals were aborted as each ended.
          return signals.map((s) => s.aborted);
        },
        { clock },
      ),
    );
    expect(settled).toEqual({ ok: true, value: [true, true, false] });
    expect(signals.map((s) => s.aborted)).toEqual([true, true, true]);
  });

  /** Runs `answer` through `p`, keeping the signal of each call of the operation, in order. */
  const runAll = async (
    p: ReturnType<typeof pipeline>,
    answer: (call: number, signal: AbortSignal) => unknown,
    clock: VirtualClock,
  ) => {
    const signals: AbortSignal[] = [];
    const settled = await drive(
      clock,
      p.execute(
        (ctx) => {
          signals.push(ctx.signal);
          return answer(signals.length, ctx.signal) as never;
        },
        { clock },
      ),
    );
    return { settled, signals };
  };
  const answeredReason = {
    name: "AbortError",
    message: "the call inside steps.timeout has answered (abortOnReturn)",
  };
  const constant = { backoff: backoff.constant({ base: 100 }), jitter: jitter.none() };

  it("reaches through a retry step: the signal of the attempt that answered at once", async () => {
    const clock = new VirtualClock();
    const p = pipeline(steps.timeout({ ms: 1000, abortOnReturn: true }), steps.retry({ maxRetries: 2 }));
    for (const answer of [() => "ok", () => clock.sleep(10).then(() => "ok")]) {
      const { settled, signals } = await runAll(p, answer, clock);
      expect(settled).toEqual({ ok: true, value: "ok" });
      expect(signals).toHaveLength(1);
      expect(signals[0]?.reason).toMatchObject(answeredReason);
    }
    expect(clock.pending).toBe(0);
  });

  it("reaches through a retry step: the attempt whose outcome ended the call, not those before it", async () => {
    const clock = new VirtualClock();
    const p = pipeline(
      steps.timeout({ ms: 10_000, abortOnReturn: true }),
      steps.retry({ maxRetries: 2, ...constant }),
    );
    // Two failures, then a success: the third attempt answered for the call.
    const success = await runAll(p, (n) => (n < 3 ? Promise.reject(new Error("again")) : "ok"), clock);
    expect(success.settled).toEqual({ ok: true, value: "ok" });
    // Aborted with the call's answer; the attempts before it had been let go as they failed.
    expect(success.signals.map((s) => s.aborted)).toEqual([false, false, true]);
    expect(success.signals[2]?.reason).toMatchObject(answeredReason);
    // Every attempt fails: the last failure is the call's outcome, and its attempt is aborted.
    const down = new Error("down");
    const failure = await runAll(p, () => Promise.reject(down), clock);
    expect(failure.settled).toEqual({ ok: false, error: down });
    expect(failure.signals.map((s) => s.aborted)).toEqual([false, false, true]);
    expect(failure.signals[2]?.reason).toMatchObject(answeredReason);
    expect(clock.pending).toBe(0);
  });

  it("reaches through a hedge step: the winner's signal, the loser's aborted as it lost", async () => {
    const clock = new VirtualClock();
    const p = pipeline(steps.timeout({ ms: 1000, abortOnReturn: true }), steps.hedge({ delay: 50 }));
    // The first attempt is slow; the hedge, started at 50 ms, answers at 60 ms and wins.
    const { settled, signals } = await runAll(
      p,
      (n) => clock.sleep(n === 1 ? 500 : 10).then(() => `attempt ${n}`),
      clock,
    );
    expect(settled).toEqual({ ok: true, value: "attempt 2" });
    expect(signals[0]?.reason).toBeInstanceOf(HedgeLostError);
    expect(signals[1]?.reason).toMatchObject(answeredReason);
    expect(clock.pending).toBe(0);
  });

  it("reaches through a timeout step inside", async () => {
    const clock = new VirtualClock();
    const p = pipeline(steps.timeout({ ms: 1000, abortOnReturn: true }), steps.timeout(500));
    const { settled, signals } = await runAll(p, () => clock.sleep(10).then(() => "ok"), clock);
    expect(settled).toEqual({ ok: true, value: "ok" });
    expect(signals[0]?.reason).toMatchObject(answeredReason);
    expect(clock.pending).toBe(0);
  });

  it("reaches through retry and a per-attempt timeout: the answering attempt's signal, before the caller hears", async () => {
    const clock = new VirtualClock();
    const p = pipeline(
      steps.timeout({ ms: 10_000, abortOnReturn: true }),
      steps.retry({ maxRetries: 5, ...constant }),
      steps.timeout(2000),
    );
    let abortedFirst: boolean[] | undefined;
    const signals: AbortSignal[] = [];
    const call = p
      .execute(
        (ctx) => {
          signals.push(ctx.signal);
          // The first attempt runs out of time, the second fails, the third answers.
          if (signals.length === 1) return clock.sleep(3000).then(() => "late");
          if (signals.length === 2) return Promise.reject(new Error("again"));
          return clock.sleep(10).then(() => "ok");
        },
        { clock },
      )
      .then((value) => {
        abortedFirst = signals.map((s) => s.aborted);
        return value;
      });
    expect(await drive(clock, call)).toEqual({ ok: true, value: "ok" });
    expect(abortedFirst).toEqual([true, false, true]);
    expect(signals[0]?.reason).toBeInstanceOf(TimeoutError);
    expect(signals[2]?.reason).toMatchObject(answeredReason);
    expect(clock.pending).toBe(0);
  });

  it("keeps no hook per attempt: a long retry inside holds as many as a short one, and none once it settled", async () => {
    // Counts the hooks waiting on scopes' aborts: added, and not yet called nor removed.
    let live = 0;
    const onAbort = Scope.prototype.onAbort;
    const spy = vi.spyOn(Scope.prototype, "onAbort").mockImplementation(function (this: Scope, hook) {
      if (!this.canAbort) return onAbort.call(this, hook);
      let on = true;
      const off = () => {
        if (on) live -= 1;
        on = false;
      };
      live += 1;
      const remove = onAbort.call(this, () => {
        off();
        hook();
      });
      return () => {
        off();
        remove();
      };
    });
    try {
      const clock = new VirtualClock();
      const p = pipeline(
        steps.timeout({ ms: 1_000_000, abortOnReturn: true }),
        steps.retry({ maxRetries: 500, ...constant }),
        steps.timeout(2000),
      );
      const held: number[] = [];
      const { settled, signals } = await runAll(
        p,
        (n) => {
          held.push(live);
          return n <= 500 ? Promise.reject(new Error("again")) : "ok";
        },
        clock,
      );
      expect(settled).toEqual({ ok: true, value: "ok" });
      expect(signals).toHaveLength(501);
      expect(held[500]).toBe(held[1]);
      expect(Math.max(...held)).toBe(held[1]);
      expect(signals[500]?.reason).toMatchObject(answeredReason);
      expect(live).toBe(0);
      expect(clock.pending).toBe(0);
    } finally {
      spy.mockRestore();
    }
  });

  it("refuses a value that is not a boolean", () => {
    expect(() => steps.timeout({ ms: 10, abortOnReturn: "yes" as never })).toThrow(OptionError);
    expect(() => steps.timeout({ ms: 10, abortOnReturn: "yes" as never })).toThrow(
      "steps.timeout: abortOnReturn",
    );
  });
});

describe("steps.timeout hears what it limits as it answers", () => {
  it("an answer late after the caller's abort inside the step is observed: its rejection is never unhandled", async () => {
    const unhandled: unknown[] = [];
    const collect = (reason: unknown) => unhandled.push(reason);
    process.on("unhandledRejection", collect);
    try {
      const clock = new VirtualClock();
      const controller = new AbortController();
      const call = pipeline(steps.timeout(1000)).execute(
        () => {
          // The caller leaves while the operation is being called; its promise fails later.
          controller.abort(new Error("caller left"));
          return clock.sleep(10).then(() => Promise.reject(new Error("late")));
        },
        { clock, signal: controller.signal },
      );
      await expect(call).rejects.toThrow("caller left");
      await clock.runAll();
      await new Promise((resolve) => setImmediate(resolve));
      expect(unhandled).toEqual([]);
    } finally {
      process.off("unhandledRejection", collect);
    }
  });

  it("a promise whose `then` throws fails at once with that error, as a throw does", async () => {
    class Hostile<T> extends Promise<T> {
      // biome-ignore lint/suspicious/noThenProperty: the hostile answer under test
      override then(): never {
        throw new Error("then threw");
      }
    }
    const clock = new VirtualClock();
    const step = steps.timeout(1000);
    const heard: string[] = [];
    const answer = step.execute(() => Hostile.resolve(1), { clock } as never) as PromiseLike<number>;
    answer.then(
      () => heard.push("value"),
      (error: Error) => heard.push(error.message),
    );
    await Promise.resolve();
    await Promise.resolve();
    expect(heard).toEqual(["then threw"]);
  });
});

describe("steps.timeout's own argument", () => {
  it.each([
    [null, "null"],
    ["2s", '"2s"'],
    [true, "true"],
  ])("refuses %s, naming what it takes", (given, shown) => {
    expect(() => steps.timeout(given as never)).toThrow(OptionError);
    expect(() => steps.timeout(given as never)).toThrow(
      `steps.timeout must be a number of ms or { ms, onTimeout }; got ${shown}`,
    );
  });
});

describe("steps.timeout inside something that aborts it", () => {
  // What runs inside ignores its signal: the step's own answer is what frees the steps outside it (a
  // bulkhead's place, a breaker's trial, a custom step awaiting it) before the limit runs out.
  const ignoresSignal = () => new Promise<never>(() => {});
  const scopeOf = (clock: VirtualClock, signal: AbortSignal) => new RootScope(clock, () => 0.5, signal);

  it("fails at once with the abort's reason, and takes its limit off the clock", async () => {
    const clock = new VirtualClock();
    const controller = new AbortController();
    const answer = steps.timeout(1000).execute(ignoresSignal, scopeOf(clock, controller.signal));
    expect(clock.pending).toBe(1);
    const left = new Error("caller left");
    controller.abort(left);
    await expect(answer).rejects.toBe(left);
    expect(clock.pending).toBe(0);
    expect(clock.now()).toBe(0);
  });

  it("fails with the abort's reason when the abort comes while what it runs is being called", async () => {
    const clock = new VirtualClock();
    const controller = new AbortController();
    const left = new Error("left while starting");
    const answer = steps.timeout(1000).execute(
      () => {
        controller.abort(left);
        return ignoresSignal();
      },
      scopeOf(clock, controller.signal),
    );
    await expect(answer).rejects.toBe(left);
    expect(clock.pending).toBe(0);
  });

  it("runs nothing in a context already aborted, and throws its reason", () => {
    const clock = new VirtualClock();
    const controller = new AbortController();
    const left = new Error("gone before");
    controller.abort(left);
    let ran = 0;
    expect(() =>
      steps.timeout(1000).execute(
        () => {
          ran++;
          return "ran";
        },
        scopeOf(clock, controller.signal),
      ),
    ).toThrow(left);
    expect(ran).toBe(0);
    expect(clock.pending).toBe(0);
  });
});

describe("steps.timeout's callbacks", () => {
  it("hands what onTimeout threw to onCallbackError, with the call's outcome unchanged", async () => {
    const clock = new VirtualClock();
    const thrown = new Error("listener broke");
    const heard: unknown[] = [];
    const p = pipeline(
      steps.timeout({
        ms: 50,
        onTimeout: () => {
          throw thrown;
        },
        onCallbackError: (error) => heard.push(error),
      }),
    );
    const settled = await drive(
      clock,
      p.execute(() => clock.sleep(200), { clock }),
    );
    expect(settled).toMatchObject({ ok: false, error: { name: "TimeoutError" } });
    expect(heard).toEqual([thrown]);
  });
});
