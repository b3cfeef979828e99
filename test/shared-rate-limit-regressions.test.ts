/**
 * Regression tests for defects a fault hunt found in the rate limiter shared through a store: each failed
 * before its fix.
 */
import {
  type Clock,
  memoryStore,
  RateLimitedError,
  type RateLimiter,
  rateLimiter,
  type Store,
} from "robustly";
import { VirtualClock } from "robustly/testing";
import { describe, expect, it } from "vitest";
import { faultyStore } from "./support/faulty-store.js";

/** Two limiters made alike. */
function pair(make: () => RateLimiter): [RateLimiter, RateLimiter] {
  return [make(), make()];
}

const skewed = (clock: VirtualClock, offset: number): Clock => ({
  now: () => clock.now() + offset,
  setTimer: (ms, cb) => clock.setTimer(ms, cb),
});

describe("regression: a token spent just before an exchange was refilled as if handed back at the exchange before", () => {
  it("a token held since the last exchange and spent just before the next is refilled as if handed back then", async () => {
    const clock = new VirtualClock();
    const store = memoryStore({ clock });
    // 10 a second, a bucket of 1: no two calls may start less than 100 ms apart.
    const l = rateLimiter({ rate: 10, burst: 1, store, key: "api", clock });
    await l.ready();
    const starts: number[] = [];
    const call = () => {
      try {
        l.acquire(() => starts.push(clock.now()));
      } catch (error) {
        expect(error).toBeInstanceOf(RateLimitedError);
      }
    };
    await clock.advance(1);
    call(); // refused, but asks: the exchange at 10 ms grants a token
    await clock.advance(98); // t = 99
    call(); // starts on the token granted at 10 ms
    await clock.advance(12); // t = 111: the exchange at 110 ms granted another
    call();
    // The first started; a second, 12 ms later, would be past burst + rate × T / per = 1.12.
    expect(starts.length).toBeGreaterThanOrEqual(1);
    for (let i = 0; i < starts.length; i++) {
      for (let j = i; j < starts.length; j++) {
        const span = (starts[j] as number) - (starts[i] as number);
        expect(j - i + 1).toBeLessThanOrEqual(1 + (10 * span) / 1000 + 1e-9);
      }
    }
    await l.close();
  });
});

describe("regression: leaving the fleet (close, a store that times out) started a full local bucket on top of what was spent", () => {
  it("close() with calls queued: they are not started on a fresh local bucket beyond the fleet's rate", async () => {
    const clock = new VirtualClock();
    const store = memoryStore({ clock });
    const l = rateLimiter({ rate: 1, per: 60_000, burst: 1, queue: 10, store, key: "api", clock });
    await l.ready();
    const starts: number[] = [];
    const controller = new AbortController();
    const calls = Array.from({ length: 3 }, () =>
      l.execute(() => starts.push(clock.now()), controller.signal).catch((e: unknown) => e),
    );
    await clock.advance(50);
    expect(starts.length).toBe(1); // the one token the fleet had
    const closing = l.close();
    await clock.advance(5000);
    await closing;
    expect(starts).toHaveLength(1); // burst + rate × 5 s / 60 s < 2
    controller.abort(new Error("done"));
    await Promise.all(calls);
    expect(clock.pending).toBe(0);
  });

  it("a store whose answers are now and then later than storeTimeout: the fleet keeps to the rate", async () => {
    const clock = new VirtualClock();
    const store = faultyStore(memoryStore({ clock }), clock);
    let k = 0;
    store.latency = () => (k++ % 4 === 3 ? 300 : 10); // every 4th operation times out (and lands)
    const limiters = [1, 2].map(() =>
      rateLimiter({ rate: 10, burst: 10, store, key: "api", clock, storeTimeout: 250 }),
    );
    await clock.advance(100);
    const starts: number[] = [];
    for (let t = 0; t < 10_000; t += 10) {
      for (const l of limiters)
        try {
          l.acquire(() => starts.push(clock.now()));
        } catch {}
      await clock.advance(10);
    }
    const closing = Promise.all(limiters.map((l) => l.close()));
    await clock.runAll();
    await closing;
    expect(starts.length).toBeLessThanOrEqual(10 + 100); // burst + rate × 10 s
  });
});

describe("regression: calls queued before the first exchange measured maxWait on two clocks", () => {
  it("a process whose clock is 5 s behind the store's: a call queued before the first exchange is not refused at it", async () => {
    const clock = new VirtualClock();
    const store = memoryStore({ clock });
    const l = rateLimiter({
      rate: 10,
      burst: 5,
      queue: 10,
      maxWait: 1000,
      store,
      key: "api",
      clock: skewed(clock, -5000),
    });
    const outcome = l
      .execute(() => "ran")
      .then(
        (v) => v,
        (e: unknown) => e,
      );
    await clock.advance(50);
    expect(await outcome).toBe("ran");
    await l.close();
    expect(clock.pending).toBe(0);
  });

  it("a process whose clock is an hour ahead: a call queued before the first exchange is refused once maxWait has passed", async () => {
    const clock = new VirtualClock();
    const store = memoryStore({ clock });
    // Another process holds the whole burst for 10 s; one token a minute.
    await store.write(
      "rateLimiter:api",
      0,
      { kind: "rate", tokens: 0, at: 0, holders: [["other", 1, 10_000]] },
      86_400_000,
    );
    const l = rateLimiter({
      rate: 1,
      per: 60_000,
      burst: 1,
      queue: 10,
      maxWait: 1000,
      store,
      key: "api",
      clock: skewed(clock, 3_600_000),
    });
    let settledAt = -1;
    const p = l
      .execute(() => "ran")
      .then(
        (v) => {
          settledAt = clock.now();
          return v;
        },
        (e: unknown) => {
          settledAt = clock.now();
          return e;
        },
      );
    for (let t = 0; t < 5000; t += 100) await clock.advance(100);
    expect(l.queued).toBe(0);
    expect(await p).toBeInstanceOf(RateLimitedError);
    expect(settledAt).toBeLessThanOrEqual(1100);
    await l.close();
  });
});

describe('regression: whenStoreDown "closed" queued calls instead of refusing them', () => {
  it('whenStoreDown "closed" with a queue: a call made while the store is down is refused, not queued', async () => {
    const clock = new VirtualClock();
    const store = faultyStore(memoryStore({ clock }), clock);
    const l = rateLimiter({ rate: 10, queue: 5, store, key: "api", clock, whenStoreDown: "closed" });
    await l.ready();
    store.fault = "reject";
    await clock.advance(200);
    expect(l.shared).toBe(false);
    let outcome: unknown = "pending";
    const call = l
      .execute(() => "ran")
      .then(
        (v) => (outcome = v),
        (e: unknown) => (outcome = e),
      );
    for (let t = 0; t < 60_000; t += 1000) await clock.advance(1000);
    expect(outcome).toBeInstanceOf(RateLimitedError);
    store.fault = "none";
    await clock.advance(2000);
    await call;
    await l.close();
  });
});

describe("regression: retryAfter went past 2^31 - 1 while the store was down", () => {
  it("retryAfter <= 2^31 - 1 while the store is down (closed, large syncEvery)", async () => {
    const clock = new VirtualClock();
    const store = faultyStore(memoryStore({ clock }), clock);
    // A syncEvery past what a timer can wait is refused at once, naming it.
    expect(() =>
      rateLimiter({ rate: 10, store, key: "api", clock, whenStoreDown: "closed", syncEvery: 1e10 }),
    ).toThrow(/rateLimiter: syncEvery must be .*2147483647/);
    const l = rateLimiter({
      rate: 10,
      store,
      key: "api",
      clock,
      whenStoreDown: "closed",
      syncEvery: 2 ** 31 - 1,
    });
    store.fault = "reject";
    await l.ready();
    let error: unknown;
    try {
      l.acquire(() => {});
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(RateLimitedError);
    expect((error as RateLimitedError).retryAfter).toBeLessThanOrEqual(2 ** 31 - 1);
  });

  it("retryAfter <= 2^31 - 1 while the store is down (local, a fleet of two)", async () => {
    const clock = new VirtualClock();
    const store = faultyStore(memoryStore({ clock }), clock);
    const [a, b] = pair(() => rateLimiter({ rate: 1, per: 2 ** 31 - 1, burst: 1, store, key: "api", clock }));
    await Promise.all([a.ready(), b.ready()]);
    await clock.advance(150);
    store.fault = "reject";
    await clock.advance(200);
    let error: unknown;
    for (let i = 0; i < 3 && error === undefined; i++) {
      try {
        a.acquire(() => {});
      } catch (e) {
        error = e;
      }
    }
    expect(error).toBeInstanceOf(RateLimitedError);
    expect((error as RateLimitedError).retryAfter).toBeLessThanOrEqual(2 ** 31 - 1);
  });
});

describe("regression: a hostile hold with a far-future end blocked the fleet for ten minutes", () => {
  it("a hostile hold with a far-future end blocks the fleet no longer than a hold's life (10 s at syncEvery 100)", async () => {
    const clock = new VirtualClock();
    const store = memoryStore({ clock });
    await store.write(
      "rateLimiter:api",
      0,
      { kind: "rate", tokens: 0, at: 0, holders: [["x", 10, 1e15]] },
      86_400_000,
    );
    const l = rateLimiter({ rate: 10, burst: 10, store, key: "api", clock });
    await l.ready();
    let first = -1;
    for (let t = 0; t < 700_000 && first < 0; t += 100) {
      try {
        l.acquire(() => {
          if (first < 0) first = clock.now();
        });
      } catch {}
      await clock.advance(100);
    }
    // The hold is taken to last at most a hold's life (10 s) and the clock skew allowed between
    // processes (1 s). Then: the exchange that drops it, a tenth of a second to refill a token, and the
    // exchange that grants it.
    expect(first).toBeLessThanOrEqual(11_000 + 100 + 100 + 100);
    await l.close();
  });
});

describe("regression: a waiter with no refuse at the head kept those behind it past maxWait", () => {
  it("a waiter given no refuse at the head keeps those behind it waiting past maxWait", async () => {
    const clock = new VirtualClock();
    const store = memoryStore({ clock });
    await store.write(
      "rateLimiter:api",
      0,
      { kind: "rate", tokens: 0, at: 0, holders: [["other", 10, 10_000]] },
      86_400_000,
    );
    const l = rateLimiter({ rate: 10, burst: 10, queue: 10, maxWait: 250, store, key: "api", clock });
    await l.ready();
    l.acquire(() => {}); // code that calls acquire(start) with no refuse
    let refusedAt = -1;
    const p = l
      .execute(() => "ran")
      .catch((e: unknown) => {
        refusedAt = clock.now();
        return e;
      });
    for (let t = 0; t < 2000; t += 100) await clock.advance(100);
    expect(refusedAt).toBeGreaterThanOrEqual(0);
    expect(refusedAt).toBeLessThanOrEqual(400);
    await p;
  });
});

describe("regression: a key overwritten with garbage was replaced by a full bucket, a second burst", () => {
  it("a key overwritten with garbage is replaced by a bucket that lets no more through than the rate", async () => {
    const clock = new VirtualClock();
    const store = memoryStore({ clock });
    const [a, b] = pair(() => rateLimiter({ rate: 1, per: 60_000, burst: 10, store, key: "api", clock }));
    await Promise.all([a.ready(), b.ready()]);
    const starts: number[] = [];
    const hammer = async (ms: number) => {
      for (let t = 0; t < ms; t += 10) {
        for (const l of [a, b])
          try {
            l.acquire(() => starts.push(clock.now()));
          } catch {}
        await clock.advance(10);
      }
    };
    await hammer(2000);
    const entry = await store.read("rateLimiter:api");
    await store.write("rateLimiter:api", entry.version, "garbage", 86_400_000);
    await hammer(2000);
    expect(starts.length).toBeLessThanOrEqual(10 + 1); // burst + rate × 4 s / 60 s
    await Promise.all([a.close(), b.close()]);
  });
});

describe("regression: a value with a hole among its holders was taken for the store down", () => {
  it("a value with a hole among its holders is reported corrupt, not taken for the store down", async () => {
    const clock = new VirtualClock();
    const inner = memoryStore({ clock });
    // biome-ignore lint/suspicious/noSparseArray: a value a store keeping JS values may hand back
    const hostile = { kind: "rate", tokens: 1, at: 0, holders: [, ["x", 1, 5]] };
    const store: Store = {
      name: "js",
      read: async (key) => ({ ...(await inner.read(key)), value: hostile, version: 7 }),
      write: (k, v, val, ex) => inner.write(k, v === 7 ? 0 : v, val, ex),
      close: () => inner.close(),
    };
    const l = rateLimiter({ rate: 10, store, key: "api", clock });
    const events: string[] = [];
    l.on("store-down", (e) => events.push(`down: ${(e.error as Error).message}`));
    l.on("store-corrupt", () => events.push("corrupt"));
    await l.ready();
    expect(events).toEqual(["corrupt"]);
    await l.close();
  });
});
