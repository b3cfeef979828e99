// What exponential-backoff's users reach for: delayFirstAttempt (wait the first delay before the first
// attempt).
import { backOff } from "exponential-backoff";
import fc from "fast-check";
import { backoff, fromConfig, jitter, OptionError, retry, retryReport, steps } from "robustly";
import { VirtualClock } from "robustly/testing";
import { afterEach, describe, expect, it, vi } from "vitest";
import { drive } from "../support/drive.js";

/** When each attempt began on `clock`, for an operation failing `failures` times. */
async function attemptTimes(
  clock: VirtualClock,
  failures: number,
  options: Parameters<typeof retry>[1],
): Promise<number[]> {
  const times: number[] = [];
  await drive(
    clock,
    retry(
      () => {
        times.push(clock.now());
        if (times.length <= failures) throw new Error("down");
        return "done";
      },
      { clock, ...options },
    ),
  );
  return times;
}

describe("delayFirstAttempt", () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it("waits the first delay before the first attempt; the retries go on from the next one", async () => {
    const clock = new VirtualClock();
    const times = await attemptTimes(clock, 2, {
      delayFirstAttempt: true,
      backoff: backoff.exponential({ base: 100 }),
      jitter: jitter.none(),
    });
    expect(times).toEqual([100, 300, 700]);
  });

  it("starts its attempts when exponential-backoff's delayFirstAttempt does", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 1000 }),
        fc.integer({ min: 1, max: 4 }),
        fc.integer({ min: 0, max: 5 }),
        async (base, multiplier, failures) => {
          vi.useFakeTimers({ now: 0 });
          const theirs: number[] = [];
          const done = backOff(
            async () => {
              theirs.push(Date.now());
              if (theirs.length <= failures) throw new Error("down");
              return "done";
            },
            {
              delayFirstAttempt: true,
              startingDelay: base,
              timeMultiple: multiplier,
              numOfAttempts: 10,
              jitter: "none",
            },
          );
          while (theirs.length <= failures) await vi.advanceTimersToNextTimerAsync();
          await done;
          vi.useRealTimers();
          const ours = await attemptTimes(new VirtualClock(), failures, {
            delayFirstAttempt: true,
            maxRetries: 9,
            backoff: backoff.exponential({ base, multiplier }),
            jitter: jitter.none(),
          });
          expect(ours).toEqual(theirs);
        },
      ),
      { numRuns: 30 },
    );
  });

  it("the wait is not a retry: maxRetries, retries, elapsed and onRetry count from the first attempt", async () => {
    const clock = new VirtualClock();
    const seen: [number, number][] = [];
    const retried: number[] = [];
    const error = new Error("down");
    const result = await drive(
      clock,
      retry(
        ({ retries, elapsed }) => {
          seen.push([retries, elapsed]);
          throw error;
        },
        {
          clock,
          delayFirstAttempt: true,
          maxRetries: 2,
          backoff: backoff.constant({ base: 1000 }),
          jitter: jitter.none(),
          onRetry: ({ retries }) => retried.push(retries),
        },
      ),
    );
    expect(result).toEqual({ ok: false, error });
    expect(seen).toEqual([
      [0, 0],
      [1, 1000],
      [2, 2000],
    ]);
    expect(retried).toEqual([0, 1]);
    expect(retryReport(error)).toMatchObject({ reason: "retries", attempts: 3, elapsed: 2000 });
  });

  it("the caller's abort during the wait ends the call at once, with no attempt made and no timer left", async () => {
    const clock = new VirtualClock();
    const controller = new AbortController();
    let attempts = 0;
    const reasons: unknown[] = [];
    const call = retry(
      () => {
        attempts += 1;
      },
      {
        clock,
        delayFirstAttempt: true,
        signal: controller.signal,
        backoff: backoff.constant({ base: 60_000 }),
        onGiveUp: ({ reason, attempts }) => reasons.push(reason, attempts),
      },
    ).catch((e: unknown) => e);
    await clock.advance(1000);
    const reason = new Error("shutting down");
    controller.abort(reason);
    expect(await call).toBe(reason);
    expect(attempts).toBe(0);
    expect(reasons).toEqual(["aborted", 0]);
    expect(clock.pending).toBe(0);
  });

  it("is false by default, true or false, or an OptionError at once; fromConfig reads it", () => {
    expect(() => steps.retry({ delayFirstAttempt: "yes" as never })).toThrow(OptionError);
    expect(() => steps.retry({ delayFirstAttempt: "yes" as never })).toThrow(
      /^delayFirstAttempt must be true or false; got "yes"$/,
    );
    expect(fromConfig('{ "delayFirstAttempt": true }')).toEqual({ delayFirstAttempt: true });
  });
});
