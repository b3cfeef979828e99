// A shared store an enemy writes to: windows beyond any use, values robustly never wrote, and state that is
// well-formed but could not have been written by any process of the fleet.
import { Redis } from "ioredis";
import {
  backoff,
  type CircuitBreaker,
  circuitBreaker,
  MAX_TIMER_DELAY,
  memoryStore,
  OptionError,
  ResponsiveBackoff,
  type RetryBudget,
  retryBudget,
  type Store,
} from "robustly";
import { redisStore } from "robustly/redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MAX_SKEW } from "../../src/store/replica.js";
import { breakerState } from "../support/breaker.js";
import { VirtualClock } from "../support/drive.js";
import { faultyStore } from "../support/faulty-store.js";
import { type RedisServer, startRedisServer } from "../support/redis-server.js";

type Policy = CircuitBreaker | RetryBudget | ResponsiveBackoff;
type Corrupt = { found: string; reason: string };

/** The policies that share their state, each as made on `store` under key "k", and the key it keeps. */
const kinds = {
  breaker: { key: "breaker:k", make: (o: object) => circuitBreaker(o) },
  "ratio budget": { key: "budget-ratio:k", make: (o: object) => retryBudget(o) },
  "token budget": {
    key: "budget-tokens:k",
    make: (o: object) => retryBudget({ maxTokens: 10, tokenRatio: 1, ...o }),
  },
  "responsive backoff": { key: "responsive:k", make: (o: object) => new ResponsiveBackoff(o) },
} as const;

/** The store-corrupt events `policy` emits, as they come. */
function corruptions(policy: Policy): Corrupt[] {
  const seen: Corrupt[] = [];
  (policy as CircuitBreaker).on("store-corrupt", (event) => seen.push(event));
  return seen;
}

/** A responsive backoff's shared state with `changes` over a fresh one. */
function responsiveState(changes: object, raisedAt: number | null = null): object {
  return { state: { ...new ResponsiveBackoff().snapshot(), ...changes }, raisedAt };
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
    expect(make).toThrow(OptionError);
    expect(make).toThrow(`${name}: window must be a finite number in [1, 2147483647]; got`);
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

describe("a value in the store that robustly did not write", () => {
  const garbage: [string, unknown][] = [
    ["a string", "v=abc"],
    ["a number", 42],
    ["an array", [1, 2, 3]],
    ["null", null],
    ["an empty object", {}],
    ["a huge string", "x".repeat(1_000_000)],
    ["a huge array", Array.from({ length: 100_000 }, (_, i) => i)],
    ["wrong types", { state: "closed", openUntil: "0", kind: "ratio", tokens: "9", current: "1" }],
    ["missing fields", { state: "open", kind: "tokens", holds: [] }],
    ["another policy's state", { kind: "ratio", requests: [], retries: [], bucketAt: 0 }],
  ];
  const cases = Object.keys(kinds).flatMap((kind) =>
    garbage.map(([what, value]) => [kind, what, value] as const),
  );

  it.each(cases)(
    "%s: %s is reported once as store-corrupt, overwritten with a fresh state, at the normal sync rate",
    async (kind, _what, value) => {
      const clock = new VirtualClock(1_000_000);
      const { key, make } = kinds[kind as keyof typeof kinds];
      const inner = await storeHolding(clock, key, value);
      const store = faultyStore(inner);
      const policy = make({ store, key: "k", clock });
      const events = corruptions(policy);
      await policy.ready();
      expect(policy.shared).toBe(true);
      const calls = store.calls;
      await clock.advance(1000);
      // syncEvery 100: ten exchanges a second, one compare-and-set each.
      expect(store.calls - calls).toBeLessThanOrEqual(10);
      expect(events).toHaveLength(1);
      const [event] = events as [Corrupt];
      expect(event.found.length).toBeLessThanOrEqual(200);
      expect(event.reason.length).toBeLessThanOrEqual(200);
      // What was found, cut short.
      expect(JSON.stringify(value).startsWith(event.found.replace(/…$/, ""))).toBe(true);
      expect((await inner.read(key)).value).not.toEqual(value);
      // The next process to read it finds this policy's state.
      const next = make({ store: inner, key: "k", clock });
      const later = corruptions(next);
      await next.ready();
      expect(later).toEqual([]);
      await Promise.all([policy.close(), next.close()]);
      expect(clock.pending).toBe(0);
    },
  );
});

describe("a value robustly did not write, written again and again", () => {
  it("is reported as found, and the exchanges back off below the normal sync rate instead of fighting it", async () => {
    const clock = new VirtualClock();
    const inner = memoryStore({ clock });
    // Another program writes its own value under the breaker's key every 10 ms, over whatever is there.
    let writing = true;
    const scribble = async () => {
      const found = await inner.read("breaker:k");
      await inner.write("breaker:k", found.version, "v=abc", 60_000);
      if (writing) clock.setTimer(10, () => void scribble());
    };
    await scribble();
    const store = faultyStore(inner);
    const breaker = circuitBreaker({ store, key: "k", clock });
    const events = corruptions(breaker);
    await breaker.ready();
    await clock.advance(5000);
    // Five seconds at syncEvery 100 would be 50 exchanges: fewer, each of at most a read and a write.
    expect(store.calls).toBeLessThanOrEqual(50);
    expect(events.length).toBeGreaterThanOrEqual(3);
    expect(events.length).toBeLessThanOrEqual(store.calls);
    expect(events.every((e) => e.found === '"v=abc"')).toBe(true);
    writing = false;
    await clock.advance(2000);
    const quiet = events.length;
    await clock.advance(2000);
    expect(events.length).toBe(quiet);
    expect(breaker.shared).toBe(true);
    await breaker.close();
    expect(clock.pending).toBe(0);
  });
});

describe("state that is well-formed but no process of the fleet could have written", () => {
  it("a breaker open until 1e300 lets a probe through once its own longest openFor (and the skew) has passed", async () => {
    const clock = new VirtualClock(1_000_000);
    const store = await storeHolding(clock, "breaker:k", breakerState({ state: "open", openUntil: 1e300 }));
    const options = { openFor: backoff.exponential({ base: 100, max: 1000 }), store, key: "k", clock };
    const breaker = circuitBreaker(options);
    await breaker.ready();
    expect(breaker.state).toBe("open");
    expect(breaker.snapshot().openUntil).toBeLessThanOrEqual(clock.now() + 1000 + MAX_SKEW);
    await clock.advance(1000 + MAX_SKEW);
    expect(breaker.state).toBe("half-open");
    breaker.acquire();
    breaker.success();
    expect(breaker.state).toBe("closed");
    // The fleet hears of it at the next exchange.
    await clock.advance(100);
    const other = circuitBreaker(options);
    await other.ready();
    expect(other.state).toBe("closed");
    await Promise.all([breaker.close(), other.close()]);
  });

  it("a breaker whose openFor has no maximum is open at most the longest timer (2^31 − 1 ms) after reading 1e300", async () => {
    const clock = new VirtualClock(1_000_000);
    const store = await storeHolding(clock, "breaker:k", breakerState({ state: "open", openUntil: 1e300 }));
    const breaker = circuitBreaker({ openFor: (x: number) => 1000 * 2 ** x, store, key: "k", clock });
    await breaker.ready();
    expect(breaker.state).toBe("open");
    expect(breaker.snapshot().openUntil).toBeLessThanOrEqual(clock.now() + MAX_TIMER_DELAY + MAX_SKEW);
    await breaker.close();
  });

  /** A failure-ratio breaker (0.5 of at least 10 calls over 10 s) on a store that holds `window`. */
  async function ratioBreakerOn(window: number[][]) {
    const clock = new VirtualClock(1_000_000);
    const store = await storeHolding(clock, "breaker:k", breakerState({ window }));
    const options = { failureRatio: 0.5, minimumThroughput: 10, window: 10_000, store, key: "k", clock };
    const breaker = circuitBreaker(options);
    await breaker.ready();
    /** `successes` calls that succeed, then one that fails. */
    const calls = (successes: number) => {
      for (let i = 0; i <= successes; i++) {
        breaker.acquire();
        if (i < successes) breaker.success();
        else breaker.failure();
      }
    };
    return { clock, breaker, calls };
  }

  it("a breaker's bucket dated 1e300 leaves the window as any other, one window (and the skew) later", async () => {
    const { clock, breaker, calls } = await ratioBreakerOn([[1e300, 1000, 1000]]);
    await clock.advance(10_000 + MAX_SKEW);
    calls(20);
    expect(breaker.state).toBe("closed"); // 1 failure in 21 calls
    await breaker.close();
  });

  it("a breaker's bucket with more failures than calls counts no more failures than calls", async () => {
    const { breaker, calls } = await ratioBreakerOn([[1_000_000, 0, 1e6]]);
    calls(9);
    expect(breaker.state).toBe("closed"); // 1 failure in 10 calls
    await breaker.close();
  });

  it.each([
    [
      "a ratio budget's window dated 1e300 refuses no longer than one window (and the skew)",
      "budget-ratio:k",
      { kind: "ratio", requests: Array(10).fill(0), retries: [1e6, ...Array(9).fill(0)], bucketAt: 1e300 },
      { ratio: 0.5, minPerSecond: 10, window: 10_000 },
    ],
    [
      "a token budget's hold dated 1e300 is released as any hold not renewed for max(10 × syncEvery, 10 s)",
      "budget-tokens:k",
      { kind: "tokens", tokens: 10, holds: [[1e300, 1e6]] },
      { maxTokens: 10, tokenRatio: 1 },
    ],
  ])("%s", async (_name, key, value, options) => {
    const clock = new VirtualClock(1_000_000);
    const store = await storeHolding(clock, key, value);
    const budget = retryBudget({ ...options, store, key: "k", clock });
    await budget.ready();
    await clock.advance(10_000 + MAX_SKEW + 200);
    expect(budget.tryRetry()).toBe(true);
    await budget.close();
  });

  it("a responsive backoff's delay of 1e300 is taken as its own max", async () => {
    const clock = new VirtualClock(1_000_000);
    const store = await storeHolding(clock, "responsive:k", responsiveState({ current: 1e300 }));
    const pace = new ResponsiveBackoff({ max: 60_000, store, key: "k", clock });
    await pace.ready();
    expect(pace.success()).toBeLessThanOrEqual(60_000);
    expect(pace.metrics().current).toBeLessThanOrEqual(60_000);
    await pace.close();
  });

  it("a responsive backoff made without options, as its example shows, starts fresh (its state the one a store starts from)", () => {
    expect(new ResponsiveBackoff().snapshot()).toEqual(new ResponsiveBackoff({}).snapshot());
  });

  it("a responsive backoff's delay never exceeds its max, not even when a shrinking step's spread draws above it", () => {
    // So that a delay above max read from the store can only have been written by no process of the fleet.
    const pace = new ResponsiveBackoff({
      base: 100,
      max: 1000,
      spread: 1,
      maxSpread: 1e6,
      downThreshold: 1,
      random: () => 0.999,
    });
    for (let i = 0; i < 10; i++) pace.failure();
    expect(pace.metrics().current).toBe(1000);
    expect(pace.success()).toBeLessThanOrEqual(1000);
    expect(pace.metrics().current).toBeLessThanOrEqual(1000);
  });

  it("a responsive backoff's run of successes beyond downThreshold still lets the delay shrink", async () => {
    const clock = new VirtualClock(1_000_000);
    const store = await storeHolding(
      clock,
      "responsive:k",
      responsiveState({ current: 1000, successes: 1e6 }),
    );
    const pace = new ResponsiveBackoff({ base: 100, spread: 0, downThreshold: 10, store, key: "k", clock });
    await pace.ready();
    for (let i = 0; i < 10; i++) pace.success();
    expect(pace.metrics().current).toBe(900);
    await pace.close();
  });

  it("a responsive backoff's last raise dated 1e300 does not stop coalesce from raising the delay", async () => {
    const clock = new VirtualClock(1_000_000);
    const store = await storeHolding(clock, "responsive:k", responsiveState({ current: 1000 }, 1e300));
    const pace = new ResponsiveBackoff({ base: 100, spread: 0, coalesce: true, store, key: "k", clock });
    await pace.ready();
    await clock.advance(1000 + MAX_SKEW);
    expect(pace.failure()).toBe(1500);
    await pace.close();
  });
});

describe("junk in Redis, written by a raw client", () => {
  let server: RedisServer;
  let client: Redis;
  let keys = 0;

  beforeAll(async () => {
    server = await startRedisServer();
    client = new Redis(server.url);
  });

  afterAll(async () => {
    await client?.quit();
    await server?.stop();
  });

  /** `inner`, counting its calls, with a way to wait until none is under way. */
  function counted(inner: Store) {
    const pending = new Set<Promise<unknown>>();
    let calls = 0;
    const track = <T>(operation: Promise<T>) => {
      calls += 1;
      pending.add(operation);
      const done = () => pending.delete(operation);
      operation.then(done, done);
      return operation;
    };
    return {
      name: inner.name,
      read: (key: string) => track(inner.read(key)),
      write: (key: string, version: number, value: unknown, expire: number) =>
        track(inner.write(key, version, value, expire)),
      close: () => inner.close(),
      get calls() {
        return calls;
      },
      /** Resolves once no call is under way (a call's answer may start another). */
      async settled() {
        while (pending.size > 0) await Promise.allSettled([...pending]);
      },
    };
  }

  const junk: [string, (key: string) => Promise<unknown>][] = [
    ["a version that is not one", (key) => client.hset(key, "v", "abc")],
    ["a version beyond 2^53", (key) => client.hset(key, "v", "99999999999999999999", "d", "{}")],
    ["a value that is not JSON", (key) => client.hset(key, "v", "5", "d", "v=abc")],
    ["JSON that is not a breaker's state", (key) => client.hset(key, "v", "5", "d", '{"state":"ajar"}')],
    ["a value of 1 MB", (key) => client.hset(key, "v", "5", "d", JSON.stringify("x".repeat(1_000_000)))],
    ["a string where a hash belongs", (key) => client.set(key, "v=abc")],
    ["a list where a hash belongs", (key) => client.rpush(key, "a", "b")],
  ];

  it.each(junk)(
    "%s: reported once, overwritten, and no more store calls than the normal sync rate",
    async (_what, write) => {
      const prefix = `junk-${++keys}:`;
      await write(`${prefix}breaker:k`);
      const store = counted(redisStore({ client, prefix }));
      const clock = new VirtualClock();
      const breaker = circuitBreaker({ consecutiveFailures: 2, store, key: "k", clock });
      const events = corruptions(breaker);
      const downs: unknown[] = [];
      breaker.on("store-down", ({ error }) => downs.push(error));
      await breaker.ready();
      await store.settled();
      const calls = store.calls;
      // One second of exchanges on the virtual clock, each waited for on the real server.
      for (let i = 0; i < 10; i++) {
        await clock.advance(100);
        await store.settled();
      }
      expect(downs).toEqual([]);
      expect(store.calls - calls).toBeLessThanOrEqual(10);
      expect(events).toHaveLength(1);
      expect((events[0] as Corrupt).found.length).toBeLessThanOrEqual(200);
      expect(breaker.shared).toBe(true);
      expect(await client.type(`${prefix}breaker:k`)).toBe("hash");
      const held = JSON.parse((await client.hget(`${prefix}breaker:k`, "d")) as string) as { state: string };
      expect(held.state).toBe("closed");
      // The fleet shares the key again: an opening here reaches a process that starts now.
      breaker.acquire();
      breaker.failure();
      breaker.acquire();
      breaker.failure();
      await clock.advance(100);
      await store.settled();
      const other = circuitBreaker({ consecutiveFailures: 2, store, key: "k", clock });
      const otherEvents = corruptions(other);
      await other.ready();
      expect(other.state).toBe("open");
      expect(otherEvents).toEqual([]);
      await Promise.all([breaker.close(), other.close()]);
      await store.settled();
      expect(clock.pending).toBe(0);
    },
    30_000,
  );
});
