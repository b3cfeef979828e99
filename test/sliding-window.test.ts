/**
 * The rate limiter's sliding window (`rateLimiter({ kind: "sliding-window", rate, per })`): what a user
 * relies on. At most `rate` calls start in any `per` ms, exactly; a refusal's `retryAfter` is enough, to
 * the millisecond, at any clock value; a queued call starts when it was told; a clock that reads NaN or
 * goes back neither blocks it nor lets more through; bad options fail at once, naming the option.
 */
import fc from "fast-check";
import { memoryStore, OptionError, RateLimitedError, rateLimiter } from "robustly";
import { VirtualClock } from "robustly/testing";
import { describe, expect, it } from "vitest";
import { handClock } from "./support/drive.js";

function refusal(call: () => unknown): RateLimitedError | undefined {
  try {
    call();
  } catch (error) {
    if (error instanceof RateLimitedError) return error;
    throw error;
  }
  return undefined;
}

describe("a sliding window", () => {
  it("never lets more than rate calls start in any span shorter than per (property)", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 8 }),
        fc.integer({ min: 1, max: 3000 }),
        fc.integer({ min: 0, max: 20 }),
        fc.array(fc.tuple(fc.integer({ min: 0, max: 700 }), fc.boolean()), { minLength: 1, maxLength: 120 }),
        async (rate, per, queue, gaps) => {
          const clock = new VirtualClock();
          const limiter = rateLimiter({ kind: "sliding-window", rate, per, queue, clock });
          const starts: number[] = [];
          const calls: Promise<unknown>[] = [];
          for (const [gap, abort] of gaps) {
            await clock.advance(gap);
            const controller = new AbortController();
            calls.push(
              limiter
                .execute(() => {
                  starts.push(clock.now());
                }, controller.signal)
                .catch(() => {}),
            );
            if (abort) controller.abort();
          }
          await clock.runAll();
          await Promise.all(calls);
          for (let i = 0; i + rate < starts.length; i++) {
            // The call rate places later started at least per ms after this one.
            expect((starts[i + rate] as number) - (starts[i] as number)).toBeGreaterThanOrEqual(per);
          }
          expect(clock.pending).toBe(0);
          expect(limiter.queued).toBe(0);
        },
      ),
      { numRuns: 200 },
    );
  });

  it("starts calls at these times: a table", async () => {
    const clock = new VirtualClock();
    const limiter = rateLimiter({ kind: "sliding-window", rate: 3, per: 1000, queue: 10, clock });
    const starts: number[] = [];
    const call = () => limiter.execute(() => starts.push(clock.now()));
    const first = [call(), call()];
    await clock.advance(400);
    const more = [call(), call(), call(), call(), call()];
    await clock.runAll();
    await Promise.all([...first, ...more]);
    // Two at 0, one at 400; then each as the start three places before it turns 1000 ms old.
    expect(starts).toEqual([0, 0, 400, 1000, 1000, 1400, 2000]);
  });

  it("says in retryAfter exactly when a call may come back, at any clock value, however fractional (property)", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 5 }),
        fc.double({ min: 1, max: 100_000, noNaN: true }),
        fc.double({ min: 0, max: 1e13, noNaN: true }),
        fc.array(fc.double({ min: 0, max: 500, noNaN: true }), { minLength: 1, maxLength: 30 }),
        (rate, per, start, gaps) => {
          const clock = handClock(start);
          const limiter = rateLimiter({ kind: "sliding-window", rate, per, clock });
          for (const gap of gaps) {
            clock.t += gap;
            const refused = refusal(() => limiter.acquire(() => {}));
            if (refused === undefined) continue;
            expect(refused.retryAfter).toBeGreaterThan(0);
            // At most per, rounded up (and a ms more when a start was recorded at its due time, a few
            // units in the last place after the clock's reading).
            expect(refused.retryAfter).toBeLessThanOrEqual(Math.ceil(per) + 1);
            // Coming back after retryAfter, the call starts.
            clock.t += refused.retryAfter;
            expect(refusal(() => limiter.acquire(() => {}))).toBeUndefined();
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it("starts each queued call when its queued event said, second rounds included, and refuses one that would wait past maxWait", async () => {
    const clock = new VirtualClock(1e12 + 0.3);
    const limiter = rateLimiter({
      kind: "sliding-window",
      rate: 2,
      per: 300,
      queue: 20,
      maxWait: 1000,
      clock,
    });
    const told: number[] = [];
    limiter.on("queued", ({ wait }) => told.push(wait));
    const waited: number[] = [];
    const calls = Array.from({ length: 8 }, () => limiter.execute(() => {}));
    limiter.on("acquired", (e) => waited.push(e.waited));
    // 2 at once, then 2 every 300 ms: the 8th call's turn is 900 ms away, the 9th's 1200 ms, past maxWait.
    const refused = await limiter.execute(() => {}).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(RateLimitedError);
    expect((refused as RateLimitedError).retryAfter).toBe(1200);
    await clock.runAll();
    await Promise.all(calls);
    expect(told).toEqual([300, 300, 600, 600, 900, 900]);
    expect(waited.map(Math.round)).toEqual([300, 300, 600, 600, 900, 900]);
  });

  it("gives a queued call's place back when its start throws, so the next one starts then", async () => {
    const clock = new VirtualClock();
    const errors: unknown[] = [];
    const limiter = rateLimiter({
      kind: "sliding-window",
      rate: 1,
      per: 1000,
      queue: 5,
      clock,
      onCallbackError: (error) => errors.push(error),
    });
    limiter.acquire(() => {});
    const starts: number[] = [];
    limiter.acquire(() => {
      throw new Error("start failed");
    });
    limiter.acquire(() => starts.push(clock.now()));
    await clock.runAll();
    expect(errors).toHaveLength(1);
    expect(starts).toEqual([1000]);
  });
});

describe("a sliding window's clock", () => {
  it("is not blocked by a reading that is NaN: it counts as the last good one", () => {
    const clock = handClock(0);
    const limiter = rateLimiter({ kind: "sliding-window", rate: 2, per: 1000, clock });
    limiter.acquire(() => {});
    clock.t = Number.NaN;
    limiter.acquire(() => {});
    expect(refusal(() => limiter.acquire(() => {}))?.retryAfter).toBe(1000);
    clock.t = 1000;
    expect(refusal(() => limiter.acquire(() => {}))).toBeUndefined();
    expect(refusal(() => limiter.acquire(() => {}))).toBeUndefined();
  });

  it("lets no more through when the clock goes back a little, and keeps its starts in time order", () => {
    const clock = handClock(10_000);
    const limiter = rateLimiter({ kind: "sliding-window", rate: 2, per: 1000, clock });
    limiter.acquire(() => {});
    clock.t = 10_500;
    limiter.acquire(() => {});
    // Back by 400 ms: both starts are still in the window, the first until the clock reads 11,000.
    clock.t = 10_100;
    expect(refusal(() => limiter.acquire(() => {}))?.retryAfter).toBe(900);
    clock.t = 11_000;
    expect(refusal(() => limiter.acquire(() => {}))).toBeUndefined();
    // The start just made counts from the newest before it (10,500), not from a time behind it.
    clock.t = 10_900;
    expect(refusal(() => limiter.acquire(() => {}))?.retryAfter).toBe(600);
    clock.t = 11_500;
    expect(refusal(() => limiter.acquire(() => {}))).toBeUndefined();
  });

  it("forgets its starts when the clock goes back by more than a window, and then says retryAfter from the new time", () => {
    const clock = handClock(1e9);
    const limiter = rateLimiter({ kind: "sliding-window", rate: 3, per: 1000, clock });
    for (let i = 0; i < 3; i++) limiter.acquire(() => {});
    clock.t = 0;
    for (let i = 0; i < 3; i++) expect(refusal(() => limiter.acquire(() => {}))).toBeUndefined();
    expect(refusal(() => limiter.acquire(() => {}))?.retryAfter).toBe(1000);
    expect(limiter.tokens).toBe(0);
    clock.t = 600;
    expect(limiter.tokens).toBe(0);
    clock.t = 1000;
    expect(limiter.tokens).toBe(3);
  });
});

describe("a sliding window's options", () => {
  it("name the option, the value and what is allowed", () => {
    expect(() => rateLimiter({ kind: "sliding-window", rate: 2.5 })).toThrow(
      /rateLimiter: rate must be a whole number of calls in \[1, 100000\] with kind "sliding-window"; got 2.5/,
    );
    expect(() => rateLimiter({ kind: "sliding-window", rate: 200_000 })).toThrow(OptionError);
    expect(() => rateLimiter({ kind: "sliding-window", rate: 5, burst: 10 })).toThrow(
      /rateLimiter: burst must be given only with kind "token-bucket"/,
    );
    expect(() => rateLimiter({ kind: "sliding-window", rate: 5, store: memoryStore(), key: "k" })).toThrow(
      /rateLimiter: store must be given only with kind "token-bucket"/,
    );
    expect(() => rateLimiter({ kind: "leaky-bucket" as "sliding-window", rate: 5 })).toThrow(
      /kind must be "token-bucket" or "sliding-window"/,
    );
  });
});

describe("regression: defects a fault hunt found in the sliding window", () => {
  it("at clock values near 1e15 the rounding slack (3.5 ms) lets every call through when per is small", () => {
    const clock = handClock(1e15);
    const limiter = rateLimiter({ kind: "sliding-window", rate: 1, per: 2, clock });
    let started = 0;
    for (let i = 0; i < 10; i++) refusal(() => limiter.acquire(() => started++));
    expect(started).toBe(1); // observed: 10
  });

  it("at 1e15 a second call starts 997 ms after the first with rate 1 per 1000 ms", () => {
    const clock = handClock(1e15);
    const limiter = rateLimiter({ kind: "sliding-window", rate: 1, per: 1000, clock });
    limiter.acquire(() => {});
    clock.t = 1e15 + 997;
    expect(refusal(() => limiter.acquire(() => {}))).toBeInstanceOf(RateLimitedError); // observed: started
  });

  it("a start callback that throws after a nested acquire takes back the nested call's start, not its own", () => {
    const clock = handClock(0);
    const limiter = rateLimiter({ kind: "sliding-window", rate: 2, per: 1000, clock });
    const starts: number[] = [];
    expect(() =>
      limiter.acquire(() => {
        clock.t = 500; // a slow synchronous start: time moves on
        limiter.acquire(() => starts.push(clock.t)); // this one runs, at 500
        throw new Error("outer start failed"); // this one ran nothing
      }),
    ).toThrow("outer start failed");
    clock.t = 1000;
    refusal(() => limiter.acquire(() => starts.push(clock.t)));
    refusal(() => limiter.acquire(() => starts.push(clock.t)));
    // At most 2 starts in any 1000 ms: observed [500, 1000, 1000], three in [500, 1500).
    expect(starts).toEqual([500, 1000]);
  });

  it("a queued call whose turn is past maxWait (by the 2^31-1 cap) is queued, told the wrong wait, and starts later", async () => {
    const per = 2 ** 31 - 1;
    const clock = new VirtualClock();
    const limiter = rateLimiter({ kind: "sliding-window", rate: 1, per, queue: 5, maxWait: per, clock });
    const told: number[] = [];
    limiter.on("queued", ({ wait }) => told.push(wait));
    const starts: number[] = [];
    const calls = [0, 1, 2].map(() =>
      limiter.execute(() => starts.push(clock.now())).catch((e: unknown) => e),
    );
    await clock.runAll();
    const results = await Promise.all(calls);
    // The third call's turn is 2 × per away, past maxWait: it should be refused up front.
    // Observed: queued, told wait 2147483647, started at 4294967294.
    expect(results[2]).toBeInstanceOf(RateLimitedError);
    expect(starts).toEqual([0, per]);
    expect(told).toEqual([per]);
  });

  it("says a retryAfter that is enough and at most 2^31 - 1 ms after a step back, however long per is (property)", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 2 ** 31 - 1 }),
        fc.integer({ min: 0, max: 2 ** 31 - 1 }),
        (per, back) => {
          const clock = handClock(1e10);
          const limiter = rateLimiter({ kind: "sliding-window", rate: 1, per, clock });
          limiter.acquire(() => {});
          clock.t -= back;
          const refused = refusal(() => limiter.acquire(() => {}));
          if (refused === undefined) return;
          expect(refused.retryAfter).toBeLessThanOrEqual(2 ** 31 - 1);
          clock.t += refused.retryAfter;
          expect(refusal(() => limiter.acquire(() => {}))).toBeUndefined();
        },
      ),
      { numRuns: 300 },
    );
    // The case that broke: per 2^31 − 1, back by 1e8 ms. The log is forgotten (a start kept would
    // expire past what a retryAfter may say), and the call starts.
    const clock = handClock(1e9);
    const limiter = rateLimiter({ kind: "sliding-window", rate: 1, per: 2 ** 31 - 1, clock });
    limiter.acquire(() => {});
    clock.t = 1e9 - 1e8;
    expect(refusal(() => limiter.acquire(() => {}))).toBeUndefined();
  });

  it("a call whose turn comes within a fractional maxWait is refused (the wait is rounded up first)", () => {
    const clock = handClock(0.3);
    const limiter = rateLimiter({
      kind: "sliding-window",
      rate: 1,
      per: 1000,
      queue: 5,
      maxWait: 999.5,
      clock,
    });
    limiter.acquire(() => {}); // at 0.3
    clock.t = 1; // its turn: 1000.3, 999.3 ms away, within maxWait 999.5
    expect(refusal(() => limiter.acquire(() => {}))).toBeUndefined(); // observed: RateLimitedError(1000)
  });

  it("a queued call starts up to 1 ms before the wait its queued event said", async () => {
    const clock = new VirtualClock(0.3);
    const limiter = rateLimiter({ kind: "sliding-window", rate: 1, per: 1000, queue: 5, clock });
    const told: number[] = [];
    limiter.on("queued", ({ wait }) => told.push(wait));
    const starts: number[] = [];
    const first = limiter.execute(() => starts.push(clock.now()));
    await clock.advance(0.7);
    const asked = clock.now();
    const second = limiter.execute(() => starts.push(clock.now()));
    await clock.runAll();
    await Promise.all([first, second]);
    // Observed: told 1000, started 999.3 ms after it asked.
    expect((starts[1] as number) - asked).toBe(told[0]);
  });
});
