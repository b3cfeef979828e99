// Polly's DelayGenerator: delayFrom(outcome, context) sees the attempt and the strategy's delay, and may
// replace that delay for one retry ({ exactly: ms }) or keep it (undefined).
import { backoff, type DelayContext, jitter, retry, retryReport } from "robustly";
import { VirtualClock } from "robustly/testing";
import { describe, expect, it } from "vitest";
import { drive } from "../support/drive.js";

const steady = { backoff: backoff.exponential({ base: 1000 }), jitter: jitter.none() };

/** Fails `failures` times, then answers "ok". */
function failing(failures: number): () => string {
  let calls = 0;
  return () => {
    calls += 1;
    if (calls <= failures) throw new Error(`failure ${calls}`);
    return "ok";
  };
}

describe("delayFrom's second argument, the attempt context", () => {
  it("receives the attempt, the retries so far, the elapsed time, the rule and the strategy's delay", async () => {
    const clock = new VirtualClock();
    const seen: DelayContext[] = [];
    const result = await drive(
      clock,
      retry(failing(3), {
        ...steady,
        clock,
        delayFrom: (_error, context) => {
          seen.push({ ...context });
          return undefined;
        },
      }),
    );
    expect(result).toEqual({ ok: true, value: "ok" });
    expect(seen).toEqual([
      { attempt: 1, retries: 0, elapsed: 0, delay: 1000, rule: -1 },
      { attempt: 2, retries: 1, elapsed: 1000, delay: 2000, rule: -1 },
      { attempt: 3, retries: 2, elapsed: 3000, delay: 4000, rule: -1 },
    ]);
  });

  it("{ exactly: ms } replaces the strategy's delay for that retry; undefined keeps it", async () => {
    const clock = new VirtualClock();
    const slept: number[] = [];
    await drive(
      clock,
      retry(failing(3), {
        ...steady,
        clock,
        // Polly's example: the first two retries at once, then the backoff.
        delayFrom: (_error, { retries }) => (retries < 2 ? { exactly: 0 } : undefined),
        onRetry: ({ delay }) => slept.push(delay),
      }),
    );
    // The strategy's x still advances under an override: the third retry waits v_2 = 4000.
    expect(slept).toEqual([0, 0, 4000]);
  });

  it("a number is still the least wait with the strategy's delay on top (the one-argument form)", async () => {
    const clock = new VirtualClock();
    const slept: number[] = [];
    await drive(
      clock,
      retry(failing(2), {
        ...steady,
        clock,
        delayFrom: () => 500,
        onRetry: ({ delay }) => slept.push(delay),
      }),
    );
    expect(slept).toEqual([1500, 2500]);
  });

  it("an override counts against maxElapsed and is capped at the longest timer; garbage keeps the strategy's delay", async () => {
    const clock = new VirtualClock();
    const result = await drive(
      clock,
      retry(failing(1), { ...steady, clock, maxElapsed: 5000, delayFrom: () => ({ exactly: 6000 }) }),
    );
    expect(result.ok).toBe(false);
    expect(retryReport((result as { error: unknown }).error)?.reason).toBe("elapsed");

    for (const bad of [Number.NaN, -1, "5", null]) {
      const slept: number[] = [];
      await drive(
        clock,
        retry(failing(1), {
          ...steady,
          clock,
          delayFrom: () => ({ exactly: bad as number }),
          onRetry: ({ delay }) => slept.push(delay),
        }),
      );
      expect(slept, String(bad)).toEqual([1000]);
    }
    const slept: number[] = [];
    await drive(
      clock,
      retry(failing(1), {
        ...steady,
        clock,
        delayFrom: () => ({ exactly: Number.POSITIVE_INFINITY }),
        onRetry: ({ delay }) => slept.push(delay),
      }),
    );
    expect(slept).toEqual([2 ** 31 - 1]);
  });

  it("a rule's delayFrom sees its own index and its own strategy's delay", async () => {
    const clock = new VirtualClock();
    const seen: [number, number][] = [];
    class Busy extends Error {}
    let calls = 0;
    await drive(
      clock,
      retry(
        () => {
          calls += 1;
          if (calls < 3) throw new Busy("busy");
          return "ok";
        },
        {
          ...steady,
          clock,
          rules: [
            {
              when: Busy,
              backoff: backoff.constant({ base: 300 }),
              delayFrom: (_e, { rule, delay }) => {
                seen.push([rule, delay]);
                return undefined;
              },
            },
          ],
        },
      ),
    );
    expect(seen).toEqual([
      [0, 300],
      [0, 300],
    ]);
  });
});
