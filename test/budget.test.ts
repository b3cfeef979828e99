import fc from "fast-check";
import { backoff, jitter, OptionError, retry, retryBudget, retryReport } from "robustly";
import { VirtualClock } from "robustly/testing";
import { describe, expect, it } from "vitest";
import { drive } from "./support/drive.js";

describe("retryBudget, ratio and floor over a window", () => {
  it("allows retries up to ratio × requests + minPerSecond × window, and counts each one", () => {
    const clock = new VirtualClock();
    const budget = retryBudget({ ratio: 0.1, minPerSecond: 1, window: 10_000, clock });
    for (let i = 0; i < 100; i++) budget.request();
    // 0.1 × 100 + 1 × 10 = 20 retries in the window.
    const granted = Array.from({ length: 25 }, () => budget.tryRetry()).filter(Boolean).length;
    expect(granted).toBe(20);
  });

  it("forgets requests and retries that leave the window", async () => {
    const clock = new VirtualClock();
    const budget = retryBudget({ ratio: 0, minPerSecond: 1, window: 1000, clock });
    expect(budget.tryRetry()).toBe(true);
    expect(budget.tryRetry()).toBe(false);
    await clock.advance(1000);
    expect(budget.tryRetry()).toBe(true);
  });

  it("never lets retries exceed the bound, whatever the traffic", () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.integer({ min: 0, max: 200 }), fc.integer({ min: 0, max: 50 })), {
          maxLength: 30,
        }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        fc.integer({ min: 0, max: 5 }),
        (steps, ratio, minPerSecond) => {
          const clock = new VirtualClock();
          const budget = retryBudget({ ratio, minPerSecond, window: 10_000, clock });
          let requests = 0;
          let granted = 0;
          for (const [n, asks] of steps) {
            for (let i = 0; i < n; i++) budget.request();
            requests += n;
            for (let i = 0; i < asks; i++) if (budget.tryRetry()) granted += 1;
            // All within one window (no time passes).
            expect(granted).toBeLessThanOrEqual(ratio * requests + minPerSecond * 10 + 1e-9);
          }
        },
      ),
    );
  });
});

describe("retryBudget, tokens", () => {
  it("starts full; each failure costs 1, each success returns tokenRatio; no retry at or below half", () => {
    const budget = retryBudget({ maxTokens: 10, tokenRatio: 0.5 });
    expect(budget.available).toBe(true);
    for (let i = 0; i < 4; i++) budget.failure();
    expect(budget.snapshot()).toEqual({ kind: "tokens", tokens: 6 });
    expect(budget.tryRetry()).toBe(true);
    budget.failure();
    expect(budget.tryRetry()).toBe(false); // 5 is half: refused
    budget.success();
    expect(budget.tryRetry()).toBe(true); // 5.5
    for (let i = 0; i < 30; i++) budget.success();
    expect(budget.snapshot()).toEqual({ kind: "tokens", tokens: 10 });
  });

  it("restores a state and refuses one of the other flavour", () => {
    const budget = retryBudget({ maxTokens: 4, tokenRatio: 1 });
    budget.restore({ kind: "tokens", tokens: 2 });
    expect(budget.available).toBe(false);
    expect(() => budget.restore({ kind: "ratio", requests: [], retries: [], bucketAt: 0 })).toThrow(
      OptionError,
    );
  });
});

describe("retry with a budget", () => {
  it("ends the call with the last error when the budget refuses a retry, says so, and emits an event", async () => {
    const clock = new VirtualClock();
    const budget = retryBudget({ maxTokens: 4, tokenRatio: 0.1 });
    const refused: unknown[] = [];
    const subscription = budget.on("refused", (e) => refused.push(e));
    let attempts = 0;
    const error = new Error("down");
    const result = await drive(
      clock,
      retry(
        () => {
          attempts += 1;
          throw error;
        },
        { clock, budget, maxRetries: 10, backoff: backoff.none(), jitter: jitter.none() },
      ),
    );
    // 4 tokens: after 2 failures 2 are left (half), so the second retry is refused.
    expect(result).toEqual({ ok: false, error });
    expect(attempts).toBe(2);
    expect(retryReport(error)).toMatchObject({ reason: "budget", attempts: 2 });
    expect(refused).toEqual([{ state: { kind: "tokens", tokens: 2 } }]);
    subscription.dispose();
  });

  it("under a total outage keeps the retries of many calls near the ratio", async () => {
    const clock = new VirtualClock();
    const budget = retryBudget({ ratio: 0.1, minPerSecond: 0, window: 60_000, clock });
    let attempts = 0;
    const calls = Array.from({ length: 200 }, () =>
      retry(
        () => {
          attempts += 1;
          throw new Error("down");
        },
        { clock, budget, maxRetries: 3, backoff: backoff.none(), jitter: jitter.none() },
      ).catch(() => undefined),
    );
    await clock.runAll();
    await Promise.all(calls);
    // Without the budget: 800 attempts (4 per call). With it: 200 + about 20.
    expect(attempts).toBeGreaterThanOrEqual(200);
    expect(attempts).toBeLessThanOrEqual(220);
  });
});
