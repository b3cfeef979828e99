import {
  backoff,
  jitter,
  PermanentError,
  pipeline,
  retry,
  retryReport,
  steps,
  TimeoutError,
  wrap,
} from "robustly";
import { seededRandom, VirtualClock } from "robustly/testing";
import { describe, expect, it } from "vitest";
import { drive } from "./support/drive.js";

class Transient extends Error {}

/** An operation that fails with `errors[i]` on attempt i+1, then returns "done". */
function scripted(errors: unknown[]) {
  const seen: { attempt: number; retries: number; elapsed: number; timeout: number }[] = [];
  const operation = async (ctx: { attempt: number; retries: number; elapsed: number; timeout: number }) => {
    seen.push({ attempt: ctx.attempt, retries: ctx.retries, elapsed: ctx.elapsed, timeout: ctx.timeout });
    const error = errors[ctx.attempt - 1];
    if (error !== undefined) throw error;
    return "done";
  };
  return { operation, seen };
}

const steady = { backoff: backoff.constant({ base: 1000 }), jitter: jitter.none() };

describe("retry", () => {
  it("returns the value of the first success and calls the operation once", async () => {
    const { operation, seen } = scripted([]);
    await expect(retry(operation)).resolves.toBe("done");
    expect(seen).toEqual([{ attempt: 1, retries: 0, elapsed: 0, timeout: Number.POSITIVE_INFINITY }]);
  });

  it("accepts a synchronous operation, its value and its throw", async () => {
    const clock = new VirtualClock();
    let calls = 0;
    const result = await drive(
      clock,
      retry(
        () => {
          calls += 1;
          if (calls < 3) throw new Transient("sync");
          return 7;
        },
        { clock, ...steady },
      ),
    );
    expect(result).toEqual({ ok: true, value: 7 });
    expect(calls).toBe(3);
  });

  it("hands each attempt its number, its retries so far and the time since the first attempt", async () => {
    const clock = new VirtualClock();
    const { operation, seen } = scripted([new Transient("a"), new Transient("b")]);
    const result = await drive(
      clock,
      retry(operation, { clock, ...steady, backoff: backoff.linear({ base: 1000, interval: 500 }) }),
    );
    expect(result).toEqual({ ok: true, value: "done" });
    expect(seen.map((s) => [s.attempt, s.retries, s.elapsed])).toEqual([
      [1, 0, 0],
      [2, 1, 1000],
      [3, 2, 2500],
    ]);
  });

  it("rethrows the last error, the same object, when retries run out", async () => {
    const clock = new VirtualClock();
    const errors = [new Transient("1"), new Transient("2"), new Transient("3"), new Transient("4")];
    const { operation, seen } = scripted(errors);
    const result = await drive(clock, retry(operation, { clock, ...steady, maxRetries: 3 }));
    expect(result.ok).toBe(false);
    expect(result.ok ? undefined : result.error).toBe(errors[3]);
    expect(seen).toHaveLength(4);
  });

  it("maxRetries: 0 means no retry; a negative value means no limit", async () => {
    const clock = new VirtualClock();
    const none = scripted([new Transient("x")]);
    expect((await drive(clock, retry(none.operation, { clock, ...steady, maxRetries: 0 }))).ok).toBe(false);
    expect(none.seen).toHaveLength(1);

    const many = scripted(Array.from({ length: 500 }, () => new Transient("again")));
    const result = await drive(clock, retry(many.operation, { clock, ...steady, maxRetries: -1 }));
    expect(result).toEqual({ ok: true, value: "done" });
    expect(many.seen).toHaveLength(501);
  });

  it("sleeps exactly the delays the policy computes, in order", async () => {
    const clock = new VirtualClock();
    const { operation, seen } = scripted([new Transient("1"), new Transient("2"), new Transient("3")]);
    const options = { clock, backoff: backoff.exponential({ base: 100 }), jitter: jitter.none(), scale: 3 };
    await drive(clock, retry(operation, options));
    expect(seen.map((s) => s.elapsed)).toEqual([0, 300, 900, 2100]);
  });

  it("retries every error by default, TypeError included: no hidden rule", async () => {
    const clock = new VirtualClock();
    const { operation, seen } = scripted([new TypeError("t"), new RangeError("r"), "a string"]);
    expect(await drive(clock, retry(operation, { clock, ...steady }))).toEqual({ ok: true, value: "done" });
    expect(seen).toHaveLength(4);
  });

  it("stops at a PermanentError and rejects with the error it wraps", async () => {
    const clock = new VirtualClock();
    const cause = new Error("not found");
    const { operation, seen } = scripted([new Transient("1"), new PermanentError(cause)]);
    const result = await drive(clock, retry(operation, { clock, ...steady }));
    expect(result.ok ? undefined : result.error).toBe(cause);
    expect(seen).toHaveLength(2);

    const bare = new PermanentError(undefined, "gone");
    const alone = scripted([bare]);
    const second = await drive(clock, retry(alone.operation, { clock, ...steady }));
    expect(second.ok ? undefined : second.error).toBe(bare);
  });

  it("a PermanentError wrapped in another is unwrapped once, whatever the call's shape: the caller gets the inner one, which an outer retry also stops at", async () => {
    const clock = new VirtualClock();
    const cause = new Error("not found");
    const inner = new PermanentError(cause);
    const fail = () => Promise.reject(new PermanentError(inner));
    const controller = new AbortController();
    const shapes: [string, () => Promise<unknown>][] = [
      ["retry", () => retry(fail, { clock })],
      ["retry with a signal", () => retry(fail, { clock, signal: controller.signal })],
      ["retry with a timeout", () => retry(fail, { clock, timeout: 1000 })],
      ["pipeline(retry)", () => pipeline(steps.retry()).execute(fail, { clock })],
      [
        "pipeline(retry) with a signal",
        () => pipeline(steps.retry()).execute(fail, { signal: controller.signal }),
      ],
      [
        "pipeline(retry, timeout)",
        () => pipeline(steps.retry(), steps.timeout(1000)).execute(fail, { clock }),
      ],
      [
        "pipeline(timeout, retry)",
        () => pipeline(steps.timeout(1000), steps.retry()).execute(fail, { clock }),
      ],
    ];
    const got: [string, unknown][] = [];
    for (const [shape, call] of shapes) {
      const result = await drive(clock, call());
      got.push([shape, result.ok ? "resolved" : result.error]);
    }
    expect(got).toEqual(shapes.map(([shape]) => [shape, inner]));
    for (const [, error] of got) expect(error).toBe(inner);
    // Around another retry, the inner PermanentError ends the outer one too, which unwraps it in turn.
    let outerAttempts = 0;
    const nested = retry(
      () => {
        outerAttempts += 1;
        return retry(fail, { clock });
      },
      { clock },
    );
    const outer = await drive(clock, nested);
    expect([outer.ok ? "resolved" : outer.error, outerAttempts]).toEqual([cause, 1]);
  });

  it("retries only what retryOn matches: a class, a list, a name or code, a predicate", async () => {
    const clock = new VirtualClock();
    const coded = Object.assign(new Error("reset"), { code: "ECONNRESET" });
    const cases: [unknown, unknown, boolean][] = [
      [Transient, new Transient("t"), true],
      [Transient, new Error("e"), false],
      [[RangeError, Transient], new RangeError("r"), true],
      ["ECONNRESET", coded, true],
      ["TypeError", new TypeError("t"), true],
      ["ECONNRESET", new Error("other"), false],
      [(e: unknown) => e instanceof Error && e.message === "yes", new Error("yes"), true],
      [(e: unknown) => e instanceof Error && e.message === "yes", new Error("no"), false],
    ];
    for (const [retryOn, error, retried] of cases) {
      const { operation, seen } = scripted([error]);
      // biome-ignore lint/suspicious/noExplicitAny: the table mixes matcher kinds
      const result = await drive(clock, retry(operation, { clock, ...steady, retryOn: retryOn as any }));
      expect(result.ok).toBe(retried);
      expect(seen).toHaveLength(retried ? 2 : 1);
    }
  });

  it("retryOnResult retries a value and, when retries run out, resolves with the last one", async () => {
    const clock = new VirtualClock();
    let n = 0;
    const op = async () => ++n;
    const until3 = await drive(clock, retry(op, { clock, ...steady, retryOnResult: (v) => v < 3 }));
    expect(until3).toEqual({ ok: true, value: 3 });
    n = 0;
    const errors: unknown[] = [];
    const runsOut = await drive(
      clock,
      retry(op, {
        clock,
        ...steady,
        maxRetries: 2,
        retryOnResult: () => true,
        onError: (e) => errors.push(e),
      }),
    );
    expect(runsOut).toEqual({ ok: true, value: 3 });
    expect(errors).toHaveLength(3);
  });

  it("a retryOnResult that throws fails that attempt with its error, on every path alike", async () => {
    class Unreadable extends Error {}
    // With a timeout the attempt runs in the guarded loop; without one, the first attempt takes the fast path.
    for (const timeout of [-1, 5000]) {
      for (const sync of [false, true]) {
        const clock = new VirtualClock();
        let n = 0;
        const op = sync ? () => ++n : async () => ++n;
        const errors: unknown[] = [];
        const outcome = await drive(
          clock,
          retry(op, {
            clock,
            ...steady,
            timeout,
            maxRetries: 3,
            retryOn: Unreadable,
            retryOnResult: (v) => {
              if (v < 3) throw new Unreadable(`cannot read ${v}`);
              return false;
            },
            onError: (e) => errors.push(e),
          }),
        );
        expect(outcome, `timeout ${timeout}, sync ${sync}`).toEqual({ ok: true, value: 3 });
        expect(errors.map((e) => (e as Error).message)).toEqual(["cannot read 1", "cannot read 2"]);
        expect(clock.now()).toBe(2000);
      }
    }
  });

  it("an options object reused across calls is read afresh when it changes", async () => {
    const clock = new VirtualClock();
    let calls = 0;
    const failing = async () => {
      calls += 1;
      throw new Transient("down");
    };
    const options: Parameters<typeof retry>[1] = { clock, ...steady, maxRetries: 1 };
    for (const [maxRetries, expected] of [
      [1, 2],
      [1, 2],
      [4, 5],
      [0, 1],
    ] as const) {
      options.maxRetries = maxRetries;
      calls = 0;
      await drive(clock, retry(failing, options));
      expect(calls, `maxRetries ${maxRetries}`).toBe(expected);
    }
    options.scale = -1;
    await expect(retry(failing, options)).rejects.toThrow("scale must be a finite number > 0; got -1");
    delete options.scale;
    (options as Record<string, unknown>).maxRetrys = 2;
    await expect(retry(failing, options)).rejects.toThrow("options.maxRetrys");
  });

  it("maxElapsed never begins a sleep that would end past it", async () => {
    const clock = new VirtualClock();
    const { operation, seen } = scripted(Array.from({ length: 10 }, () => new Transient("x")));
    const result = await drive(
      clock,
      retry(operation, { clock, ...steady, maxRetries: -1, maxElapsed: 2500 }),
    );
    expect(result.ok).toBe(false);
    // Attempts at 0, 1000 and 2000 ms; a fourth would need a sleep ending at 3000 > 2500.
    expect(seen.map((s) => s.elapsed)).toEqual([0, 1000, 2000]);
    expect(clock.now()).toBe(2000);
  });

  it("maxElapsed: a sleep ending exactly at the limit is allowed; 0 means no retry; negative means none", async () => {
    const clock = new VirtualClock();
    const exact = scripted(Array.from({ length: 10 }, () => new Transient("x")));
    await drive(clock, retry(exact.operation, { clock, ...steady, maxRetries: -1, maxElapsed: 3000 }));
    expect(exact.seen.map((s) => s.elapsed)).toEqual([0, 1000, 2000, 3000]);

    const zero = scripted([new Transient("x")]);
    await drive(clock, retry(zero.operation, { clock, backoff: backoff.none(), maxElapsed: 0 }));
    expect(zero.seen).toHaveLength(1);

    const unlimited = scripted(Array.from({ length: 50 }, () => new Transient("x")));
    const result = await drive(
      clock,
      retry(unlimited.operation, { clock, ...steady, maxRetries: -1, maxElapsed: -1 }),
    );
    expect(result.ok).toBe(true);
  });

  it("decorrelated jitter may reset x, but never the count held against maxRetries", async () => {
    const clock = new VirtualClock();
    const { operation, seen } = scripted(Array.from({ length: 20 }, () => new Transient("x")));
    // random() < 0.5 always: every retry "forgets" (x := 0), so every delay is the base.
    const options = {
      clock,
      maxRetries: 5,
      backoff: backoff.exponential({ base: 100 }),
      jitter: jitter.decorrelated(),
      random: () => 0.25,
    };
    const result = await drive(clock, retry(operation, options));
    expect(result.ok).toBe(false);
    expect(seen).toHaveLength(6);
    expect(seen.map((s) => s.elapsed)).toEqual([0, 100, 200, 300, 400, 500]);
  });

  it("is deterministic under a seeded random", async () => {
    const run = async () => {
      const clock = new VirtualClock();
      const { operation, seen } = scripted(Array.from({ length: 6 }, () => new Transient("x")));
      await drive(clock, retry(operation, { clock, maxRetries: 6, random: seededRandom(99) }));
      return seen.map((s) => s.elapsed);
    };
    const first = await run();
    expect(await run()).toEqual(first);
    expect(new Set(first).size).toBe(7);
  });

  it("a timed-out attempt counts as a retryable TimeoutError by default", async () => {
    const clock = new VirtualClock();
    let calls = 0;
    const op = () => {
      calls += 1;
      return calls === 1 ? new Promise<string>(() => {}) : Promise.resolve("late but fine");
    };
    const errors: unknown[] = [];
    const result = await drive(
      clock,
      retry(op, { clock, ...steady, timeout: 50, onError: (e) => errors.push(e) }),
    );
    expect(result).toEqual({ ok: true, value: "late but fine" });
    expect(errors).toHaveLength(1);
    expect(errors[0]).toBeInstanceOf(TimeoutError);
    expect((errors[0] as TimeoutError).timeout).toBe(50);
  });
});

describe("retryReport", () => {
  it("tells why a call ended with an error, without touching the error", async () => {
    const clock = new VirtualClock();
    const cases: [Record<string, unknown>, unknown[], string, number, number][] = [
      [{ maxRetries: 2 }, [new Transient("a"), new Transient("b"), new Transient("c")], "retries", 3, 2000],
      [
        { maxRetries: -1, maxElapsed: 1500 },
        [new Transient("a"), new Transient("b"), new Transient("c")],
        "elapsed",
        2,
        1000,
      ],
      [{ retryOn: RangeError }, [new Transient("a")], "not-retryable", 1, 0],
      [{}, [new Transient("a"), new PermanentError(new Transient("b"))], "permanent", 2, 1000],
    ];
    for (const [extra, errors, reason, attempts, elapsed] of cases) {
      const { operation } = scripted(errors);
      const result = await drive(clock, retry(operation, { clock, ...steady, ...extra }));
      expect(result.ok).toBe(false);
      const error = (result as { error: Error }).error;
      expect(Object.keys(error)).toEqual([]);
      // The operation takes no time: all of it was slept.
      expect(retryReport(error)).toEqual({ reason, attempts, elapsed, idle: elapsed });
    }
    expect(retryReport(new Error("unrelated"))).toBeUndefined();
    expect(retryReport("a string")).toBeUndefined();
  });
});

describe("wrap", () => {
  it("is seed 000's access wrapper: passes the context and the arguments, and validates once", async () => {
    const clock = new VirtualClock();
    const calls: [number, string, number][] = [];
    const add = wrap(
      async (ctx, a: string, b: number) => {
        calls.push([ctx.attempt, a, b]);
        if (ctx.attempt < 2) throw new Transient("first fails");
        return `${a}${b}`;
      },
      { clock, ...steady },
    );
    expect(await drive(clock, add("x", 1))).toEqual({ ok: true, value: "x1" });
    expect(await drive(clock, add("y", 2))).toEqual({ ok: true, value: "y2" });
    expect(calls).toEqual([
      [1, "x", 1],
      [2, "x", 1],
      [1, "y", 2],
      [2, "y", 2],
    ]);
  });

  it("each wrapped call starts fresh (seed 000's new_access)", async () => {
    const clock = new VirtualClock();
    let failures = 2;
    const op = wrap(
      async () => {
        if (failures-- > 0) throw new Transient("x");
        return "ok";
      },
      { clock, ...steady, maxRetries: 2 },
    );
    expect(await drive(clock, op())).toEqual({ ok: true, value: "ok" });
    failures = 2;
    // Had the count carried over from the first call, this one would run out.
    expect(await drive(clock, op())).toEqual({ ok: true, value: "ok" });
  });
});
