// The iterator form: for await (const attempt of attempts(options)) { try { …; break } catch (e) { attempt.failure(e) } }
import { type Attempt, attempts, backoff, jitter, OptionError, PermanentError, retryReport } from "robustly";
import { VirtualClock } from "robustly/testing";
import { describe, expect, it } from "vitest";
import { drive } from "../support/drive.js";

const steady = { backoff: backoff.constant({ base: 1000 }), jitter: jitter.none() };

class Flaky extends Error {}

/** Runs `body` in a loop over `attempts(options)` on `clock` until the loop ends; what it ended with. */
async function loop(
  clock: VirtualClock,
  options: Parameters<typeof attempts>[0],
  body: (attempt: Attempt) => Promise<"break" | "continue"> | "break" | "continue",
): Promise<{ ok: true; value: number[] } | { ok: false; error: unknown }> {
  const times: number[] = [];
  const run = async () => {
    for await (const attempt of attempts({ clock, ...options })) {
      times.push(clock.now());
      if ((await body(attempt)) === "break") break;
    }
    return times;
  };
  return drive(clock, run());
}

describe("attempts()", () => {
  it("a break after success ends the loop; a failure's wait happens on the next iteration", async () => {
    const clock = new VirtualClock();
    const seen: [number, number, number][] = [];
    const result = await loop(clock, steady, (attempt) => {
      seen.push([attempt.attempt, attempt.retries, attempt.retriesLeft]);
      try {
        if (attempt.attempt < 3) throw new Flaky("not yet");
        return "break";
      } catch (error) {
        attempt.failure(error);
        return "continue";
      }
    });
    expect(result).toEqual({ ok: true, value: [0, 1000, 2000] });
    expect(seen).toEqual([
      [1, 0, 3],
      [2, 1, 2],
      [3, 2, 1],
    ]);
    expect(clock.pending).toBe(0);
  });

  it("when the policy gives up, the loop throws the last error, with its report", async () => {
    const clock = new VirtualClock();
    const errors: Error[] = [];
    const result = await loop(clock, { ...steady, maxRetries: 2 }, (attempt) => {
      const error = new Flaky(`failure ${attempt.attempt}`);
      errors.push(error);
      attempt.failure(error);
      return "continue";
    });
    expect(result).toEqual({ ok: false, error: errors[2] });
    expect(retryReport(errors[2])).toEqual({ reason: "retries", attempts: 3, elapsed: 2000, idle: 2000 });
  });

  it("an attempt that reports no failure succeeded: the loop ends without a break too, and onSuccess hears it", async () => {
    const clock = new VirtualClock();
    const successes: unknown[] = [];
    const result = await loop(
      clock,
      { ...steady, onSuccess: (value, stats) => successes.push(value, stats.attempts) },
      () => "continue",
    );
    expect(result).toEqual({ ok: true, value: [0] });
    expect(successes).toEqual([undefined, 1]);
  });

  it("success(value) hands onSuccess the value", async () => {
    const clock = new VirtualClock();
    const successes: unknown[] = [];
    await loop(clock, { onSuccess: (value) => successes.push(value) }, (attempt) => {
      attempt.success(42);
      return "break";
    });
    expect(successes).toEqual([42]);
  });

  it("retryOn, rules and PermanentError decide as they do for retry()", async () => {
    const clock = new VirtualClock();
    const fatal = new TypeError("bug");
    const notRetried = await loop(clock, { ...steady, retryOn: Flaky }, (attempt) => {
      attempt.failure(attempt.attempt === 1 ? new Flaky("a") : fatal);
      return "continue";
    });
    expect(notRetried).toEqual({ ok: false, error: fatal });
    expect(retryReport(fatal)?.reason).toBe("not-retryable");
    const cause = new Error("404");
    const permanent = await loop(clock, steady, (attempt) => {
      attempt.failure(new PermanentError(cause));
      return "continue";
    });
    expect(permanent).toEqual({ ok: false, error: cause });
  });

  it("the caller's signal stops a wait at once with its reason, and leaves no timer", async () => {
    const clock = new VirtualClock();
    const controller = new AbortController();
    const reason = new Error("shutting down");
    const run = (async () => {
      for await (const attempt of attempts({
        clock,
        ...steady,
        backoff: backoff.constant({ base: 60_000 }),
        signal: controller.signal,
      })) {
        attempt.failure(new Flaky("down"));
      }
    })().catch((e: unknown) => e);
    await clock.advance(1000);
    controller.abort(reason);
    expect(await run).toBe(reason);
    expect(clock.pending).toBe(0);
  });

  it("the attempt's signal aborts with the caller's, during the attempt", async () => {
    const clock = new VirtualClock();
    const controller = new AbortController();
    const reason = new Error("bye");
    const result = await loop(clock, { ...steady, signal: controller.signal }, (attempt) => {
      controller.abort(reason);
      expect(attempt.signal.aborted).toBe(true);
      attempt.failure(attempt.signal.reason);
      return "continue";
    });
    expect(result).toEqual({ ok: false, error: reason });
  });

  it("a break after a failure leaves the loop at once and cancels the wait", async () => {
    const clock = new VirtualClock();
    const gaveUp: string[] = [];
    const result = await loop(
      clock,
      { ...steady, onGiveUp: ({ reason }) => gaveUp.push(reason) },
      (attempt) => {
        attempt.failure(new Flaky("down"));
        return "break";
      },
    );
    expect(result).toEqual({ ok: true, value: [0] });
    expect(gaveUp).toEqual(["aborted"]);
    expect(clock.pending).toBe(0);
  });

  it("bail ends the loop with its error on the next iteration", async () => {
    const clock = new VirtualClock();
    const denied = new Error("403");
    const result = await loop(clock, steady, (attempt) => {
      attempt.bail(denied);
      attempt.failure(new Flaky("whatever"));
      return "continue";
    });
    expect(result).toEqual({ ok: false, error: denied });
  });

  it("a timed-out attempt is a failure whatever the body reports later", async () => {
    const clock = new VirtualClock();
    const reasons: unknown[] = [];
    const result = await loop(clock, { ...steady, timeout: 500 }, async (attempt) => {
      if (attempt.attempt === 1) {
        await clock.sleep(600);
        reasons.push(attempt.signal.reason);
        attempt.success("too late");
        return "continue";
      }
      return "break";
    });
    expect(result).toEqual({ ok: true, value: [0, 1500] });
    expect((reasons[0] as Error).name).toBe("TimeoutError");
  });

  it("checks its options at once: those of retry() but for hedge and chaos", () => {
    expect(() => attempts({ maxRetries: 1.5 })).toThrow(OptionError);
    expect(() => attempts({ hedge: { delay: 10 } } as never)).toThrow(
      /^attempts\.hedge must be one of the known options/,
    );
    expect(() => attempts({ retryOnResult: 5 } as never)).toThrow(/retryOnResult/);
  });

  it("retryOnResult judges the value each attempt reports with success(value): another attempt, or the end", async () => {
    const clock = new VirtualClock();
    const values: number[] = [];
    const successes: unknown[] = [];
    const result = await loop(
      clock,
      {
        ...steady,
        retryOnResult: (value) => (value as number) < 3,
        onSuccess: (value) => successes.push(value),
      },
      (attempt) => {
        values.push(attempt.attempt);
        attempt.success(attempt.attempt);
        return "continue";
      },
    );
    expect(result).toEqual({ ok: true, value: [0, 1000, 2000] });
    expect(values).toEqual([1, 2, 3]);
    expect(successes).toEqual([3]);
  });

  it("retryOnResult: when retries run out the loop ends without an error, as retry() answers with the last value", async () => {
    const clock = new VirtualClock();
    const gaveUp: unknown[] = [];
    const result = await loop(
      clock,
      {
        ...steady,
        maxRetries: 1,
        retryOnResult: () => true,
        onGiveUp: ({ outcome, reason }) => gaveUp.push(outcome, reason),
      },
      (attempt) => {
        attempt.success(`value ${attempt.attempt}`);
        return "continue";
      },
    );
    expect(result).toEqual({ ok: true, value: [0, 1000] });
    expect(gaveUp).toEqual(["value 2", "retries"]);
  });

  it("a break right after success(value) waits for the verdict: onSuccess hears an accepted value, a value to retry stops the loop", async () => {
    const clock = new VirtualClock();
    const successes: unknown[] = [];
    const retried: number[] = [];
    const run = async (value: number) => {
      let made = 0;
      for await (const attempt of attempts({
        clock,
        ...steady,
        retryOnResult: (v) => v === 0,
        onSuccess: (v) => successes.push(v),
        onRetry: ({ attempt: n }) => retried.push(n),
      })) {
        made += 1;
        attempt.success(value);
        break;
      }
      return made;
    };
    expect((await drive(clock, run(7))).ok).toBe(true);
    expect(successes).toEqual([7]);
    expect(await drive(clock, run(0))).toEqual({ ok: true, value: 1 });
    expect(successes).toEqual([7]);
    expect(clock.pending).toBe(0);
  });

  it("starts nothing until the loop asks for the first attempt", async () => {
    const clock = new VirtualClock();
    const iterator = attempts({ clock });
    expect(clock.pending).toBe(0);
    await iterator.return?.();
    expect(await iterator.next()).toEqual({ done: true, value: undefined });
  });
});
