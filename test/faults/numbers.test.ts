// Numbers at the edges: delays that overflow, timers longer than a timer can hold, -0.
import fc from "fast-check";
import { backoff, jitter, MAX_TIMER_DELAY, retry, systemClock, TimeoutError } from "robustly";
import { seededRandom } from "robustly/testing";
import { afterEach, describe, expect, it, vi } from "vitest";
import { drive, VirtualClock } from "../support/drive.js";

const uncapped = {
  exponential: (m: number) =>
    backoff.exponential({ base: 1000, max: Number.POSITIVE_INFINITY, multiplier: m }),
  linear: () => backoff.linear({ max: Number.POSITIVE_INFINITY }),
  fibonacci: () => backoff.fibonacci({ max: Number.POSITIVE_INFINITY }),
  polynomial: () => backoff.polynomial({ max: Number.POSITIVE_INFINITY, exponents: [2, 5] }),
};
const jitters = {
  none: () => jitter.none(),
  full: () => jitter.full(),
  equal: () => jitter.equal(),
  decorrelated: () => jitter.decorrelated(),
  decorrelatedAws: () => jitter.decorrelatedAws(),
  decorrelatedPolly: () => jitter.decorrelatedPolly(),
  normal: () => jitter.normal({ sigma: 0.5 }),
  normalStddev: () => jitter.normal({ stddev: 1e12 }),
  proportional: () => jitter.proportional({ spread: 1, maxSpread: Number.POSITIVE_INFINITY }),
};

describe("every delay a strategy returns is finite and at most 2^31 − 1 ms", () => {
  it("an uncapped backoff's delay, for any x up to 10^9", () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...Object.keys(uncapped)),
        fc.double({ min: 1, max: 50, noNaN: true }),
        fc.integer({ min: 0, max: 1e9 }),
        (name, m, x) => {
          const b = name === "exponential" ? uncapped.exponential(m) : uncapped[name as "linear"]();
          const d = b.delay(x, seededRandom(x));
          expect(Number.isFinite(d)).toBe(true);
          expect(d).toBeGreaterThanOrEqual(0);
          expect(d).toBeLessThanOrEqual(MAX_TIMER_DELAY);
        },
      ),
    );
  });

  it("any jitter over an uncapped backoff, for any x up to 10^9 (an exponential overflows after ~1017 retries)", () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...Object.keys(uncapped)),
        fc.constantFrom(...Object.keys(jitters)),
        fc.oneof(fc.integer({ min: 1000, max: 1100 }), fc.integer({ min: 0, max: 1e9 })),
        fc.integer(),
        fc.option(fc.double({ min: 0, max: 1e300, noNaN: true }), { nil: undefined }),
        (b, j, x, seed, previous) => {
          const strategy = b === "exponential" ? uncapped.exponential(2) : uncapped[b as "linear"]();
          const answer = jitters[j as "none"]().apply({
            backoff: strategy,
            retries: x,
            random: seededRandom(seed),
            previous,
          });
          const d = typeof answer === "number" ? answer : answer.delay;
          expect(Number.isFinite(d), `${b} × ${j} at x = ${x}: ${d}`).toBe(true);
          expect(d).toBeGreaterThanOrEqual(0);
          expect(d).toBeLessThanOrEqual(MAX_TIMER_DELAY);
        },
      ),
    );
  });

  it("a call that retries 1100 times with normal jitter over an uncapped exponential backoff does not fail with NaN", async () => {
    const clock = new VirtualClock();
    let attempts = 0;
    const result = await drive(
      clock,
      retry(
        () => {
          attempts += 1;
          if (attempts <= 1100) throw new Error("not yet");
          return "done";
        },
        {
          clock,
          random: seededRandom(3),
          maxRetries: -1,
          backoff: backoff.exponential({ base: 1, max: Number.POSITIVE_INFINITY }),
          jitter: jitter.normal(),
        },
      ),
    );
    expect(result).toEqual({ ok: true, value: "done" });
  });
});

describe("timers longer than a timer can hold", () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it("the real clock's timer of 2^31 ms does not fire early, at 2^31 − 1 ms, but when its time comes", () => {
    vi.useFakeTimers();
    let fired = 0;
    systemClock.setTimer(2 ** 31 + 1000, () => {
      fired += 1;
    });
    vi.advanceTimersByTime(MAX_TIMER_DELAY);
    expect(fired).toBe(0);
    vi.advanceTimersByTime(1000);
    expect(fired).toBe(0);
    vi.advanceTimersByTime(1);
    expect(fired).toBe(1);
    expect(vi.getTimerCount()).toBe(0);
  });

  it("a long timer cancelled after its first link leaves no timer behind", () => {
    vi.useFakeTimers();
    let fired = 0;
    const cancel = systemClock.setTimer(3 * MAX_TIMER_DELAY, () => {
      fired += 1;
    });
    vi.advanceTimersByTime(MAX_TIMER_DELAY + 5);
    cancel();
    expect(vi.getTimerCount()).toBe(0);
    vi.advanceTimersByTime(3 * MAX_TIMER_DELAY);
    expect(fired).toBe(0);
  });
});

describe("-0", () => {
  it("timeout: -0 is the number it is, 0: every attempt times out at once", async () => {
    const clock = new VirtualClock();
    const result = await drive(
      clock,
      retry(() => new Promise<never>(() => {}), { clock, timeout: -0, maxRetries: 0 }),
    );
    expect(result.ok).toBe(false);
    expect((result as { error: unknown }).error).toBeInstanceOf(TimeoutError);
    expect((result as { error: TimeoutError }).error.timeout).toBe(0);
  });
});
