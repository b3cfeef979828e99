// What p-retry's users reach for: shouldConsumeRetry (a failure that retries without using up a retry)
// and retriesLeft in the attempt's context.
import fc from "fast-check";
import { backoff, jitter, MAX_FREE_RETRIES, OptionError, pipeline, retryReport, steps } from "robustly";
import { VirtualClock } from "robustly/testing";
import { describe, expect, it } from "vitest";
import { retried } from "../support/drive.js";

class RateLimited extends Error {}
class Transient extends Error {}

const none = jitter.none();

/** An operation that fails with `errors[i]` on attempt i+1 while there are any, then returns "done". */
function scripted(errors: unknown[], seen: { attempt: number; retriesLeft: number; elapsed: number }[] = []) {
  const operation = (ctx: { attempt: number; retriesLeft: number; elapsed: number }) => {
    seen.push({ attempt: ctx.attempt, retriesLeft: ctx.retriesLeft, elapsed: ctx.elapsed });
    const error = errors[ctx.attempt - 1];
    if (error !== undefined) throw error;
    return "done";
  };
  return operation;
}

describe("shouldConsumeRetry", () => {
  it("a failure it calls free retries without using up maxRetries", async () => {
    const errors = [
      new RateLimited(),
      new RateLimited(),
      new RateLimited(),
      new Transient(),
      new Transient(),
    ];
    const result = await retried(scripted(errors), {
      maxRetries: 1,
      backoff: backoff.constant({ base: 100 }),
      jitter: none,
      shouldConsumeRetry: (error) => !(error instanceof RateLimited),
    });
    expect(result).toEqual({ ok: false, error: errors[4] });
    expect(retryReport(errors[4])).toMatchObject({ reason: "retries", attempts: 5 });
  });

  it("a free retry waits the delay of the next counted one: the backoff does not advance", async () => {
    const delays: number[] = [];
    const errors = [new Transient(), new RateLimited(), new RateLimited(), new Transient(), new Transient()];
    await retried(scripted(errors), {
      maxRetries: 2,
      backoff: backoff.exponential({ base: 100 }),
      jitter: none,
      shouldConsumeRetry: (error) => !(error instanceof RateLimited),
      onRetry: ({ delay }) => delays.push(delay),
    });
    expect(delays).toEqual([100, 200, 200, 200]);
  });

  it("context.retries counts every retry, retriesLeft only the counted ones", async () => {
    const seen: { attempt: number; retriesLeft: number; elapsed: number }[] = [];
    const retries: number[] = [];
    await retried(
      (ctx) => {
        retries.push(ctx.retries);
        return scripted([new Transient(), new RateLimited(), new Transient()], seen)(ctx);
      },
      {
        maxRetries: 2,
        backoff: backoff.none(),
        shouldConsumeRetry: (error) => !(error instanceof RateLimited),
      },
    );
    expect(retries).toEqual([0, 1, 2, 3]);
    expect(seen.map((s) => s.retriesLeft)).toEqual([2, 1, 1, 0]);
  });

  it(`at most ${MAX_FREE_RETRIES} retries of a call are free; after that each one counts`, async () => {
    let attempts = 0;
    const error = new RateLimited();
    const result = await retried(
      () => {
        attempts += 1;
        throw error;
      },
      // 102 retries at once: past the default budget's 100 a window, which p-retry has not.
      { maxRetries: 2, backoff: backoff.none(), shouldConsumeRetry: () => false, budget: false },
    );
    expect(result.ok).toBe(false);
    expect(attempts).toBe(MAX_FREE_RETRIES + 3);
    expect(retryReport(error)?.reason).toBe("retries");
  });

  it("free retries still count against maxElapsed", async () => {
    const seen: { attempt: number; retriesLeft: number; elapsed: number }[] = [];
    const errors = Array.from({ length: 20 }, () => new RateLimited());
    const result = await retried(scripted(errors, seen), {
      maxRetries: 0,
      maxElapsed: 3500,
      backoff: backoff.constant({ base: 1000 }),
      jitter: none,
      shouldConsumeRetry: () => false,
    });
    expect(result.ok).toBe(false);
    expect(seen.map((s) => s.elapsed)).toEqual([0, 1000, 2000, 3000]);
    expect(retryReport(errors[3])?.reason).toBe("elapsed");
  });

  it("is asked only of errors that are retried at all, and may answer with a promise", async () => {
    const asked: unknown[] = [];
    const fatal = new TypeError("bug");
    const result = await retried(scripted([new RateLimited(), fatal]), {
      maxRetries: 0,
      backoff: backoff.none(),
      retryOn: RateLimited,
      shouldConsumeRetry: async (error) => {
        asked.push(error);
        return false;
      },
    });
    expect(result).toEqual({ ok: false, error: fatal });
    expect(asked).toHaveLength(1);
    expect(retryReport(fatal)?.reason).toBe("not-retryable");
  });

  it("one that throws or rejects ends the call with that error, as p-retry's does", async () => {
    const broken = new Error("predicate down");
    for (const shouldConsumeRetry of [
      () => {
        throw broken;
      },
      () => Promise.reject(broken),
    ]) {
      const result = await retried(scripted([new Transient(), new Transient()]), {
        backoff: backoff.none(),
        shouldConsumeRetry,
      });
      expect(result).toEqual({ ok: false, error: broken });
    }
  });

  it("is a function or an OptionError at once", () => {
    expect(() => steps.retry({ shouldConsumeRetry: 1 as never })).toThrow(OptionError);
    expect(() => steps.retry({ shouldConsumeRetry: 1 as never })).toThrow(
      /^shouldConsumeRetry must be a function; got 1$/,
    );
  });
});

describe("retriesLeft", () => {
  it("counts down from maxRetries, attempt by attempt, whatever the limit", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 0, max: 8 }),
        fc.integer({ min: 0, max: 10 }),
        async (max, failures) => {
          const seen: { attempt: number; retriesLeft: number; elapsed: number }[] = [];
          const errors = Array.from({ length: failures }, () => new Transient());
          await retried(scripted(errors, seen), { maxRetries: max, backoff: backoff.none() });
          expect(seen.map((s) => s.retriesLeft)).toEqual(seen.map((_, i) => max - i));
        },
      ),
    );
  });

  it("is Infinity with no limit, and outside any retry step", async () => {
    const clock = new VirtualClock();
    const seen: { attempt: number; retriesLeft: number; elapsed: number }[] = [];
    await retried(scripted([new Transient()], seen), { maxRetries: -1, backoff: backoff.none() });
    expect(seen.map((s) => s.retriesLeft)).toEqual([Number.POSITIVE_INFINITY, Number.POSITIVE_INFINITY]);
    const outside = await pipeline(steps.timeout(1000)).execute(({ retriesLeft }) => retriesLeft, { clock });
    expect(outside).toBe(Number.POSITIVE_INFINITY);
  });

  it("is the nearest retry step's, also when the call has a signal (the loop) or a timeout", async () => {
    const seen: { attempt: number; retriesLeft: number; elapsed: number }[] = [];
    await retried(scripted([new Transient(), new Transient()], seen), {
      maxRetries: 4,
      timeout: 1000,
      signal: new AbortController().signal,
      backoff: backoff.none(),
    });
    expect(seen.map((s) => s.retriesLeft)).toEqual([4, 3, 2]);
  });
});
