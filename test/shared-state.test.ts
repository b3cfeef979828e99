import fc from "fast-check";
import {
  BrokenCircuitError,
  backoff,
  type CircuitBreaker,
  circuitBreaker,
  memoryStore,
  OptionError,
  ResponsiveBackoff,
  type RetryBudget,
  retryBudget,
  StoreTimeoutError,
} from "robustly";
import { seededRandom, VirtualClock } from "robustly/testing";
import { describe, expect, it } from "vitest";
import { faultyStore } from "./support/faulty-store.js";

describe("memoryStore", () => {
  it("writes only over the version it was given, and copies values in and out", async () => {
    const clock = new VirtualClock(1000);
    const store = memoryStore({ clock });
    expect(await store.read("k")).toEqual({ value: undefined, version: 0, time: 1000 });
    const value = { n: 1 };
    const first = await store.write("k", 0, value, 60_000);
    expect(first.written).toBe(true);
    value.n = 99;
    expect((await store.read("k")).value).toEqual({ n: 1 });
    const stale = await store.write("k", 0, { n: 2 }, 60_000);
    expect(stale).toEqual({
      written: false,
      entry: { value: { n: 1 }, version: first.entry.version, time: 1000 },
    });
    expect((await store.write("k", first.entry.version, { n: 3 }, 60_000)).written).toBe(true);
  });

  it("forgets a key once it expires", async () => {
    const clock = new VirtualClock();
    const store = memoryStore({ clock });
    await store.write("k", 0, 1, 500);
    await clock.advance(499);
    expect((await store.read("k")).value).toBe(1);
    await clock.advance(1);
    expect(await store.read("k")).toEqual({ value: undefined, version: 0, time: 500 });
  });
});

describe("sharing options", () => {
  const store = memoryStore();
  it("name the option, the value and what is allowed", () => {
    expect(() => retryBudget({ store })).toThrow(
      /retryBudget: key must be a non-empty string.*got undefined/,
    );
    expect(() => circuitBreaker({ store, key: "" })).toThrow(OptionError);
    expect(() => retryBudget({ syncEvery: 10 })).toThrow(
      /retryBudget: syncEvery must be given only with a store/,
    );
    expect(() => circuitBreaker({ store, key: "k", whenStoreDown: "open" as "closed" })).toThrow(
      /whenStoreDown must be "local" or "closed"; got "open"/,
    );
    expect(() => new ResponsiveBackoff({ store, key: "k", storeTimeout: 0 })).toThrow(
      /ResponsiveBackoff: storeTimeout must be a finite number in \[1, 2147483647\]; got 0/,
    );
    expect(() => retryBudget({ store: {} as never, key: "k" })).toThrow(/retryBudget: store must be a Store/);
  });
});

/** `n` budgets sharing one memory store, as `n` processes would share Redis, answering after `latency` ms. */
function fleet(n: number, clock: VirtualClock, options: Parameters<typeof retryBudget>[0], latency = 0) {
  const store = faultyStore(memoryStore({ clock }), clock);
  store.latency = latency;
  return Array.from({ length: n }, () => retryBudget({ ...options, store, key: "api", clock }));
}

describe("a shared retry budget", () => {
  it("lets the fleet retry no more than one budget allows, where separate budgets allow n times as much", async () => {
    const clock = new VirtualClock();
    // ratio 0 and a floor of 2/s over 10 s: 20 retries in the window, whatever the traffic.
    const options = { ratio: 0, minPerSecond: 2, window: 10_000 };
    const shared = fleet(4, clock, options);
    const alone = Array.from({ length: 4 }, () => retryBudget({ ...options, clock }));
    await Promise.all(shared.map((b) => b.ready()));
    let sharedRetries = 0;
    let aloneRetries = 0;
    for (let ms = 0; ms < 5000; ms += 10) {
      for (let i = 0; i < 4; i++) {
        shared[i]?.request();
        alone[i]?.request();
        if (shared[i]?.tryRetry()) sharedRetries += 1;
        if (alone[i]?.tryRetry()) aloneRetries += 1;
      }
      await clock.advance(10);
    }
    expect(aloneRetries).toBe(80);
    expect(sharedRetries).toBeLessThanOrEqual(20);
    // The leases hand out nearly all of it (what is left is at most the leases still held).
    expect(sharedRetries).toBeGreaterThanOrEqual(16);
    await Promise.all(shared.map((b) => b.close()));
    expect(clock.pending).toBe(0);
  });

  it("never lets the fleet overspend, whatever the processes do (property)", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 6 }),
        fc.constantFrom(0, 0.05, 0.2),
        fc.integer({ min: 0, max: 12 }),
        fc.integer({ min: 0, max: 40 }),
        fc.array(
          fc.tuple(
            fc.nat(5),
            fc.constantFrom("request", "retry", "retry", "retry", "wait"),
            fc.integer({ min: 1, max: 120 }),
          ),
          { minLength: 100, maxLength: 400 },
        ),
        async (n, ratio, floor, latency, steps) => {
          const clock = new VirtualClock();
          // A window longer than the run, so nothing slides out and the budget is ratio × requests + floor,
          // with a small floor so that the processes compete for the last retries. The store answers after
          // `latency` ms, so retries are taken while exchanges are under way.
          const window = 1_000_000;
          const budgets = fleet(n, clock, { ratio, minPerSecond: (floor * 1000) / window, window }, latency);
          let requests = 0;
          let retries = 0;
          for (const [who, what, ms] of steps) {
            const budget = budgets[who % n];
            if (what === "request") {
              budget?.request();
              requests += 1;
            } else if (what === "retry") {
              if (budget?.tryRetry()) retries += 1;
            } else await clock.advance(ms);
          }
          expect(retries).toBeLessThanOrEqual(ratio * requests + floor + 1e-9);
          const closed = Promise.all(budgets.map((b) => b.close()));
          await clock.runAll(); // the last exchanges wait out the store's latency
          await closed;
        },
      ),
      { numRuns: 300 },
    );
  });

  it("never lets retries in any window exceed what one budget fed every request would allow, with slow, lost and conflicting writes (property)", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 5 }),
        fc.constantFrom(0, 0.1, 0.5),
        fc.integer({ min: 0, max: 8 }),
        fc.constantFrom(0.01, 0.03, 0.1),
        fc.constantFrom(0, 20, 60),
        fc.integer({ min: 1, max: 1_000_000 }),
        async (n, ratio, floor, rate, maxLatency, seed) => {
          const clock = new VirtualClock();
          const random = seededRandom(seed);
          const store = faultyStore(memoryStore({ clock }), clock);
          // Answers take up to `maxLatency` ms: with 60, past the 30 ms storeTimeout now and then, so
          // writes are lost or land unseen.
          store.latency = () => random() * maxLatency;
          // A window of 10 buckets of 100 ms.
          const budgets = Array.from({ length: n }, () =>
            retryBudget({
              ratio,
              minPerSecond: floor,
              window: 1000,
              store,
              key: "api",
              clock,
              storeTimeout: 30,
              syncEvery: 50,
            }),
          );
          const events: [number, "request" | "retry"][] = [];
          // 4 s, a millisecond at a time; each process makes a request, and asks for a retry, with
          // probability `rate` each ms.
          for (let ms = 0; ms < 4000; ms++) {
            if (random() < 0.005) store.conflicts = 1 + Math.floor(random() * 3);
            for (const budget of budgets) {
              if (random() < rate) {
                budget.request();
                events.push([clock.now(), "request"]);
              }
              // Only while shared: alone, each process keeps a budget of its own, as documented.
              if (random() < rate && budget.shared && budget.tryRetry()) events.push([clock.now(), "retry"]);
            }
            await clock.advance(1);
          }
          // At each retry, one budget fed every request and retry so far would have allowed it.
          events.forEach(([t, what], i) => {
            if (what !== "retry") return;
            const from = (Math.floor(t / 100) - 9) * 100;
            let requests = 0;
            let retries = 0;
            for (const [u, w] of events.slice(0, i + 1)) {
              if (u < from) continue;
              if (w === "request") requests += 1;
              else retries += 1;
            }
            expect(retries).toBeLessThanOrEqual(ratio * requests + floor + 1e-9);
          });
          const closed = Promise.all(budgets.map((b) => b.close()));
          await clock.runAll();
          await closed;
        },
      ),
      { numRuns: 40 },
    );
  }, 120_000);

  it("leaks no tokens: holds go back on close, and holds of lost writes are released in time (property)", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 4 }),
        fc.boolean(),
        fc.integer({ min: 1, max: 1_000_000 }),
        fc.array(
          fc.tuple(
            fc.nat(3),
            fc.constantFrom("retry", "failed", "succeeded", "wait"),
            fc.integer({ min: 1, max: 80 }),
          ),
          {
            minLength: 50,
            maxLength: 300,
          },
        ),
        async (n, lossy, seed, steps) => {
          const clock = new VirtualClock();
          const random = seededRandom(seed);
          const inner = memoryStore({ clock });
          const store = faultyStore(inner, clock);
          store.latency = () => random() * (lossy ? 60 : 20);
          const budgets = Array.from({ length: n }, () =>
            retryBudget({
              maxTokens: 20,
              tokenRatio: 0.5,
              store,
              key: "t",
              clock,
              storeTimeout: 30,
              syncEvery: 50,
            }),
          );
          for (const [who, what, ms] of steps) {
            const budget = budgets[who % n] as RetryBudget;
            if (what === "retry") budget.tryRetry();
            else if (what === "failed") budget.failure();
            else if (what === "succeeded") budget.success();
            else await clock.advance(ms);
          }
          store.latency = 0;
          await clock.advance(1000); // every process back to sharing
          const closed = Promise.all(budgets.map((b) => b.close()));
          await clock.runAll();
          await closed;
          const after = (await inner.read("budget-tokens:t")).value as {
            tokens: number;
            holds: [number, number][];
          };
          expect(after.tokens).toBeGreaterThanOrEqual(0);
          expect(after.tokens).toBeLessThanOrEqual(20);
          if (!lossy) expect(after.holds).toEqual([]);
          else {
            // A hold left by a write that landed unseen is released once it has not been renewed for 10 s.
            await clock.advance(10_000);
            const late = retryBudget({ maxTokens: 20, tokenRatio: 0.5, store: inner, key: "t", clock });
            await late.ready();
            await late.close();
            expect(((await inner.read("budget-tokens:t")).value as { holds: unknown[] }).holds).toEqual([]);
          }
        },
      ),
      { numRuns: 100 },
    );
  });

  it("shares a token bucket: failures anywhere empty it for everyone", async () => {
    const clock = new VirtualClock();
    const [a, b] = fleet(2, clock, { maxTokens: 10, tokenRatio: 0.5 });
    await Promise.all([a?.ready(), b?.ready()]);
    // Failures on A only.
    for (let i = 0; i < 6; i++) a?.failure();
    await clock.advance(200);
    const state = b?.snapshot();
    expect(state?.kind).toBe("tokens");
    expect(state?.kind === "tokens" && state.tokens <= 5).toBe(true);
    expect(b?.tryRetry()).toBe(false);
    // Successes anywhere fill it again (once B's lease, sized to its own recent demand, has shrunk, the
    // idle A gets a standing lease from this small budget too).
    for (let i = 0; i < 20; i++) b?.success();
    await clock.advance(1000);
    expect(b?.snapshot()).toEqual({ kind: "tokens", tokens: 10 });
    expect(a?.tryRetry()).toBe(true);
  });
});

describe("a shared circuit breaker", () => {
  it("opens for every process when one process's calls trip it, and closes for all after a probe", async () => {
    const clock = new VirtualClock();
    const store = memoryStore({ clock });
    const options = {
      consecutiveFailures: 3,
      openFor: backoff.constant({ base: 1000 }),
      store,
      key: "payments",
      clock,
      syncEvery: 50,
    };
    const a = circuitBreaker(options);
    const b = circuitBreaker(options);
    await Promise.all([a.ready(), b.ready()]);
    const seen: string[] = [];
    b.on("change", ({ from, to }) => seen.push(`${from}->${to}`));
    for (let i = 0; i < 3; i++) {
      a.acquire();
      a.failure();
    }
    expect(a.state).toBe("open");
    expect(() => b.acquire()).not.toThrow(); // B has not heard yet
    b.success();
    await clock.advance(50);
    expect(b.state).toBe("open");
    expect(() => b.acquire()).toThrow(BrokenCircuitError);
    expect(seen).toEqual(["closed->open"]);
    await clock.advance(1000);
    expect(b.state).toBe("half-open");
    b.acquire(); // B's probe
    b.success();
    expect(b.state).toBe("closed");
    await clock.advance(100);
    expect(a.state).toBe("closed");
    await Promise.all([a.close(), b.close()]);
    expect(clock.pending).toBe(0);
  });

  it("counts a failure ratio over the whole fleet's calls", async () => {
    const clock = new VirtualClock();
    const store = memoryStore({ clock });
    const options = { failureRatio: 0.5, minimumThroughput: 10, store, key: "db", clock };
    const breakers = Array.from({ length: 5 }, () => circuitBreaker(options));
    await Promise.all(breakers.map((b) => b.ready()));
    // Each process sees 4 calls, 2 failed: alone none reaches the minimum throughput of 10.
    for (const b of breakers) {
      for (let i = 0; i < 4; i++) {
        b.acquire();
        if (i % 2 === 0) b.failure();
        else b.success();
      }
      expect(b.state).toBe("closed");
    }
    await clock.advance(300);
    for (const b of breakers) expect(b.state).toBe("open");
  });
});

describe("a shared responsive backoff", () => {
  it("is one pace for the fleet: failures anywhere slow everyone", async () => {
    const clock = new VirtualClock();
    const store = memoryStore({ clock });
    const options = { base: 100, spread: 0, store, key: "table", clock };
    const a = new ResponsiveBackoff(options);
    const b = new ResponsiveBackoff(options);
    await Promise.all([a.ready(), b.ready()]);
    expect(a.failure()).toBe(100);
    expect(b.failure()).toBe(100);
    await clock.advance(200);
    // The shared controller saw two failures: 100, then 150.
    expect(a.metrics().current).toBe(150);
    expect(b.metrics().current).toBe(150);
    expect(a.metrics().wentUp).toBe(2);
  });
});

describe("when the store fails", () => {
  it("goes on alone after storeTimeout, says so, and shares again when the store returns", async () => {
    const clock = new VirtualClock();
    const store = faultyStore(memoryStore({ clock }));
    const a = circuitBreaker({
      consecutiveFailures: 2,
      openFor: backoff.constant({ base: 10_000 }),
      store,
      key: "k",
      clock,
      storeTimeout: 30,
    });
    const b = circuitBreaker({
      consecutiveFailures: 2,
      openFor: backoff.constant({ base: 10_000 }),
      store,
      key: "k",
      clock,
      storeTimeout: 30,
    });
    await Promise.all([a.ready(), b.ready()]);
    const events: string[] = [];
    a.on("store-down", ({ error }) => events.push(`down: ${(error as Error).name}`));
    a.on("store-up", ({ downFor }) => events.push(`up after ${downFor}`));
    store.fault = "hang";
    await clock.advance(100 + 30);
    expect(events).toEqual(["down: StoreTimeoutError"]);
    expect(a.shared).toBe(false);
    // Alone, A still decides at once.
    a.acquire();
    a.failure();
    a.acquire();
    a.failure();
    expect(a.state).toBe("open");
    expect(b.state).toBe("closed");
    store.fault = "none";
    await clock.advance(2000);
    expect(events).toEqual(["down: StoreTimeoutError", expect.stringMatching(/^up after \d+/)]);
    expect(a.shared).toBe(true);
    // What A saw alone is not replayed: the fleet's state (closed) wins.
    expect(a.state).toBe("closed");
    await Promise.all([a.close(), b.close()]);
    expect(clock.pending).toBe(0);
  });

  it("refuses while the store is down with whenStoreDown: closed", async () => {
    const clock = new VirtualClock();
    const store = faultyStore(memoryStore({ clock }));
    const budget = retryBudget({
      ratio: 1,
      minPerSecond: 10,
      store,
      key: "k",
      clock,
      whenStoreDown: "closed",
    });
    const breaker = circuitBreaker({ store, key: "k", clock, whenStoreDown: "closed" });
    const pace = new ResponsiveBackoff({
      store,
      key: "k",
      clock,
      whenStoreDown: "closed",
      spread: 0,
    });
    await Promise.all([budget.ready(), breaker.ready(), pace.ready()]);
    expect(budget.tryRetry()).toBe(true);
    store.fault = "reject";
    await clock.advance(100);
    expect(budget.tryRetry()).toBe(false);
    expect(() => breaker.acquire()).toThrow(/shared state is out of reach/);
    expect(pace.failure()).toBe(pace.max);
    store.fault = "none";
    await clock.advance(2000);
    expect(budget.tryRetry()).toBe(true);
    expect(() => breaker.acquire()).not.toThrow();
    expect(pace.failure()).toBeLessThan(pace.max);
  });

  it("never blocks a decision and leaves nothing behind after close, even with a hung store", async () => {
    const clock = new VirtualClock();
    const store = faultyStore(memoryStore({ clock }));
    store.fault = "hang";
    const budget = retryBudget({ ratio: 0.5, store, key: "k", clock, storeTimeout: 50 });
    const errors: unknown[] = [];
    budget.on("store-down", ({ error }) => errors.push(error));
    budget.request();
    // Before its first answer from the store the process holds no lease: it refuses rather than overspend.
    expect(budget.tryRetry()).toBe(false);
    await clock.advance(50);
    expect(errors[0]).toBeInstanceOf(StoreTimeoutError);
    expect(budget.tryRetry()).toBe(true); // alone now: the local budget's floor
    await budget.close();
    expect(clock.pending).toBe(0);
  });
});

describe("determinism", () => {
  it("replays the same fleet the same way for a seed", async () => {
    const run = async () => {
      const clock = new VirtualClock();
      const store = memoryStore({ clock });
      const a = new ResponsiveBackoff({ store, key: "k", clock, random: seededRandom(1) });
      const b = new ResponsiveBackoff({ store, key: "k", clock, random: seededRandom(2) });
      const out: number[] = [];
      for (let i = 0; i < 20; i++) {
        out.push(i % 3 === 0 ? a.failure() : b.success());
        await clock.advance(40);
      }
      return out;
    };
    expect(await run()).toEqual(await run());
  });
});

describe("an opening", () => {
  it("is the fleet's even while other processes' successes break the run of failures", async () => {
    const clock = new VirtualClock();
    const store = memoryStore({ clock });
    const options = {
      consecutiveFailures: 5,
      openFor: backoff.constant({ base: 60_000 }),
      store,
      key: "k",
      clock,
      syncEvery: 20,
    };
    const tripper = circuitBreaker(options);
    const others = [circuitBreaker(options), circuitBreaker(options)];
    await Promise.all([tripper, ...others].map((b) => b.ready()));
    const changes: string[] = [];
    tripper.on("change", ({ to }) => changes.push(to));
    for (let step = 0; step < 40; step++) {
      for (const b of others) {
        try {
          b.acquire();
          b.success();
        } catch {}
      }
      try {
        tripper.acquire();
        tripper.failure();
      } catch {}
      await clock.advance(7);
    }
    // Opened once, never closed behind the tripper's back, and open for everyone.
    expect(changes).toEqual(["open"]);
    for (const b of others) expect(b.state).toBe("open");
  });
});

describe("the store's clock", () => {
  it("makes machines' clock skew irrelevant: an opening lasts its time on every machine", async () => {
    const clock = new VirtualClock(5_000_000);
    const store = memoryStore({ clock });
    const skewed = (by: number) => ({ now: () => clock.now() + by, setTimer: clock.setTimer.bind(clock) });
    const options = { consecutiveFailures: 1, openFor: backoff.constant({ base: 1000 }), store, key: "k" };
    const ahead = circuitBreaker({ ...options, clock: skewed(3_600_000) }); // an hour fast
    const behind = circuitBreaker({ ...options, clock: skewed(-3_600_000) }); // an hour slow
    await Promise.all([ahead.ready(), behind.ready()]);
    ahead.acquire();
    ahead.failure();
    await clock.advance(100);
    expect(behind.state).toBe("open");
    await clock.advance(850);
    expect([ahead.state, behind.state]).toEqual(["open", "open"]);
    await clock.advance(100);
    expect([ahead.state, behind.state]).toEqual(["half-open", "half-open"]);
  });
});

describe("handing outcomes over in runs", () => {
  it("gives the fleet's breaker exactly the state one breaker reaches call by call (property)", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.record({ consecutiveFailures: fc.integer({ min: 1, max: 30 }) }),
          fc.record({
            failureRatio: fc.double({ min: 0.05, max: 1, noNaN: true }),
            minimumThroughput: fc.integer({ min: 1, max: 40 }),
          }),
          fc
            .record({
              failureRatio: fc.double({ min: 0.05, max: 1, noNaN: true }),
              windowCalls: fc.integer({ min: 1, max: 50 }),
              minimumThroughput: fc.integer({ min: 1, max: 50 }),
            })
            .map((m) => ({ ...m, minimumThroughput: Math.min(m.minimumThroughput, m.windowCalls) })),
        ),
        fc.array(fc.tuple(fc.boolean(), fc.integer({ min: 1, max: 60 })), { maxLength: 30 }),
        async (mode, runs) => {
          const clock = new VirtualClock(12_345);
          const store = memoryStore({ clock });
          const options = { ...mode, openFor: backoff.constant({ base: 60_000 }), clock };
          const alone = circuitBreaker(options);
          const shared = circuitBreaker({ ...options, store, key: "k" });
          await shared.ready();
          for (const [failed, count] of runs) {
            for (let i = 0; i < count; i++) {
              for (const b of [alone, shared]) {
                try {
                  b.acquire();
                } catch {
                  continue;
                }
                if (failed) b.failure();
                else b.success();
              }
            }
          }
          // close() hands the runs over at this same instant, so the fleet's state is comparable exactly.
          await shared.close();
          expect((await store.read("breaker:k")).value).toEqual(alone.snapshot());
        },
      ),
      { numRuns: 300 },
    );
  });

  it("gives the fleet's responsive backoff the state one controller reaches call by call (property)", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 12 }),
        fc.constantFrom(0, 0.3, 1),
        fc.integer({ min: 1, max: 1_000_000 }),
        fc.array(fc.tuple(fc.boolean(), fc.integer({ min: 1, max: 40 })), { maxLength: 20 }),
        async (downThreshold, spread, seed, runs) => {
          const clock = new VirtualClock();
          const store = memoryStore({ clock });
          const options = { base: 10, spread, downThreshold, clock };
          // The same draws on both sides: the merge must reuse the draws the process made, not draw again.
          const alone = new ResponsiveBackoff({ ...options, random: seededRandom(seed) });
          const shared = new ResponsiveBackoff({ ...options, random: seededRandom(seed), store, key: "k" });
          const changes = { alone: [] as number[][], shared: [] as number[][] };
          alone.on("change", ({ from, to }) => changes.alone.push([from, to]));
          shared.on("change", ({ from, to }) => changes.shared.push([from, to]));
          await shared.ready();
          for (const [failed, count] of runs) {
            for (let i = 0; i < count; i++) {
              for (const r of [alone, shared]) failed ? r.failure() : r.success();
            }
            // An exchange between runs: adopting its own outcomes back announces no change of its own.
            await clock.advance(100);
          }
          expect(changes.shared).toEqual(changes.alone);
          expect(shared.snapshot()).toEqual(alone.snapshot());
          await shared.close();
          expect((await store.read("responsive:k")).value).toEqual({
            state: alone.snapshot(),
            raisedAt: null,
          });
        },
      ),
      { numRuns: 200 },
    );
  });
});

describe("edge cases of the exchanges", () => {
  it("lets a probe that is out across an exchange close the breaker when it succeeds", async () => {
    const clock = new VirtualClock();
    const store = memoryStore({ clock });
    const breaker = circuitBreaker({
      consecutiveFailures: 2,
      openFor: backoff.constant({ base: 1000 }),
      store,
      key: "b",
      clock,
    });
    await breaker.ready();
    for (let i = 0; i < 2; i++) {
      breaker.acquire();
      breaker.failure();
    }
    await clock.advance(1100);
    expect(breaker.state).toBe("half-open");
    // The probe takes 150 ms: an exchange (every 100 ms) lands while it is out.
    const probe = breaker.execute(() => clock.sleep(150).then(() => "ok"));
    await clock.advance(150);
    expect(await probe).toBe("ok");
    expect(breaker.state).toBe("closed");
  });

  it("hands the whole lease back on close, and then decides alone", async () => {
    const clock = new VirtualClock();
    const store = memoryStore({ clock });
    const tokens = retryBudget({ maxTokens: 100, tokenRatio: 1, store, key: "t", clock });
    await tokens.ready();
    for (let i = 0; i < 3; i++) tokens.tryRetry();
    await clock.advance(100);
    await tokens.close();
    // No failure ever happened: the bucket is full, and nothing is held back for a lease any more.
    expect((await store.read("budget-tokens:t")).value).toEqual({ kind: "tokens", tokens: 100, holds: [] });
    expect(tokens.shared).toBe(false);
    // Alone now, on the local copy (a full bucket of 100 allows 49 retries before it falls to half).
    let allowed = 0;
    for (let i = 0; i < 60; i++) {
      tokens.failure();
      if (tokens.tryRetry()) allowed += 1;
    }
    expect(allowed).toBe(49);
    expect(clock.pending).toBe(0);
  });

  it("does not replay what a process saw alone even when its first exchange back meets conflicts", async () => {
    const clock = new VirtualClock();
    const inner = memoryStore({ clock });
    const store = faultyStore(inner);
    const options = {
      consecutiveFailures: 2,
      openFor: backoff.constant({ base: 10_000 }),
      key: "k",
      clock,
      storeTimeout: 30,
    };
    const alone = circuitBreaker({ ...options, store });
    const fleetView = circuitBreaker({ ...options, store: inner });
    await Promise.all([alone.ready(), fleetView.ready()]);
    store.fault = "reject";
    await clock.advance(100);
    for (let i = 0; i < 2; i++) {
      alone.acquire();
      alone.failure();
    }
    expect(alone.state).toBe("open");
    store.fault = "none";
    store.conflicts = 8; // the first exchange back loses every compare-and-set
    await clock.advance(3000);
    expect(alone.shared).toBe(true);
    expect(fleetView.state).toBe("closed");
    expect(alone.state).toBe("closed");
  });

  it("fails an exchange, without hanging or an unhandled rejection, when a store answers nonsense", async () => {
    const clock = new VirtualClock();
    const inner = memoryStore({ clock });
    const broken = {
      ...inner,
      name: "broken",
      read: () => Promise.resolve(undefined as never),
      write: inner.write,
      close: inner.close,
    };
    const budget = retryBudget({ store: broken, key: "k", clock });
    const errors: unknown[] = [];
    budget.on("store-down", ({ error }) => errors.push(error));
    await budget.ready();
    expect(String(errors[0])).toMatch(/the broken store answered undefined, not an entry/);
    await budget.close();
  });

  it("closes once: a second close() waits for the same last exchange", async () => {
    const clock = new VirtualClock();
    const store = faultyStore(memoryStore({ clock }), clock);
    const budget = retryBudget({ store, key: "k", clock });
    await budget.ready();
    store.latency = 50;
    const first = budget.close();
    const second = budget.close();
    expect(second).toBe(first);
    await clock.advance(200);
    await first;
    expect(clock.pending).toBe(0);
  });

  it("names an expiry too long to keep", () => {
    expect(() => retryBudget({ store: memoryStore(), key: "k", expire: 1e21 })).toThrow(
      /retryBudget: expire must be a finite number in \[1, 1e12\]; got 1e\+21/,
    );
  });

  it("does not let idle processes' standing leases starve a busy one", async () => {
    const clock = new VirtualClock();
    const store = memoryStore({ clock });
    const options = { ratio: 0, minPerSecond: 2, window: 10_000, store, key: "k", clock };
    const idle = Array.from({ length: 30 }, () => retryBudget(options));
    const busy = retryBudget(options);
    await Promise.all([...idle, busy].map((b) => b.ready()));
    let taken = 0;
    for (let ms = 0; ms < 10_000; ms += 10) {
      if (busy.tryRetry()) taken += 1;
      await clock.advance(10);
    }
    // 20 retries per 10 s window; the idle ones may hold at most half of them while there is demand.
    expect(taken).toBeGreaterThanOrEqual(10);
    expect(taken).toBeLessThanOrEqual(20);
    await Promise.all([...idle, busy].map((b) => b.close()));
  });

  it("keeps a machine whose clock is an hour fast from moving the fleet's window", async () => {
    const clock = new VirtualClock(50_000);
    const store = memoryStore({ clock });
    const options = { ratio: 0.5, minPerSecond: 0, window: 10_000, store, key: "k" };
    const honest = retryBudget({ ...options, clock });
    await honest.ready();
    for (let i = 0; i < 100; i++) honest.request();
    await clock.advance(200);
    const fast = retryBudget({
      ...options,
      clock: { now: () => clock.now() + 3_600_000, setTimer: clock.setTimer.bind(clock) },
    });
    for (let i = 0; i < 10; i++) fast.request(); // before its first answer from the store
    await fast.ready();
    await clock.advance(200);
    const state = (await store.read("budget-ratio:k")).value as { requests: number[]; bucketAt: number };
    expect(state.bucketAt).toBe(Math.floor(clock.now() / 1000));
    expect(state.requests.reduce((a, b) => a + b, 0)).toBe(100);
    await Promise.all([honest.close(), fast.close()]);
  });

  it.each(["lands unseen", "never lands"] as const)(
    "counts the failures of a token exchange whose write %s",
    async (how) => {
      const clock = new VirtualClock();
      const inner = memoryStore({ clock });
      const store = faultyStore(inner, clock);
      const budget = retryBudget({ maxTokens: 20, tokenRatio: 1, store, key: "t", clock, storeTimeout: 30 });
      await budget.ready();
      for (let i = 0; i < 6; i++) budget.failure();
      // The next write reaches the store after the 30 ms timeout (it lands, its answer is lost), or never.
      if (how === "lands unseen") store.latency = 100;
      else store.fault = "hang";
      await clock.advance(150);
      expect(budget.shared).toBe(false);
      store.latency = 0;
      store.fault = "none";
      await clock.advance(2000);
      expect(budget.shared).toBe(true);
      const after = (await inner.read("budget-tokens:t")).value as { tokens: number };
      // Counted once (or twice, erring towards fewer retries), never lost.
      expect(after.tokens).toBeLessThanOrEqual(14);
      await budget.close();
    },
  );

  it("keeps an opening whose report never reached the store, and makes it the fleet's when the store returns", async () => {
    const clock = new VirtualClock();
    const store = faultyStore(memoryStore({ clock }));
    const options = {
      consecutiveFailures: 2,
      openFor: backoff.constant({ base: 30_000 }),
      store,
      key: "k",
      clock,
    };
    const a = circuitBreaker(options);
    const b = circuitBreaker(options);
    await Promise.all([a.ready(), b.ready()]);
    const seen: string[] = [];
    a.on("change", ({ from, to }) => seen.push(`${from}->${to}`));
    for (let i = 0; i < 2; i++) {
      a.acquire();
      a.failure();
    }
    store.fault = "reject"; // the exchange that would report the opening fails
    await clock.advance(100);
    expect(a.shared).toBe(false);
    store.fault = "none";
    await clock.advance(2000);
    expect([a.shared, b.shared]).toEqual([true, true]);
    expect(b.state).toBe("open");
    expect(a.state).toBe("open");
    expect(seen).toEqual(["closed->open"]);
  });

  it("announces each breaker's changes as a chain: every change starts where the last one ended (property)", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.tuple(fc.nat(2), fc.constantFrom("ok", "fail", "wait")), {
          minLength: 20,
          maxLength: 200,
        }),
        async (steps) => {
          const clock = new VirtualClock();
          const store = memoryStore({ clock });
          const options = {
            consecutiveFailures: 2,
            openFor: backoff.constant({ base: 300 }),
            store,
            key: "k",
            clock,
          };
          const breakers = [circuitBreaker(options), circuitBreaker(options), circuitBreaker(options)];
          const chains = breakers.map(() => [] as [string, string][]);
          breakers.forEach((b, i) => {
            b.on("change", ({ from, to }) => chains[i]?.push([from, to]));
          });
          await Promise.all(breakers.map((b) => b.ready()));
          for (const [who, what] of steps) {
            const b = breakers[who] as CircuitBreaker;
            if (what === "wait") await clock.advance(60);
            else {
              try {
                b.acquire();
              } catch {
                continue;
              }
              if (what === "ok") b.success();
              else b.failure();
            }
          }
          for (const chain of chains) {
            chain.forEach(([from], i) => {
              expect(from).toBe(i === 0 ? "closed" : (chain[i - 1] as [string, string])[1]);
            });
          }
          await Promise.all(breakers.map((b) => b.close()));
        },
      ),
      { numRuns: 100 },
    );
  });
});
