// What exponential-backoff's users reach for: delayFirstAttempt (wait the first delay before the first
// attempt).
import { backOff } from "exponential-backoff";
import fc from "fast-check";
import {
  backoff,
  delays,
  fromConfig,
  jitter,
  OptionError,
  type RetryOptions,
  retry,
  retryReport,
  seededRandom,
  steps,
} from "robustly";
import { VirtualClock } from "robustly/testing";
import { afterEach, describe, expect, it, vi } from "vitest";
import { retried } from "../support/drive.js";

/** When each attempt began, on a new virtual clock, for an operation failing `failures` times. */
async function attemptTimes(failures: number, options: RetryOptions): Promise<number[]> {
  const times: number[] = [];
  await retried(({ clock }) => {
    times.push(clock.now());
    if (times.length <= failures) throw new Error("down");
    return "done";
  }, options);
  return times;
}

describe("delayFirstAttempt", () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it("waits the first delay before the first attempt; the retries go on from the next one", async () => {
    const times = await attemptTimes(2, {
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
          const ours = await attemptTimes(failures, {
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
    const seen: [number, number][] = [];
    const announced: number[] = [];
    const error = new Error("down");
    const result = await retried(
      ({ retries, elapsed }) => {
        seen.push([retries, elapsed]);
        throw error;
      },
      {
        delayFirstAttempt: true,
        maxRetries: 2,
        backoff: backoff.constant({ base: 1000 }),
        jitter: jitter.none(),
        onRetry: ({ retries }) => announced.push(retries),
      },
    );
    expect(result).toEqual({ ok: false, error });
    expect(seen).toEqual([
      [0, 0],
      [1, 1000],
      [2, 2000],
    ]);
    expect(announced).toEqual([0, 1]);
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
        // No jitter: a full-jitter draw below 1/60 would have made the attempt within the first second.
        jitter: jitter.none(),
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

describe("delays() previews delayFirstAttempt", () => {
  it("the first entry is the wait before the first attempt, then each retry's, as retry() sleeps them", async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer(), async (seed) => {
        const options: RetryOptions = {
          delayFirstAttempt: true,
          maxRetries: 3,
          backoff: backoff.exponential({ base: 100, max: 5000 }),
          jitter: jitter.full(),
        };
        const clock = new VirtualClock();
        const starts: number[] = [];
        const call = retry(
          () => {
            starts.push(clock.now());
            throw new Error("down");
          },
          { ...options, clock, random: seededRandom(seed) },
        ).catch(() => undefined);
        await clock.runAll();
        await call;
        const waits = starts.map((t, i) => t - (i === 0 ? 0 : (starts[i - 1] as number)));
        expect(waits).toEqual(delays({ ...options, random: seededRandom(seed) }, 4));
      }),
      { seed: 0x16, numRuns: 50 },
    );
  });
});
