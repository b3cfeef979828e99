/**
 * What a user relies on from the retry policy's decisions, at their boundaries: the give-up reason of
 * `maxElapsed: 0`, and each kind of answer a `delayFrom` may give (a least wait with the delay on top, an
 * exact wait, nothing or garbage for the policy's own delay; Infinity capped as every delay is).
 */
import { backoff, type RetryOptions, retry, retryReport } from "robustly";
import { VirtualClock } from "robustly/testing";
import { describe, expect, it } from "vitest";

/** The times of each attempt of a call that always fails, under `options`, on a virtual clock. */
async function attemptTimes(options: RetryOptions): Promise<{ times: number[]; error: unknown }> {
  const clock = new VirtualClock();
  const times: number[] = [];
  const failure = new Error("down");
  const call = retry(
    () => {
      times.push(clock.now());
      throw failure;
    },
    { budget: false, ...options, clock },
  ).catch((error: unknown) => error);
  await clock.runAll();
  return { times, error: await call };
}

const every100 = { backoff: backoff.constant({ base: 100 }), jitter: (d: number) => d, maxRetries: 2 };

describe("maxElapsed: 0", () => {
  it("allows the first attempt only, and gives up saying the time ran out", async () => {
    const { times, error } = await attemptTimes({ maxElapsed: 0, maxRetries: 5 });
    expect(times).toEqual([0]);
    expect(retryReport(error)).toMatchObject({ reason: "elapsed", attempts: 1 });
  });

  it("gives up on the retries first when maxRetries is 0 as well", async () => {
    const { error } = await attemptTimes({ maxElapsed: 0, maxRetries: 0 });
    expect(retryReport(error)).toMatchObject({ reason: "retries", attempts: 1 });
  });
});

describe("a delayFrom's answer", () => {
  const answers: [string, () => unknown, number[]][] = [
    ["a number: that least wait, and the delay on top", () => 50, [0, 150, 300]],
    ["{ exactly }: that wait alone", () => ({ exactly: 30 }), [0, 30, 60]],
    ["{ exactly: 0 }: no wait", () => ({ exactly: 0 }), [0, 0, 0]],
    ["0: the delay alone", () => 0, [0, 100, 200]],
    ["undefined: the policy's delay", () => undefined, [0, 100, 200]],
    ["null: the policy's delay", () => null, [0, 100, 200]],
    ["NaN: the policy's delay", () => Number.NaN, [0, 100, 200]],
    ["a negative number: the policy's delay", () => -5, [0, 100, 200]],
    ["{ exactly: -1 }: the policy's delay", () => ({ exactly: -1 }), [0, 100, 200]],
    ["a string: the policy's delay", () => "50", [0, 100, 200]],
  ];
  it.each(answers)("%s", async (_, delayFrom, expected) => {
    const { times } = await attemptTimes({ ...every100, delayFrom: delayFrom as never });
    expect(times).toEqual(expected);
  });

  it("Infinity waits the longest a timer can, as any delay is capped", async () => {
    const { times } = await attemptTimes({
      ...every100,
      maxRetries: 1,
      delayFrom: () => Number.POSITIVE_INFINITY,
    });
    expect(times).toEqual([0, 2 ** 31 - 1]);
  });

  it("is told the failed attempt's error and the delay the policy worked out", async () => {
    const seen: unknown[] = [];
    await attemptTimes({
      ...every100,
      maxRetries: 1,
      delayFrom: (error, context) => {
        seen.push((error as Error).message, context.delay, context.rule);
        return undefined;
      },
    });
    expect(seen).toEqual(["down", 100, -1]);
  });
});
