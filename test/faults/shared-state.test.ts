// A shared store an enemy writes to: windows beyond any use, values robustly never wrote, and state that is
// well-formed but could not have been written by any process of the fleet.
import { circuitBreaker, MAX_TIMER_DELAY, memoryStore, OptionError, retryBudget, type Store } from "robustly";
import { describe, expect, it } from "vitest";
import { VirtualClock } from "../support/drive.js";

function optionError(make: () => unknown): OptionError {
  try {
    make();
  } catch (error) {
    expect(error).toBeInstanceOf(OptionError);
    return error as OptionError;
  }
  throw new Error("no OptionError");
}

/** A breaker's state as `snapshot()` gives it, with `changes` over a closed, empty one. */
function breakerState(changes: object): object {
  return {
    state: "closed",
    openUntil: 0,
    openings: 0,
    consecutiveFailures: 0,
    halfOpenSuccesses: 0,
    window: [],
    ...changes,
  };
}

/** A memory store on `clock` that holds `value` under `key`, as if another process had written it. */
async function storeHolding(clock: VirtualClock, key: string, value: unknown): Promise<Store> {
  const store = memoryStore({ clock });
  await store.write(key, 0, value, 86_400_000);
  return store;
}

describe("a window beyond any use", () => {
  /** 100 000 buckets of one call each, dated within the last `window` ms before `now`. */
  const hugeWindow = (now: number, window: number) =>
    Array.from({ length: 100_000 }, (_, i) => [now - (i * window) / 200_000, 1, 0]);

  it("a breaker whose shared window holds 100 000 buckets decides in bounded time, after a long idle gap too", async () => {
    const window = 1e9;
    const clock = new VirtualClock(2e9);
    const store = await storeHolding(
      clock,
      "breaker:k",
      breakerState({ window: hugeWindow(clock.now(), window) }),
    );
    const options = { failureRatio: 0.5, minimumThroughput: 1e9, window, clock };
    const shared = circuitBreaker({ ...options, store, key: "k", syncEvery: window });
    await shared.ready();
    let start = performance.now();
    for (let i = 0; i < 1000; i++) {
      shared.acquire();
      shared.failure();
    }
    expect(performance.now() - start).toBeLessThan(50);
    await shared.close();
    // The same window taken by restore(), then a decision after twice the window of silence.
    const alone = circuitBreaker(options);
    alone.restore(breakerState({ window: hugeWindow(clock.now(), window) }) as never);
    start = performance.now();
    for (let i = 0; i < 1000; i++) {
      alone.acquire();
      alone.success();
    }
    expect(performance.now() - start).toBeLessThan(50);
    await clock.advance(2 * window);
    start = performance.now();
    alone.acquire();
    alone.failure();
    expect(performance.now() - start).toBeLessThan(50);
    expect(alone.snapshot().window).toEqual([[clock.now(), 1, 1]]);
    expect(clock.pending).toBe(0);
  });

  it.each([
    ["circuitBreaker", () => circuitBreaker({ failureRatio: 0.5, window: 1e300 })],
    ["circuitBreaker", () => circuitBreaker({ failureRatio: 0.5, window: MAX_TIMER_DELAY + 1 })],
    ["retryBudget", () => retryBudget({ ratio: 0.1, window: 1e15 })],
    ["retryBudget", () => retryBudget({ ratio: 0.1, window: 0.5 })],
  ])("%s: a window beyond its documented bounds fails at once naming them", (name, make) => {
    const error = optionError(make);
    expect(error.option).toBe(`${name}: window`);
    expect(error.message).toMatch(/window must be a finite number in \[1, 2147483647\]/);
  });

  it("a window at the maximum works, and a ratio budget's decisions after a long idle gap stay cheap", async () => {
    const clock = new VirtualClock();
    const breaker = circuitBreaker({
      failureRatio: 0.5,
      minimumThroughput: 2,
      window: MAX_TIMER_DELAY,
      clock,
    });
    const budget = retryBudget({ ratio: 0.5, minPerSecond: 0, window: MAX_TIMER_DELAY, clock });
    breaker.acquire();
    breaker.failure();
    budget.request();
    budget.request();
    expect(budget.tryRetry()).toBe(true);
    await clock.advance(MAX_TIMER_DELAY / 2);
    breaker.acquire();
    breaker.failure();
    expect(breaker.state).toBe("open"); // both failures are in the window
    expect(budget.tryRetry()).toBe(false); // 1 of 1 retry spent in the window
    await clock.advance(1e15);
    const start = performance.now();
    for (let i = 0; i < 1000; i++) {
      budget.request();
      budget.tryRetry();
      await clock.advance(1e12);
    }
    expect(performance.now() - start).toBeLessThan(500);
  });
});
