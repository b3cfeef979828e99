/**
 * A rate limiter shared by a fleet through a store (`rateLimiter({ rate, store, key })`): what a user
 * relies on. The fleet together never starts more than one limiter would allow; a process holds tokens
 * only as long as it needs them; what the store holds is checked and clamped; when the store is down each
 * process takes its share of the rate alone (or refuses); nothing is left behind.
 */
import fc from "fast-check";
import {
  memoryStore,
  OptionError,
  pipeline,
  RateLimitedError,
  type RateLimiter,
  type RateLimiterOptions,
  rateLimiter,
  type Store,
  steps,
} from "robustly";
import { VirtualClock } from "robustly/testing";
import { describe, expect, it } from "vitest";
import { faultyStore } from "./support/faulty-store.js";

function fleet(
  n: number,
  clock: VirtualClock,
  options: Omit<RateLimiterOptions, "clock">,
  store: Store = memoryStore({ clock }),
): RateLimiter[] {
  return Array.from({ length: n }, () => rateLimiter({ ...options, store, key: "api", clock }));
}

/** Every process tries a call every `every` ms for `ms` ms; the start times of the calls let through. */
async function hammer(limiters: RateLimiter[], clock: VirtualClock, ms: number, every = 10) {
  const starts: number[] = [];
  for (let t = 0; t < ms; t += every) {
    for (const limiter of limiters) {
      try {
        limiter.acquire(() => starts.push(clock.now()));
      } catch (error) {
        expect(error).toBeInstanceOf(RateLimitedError);
      }
    }
    await clock.advance(every);
  }
  return starts;
}

/** The most starts in any span of `span` ms. */
function busiest(starts: number[], span: number): number {
  let most = 0;
  for (let i = 0, j = 0; j < starts.length; j++) {
    while ((starts[j] as number) - (starts[i] as number) > span) i++;
    most = Math.max(most, j - i + 1);
  }
  return most;
}

describe("a rate limiter shared through a store", () => {
  it("lets the fleet start no more than one limiter allows, where separate limiters allow n times as much", async () => {
    const clock = new VirtualClock();
    const options = { rate: 10, burst: 10 };
    const shared = fleet(4, clock, options);
    await Promise.all(shared.map((l) => l.ready()));
    const sharedStarts = await hammer(shared, clock, 10_000);
    const alone = Array.from({ length: 4 }, () => rateLimiter({ ...options, clock }));
    const aloneStarts = await hammer(alone, clock, 10_000);
    // Alone: each 10 a second, so 4 × (10 + 100).
    expect(aloneStarts.length).toBeGreaterThanOrEqual(435);
    // Shared: burst + 10 a second over 10 s, and most of it used.
    expect(sharedStarts.length).toBeLessThanOrEqual(110);
    expect(sharedStarts.length).toBeGreaterThanOrEqual(90);
    expect(busiest(sharedStarts, 1000)).toBeLessThanOrEqual(20);
    await Promise.all(shared.map((l) => l.close()));
    expect(clock.pending).toBe(0);
  });

  it("never lets the fleet exceed burst + rate × T / per in any span, with slow and conflicting writes (property)", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 5 }),
        fc.record({
          rate: fc.integer({ min: 1, max: 40 }),
          burst: fc.integer({ min: 1, max: 20 }),
          syncEvery: fc.constantFrom(20, 100, 250),
        }),
        fc.integer({ min: 0, max: 60 }),
        fc.array(fc.tuple(fc.nat(4), fc.constantFrom("call", "call", "call", "wait", "conflict", "close")), {
          minLength: 50,
          maxLength: 300,
        }),
        async (n, { rate, burst, syncEvery }, latency, steps_) => {
          const clock = new VirtualClock();
          const store = faultyStore(memoryStore({ clock }), clock);
          store.latency = latency;
          const limiters = fleet(n, clock, { rate, burst, syncEvery }, store);
          const closed = new Set<number>();
          const starts: number[] = [];
          for (const [who, what] of steps_) {
            const i = who % n;
            const limiter = limiters[i] as RateLimiter;
            if (what === "call" && !closed.has(i)) {
              try {
                limiter.acquire(() => starts.push(clock.now()));
              } catch (error) {
                expect(error).toBeInstanceOf(RateLimitedError);
              }
            } else if (what === "wait") await clock.advance(37);
            else if (what === "conflict") store.conflicts += 2;
            else if (what === "close" && !closed.has(i)) {
              closed.add(i);
              void limiter.close();
            }
          }
          for (let i = 0; i < starts.length; i++) {
            for (let j = i; j < starts.length; j++) {
              const span = (starts[j] as number) - (starts[i] as number);
              expect(j - i + 1).toBeLessThanOrEqual(burst + (rate * span) / 1000 + 1e-6);
            }
          }
          const all = Promise.all(limiters.map((l) => l.close()));
          await clock.runAll();
          await all;
          expect(clock.pending).toBe(0);
        },
      ),
      { numRuns: 200 },
    );
  });

  it("hands its tokens back on close, so that the rest of the fleet can use them", async () => {
    const clock = new VirtualClock();
    // One token a minute: over the test's seconds, only the burst of 10 is there to share.
    const [a, b] = fleet(2, clock, { rate: 1, per: 60_000, burst: 10 }) as [RateLimiter, RateLimiter];
    await Promise.all([a.ready(), b.ready()]);
    // a asks for ten at once, gets the one it had at hand, and is topped up at the next exchange.
    let ran = 0;
    for (let i = 0; i < 10; i++) {
      try {
        a.acquire(() => ran++);
      } catch {}
    }
    await clock.advance(100);
    const held = a.tokens;
    expect(held).toBeGreaterThanOrEqual(2);
    await a.close();
    // b gets the whole burst less what a spent: a's hold came back.
    const got = await hammer([b], clock, 2000);
    expect(got.length).toBe(10 - ran);
    await b.close();
    expect(clock.pending).toBe(0);
  });

  it("keeps a hold only while its holder lives: a process that handed nothing back blocks the others no longer than its hold lasts", async () => {
    const clock = new VirtualClock();
    const store = memoryStore({ clock });
    // A process that held the whole burst at 0 ms and was never heard of again: its hold lasts 10 s.
    const [a] = fleet(1, clock, { rate: 10, burst: 10 }, store) as [RateLimiter];
    await a.ready();
    const entry = await store.read("rateLimiter:api");
    await store.write(
      "rateLimiter:api",
      entry.version,
      { kind: "rate", tokens: 0, at: 0, holders: [["gone", 10, 10_000]] },
      86_400_000,
    );
    const before = (await hammer([a], clock, 9000)).length;
    // What a held before (one token at most) is all it gets while the hold stands.
    expect(before).toBeLessThanOrEqual(1);
    const after = await hammer([a], clock, 5000);
    expect(after.length).toBeGreaterThanOrEqual(35);
    await a.close();
  });

  it("serves queued calls as the exchanges bring tokens, in order, and refuses those whose maxWait runs out", async () => {
    const clock = new VirtualClock();
    const [limiter] = fleet(1, clock, { rate: 10, burst: 1, queue: 10, maxWait: 250 });
    const l = limiter as RateLimiter;
    await l.ready();
    const order: number[] = [];
    const outcomes = Array.from({ length: 6 }, (_, i) =>
      l
        .execute(() => order.push(i))
        .then(
          () => "ran",
          (error: unknown) => (error instanceof RateLimitedError ? "refused" : String(error)),
        ),
    );
    await clock.advance(2000);
    const settled = await Promise.all(outcomes);
    // Ten a second: within 250 ms of joining, the first three get a token, and the rest are refused.
    expect(settled.filter((s) => s === "ran").length).toBeGreaterThanOrEqual(2);
    expect(settled.filter((s) => s === "refused").length).toBeGreaterThanOrEqual(1);
    expect(order).toEqual([...order].sort((a, b) => a - b));
    expect(settled.indexOf("refused")).toBe(settled.filter((s) => s === "ran").length);
    expect(l.queued).toBe(0);
    await l.close();
    expect(clock.pending).toBe(0);
  });

  it("lets a thousand queued callers abort with nothing left behind", async () => {
    const clock = new VirtualClock();
    const [l] = fleet(1, clock, { rate: 1, per: 60_000, burst: 1, queue: 1000 }) as [RateLimiter];
    await l.ready();
    const first = l.execute(() => {});
    await clock.advance(100);
    await first;
    const controller = new AbortController();
    const waiting = Array.from({ length: 1000 }, () =>
      l.execute(() => "ran", controller.signal).catch((error: unknown) => error),
    );
    expect(l.queued).toBe(1000);
    controller.abort(new Error("gone"));
    const results = await Promise.all(waiting);
    expect(results.every((r) => r instanceof Error && r.message === "gone")).toBe(true);
    expect(l.queued).toBe(0);
    await l.close();
    expect(clock.pending).toBe(0);
  });

  it("shares one bucket between pipelines on different processes through steps.rateLimit", async () => {
    const clock = new VirtualClock();
    const store = memoryStore({ clock });
    const make = () => pipeline(steps.rateLimit({ rate: 5, burst: 5, store, key: "api", clock }));
    const [p, q] = [make(), make()];
    await clock.advance(1);
    let ran = 0;
    for (let t = 0; t < 2000; t += 10) {
      for (const run of [p, q]) await run.execute(() => ran++).catch(() => {});
      await clock.advance(10);
    }
    expect(ran).toBeLessThanOrEqual(15);
    expect(ran).toBeGreaterThanOrEqual(10);
  });
});

describe("what the store holds", () => {
  it.each([
    ["tokens far above the burst", { kind: "rate", tokens: 1e308, at: 0, holders: [] }],
    ["negative tokens", { kind: "rate", tokens: -5, at: 0, holders: [] }],
    ["a time far ahead", { kind: "rate", tokens: 3, at: 1e15, holders: [] }],
    ["a hold far above the burst", { kind: "rate", tokens: 3, at: 0, holders: [["x", 1e308, 1e15]] }],
    ["a negative hold", { kind: "rate", tokens: 3, at: 0, holders: [["x", -1e9, 1e15]] }],
  ])("is clamped when it holds %s: the fleet still keeps to the rate", async (_, value) => {
    const clock = new VirtualClock();
    const store = memoryStore({ clock });
    await store.write("rateLimiter:api", 0, value, 86_400_000);
    const [l] = fleet(1, clock, { rate: 10, burst: 10 }, store) as [RateLimiter];
    const corrupt: unknown[] = [];
    l.on("store-corrupt", (e) => corrupt.push(e));
    await l.ready();
    const starts = await hammer([l], clock, 5000);
    expect(corrupt).toEqual([]);
    expect(starts.length).toBeLessThanOrEqual(10 + 50);
    expect(busiest(starts, 1000)).toBeLessThanOrEqual(20);
    await l.close();
    // What it wrote back is within bounds.
    const entry = await store.read("rateLimiter:api");
    const state = entry.value as { tokens: number; at: number; holders: [string, number, number][] };
    expect(state.tokens).toBeGreaterThanOrEqual(0);
    expect(state.tokens).toBeLessThanOrEqual(10);
    expect(state.at).toBeLessThanOrEqual(clock.now() + 1000);
    for (const [, held, until] of state.holders) {
      expect(held).toBeGreaterThanOrEqual(0);
      expect(held).toBeLessThanOrEqual(10);
      expect(until).toBeLessThanOrEqual(clock.now() + 601_000);
    }
    expect(clock.pending).toBe(0);
  });

  it.each([
    ["a string", "garbage"],
    ["another kind", { kind: "tokens", tokens: 3, holds: [] }],
    ["NaN tokens", { kind: "rate", tokens: Number.NaN, at: 0, holders: [] }],
    ["a holder that is not one", { kind: "rate", tokens: 1, at: 0, holders: [[1, 2, 3]] }],
    [
      "more holders than are kept",
      { kind: "rate", tokens: 1, at: 0, holders: Array.from({ length: 1001 }, (_, i) => [`p${i}`, 0, 1e9]) },
    ],
  ])("is replaced, with a store-corrupt event, when it is %s", async (_, value) => {
    const clock = new VirtualClock();
    const store = memoryStore({ clock });
    await store.write("rateLimiter:api", 0, value, 86_400_000);
    const [l] = fleet(1, clock, { rate: 10, burst: 10 }, store) as [RateLimiter];
    const corrupt: { found: string; reason: string }[] = [];
    l.on("store-corrupt", (e) => corrupt.push(e));
    await l.ready();
    expect(corrupt).toHaveLength(1);
    expect(corrupt[0]?.reason).toMatch(/rateLimiter: shared state/);
    expect(corrupt[0]?.found.length).toBeLessThanOrEqual(200);
    const starts = await hammer([l], clock, 1000);
    expect(starts.length).toBeGreaterThan(0);
    expect(starts.length).toBeLessThanOrEqual(20);
    expect(((await store.read("rateLimiter:api")).value as { kind: string }).kind).toBe("rate");
    await l.close();
  });
});

describe("when the store is down", () => {
  it("lets each process take its share of the rate among the fleet it last saw", async () => {
    const clock = new VirtualClock();
    const store = faultyStore(memoryStore({ clock }), clock);
    const limiters = fleet(2, clock, { rate: 20, burst: 20 }, store);
    const down: unknown[] = [];
    limiters[0]?.on("store-down", (e) => down.push(e));
    await Promise.all(limiters.map((l) => l.ready()));
    await hammer(limiters, clock, 1000);
    store.fault = "reject";
    await clock.advance(500);
    expect(down).toHaveLength(1);
    const before = clock.now();
    const starts = (await hammer(limiters, clock, 10_000)).filter((t) => t > before);
    // Each takes 10 a second alone (half of 20): together 20 a second, and a burst of 10 each.
    expect(starts.length).toBeLessThanOrEqual(20 + 200);
    expect(starts.length).toBeGreaterThanOrEqual(190);
    await Promise.all(limiters.map((l) => l.close()));
  });

  it('refuses with whenStoreDown: "closed", saying when the store will be tried again', async () => {
    const clock = new VirtualClock();
    const store = faultyStore(memoryStore({ clock }), clock);
    const l = rateLimiter({ rate: 10, store, key: "api", clock, whenStoreDown: "closed" });
    await l.ready();
    store.fault = "reject";
    await clock.advance(200);
    let error: unknown;
    try {
      l.acquire(() => {});
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(RateLimitedError);
    expect((error as RateLimitedError).retryAfter).toBe(1000);
    store.fault = "none";
    await clock.advance(2000);
    expect(l.shared).toBe(true);
    await l.close();
    expect(clock.pending).toBe(0);
  });

  it("never makes a call wait for a hung store, and leaves nothing behind after close", async () => {
    const clock = new VirtualClock();
    const store = faultyStore(memoryStore({ clock }), clock);
    const l = rateLimiter({ rate: 10, burst: 10, store, key: "api", clock, storeTimeout: 100 });
    await l.ready();
    store.fault = "hang";
    await clock.advance(1000);
    const starts = await hammer([l], clock, 1000);
    expect(starts.length).toBeGreaterThan(0);
    const closing = l.close();
    await clock.runAll();
    await closing;
    expect(clock.pending).toBe(0);
  });
});

describe("sharing options", () => {
  it("name the option, the value and what is allowed", () => {
    const store = memoryStore();
    expect(() => rateLimiter({ rate: 1, store })).toThrow(
      /rateLimiter: key must be a non-empty string.*got undefined/,
    );
    expect(() => rateLimiter({ rate: 1, syncEvery: 10 })).toThrow(
      /rateLimiter: syncEvery must be given only with a store/,
    );
    expect(() => rateLimiter({ rate: 1, store, key: "k", syncEvery: 0 })).toThrow(OptionError);
    expect(() => steps.rateLimit({ rate: 1, store: {} as Store, key: "k" })).toThrow(/store must be a Store/);
  });
});
