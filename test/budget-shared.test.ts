// A retry budget shared by a fleet through a store: how each process's lease is sized, held, renewed,
// taken back and handed back; what the shared state holds after each exchange; what a process does with
// junk read from the store, and with a store that fails or loses a compare-and-set.
import fc from "fast-check";
import {
  type BudgetEvents,
  memoryStore,
  type RetryBudget,
  retryBudget,
  type Store,
  type StoreEntry,
} from "robustly";
import { VirtualClock } from "robustly/testing";
import { describe, expect, it } from "vitest";
import { faultyStore } from "./support/faulty-store.js";

/** What `store` holds under `key` now. */
async function held(store: Store, key: string): Promise<unknown> {
  return (await store.read(key)).value;
}

/** How many of `n` retries asked for in a row `budget` allows. */
function allowed(budget: RetryBudget, n: number): number {
  let granted = 0;
  for (let i = 0; i < n; i++) if (budget.tryRetry()) granted += 1;
  return granted;
}

/**
 * A store of another make that hands back exactly what it holds, with no JSON on the way (so it can hold
 * NaN or Infinity), holding `value` under `key` at version 1.
 */
function rawStore(clock: VirtualClock, key: string, value: unknown): Store {
  const slots = new Map<string, { value: unknown; version: number }>([[key, { value, version: 1 }]]);
  const entry = (k: string): StoreEntry => ({
    ...(slots.get(k) ?? { value: undefined, version: 0 }),
    time: clock.now(),
  });
  return {
    name: "raw",
    read: (k) => Promise.resolve(entry(k)),
    write: (k, version, written) => {
      const found = entry(k);
      if (found.version !== version) return Promise.resolve({ written: false, entry: found });
      slots.set(k, { value: written, version: version + 1 });
      return Promise.resolve({ written: true, entry: entry(k) });
    },
    close: () => Promise.resolve(),
  };
}

/** A ratio budget's shared state: requests and retries slot by slot (bucket number mod 10). */
function ratioState(bucketAt: number, requests: number[], retries: number[]) {
  const slots = (counts: number[]) => [...counts, ...Array(10 - counts.length).fill(0)];
  return { kind: "ratio", requests: slots(requests), retries: slots(retries), bucketAt };
}

describe("a shared token budget's leases", () => {
  it("are sized to twice the demand since the last exchange or three times the smoothed rate of asking over syncEvery, at least one", async () => {
    const clock = new VirtualClock(1_000_000);
    const store = memoryStore({ clock });
    // 1000 tokens: 499 retries before the bucket falls to half, so no lease is cut short by the room left.
    const budget = retryBudget({ maxTokens: 1000, tokenRatio: 1, store, key: "k", clock });
    await budget.ready();
    const leases = [await held(store, "budget-tokens:k")];
    for (const demand of [1, 3, 0, 0, 0, 0]) {
      expect(allowed(budget, demand)).toBe(demand);
      await clock.advance(100);
      leases.push(await held(store, "budget-tokens:k"));
    }
    // Hold bucket 1000 (of 1 s: max(10 × syncEvery, 10 s) / 10) all along. Idle, a standing lease of 1.
    // Asked 1 in 100 ms: a rate of 0.01/ms, 3 × 0.01 × 100 = 3 (more than 2 × 1). Asked 3: the rate is
    // (0.01 + 0.03) / 2 = 0.02, so 6 (as 2 × 3). Then nothing: the rate halves at each exchange, 0.01,
    // 0.005, 0.0025, 0.00125, and the lease with it: 3, ceil(1.5) = 2, ceil(0.75) = 1, 1.
    expect(leases).toEqual(
      [1, 3, 6, 3, 2, 1, 1].map((n) => ({ kind: "tokens", tokens: 1000, holds: [[1000, n]] })),
    );
    await budget.close();
    expect(await held(store, "budget-tokens:k")).toEqual({ kind: "tokens", tokens: 1000, holds: [] });
    expect(clock.pending).toBe(0);
  });

  it("are asked for at once when a burst runs out of lease, at the pace of syncEvery rather than of the few ms since the last exchange", async () => {
    const clock = new VirtualClock(1_000_000);
    const store = memoryStore({ clock });
    const budget = retryBudget({ maxTokens: 1000, tokenRatio: 1, store, key: "k", clock, syncEvery: 1000 });
    await budget.ready();
    // The standing lease of one, then four refusals.
    expect(allowed(budget, 5)).toBe(1);
    // A refusal asks for an exchange as soon as the limit of ten per syncEvery allows: 100 ms after the last.
    await clock.advance(99);
    expect(await held(store, "budget-tokens:k")).toEqual({
      kind: "tokens",
      tokens: 1000,
      holds: [[1000, 1]],
    });
    await clock.advance(1);
    // 5 asked for within syncEvery: 0.005/ms, 3 × 0.005 × 1000 = 15 (not 5 over the 100 ms: 150).
    expect(await held(store, "budget-tokens:k")).toEqual({
      kind: "tokens",
      tokens: 1000,
      holds: [[1000, 15]],
    });
    expect(allowed(budget, 16)).toBe(15);
    await budget.close();
  });

  it("top a busy process up with at most half of what is left: 4 of the 9 retries 20 tokens allow", async () => {
    const clock = new VirtualClock(1_000_000);
    const store = memoryStore({ clock });
    const budget = retryBudget({ maxTokens: 20, tokenRatio: 1, store, key: "k", clock });
    await budget.ready();
    // A full bucket of 20 allows ceil(20 − 20 / 2) − 1 = 9 retries before it falls to half.
    expect(allowed(budget, 20)).toBe(1);
    await clock.advance(10);
    expect(await held(store, "budget-tokens:k")).toEqual({ kind: "tokens", tokens: 20, holds: [[1000, 4]] });
    expect(allowed(budget, 20)).toBe(4);
    await budget.close();
  });

  it.each([
    // Asked once: a lease of 3 leaves 6 of 9, and a standing lease would leave 5, at least half.
    [1, 3, true],
    // Asked often: a lease of 4 leaves 5, and a standing lease would leave 4, less than half.
    [20, 4, false],
  ])(
    "give a process that joins, idle, a standing lease only if at least half of the budget stays unleased (first asked %i)",
    async (asks, lease, standing) => {
      const clock = new VirtualClock(1_000_000);
      const store = memoryStore({ clock });
      const options = { maxTokens: 20, tokenRatio: 1, store, key: "k", clock };
      const busy = retryBudget(options);
      await busy.ready();
      allowed(busy, asks);
      await clock.advance(asks === 1 ? 100 : 10);
      expect(await held(store, "budget-tokens:k")).toEqual({
        kind: "tokens",
        tokens: 20,
        holds: [[1000, lease]],
      });
      const joining = retryBudget(options);
      await joining.ready();
      expect(joining.available).toBe(standing);
      expect(await held(store, "budget-tokens:k")).toEqual({
        kind: "tokens",
        tokens: 20,
        holds: [[1000, standing ? lease + 1 : lease]],
      });
      await Promise.all([busy.close(), joining.close()]);
    },
  );

  it("take an idle process's standing lease back under pressure, but leave a busy one's and keep topping it up", async () => {
    const clock = new VirtualClock(1_000_000);
    const store = memoryStore({ clock });
    const options = { maxTokens: 20, tokenRatio: 1, store, key: "k", clock };
    const busy = retryBudget(options);
    const idle = retryBudget(options);
    await Promise.all([busy.ready(), idle.ready()]);
    const states: unknown[] = [];
    const note = async () => {
      states.push(((await held(store, "budget-tokens:k")) as { holds: unknown }).holds);
    };
    await note();
    expect(allowed(busy, 20)).toBe(1);
    await clock.advance(10);
    await note();
    expect(idle.available).toBe(true);
    await clock.advance(90);
    await note();
    expect([busy.available, idle.available]).toEqual([true, false]);
    await clock.advance(10);
    await note();
    await clock.advance(90);
    await note();
    await clock.advance(10);
    await note();
    expect(states).toEqual(
      [
        // Each idle process holds its standing lease of 1 (9 retries allowed).
        2,
        // The busy one asked 20 and is topped up with half of the 8 left: 4, and the idle one keeps its 1.
        5,
        // The idle one's exchange: 5 of 9 leased, more than half, so its lease is taken back (still held
        // until it hands it back at its next exchange).
        5,
        // The busy one asked nothing since, but its smoothed rate asks for 3 × 0.1 × 100 = 30: it keeps its
        // 4 and is topped up with half of the 4 left: 6 (and the idle one's 1 still held).
        7,
        // The idle one hands its 1 back and gets none: 3 left, one more would leave less than half.
        6,
        // The busy one (its rate halved again: 15) keeps 6 and gets half of the 3 left, rounded down: 1.
        7,
      ].map((n) => [[1000, n]]),
    );
    expect(allowed(busy, 10)).toBe(7);
    expect(allowed(idle, 1)).toBe(0);
    await Promise.all([busy.close(), idle.close()]);
    expect(await held(store, "budget-tokens:k")).toEqual({ kind: "tokens", tokens: 20, holds: [] });
  });

  /**
   * Two processes on 20 tokens: a busy one that asked once (a lease of 3) and an idle one (a standing lease
   * of 1), then 7 failures on the busy one, handed over at 200 ms. Each process has a store of its own
   * over one memory store, so that one process's writes can be made to lose their compare-and-set.
   */
  async function overLeased() {
    const clock = new VirtualClock(1_000_000);
    const inner = memoryStore({ clock });
    const stores = [faultyStore(inner), faultyStore(inner)] as const;
    const [busy, idle] = stores.map((store) =>
      retryBudget({ maxTokens: 20, tokenRatio: 1, store, key: "k", clock }),
    ) as [RetryBudget, RetryBudget];
    await Promise.all([busy.ready(), idle.ready()]);
    expect(allowed(busy, 1)).toBe(1);
    await clock.advance(100);
    expect(await held(inner, "budget-tokens:k")).toEqual({ kind: "tokens", tokens: 20, holds: [[1000, 4]] });
    for (let i = 0; i < 7; i++) busy.failure();
    await clock.advance(100);
    // 13 tokens allow ceil(13 − 10) − 1 = 2 retries. The busy process (its rate halved: a lease of 2
    // wanted) keeps 2 of its 3, beside the idle one's 1: one too many, so one is taken back; the idle
    // process then finds 3 leased of 2 and its 1 is taken back. Both stay held until handed back.
    expect(await held(inner, "budget-tokens:k")).toEqual({ kind: "tokens", tokens: 13, holds: [[1000, 3]] });
    return { clock, inner, stores, busy, idle };
  }

  it("are taken back by as much as the budget is over-leased, no more, when failures shrink it", async () => {
    const { busy, idle } = await overLeased();
    expect(allowed(busy, 3)).toBe(1);
    expect(allowed(idle, 1)).toBe(0);
    await Promise.all([busy.close(), idle.close()]);
  });

  it("hand back what was taken back at the exchange after one lost to other processes' writes", async () => {
    const { clock, inner, stores, busy, idle } = await overLeased();
    // The busy process's next exchange loses eight compare-and-sets in a row: what was taken back from it
    // stays held until the exchange after. The idle one hands its 1 back.
    stores[0].conflicts = 8;
    await clock.advance(100);
    expect(await held(inner, "budget-tokens:k")).toEqual({ kind: "tokens", tokens: 13, holds: [[1000, 2]] });
    await clock.advance(100);
    // The busy one hands back what was taken back and keeps the 1 it has (all its rate, halved again, asks
    // for); the idle one gets no standing lease from a budget of 2 with 1 leased.
    expect(await held(inner, "budget-tokens:k")).toEqual({ kind: "tokens", tokens: 13, holds: [[1000, 1]] });
    expect(allowed(busy, 2)).toBe(1);
    expect(allowed(idle, 1)).toBe(0);
    await Promise.all([busy.close(), idle.close()]);
  });

  it.each([
    // 8 tokens allow 2 retries: a standing lease of 1 leaves half.
    [2, true, [[1000, 1]]],
    // 7 tokens allow 1: the standing lease would leave none, so it is handed back.
    [3, false, []],
  ])(
    "leave an idle process its standing lease only while it leaves half of the budget (%i failures of 10 tokens)",
    async (failures, standing, after) => {
      const clock = new VirtualClock(1_000_000);
      const store = memoryStore({ clock });
      const budget = retryBudget({ maxTokens: 10, tokenRatio: 1, store, key: "k", clock });
      await budget.ready();
      for (let i = 0; i < failures; i++) budget.failure();
      await clock.advance(100);
      expect(await held(store, "budget-tokens:k")).toEqual({
        kind: "tokens",
        tokens: 10 - failures,
        holds: [[1000, 1]],
      });
      expect(budget.available).toBe(standing);
      await clock.advance(100);
      expect(await held(store, "budget-tokens:k")).toEqual({
        kind: "tokens",
        tokens: 10 - failures,
        holds: after,
      });
      expect(budget.available).toBe(standing);
      await budget.close();
    },
  );

  it("top a lease up by what is wanted beyond what is kept", async () => {
    const clock = new VirtualClock(1_000_000);
    const store = memoryStore({ clock });
    const budget = retryBudget({ maxTokens: 1000, tokenRatio: 1, store, key: "k", clock });
    await budget.ready();
    expect(allowed(budget, 1)).toBe(1);
    await clock.advance(100);
    // Asked 1: a lease of 3. Asked 1 again: 3 wanted again, 2 kept, topped up with 1.
    expect(allowed(budget, 1)).toBe(1);
    await clock.advance(100);
    expect(await held(store, "budget-tokens:k")).toEqual({
      kind: "tokens",
      tokens: 1000,
      holds: [[1000, 3]],
    });
    expect(allowed(budget, 4)).toBe(3);
    await budget.close();
  });
});

describe("a shared token budget's leases together", () => {
  it("never exceed the retries the tokens allow, ceil(tokens − maxTokens / 2) − 1, and are all handed back on close (property)", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 4 }),
        fc.constantFrom(0, 15),
        fc.array(
          fc.tuple(
            fc.nat(3),
            fc.constantFrom("retry", "retry", "success", "wait"),
            fc.integer({ min: 1, max: 120 }),
          ),
          { minLength: 20, maxLength: 150 },
        ),
        async (n, latency, steps) => {
          const clock = new VirtualClock(1_000_000);
          const inner = memoryStore({ clock });
          const store = faultyStore(inner, clock);
          store.latency = latency;
          const budgets = Array.from({ length: n }, () =>
            retryBudget({ maxTokens: 20, tokenRatio: 1, store, key: "k", clock }),
          );
          for (const [who, what, ms] of steps) {
            const budget = budgets[who % n] as RetryBudget;
            if (what === "retry") budget.tryRetry();
            else if (what === "success") budget.success();
            else {
              await clock.advance(ms);
              const state = (await held(inner, "budget-tokens:k")) as
                | { tokens: number; holds: [number, number][] }
                | undefined;
              if (state === undefined) continue;
              // No failure: the bucket stays full, and 20 tokens allow 9 retries.
              expect(state.tokens).toBe(20);
              expect(state.holds.reduce((sum, [, tokens]) => sum + tokens, 0)).toBeLessThanOrEqual(9);
            }
          }
          const closed = Promise.all(budgets.map((b) => b.close()));
          await clock.runAll();
          await closed;
          expect(await held(inner, "budget-tokens:k")).toEqual({ kind: "tokens", tokens: 20, holds: [] });
        },
      ),
      { numRuns: 100 },
    );
  });
});

describe("a shared token budget's holds", () => {
  it.each([
    // syncEvery 100: holds of 1 s, released after 10 s (10 s is the least).
    [100, 1000, 10_000],
    // syncEvery 2000: holds of 2 s, released after 10 × syncEvery = 20 s.
    [2000, 500, 20_000],
  ])(
    "of a process that is gone are released once not renewed for max(10 × syncEvery, 10 s) (syncEvery %i)",
    async (syncEvery, bucket, lifetime) => {
      const clock = new VirtualClock(1_000_000);
      // A process that held 3 of the 4 retries 10 tokens allow, and is gone.
      const store = memoryStore({ clock });
      await store.write(
        "budget-tokens:k",
        0,
        { kind: "tokens", tokens: 10, holds: [[bucket, 3]] },
        86_400_000,
      );
      const budget = retryBudget({ maxTokens: 10, tokenRatio: 1, store, key: "k", clock, syncEvery });
      await budget.ready();
      // 1 left: a standing lease would leave none, less than half of 4.
      expect(budget.available).toBe(false);
      expect(await held(store, "budget-tokens:k")).toEqual({
        kind: "tokens",
        tokens: 10,
        holds: [[bucket, 3]],
      });
      await clock.advance(lifetime - syncEvery);
      expect(await held(store, "budget-tokens:k")).toEqual({
        kind: "tokens",
        tokens: 10,
        holds: [[bucket, 3]],
      });
      expect(budget.available).toBe(false);
      await clock.advance(syncEvery);
      // Released: this process's standing lease is held in the bucket of now.
      expect(await held(store, "budget-tokens:k")).toEqual({
        kind: "tokens",
        tokens: 10,
        holds: [[bucket + 10, 1]],
      });
      expect(budget.available).toBe(true);
      await budget.close();
    },
  );

  it("of several processes add up in their bucket, and each exchange renews only its own process's part", async () => {
    const clock = new VirtualClock(1_000_000);
    const store = memoryStore({ clock });
    const options = { maxTokens: 1000, tokenRatio: 1, store, key: "k", clock };
    const a = retryBudget(options);
    await a.ready();
    await clock.advance(50);
    const b = retryBudget(options);
    await b.ready();
    expect(await held(store, "budget-tokens:k")).toEqual({
      kind: "tokens",
      tokens: 1000,
      holds: [[1000, 2]],
    });
    // A asks 1 (a lease of 3), B asks 3 (a lease of 9: 3 × 0.03 × 100): each exchange keeps the other's.
    expect(allowed(a, 1)).toBe(1);
    expect(allowed(b, 3)).toBe(1);
    await clock.advance(50);
    // A's exchange (B's refusals brought B's forward to 10 ms after its first, so it has come and gone).
    expect(await held(store, "budget-tokens:k")).toEqual({
      kind: "tokens",
      tokens: 1000,
      holds: [[1000, 12]],
    });
    // A second later, in the next hold bucket: each process's hold moves there at its own exchange.
    await clock.advance(1000);
    expect(await held(store, "budget-tokens:k")).toEqual({
      kind: "tokens",
      tokens: 1000,
      holds: [[1001, 2]],
    });
    await a.close();
    expect(await held(store, "budget-tokens:k")).toEqual({
      kind: "tokens",
      tokens: 1000,
      holds: [[1001, 1]],
    });
    await b.close();
    expect(await held(store, "budget-tokens:k")).toEqual({ kind: "tokens", tokens: 1000, holds: [] });
  });
});

describe("a token budget's shared state read from the store", () => {
  const reason = (got: string) =>
    `retryBudget: shared state must be the state of a token budget ({ kind: "tokens", tokens, holds: [[bucket, tokens], …] }); got ${got}`;
  const fresh = { kind: "tokens", tokens: 10, holds: [[1000, 1]] };

  it.each([
    ["null", null, "null"],
    [
      "another kind's state",
      { kind: "ratio", tokens: 5, holds: [] },
      '{"kind":"ratio","tokens":5,"holds":[]}',
    ],
    [
      "negative tokens",
      { kind: "tokens", tokens: -1, holds: [] },
      '{"kind":"tokens","tokens":-1,"holds":[]}',
    ],
    [
      "a hold that is not a pair, after one that is",
      { kind: "tokens", tokens: 5, holds: [[1000, 1], "x"] },
      '{"kind":"tokens","tokens":5,"holds":[[1000,1],"x"]}',
    ],
    [
      "a hold of three numbers",
      { kind: "tokens", tokens: 5, holds: [[1000, 1, 1]] },
      '{"kind":"tokens","tokens":5,"holds":[[1000,1,1]]}',
    ],
    [
      "a hold of a number and a string",
      { kind: "tokens", tokens: 5, holds: [[1000, "1"]] },
      '{"kind":"tokens","tokens":5,"holds":[[1000,"1"]]}',
    ],
    [
      "a hold that is a string of two characters",
      { kind: "tokens", tokens: 5, holds: ["ab"] },
      '{"kind":"tokens","tokens":5,"holds":["ab"]}',
    ],
  ])("is reported and replaced with a fresh state when it holds %s", async (_what, value, shown) => {
    const clock = new VirtualClock(1_000_000);
    const store = memoryStore({ clock });
    await store.write("budget-tokens:k", 0, value, 86_400_000);
    const budget = retryBudget({ maxTokens: 10, tokenRatio: 1, store, key: "k", clock });
    const events: BudgetEvents["store-corrupt"][] = [];
    budget.on("store-corrupt", (event) => events.push(event));
    await budget.ready();
    expect(events).toEqual([{ found: shown, reason: reason(shown) }]);
    expect(await held(store, "budget-tokens:k")).toEqual(fresh);
    expect(budget.snapshot()).toEqual({ kind: "tokens", tokens: 10 });
    await budget.close();
  });

  it.each([
    ["NaN tokens", { kind: "tokens", tokens: Number.NaN, holds: [] }],
    ["infinite tokens", { kind: "tokens", tokens: Number.POSITIVE_INFINITY, holds: [] }],
    ["a hold of NaN tokens", { kind: "tokens", tokens: 5, holds: [[1000, Number.NaN]] }],
    ["a hold dated at infinity", { kind: "tokens", tokens: 5, holds: [[Number.POSITIVE_INFINITY, 1]] }],
  ])(
    "is reported and replaced when a store that keeps numbers as they are holds %s",
    async (_what, value) => {
      const clock = new VirtualClock(1_000_000);
      const store = rawStore(clock, "budget-tokens:k", value);
      const budget = retryBudget({ maxTokens: 10, tokenRatio: 1, store, key: "k", clock });
      const events: BudgetEvents["store-corrupt"][] = [];
      budget.on("store-corrupt", (event) => events.push(event));
      await budget.ready();
      // Shown as JSON shows it (a number that is not finite is null there).
      const shown = JSON.stringify(value);
      expect(events).toEqual([{ found: shown, reason: reason(shown) }]);
      expect(await held(store, "budget-tokens:k")).toEqual(fresh);
      await budget.close();
    },
  );

  it("is taken as it is when its bucket is empty: no retry, and nothing reported", async () => {
    const clock = new VirtualClock(1_000_000);
    const store = memoryStore({ clock });
    await store.write("budget-tokens:k", 0, { kind: "tokens", tokens: 0, holds: [] }, 86_400_000);
    const budget = retryBudget({ maxTokens: 10, tokenRatio: 1, store, key: "k", clock });
    const events: unknown[] = [];
    budget.on("store-corrupt", (event) => events.push(event));
    await budget.ready();
    expect(events).toEqual([]);
    expect(budget.snapshot()).toEqual({ kind: "tokens", tokens: 0 });
    expect(budget.available).toBe(false);
    expect(await held(store, "budget-tokens:k")).toEqual({ kind: "tokens", tokens: 0, holds: [] });
    await budget.close();
  });

  it("ignores a hold of no tokens or fewer: it lends no retry beyond what the tokens allow", async () => {
    const clock = new VirtualClock(1_000_000);
    const store = memoryStore({ clock });
    const holds = [
      [1000, -5],
      [999, 0],
    ];
    await store.write("budget-tokens:k", 0, { kind: "tokens", tokens: 10, holds }, 86_400_000);
    const busy = retryBudget({ maxTokens: 10, tokenRatio: 1, store, key: "k", clock });
    await busy.ready();
    expect(await held(store, "budget-tokens:k")).toEqual({ kind: "tokens", tokens: 10, holds: [[1000, 1]] });
    // 10 tokens allow 4 retries. Asked often, the process is topped up with half of them: 2, not half of
    // 4 plus the 5 a negative hold would seem to give back.
    expect(allowed(busy, 10)).toBe(1);
    await clock.advance(10);
    expect(await held(store, "budget-tokens:k")).toEqual({ kind: "tokens", tokens: 10, holds: [[1000, 2]] });
    expect(allowed(busy, 10)).toBe(2);
    await busy.close();
  });

  it("renews this process's hold whole when the store holds less for it than it leased (a state no process of the fleet writes)", async () => {
    const clock = new VirtualClock(1_000_000);
    const store = memoryStore({ clock });
    const budget = retryBudget({ maxTokens: 20, tokenRatio: 1, store, key: "k", clock });
    await budget.ready();
    expect(allowed(budget, 1)).toBe(1);
    await clock.advance(100);
    expect(await held(store, "budget-tokens:k")).toEqual({ kind: "tokens", tokens: 20, holds: [[1000, 3]] });
    // Another program writes a hold of 1 where this process holds 3.
    const found = await store.read("budget-tokens:k");
    await store.write(
      "budget-tokens:k",
      found.version,
      { kind: "tokens", tokens: 20, holds: [[1000, 1]] },
      60_000,
    );
    await clock.advance(100);
    // Nothing asked since: the process keeps 2 of its 3 (the rate halved), and holds them.
    expect(await held(store, "budget-tokens:k")).toEqual({ kind: "tokens", tokens: 20, holds: [[1000, 2]] });
    expect(allowed(budget, 3)).toBe(2);
    await budget.close();
  });
});

describe("a shared token budget's local copy", () => {
  it("counts this process's outcomes at once: a failure takes 1, a success gives tokenRatio back", async () => {
    const clock = new VirtualClock(1_000_000);
    const store = memoryStore({ clock });
    const budget = retryBudget({ maxTokens: 10, tokenRatio: 0.5, store, key: "k", clock });
    await budget.ready();
    for (let i = 0; i < 4; i++) budget.failure();
    expect(budget.snapshot()).toEqual({ kind: "tokens", tokens: 6 });
    await clock.advance(100);
    expect(await held(store, "budget-tokens:k")).toMatchObject({ kind: "tokens", tokens: 6 });
    budget.success();
    expect(budget.snapshot()).toEqual({ kind: "tokens", tokens: 6.5 });
    budget.success();
    await clock.advance(100);
    expect(await held(store, "budget-tokens:k")).toMatchObject({ kind: "tokens", tokens: 7 });
    expect(budget.snapshot()).toEqual({ kind: "tokens", tokens: 7 });
    await budget.close();
  });

  it("keeps the outcomes seen while an exchange is under way when it takes the fleet's state", async () => {
    const clock = new VirtualClock(1_000_000);
    const inner = memoryStore({ clock });
    const store = faultyStore(inner, clock);
    store.latency = 20;
    const budget = retryBudget({ maxTokens: 10, tokenRatio: 1, store, key: "k", clock });
    await clock.advance(40); // the first read and write, 20 ms each
    await budget.ready();
    budget.failure();
    budget.failure();
    // The next exchange starts 100 ms after the first ended, and answers 40 ms later.
    await clock.advance(110);
    budget.failure();
    budget.failure();
    budget.failure();
    await clock.advance(30);
    // The fleet's state has the two failures handed over; the local copy the three since, too.
    expect(await held(inner, "budget-tokens:k")).toMatchObject({ kind: "tokens", tokens: 8 });
    expect(budget.snapshot()).toEqual({ kind: "tokens", tokens: 5 });
    await clock.advance(140);
    expect(await held(inner, "budget-tokens:k")).toMatchObject({ kind: "tokens", tokens: 5 });
    expect(budget.snapshot()).toEqual({ kind: "tokens", tokens: 5 });
    const closed = budget.close();
    await clock.runAll();
    await closed;
    expect(clock.pending).toBe(0);
  });

  it("is replaced by restore(), decides alone on it while the store is down, and gives way to the fleet's state when it returns", async () => {
    const clock = new VirtualClock(1_000_000);
    const inner = memoryStore({ clock });
    const store = faultyStore(inner);
    const budget = retryBudget({ maxTokens: 10, tokenRatio: 1, store, key: "k", clock, storeTimeout: 30 });
    await budget.ready();
    store.fault = "reject";
    await clock.advance(100);
    expect(budget.shared).toBe(false);
    budget.restore({ kind: "tokens", tokens: 5 });
    expect(budget.snapshot()).toEqual({ kind: "tokens", tokens: 5 });
    // Alone, the local copy decides: no retry at half the bucket, one above it.
    expect(budget.available).toBe(false);
    expect(budget.tryRetry()).toBe(false);
    budget.restore({ kind: "tokens", tokens: 5.5 });
    expect(budget.available).toBe(true);
    expect(budget.tryRetry()).toBe(true);
    store.fault = "none";
    await clock.advance(1000);
    expect(budget.shared).toBe(true);
    expect(budget.snapshot()).toEqual({ kind: "tokens", tokens: 10 });
    await budget.close();
  });
});

describe("a shared budget's available", () => {
  it("says whether a retry would be allowed now without taking it: the lease while shared, never while refusing with the store down", async () => {
    const clock = new VirtualClock(1_000_000);
    const store = faultyStore(memoryStore({ clock }));
    const budget = retryBudget({
      maxTokens: 20,
      tokenRatio: 1,
      store,
      key: "k",
      clock,
      whenStoreDown: "closed",
    });
    await budget.ready();
    // A standing lease of 1: looking at it twice does not spend it.
    expect(budget.available).toBe(true);
    expect(budget.available).toBe(true);
    expect(budget.tryRetry()).toBe(true);
    expect(budget.available).toBe(false);
    store.fault = "reject";
    await clock.advance(100);
    // Down, and told to refuse: not available, though the local copy is a full bucket.
    expect(budget.snapshot()).toEqual({ kind: "tokens", tokens: 20 });
    expect(budget.available).toBe(false);
    expect(budget.tryRetry()).toBe(false);
    store.fault = "none";
    await clock.advance(1000);
    expect(budget.shared).toBe(true);
    expect(budget.available).toBe(true);
    await budget.close();
  });

  it("is the local copy's while the store is down and the budget decides alone", async () => {
    const clock = new VirtualClock(1_000_000);
    const store = faultyStore(memoryStore({ clock }));
    const budget = retryBudget({ maxTokens: 10, tokenRatio: 1, store, key: "k", clock });
    await budget.ready();
    expect(allowed(budget, 1)).toBe(1);
    expect(budget.available).toBe(false);
    store.fault = "reject";
    await clock.advance(100);
    expect(budget.shared).toBe(false);
    // A full bucket of 10: available until failures bring it to half.
    expect(budget.available).toBe(true);
    for (let i = 0; i < 4; i++) budget.failure();
    expect(budget.available).toBe(true);
    budget.failure();
    expect(budget.available).toBe(false);
    await budget.close();
    expect(clock.pending).toBe(0);
  });
});

describe("an exchange lost to other processes' writes", () => {
  it("hands its outcomes over at the next exchange", async () => {
    const clock = new VirtualClock(1_000_000);
    const store = faultyStore(memoryStore({ clock }));
    const budget = retryBudget({ maxTokens: 20, tokenRatio: 1, store, key: "k", clock });
    await budget.ready();
    for (let i = 0; i < 6; i++) budget.failure();
    store.conflicts = 8;
    await clock.advance(100);
    expect(await held(store, "budget-tokens:k")).toMatchObject({ tokens: 20 });
    expect(budget.shared).toBe(true);
    await clock.advance(100);
    expect(await held(store, "budget-tokens:k")).toMatchObject({ tokens: 14 });
    budget.success();
    budget.success();
    store.conflicts = 8;
    await clock.advance(100);
    expect(await held(store, "budget-tokens:k")).toMatchObject({ tokens: 14 });
    await clock.advance(100);
    expect(await held(store, "budget-tokens:k")).toMatchObject({ tokens: 16 });
    expect(budget.snapshot()).toEqual({ kind: "tokens", tokens: 16 });
    await budget.close();
  });

  it("leaves the lease it was handing back spendable, and hands the whole hold back on close", async () => {
    const clock = new VirtualClock(1_000_000);
    const store = faultyStore(memoryStore({ clock }));
    const budget = retryBudget({ maxTokens: 1000, tokenRatio: 1, store, key: "k", clock });
    await budget.ready();
    // Asked 1, 3, 6 in three intervals: leases of 3, 6, then 12 (the rate (0.02 + 0.06) / 2 = 0.04/ms).
    for (const demand of [1, 3, 6]) {
      expect(allowed(budget, demand)).toBe(demand);
      await clock.advance(100);
    }
    expect(await held(store, "budget-tokens:k")).toEqual({
      kind: "tokens",
      tokens: 1000,
      holds: [[1000, 12]],
    });
    // Asked 1, then the exchange is lost: it meant to keep 8 of the 11 left and hand 3 back.
    expect(allowed(budget, 1)).toBe(1);
    store.conflicts = 8;
    await clock.advance(100);
    expect(await held(store, "budget-tokens:k")).toEqual({
      kind: "tokens",
      tokens: 1000,
      holds: [[1000, 12]],
    });
    // Nothing reached the store: the 11 are still this process's to spend.
    expect(allowed(budget, 12)).toBe(11);
    // Closing hands back all of the hold of 12: the 12 spent since it was taken.
    await budget.close();
    expect(await held(store, "budget-tokens:k")).toEqual({ kind: "tokens", tokens: 1000, holds: [] });
  });

  it("counts what was asked for before it once in the smoothed rate of asking, not again at the next exchange", async () => {
    const clock = new VirtualClock(1_000_000);
    const store = faultyStore(memoryStore({ clock }));
    const budget = retryBudget({ maxTokens: 1000, tokenRatio: 1, store, key: "k", clock });
    await budget.ready();
    for (const demand of [1, 3, 6]) {
      expect(allowed(budget, demand)).toBe(demand);
      await clock.advance(100);
    }
    // The rate is 0.04/ms: a lease of 12.
    expect(await held(store, "budget-tokens:k")).toMatchObject({ holds: [[1000, 12]] });
    // Asked 1 (a rate of (0.04 + 0.01) / 2 = 0.025/ms), and the exchange is lost.
    expect(allowed(budget, 1)).toBe(1);
    store.conflicts = 8;
    await clock.advance(100);
    // Asked 3 more: 4 since the last exchange that reached the store, but 3 since the rate last counted, so
    // a rate of (0.025 + 0.03) / 2 = 0.0275/ms, and a lease of max(2 × 4, ceil(3 × 0.0275 × 100)) = 9.
    expect(allowed(budget, 3)).toBe(3);
    await clock.advance(100);
    expect(await held(store, "budget-tokens:k")).toMatchObject({ holds: [[1000, 9]] });
    await budget.close();
  });

  it("counts what was asked for meanwhile: the next lease is at least twice what was asked since the last exchange that reached the store", async () => {
    const clock = new VirtualClock(1_000_000);
    const store = faultyStore(memoryStore({ clock }));
    const budget = retryBudget({ maxTokens: 1000, tokenRatio: 1, store, key: "k", clock });
    await budget.ready();
    expect(allowed(budget, 1)).toBe(1);
    await clock.advance(3000); // idle since: back to a standing lease of 1
    expect(await held(store, "budget-tokens:k")).toEqual({
      kind: "tokens",
      tokens: 1000,
      holds: [[1003, 1]],
    });
    // A burst of 10: the standing lease, then refusals, whose early exchange is lost.
    store.conflicts = 8;
    expect(allowed(budget, 10)).toBe(1);
    await clock.advance(10);
    expect(await held(store, "budget-tokens:k")).toEqual({
      kind: "tokens",
      tokens: 1000,
      holds: [[1003, 1]],
    });
    await clock.advance(100);
    const after = (await held(store, "budget-tokens:k")) as { holds: [number, number][] };
    expect(after.holds).toHaveLength(1);
    expect((after.holds[0] as [number, number])[1]).toBeGreaterThanOrEqual(20);
    expect(allowed(budget, 20)).toBe(20);
    await budget.close();
  });
});

describe("a shared ratio budget", () => {
  /** A ratio budget of 10 retries per window of 1 s (10 buckets of 100 ms), exchanging every 250 ms. */
  async function tenPerSecond(syncEvery = 250) {
    const clock = new VirtualClock();
    const store = memoryStore({ clock });
    const budget = retryBudget({
      ratio: 0,
      minPerSecond: 10,
      window: 1000,
      store,
      key: "k",
      clock,
      syncEvery,
    });
    await budget.ready();
    return { clock, store, budget };
  }

  it("counts a lease in the window before it is spent, and lets it be spent only in the bucket it was reckoned for and the next", async () => {
    const { clock, store, budget } = await tenPerSecond();
    // The standing lease of one, counted as a retry in bucket 0.
    expect(await held(store, "budget-ratio:k")).toEqual(ratioState(0, [], [1]));
    expect(allowed(budget, 1)).toBe(1);
    await clock.advance(250);
    // Asked 1 in 250 ms: a lease of 3 (3 × 0.004 × 250), counted in bucket 2.
    expect(await held(store, "budget-ratio:k")).toEqual(ratioState(2, [], [1, 0, 3]));
    expect(budget.available).toBe(true);
    await clock.advance(149); // 399 ms: bucket 3
    expect(budget.available).toBe(true);
    await clock.advance(1); // 400 ms: bucket 4, and no exchange since the lease was reckoned
    expect(budget.available).toBe(false);
    expect(budget.tryRetry()).toBe(false);
    await budget.close();
  });

  it("moves the retries spent in the bucket after the lease's there, and takes the unspent lease out of its bucket", async () => {
    const { clock, store, budget } = await tenPerSecond();
    expect(allowed(budget, 1)).toBe(1);
    await clock.advance(300); // a lease of 3 reckoned in bucket 2; now bucket 3
    expect(allowed(budget, 2)).toBe(2);
    await clock.advance(200);
    // At 500 ms (bucket 5): the 2 spent in bucket 3 are counted there, the 1 unspent leaves bucket 2 and is
    // kept in bucket 5, topped up with 3 (asked 2: a lease of 5 wanted, 1 kept, half of the 6 left).
    expect(await held(store, "budget-ratio:k")).toEqual(ratioState(5, [], [1, 0, 0, 2, 0, 4]));
    await clock.advance(250);
    // Nothing asked: the lease shrinks from 4 to 3 (the rate 0.003/ms), and the 1 handed back leaves too.
    expect(await held(store, "budget-ratio:k")).toEqual(ratioState(7, [], [1, 0, 0, 2, 0, 0, 0, 3]));
    await budget.close();
    expect(await held(store, "budget-ratio:k")).toEqual(ratioState(7, [], [1, 0, 0, 2]));
  });

  it("counts requests in the buckets they were made in", async () => {
    const clock = new VirtualClock();
    const store = memoryStore({ clock });
    const budget = retryBudget({ ratio: 0.5, window: 1000, store, key: "k", clock, syncEvery: 250 });
    await budget.ready();
    for (const [at, n] of [
      [0, 2],
      [100, 3],
      [200, 1],
    ] as const) {
      await clock.advance(at - clock.now());
      for (let i = 0; i < n; i++) budget.request();
    }
    await clock.advance(50);
    expect(await held(store, "budget-ratio:k")).toMatchObject({ requests: [2, 3, 1, 0, 0, 0, 0, 0, 0, 0] });
    await budget.close();
  });

  it("does not hand the fleet the requests it saw while the store was down", async () => {
    const clock = new VirtualClock();
    const inner = memoryStore({ clock });
    const store = faultyStore(inner);
    const budget = retryBudget({ ratio: 0.5, window: 10_000, store, key: "k", clock, storeTimeout: 30 });
    await budget.ready();
    for (let i = 0; i < 4; i++) budget.request();
    await clock.advance(100);
    expect(await held(inner, "budget-ratio:k")).toMatchObject({ requests: [4, 0, 0, 0, 0, 0, 0, 0, 0, 0] });
    store.fault = "reject";
    await clock.advance(100);
    expect(budget.shared).toBe(false);
    for (let i = 0; i < 5; i++) budget.request();
    store.fault = "none";
    await clock.advance(1000);
    expect(budget.shared).toBe(true);
    expect(await held(inner, "budget-ratio:k")).toMatchObject({ requests: [4, 0, 0, 0, 0, 0, 0, 0, 0, 0] });
    expect(budget.snapshot()).toMatchObject({ requests: [4, 0, 0, 0, 0, 0, 0, 0, 0, 0] });
    await budget.close();
  });

  it("shows in its local copy its own requests at once, the fleet's after an exchange, and those made while one is under way", async () => {
    const clock = new VirtualClock();
    const inner = memoryStore({ clock });
    const slow = faultyStore(inner, clock);
    slow.latency = 20;
    const options = { ratio: 0.5, window: 1000, key: "k", clock };
    const a = retryBudget({ ...options, store: inner });
    const b = retryBudget({ ...options, store: slow });
    await clock.advance(40);
    await Promise.all([a.ready(), b.ready()]);
    await clock.advance(10);
    for (let i = 0; i < 5; i++) a.request();
    expect(a.snapshot()).toMatchObject({ requests: [5, 0, 0, 0, 0, 0, 0, 0, 0, 0], bucketAt: 0 });
    expect(b.snapshot()).toMatchObject({ requests: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0] });
    // A hands its requests over at 100 ms; B's exchange starts at 140 ms and answers at 180 ms.
    await clock.advance(100);
    for (let i = 0; i < 2; i++) b.request();
    await clock.advance(30);
    expect(await held(inner, "budget-ratio:k")).toMatchObject({ requests: [5, 0, 0, 0, 0, 0, 0, 0, 0, 0] });
    expect(b.snapshot()).toMatchObject({ requests: [5, 2, 0, 0, 0, 0, 0, 0, 0, 0], bucketAt: 1 });
    const closed = Promise.all([a.close(), b.close()]);
    await clock.runAll();
    await closed;
    expect(await held(inner, "budget-ratio:k")).toMatchObject({ requests: [5, 2, 0, 0, 0, 0, 0, 0, 0, 0] });
  });

  it("gives an idle process a standing lease by half of the budget as it will be in the next bucket", async () => {
    const clock = new VirtualClock();
    const store = memoryStore({ clock });
    // One retry per request, no floor: the budget is the requests in the window.
    const options = { ratio: 1, minPerSecond: 0, window: 1000, store, key: "k", clock };
    const first = retryBudget(options);
    await first.ready();
    for (let i = 0; i < 10; i++) first.request();
    await clock.advance(500);
    for (let i = 0; i < 10; i++) first.request();
    await clock.advance(450);
    // At 950 ms: 20 requests in the window, 10 once bucket 0 leaves it, and the first process's
    // standing lease of 1. A standing lease leaves 8 of the next bucket's 10: at least half.
    expect(await held(store, "budget-ratio:k")).toMatchObject({
      requests: [10, 0, 0, 0, 0, 10, 0, 0, 0, 0],
      retries: [0, 0, 0, 0, 0, 0, 0, 0, 0, 1],
    });
    const joining = retryBudget(options);
    await joining.ready();
    expect(joining.available).toBe(true);
    expect(await held(store, "budget-ratio:k")).toMatchObject({ retries: [0, 0, 0, 0, 0, 0, 0, 0, 0, 2] });
    await Promise.all([first.close(), joining.close()]);
  });

  it("takes an idle process's standing lease back under pressure, and takes it out of the window when it is handed back", async () => {
    const clock = new VirtualClock();
    const store = memoryStore({ clock });
    const options = { ratio: 0, minPerSecond: 10, window: 1000, store, key: "k", clock };
    const busy = retryBudget(options);
    const idle = retryBudget(options);
    await Promise.all([busy.ready(), idle.ready()]);
    const retries: unknown[] = [];
    const note = async () => {
      retries.push(((await held(store, "budget-ratio:k")) as { retries: number[] }).retries.slice(0, 3));
    };
    await note();
    expect(allowed(busy, 20)).toBe(1);
    await clock.advance(10);
    await note();
    await clock.advance(90);
    await note();
    expect(idle.available).toBe(false);
    await clock.advance(10);
    await note();
    await clock.advance(90);
    await note();
    expect(retries).toEqual([
      // Both standing leases in bucket 0.
      [2, 0, 0],
      // The busy process spent its 1 and is topped up with half of the 8 left: 4.
      [6, 0, 0],
      // The idle one's exchange at 100 ms: its lease moves to bucket 1; 6 of 10 are counted, more than
      // half, so it is taken back (and stays counted until it is handed back).
      [5, 1, 0],
      // The busy one keeps its 4 (its rate wants 30) in bucket 1 and is topped up with half of the 4 left.
      [1, 7, 0],
      // The idle one hands back the lease taken back: out of bucket 1, and gets none (3 left).
      [1, 6, 0],
    ]);
    await Promise.all([busy.close(), idle.close()]);
  });
});
