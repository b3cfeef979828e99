/**
 * The retry budgets' contract, as a user relies on it: the options each form takes and the errors that
 * name a wrong one; the default budget's window of ten one-second buckets (where a call is counted, how the
 * window slides, steps back and restarts, and the exact number of retries it allows); its `refused` event
 * and listeners; the ratio and token budgets' `restore()`, which takes a well-formed state whole or
 * refuses it with an `OptionError`; and what a budget shared through a store counts and leases.
 */
import fc from "fast-check";
import {
  type Clock,
  defaultBudget,
  memoryStore,
  OptionError,
  type RetryBudget,
  retryBudget,
  systemClock,
  unrefClock,
} from "robustly";
import { VirtualClock } from "robustly/testing";
import { describe, expect, it } from "vitest";
import { faultyStore } from "./support/faulty-store.js";

/** A clock that reads whatever `at` is set to (forwards, backwards, NaN), and whose timers never run. */
function manualClock(at = 0): Clock & { at: number } {
  const clock = {
    at,
    now: () => clock.at,
    setTimer: () => () => {},
  };
  return clock;
}

/** How many of `n` retries asked for in a row the budget grants. */
function grants(budget: { tryRetry(): boolean }, n: number): number {
  let granted = 0;
  for (let i = 0; i < n; i++) if (budget.tryRetry()) granted += 1;
  return granted;
}

const zeros = (): number[] => Array(10).fill(0);
/**
 * Ten buckets' counts given oldest first, the last one bucket `bucketAt`, laid out as a snapshot has them:
 * bucket n's count at index n mod 10.
 */
const bySlot = (bucketAt: number, oldestFirst: readonly number[]): number[] => {
  const out = zeros();
  oldestFirst.forEach((count, i) => {
    out[(((bucketAt - 9 + i) % 10) + 10) % 10] = count;
  });
  return out;
};
/** Ten buckets of zeros, with `last` in bucket `bucketAt`, the latest. */
const latest = (bucketAt: number, last: number): number[] => bySlot(bucketAt, [...Array(9).fill(0), last]);

/** The message of the error `f` throws. */
function messageOf(f: () => unknown): string {
  try {
    f();
  } catch (error) {
    return `${(error as Error).name}: ${(error as Error).message}`;
  }
  throw new Error("nothing was thrown");
}

describe("retryBudget(options): which form, and what it refuses", () => {
  it("is the ratio form without token options, and the token form with either token option", () => {
    expect(retryBudget().kind).toBe("ratio");
    expect(retryBudget({}).kind).toBe("ratio");
    expect(retryBudget({ ratio: 0.1, minPerSecond: 1, window: 1000 }).kind).toBe("ratio");
    expect(retryBudget({ maxTokens: 4, tokenRatio: 1 }).kind).toBe("tokens");
    expect(retryBudget({ clock: new VirtualClock(4200) }).snapshot()).toEqual({
      kind: "ratio",
      requests: zeros(),
      retries: zeros(),
      bucketAt: 4,
    });
    // One of the two token options chooses the token form, whose other option is then missing.
    expect(messageOf(() => retryBudget({ maxTokens: 5 } as never))).toBe(
      "OptionError: retryBudget: tokenRatio must be a finite number > 0; got undefined",
    );
    expect(messageOf(() => retryBudget({ tokenRatio: 0.5 } as never))).toBe(
      "OptionError: retryBudget: maxTokens must be a finite number > 0; got undefined",
    );
    // A ratio option beside the token options is unknown to the token form.
    expect(messageOf(() => retryBudget({ maxTokens: 4, tokenRatio: 1, ratio: 0.1 } as never))).toBe(
      "OptionError: retryBudget.ratio must be one of the known options (maxTokens, tokenRatio, clock, store, key, syncEvery, storeTimeout, whenStoreDown, expire); unknown option; got 0.1. Did you mean `tokenRatio`?",
    );
  });

  it.each([
    [null, "null"],
    ["tokens", '"tokens"'],
    [5, "5"],
  ])("refuses options that are not an object (%p), naming what it got", (options, shown) => {
    expect(messageOf(() => retryBudget(options as never))).toBe(
      `OptionError: retryBudget must be an object; got ${shown}`,
    );
  });

  it("refuses token counts that are not above 0, naming the option and the value", () => {
    expect(messageOf(() => retryBudget({ maxTokens: 0, tokenRatio: 1 }))).toBe(
      "OptionError: retryBudget: maxTokens must be a finite number > 0; got 0",
    );
    expect(messageOf(() => retryBudget({ maxTokens: 4, tokenRatio: 0 }))).toBe(
      "OptionError: retryBudget: tokenRatio must be a finite number > 0; got 0",
    );
    expect(messageOf(() => retryBudget({ maxTokens: Number.POSITIVE_INFINITY, tokenRatio: 1 }))).toBe(
      "OptionError: retryBudget: maxTokens must be a finite number > 0; got Infinity",
    );
  });

  it.each<[string, unknown, string]>([
    ["null", null, "null"],
    ["without setTimer", { now: () => 0 }, "{}"],
    ["without now", { setTimer: () => () => {} }, "{}"],
    ["with a setTimer that is no function", { now: () => 0, setTimer: 1 }, '{"setTimer":1}'],
  ])("refuses a clock %s, in either form, with the whole message", (_, clock, shown) => {
    const message = `OptionError: retryBudget: clock must be a Clock with now() and setTimer(ms, callback); got ${shown}`;
    expect(messageOf(() => retryBudget({ clock: clock as never }))).toBe(message);
    expect(messageOf(() => retryBudget({ maxTokens: 4, tokenRatio: 1, clock: clock as never }))).toBe(
      message,
    );
    try {
      retryBudget({ clock: clock as never });
    } catch (error) {
      expect(error).toBeInstanceOf(OptionError);
      expect(error).toMatchObject({ option: "retryBudget: clock", value: clock });
    }
  });
});

describe("the default budget's window", () => {
  it("is the ratio kind, with ten one-second buckets, and the latest bucket's number", () => {
    const clock = manualClock(0);
    const budget = defaultBudget(clock);
    expect(budget.kind).toBe("ratio");
    for (let i = 0; i < 3; i++) budget.request();
    clock.at = 1500;
    budget.request();
    budget.request();
    expect(budget.tryRetry()).toBe(true);
    clock.at = 2999;
    budget.request();
    expect(budget.snapshot()).toEqual({
      kind: "ratio",
      requests: bySlot(2, [0, 0, 0, 0, 0, 0, 0, 3, 2, 1]),
      retries: bySlot(2, [0, 0, 0, 0, 0, 0, 0, 0, 1, 0]),
      bucketAt: 2,
    });
    // Nine seconds on, buckets 0 and 1 have left the window; bucket 2 is now the oldest.
    clock.at = 11_500;
    expect(budget.snapshot()).toEqual({
      kind: "ratio",
      requests: bySlot(11, [1, ...Array(9).fill(0)]),
      retries: zeros(),
      bucketAt: 11,
    });
  });

  it("lays its snapshot out as a ratio budget's, which restores it and then moves on alike", () => {
    const clock = manualClock(3000);
    const own = defaultBudget(clock);
    for (const [at, calls] of [
      [3000, 4],
      [5500, 2],
      [9999, 7],
    ]) {
      clock.at = at as number;
      for (let i = 0; i < (calls as number); i++) own.request();
      own.tryRetry();
    }
    const taken = retryBudget({ clock });
    taken.restore(own.snapshot());
    for (let second = 0; second < 12; second++) {
      expect(taken.snapshot(), `${second} s on`).toEqual(own.snapshot());
      clock.at += 1000;
    }
  });

  it("allows exactly 20 % of the window's calls plus 100 retries, rounded down", () => {
    for (const [calls, allowed] of [
      [0, 100],
      [4, 100], // 100.8
      [5, 101], // 101
      [9, 101], // 101.8
      [10, 102],
      [200, 140],
    ] as const) {
      const budget = defaultBudget(manualClock(0));
      for (let i = 0; i < calls; i++) budget.request();
      expect(grants(budget, 200), `${calls} calls`).toBe(allowed);
      expect(budget.available).toBe(false);
    }
  });

  it("forgets the calls of the bucket that leaves the window, and no others", () => {
    const clock = manualClock(0);
    const budget = defaultBudget(clock);
    for (let i = 0; i < 50; i++) budget.request();
    clock.at = 9500;
    budget.request();
    // At 10 s the bucket of second 0 leaves: 1 call is left, so 0.2 × 1 + 100 retries.
    clock.at = 10_000;
    expect(grants(budget, 150)).toBe(100);
    expect(budget.snapshot()).toEqual({
      kind: "ratio",
      requests: bySlot(10, [0, 0, 0, 0, 0, 0, 0, 0, 1, 0]),
      retries: latest(10, 100),
      bucketAt: 10,
    });
  });

  it("counts a reading a little before its latest bucket in that bucket", () => {
    const clock = manualClock(12_500);
    const budget = defaultBudget(clock);
    budget.request();
    budget.request(12_100);
    budget.request(3000); // 9 buckets back: still within the window
    clock.at = 4000;
    expect(budget.tryRetry()).toBe(true);
    clock.at = 12_900;
    expect(budget.snapshot()).toEqual({
      kind: "ratio",
      requests: latest(12, 3),
      retries: latest(12, 1),
      bucketAt: 12,
    });
  });

  it("starts the window again from a reading a whole window (or more) before its latest bucket", () => {
    for (const back of [10_000, 10_999, 50_000]) {
      const clock = manualClock(15_000);
      const budget = defaultBudget(clock);
      for (let i = 0; i < 3; i++) budget.request();
      expect(budget.tryRetry()).toBe(true);
      clock.at = 15_000 - back;
      budget.request();
      const bucket = Math.floor(clock.at / 1000);
      expect(budget.snapshot(), `${back} ms back`).toEqual({
        kind: "ratio",
        requests: latest(bucket, 1),
        retries: zeros(),
        bucketAt: bucket,
      });
      // Nothing of the old window is held against it: 0.2 × 1 + 100.
      expect(grants(budget, 150)).toBe(100);
    }
  });

  it("starts the window again after a jump far ahead, and at once", () => {
    const clock = manualClock(0);
    const budget = defaultBudget(clock);
    for (let i = 0; i < 20; i++) budget.request();
    expect(grants(budget, 10)).toBe(10);
    clock.at = 1e15;
    expect(budget.snapshot()).toEqual({ kind: "ratio", requests: zeros(), retries: zeros(), bucketAt: 1e12 });
    expect(grants(budget, 150)).toBe(100);
  });

  it("counts a reading that is no finite number in its latest bucket, moving nothing", () => {
    const clock = manualClock(3000);
    const budget = defaultBudget(clock);
    budget.request();
    budget.request(Number.NaN);
    budget.request(Number.POSITIVE_INFINITY);
    budget.request(Number.NEGATIVE_INFINITY);
    expect(budget.snapshot()).toEqual({
      kind: "ratio",
      requests: latest(3, 4),
      retries: zeros(),
      bucketAt: 3,
    });
  });

  it("reports bucket 0 on a clock that never read a finite time, and still counts", () => {
    const clock = manualClock(Number.NaN);
    const budget = defaultBudget(clock);
    budget.request();
    budget.request();
    expect(budget.tryRetry()).toBe(true);
    expect(budget.snapshot()).toEqual({
      kind: "ratio",
      requests: latest(0, 2),
      retries: latest(0, 1),
      bucketAt: 0,
    });
  });

  it("grants, at any reading, exactly what 20 % of the window's calls plus 100 leaves after its retries (property)", () => {
    const sum = (xs: readonly number[]) => xs.reduce((a, b) => a + b, 0);
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.integer({ min: -30_000, max: 30_000 }), fc.nat(30), fc.nat(150)), {
          minLength: 1,
          maxLength: 40,
        }),
        (steps) => {
          const clock = manualClock(0);
          const budget = defaultBudget(clock);
          for (const [at, calls, asks] of steps) {
            clock.at = at;
            for (let i = 0; i < calls; i++) budget.request();
            const { requests, retries } = budget.snapshot();
            const left = Math.max(0, Math.floor(0.2 * sum(requests) + 100) - sum(retries));
            expect(grants(budget, asks)).toBe(Math.min(asks, left));
            expect(budget.available).toBe(asks < left);
          }
        },
      ),
      { numRuns: 200 },
    );
  });
});

describe("the default budget, found and watched", () => {
  it("is one for the real clock, its timers unref'd or not", () => {
    const real = defaultBudget();
    expect(defaultBudget(systemClock)).toBe(real);
    expect(defaultBudget(unrefClock)).toBe(real);
    expect(real.clock).toBe(systemClock);
    const clock = new VirtualClock();
    expect(defaultBudget(clock)).toBe(defaultBudget(clock));
    expect(defaultBudget(clock)).not.toBe(real);
    expect(defaultBudget(clock).clock).toBe(clock);
  });

  it("refuses anything but a clock with the whole message", () => {
    expect(messageOf(() => defaultBudget({ now: () => 0 } as unknown as Clock))).toBe(
      "OptionError: defaultBudget: clock must be a Clock (an object with now() and setTimer()); got {}",
    );
    expect(messageOf(() => defaultBudget(null as unknown as Clock))).toBe(
      "OptionError: defaultBudget: clock must be a Clock (an object with now() and setTimer()); got null",
    );
  });

  it("tells each refusal to each listener, with the state, until the listener is disposed", () => {
    const clock = manualClock(2500);
    const budget = defaultBudget(clock);
    const heard: { who: string; state: unknown }[] = [];
    const listener = ({ state }: { state: unknown }) => heard.push({ who: "twice", state });
    const first = budget.on("refused", listener);
    const second = budget.on("refused", listener);
    const other = budget.on("refused", ({ state }) => heard.push({ who: "other", state }));
    expect(grants(budget, 101)).toBe(100);
    const state = { kind: "ratio", requests: zeros(), retries: latest(2, 100), bucketAt: 2 };
    expect(heard).toEqual([
      { who: "twice", state },
      { who: "twice", state },
      { who: "other", state },
    ]);
    // The same function added twice is two listeners: disposing one leaves the other.
    first.dispose();
    other.dispose();
    heard.length = 0;
    expect(budget.tryRetry()).toBe(false);
    expect(heard).toEqual([{ who: "twice", state }]);
    second.dispose();
    heard.length = 0;
    expect(budget.tryRetry()).toBe(false);
    expect(heard).toEqual([]);
  });

  it("listens to refused only, with a function, and says so", () => {
    const budget = defaultBudget(manualClock(0));
    expect(messageOf(() => budget.on("nope" as "refused", () => {}))).toBe(
      'TypeError: on("nope", listener): the event is "refused", the listener a function',
    );
    expect(messageOf(() => budget.on("refused", "listener" as never))).toBe(
      'TypeError: on("refused", listener): the event is "refused", the listener a function',
    );
    // Neither was added: a refusal reaches no one and throws nothing.
    expect(grants(budget, 101)).toBe(100);
  });
});

describe("a ratio budget's restore()", () => {
  const valid = () => ({ kind: "ratio" as const, requests: zeros(), retries: zeros(), bucketAt: 0 });
  const withOne = (key: "requests" | "retries", value: unknown) => {
    const state = valid() as Record<string, unknown>;
    const counts = zeros() as unknown[];
    counts[3] = value;
    state[key] = counts;
    return state;
  };

  it("takes a well-formed state, which then decides", () => {
    const clock = manualClock(5500);
    const budget = retryBudget({ ratio: 0, minPerSecond: 1, window: 10_000, clock });
    const retries = zeros();
    retries[5] = 8;
    budget.restore({ kind: "ratio", requests: zeros(), retries, bucketAt: 5 });
    expect(budget.snapshot()).toEqual({ kind: "ratio", requests: zeros(), retries, bucketAt: 5 });
    expect(grants(budget, 5)).toBe(2);
  });

  it.each([
    ["nothing", () => undefined],
    ["null", () => null],
    ["the token kind", () => ({ kind: "tokens", tokens: 3 })],
    ["another kind with ratio fields", () => ({ ...valid(), kind: "tokens" })],
    ["requests that are no list", () => ({ ...valid(), requests: { length: 10 } })],
    ["retries that are no list", () => ({ ...valid(), retries: "0000000000" })],
    ["9 buckets of requests", () => ({ ...valid(), requests: Array(9).fill(0) })],
    ["11 buckets of requests", () => ({ ...valid(), requests: Array(11).fill(0) })],
    ["9 buckets of retries", () => ({ ...valid(), retries: Array(9).fill(0) })],
    ["11 buckets of retries", () => ({ ...valid(), retries: Array(11).fill(0) })],
    ["a negative request count", () => withOne("requests", -1)],
    ["a negative retry count", () => withOne("retries", -1)],
    ["an infinite request count", () => withOne("requests", Number.POSITIVE_INFINITY)],
    ["an infinite retry count", () => withOne("retries", Number.POSITIVE_INFINITY)],
    ["a NaN retry count", () => withOne("retries", Number.NaN)],
    ["a request count as a string", () => withOne("requests", "3")],
    ["a retry count that is true", () => withOne("retries", true)],
    ["a request count that is null", () => withOne("requests", null)],
    ["no bucket number", () => ({ ...valid(), bucketAt: undefined })],
    ["a bucket number as a string", () => ({ ...valid(), bucketAt: "5" })],
    ["a NaN bucket number", () => ({ ...valid(), bucketAt: Number.NaN })],
    ["an infinite bucket number", () => ({ ...valid(), bucketAt: Number.NEGATIVE_INFINITY })],
  ])("refuses %s whole, with an OptionError naming it, and keeps its own state", (_, make) => {
    const clock = manualClock(1500);
    const budget = retryBudget({ ratio: 0, minPerSecond: 1, window: 10_000, clock });
    budget.request();
    expect(budget.tryRetry()).toBe(true);
    const before = budget.snapshot();
    const state = make();
    let thrown: unknown;
    try {
      budget.restore(state as never);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(OptionError);
    expect(thrown).toMatchObject({ option: "retryBudget.restore", value: state });
    expect((thrown as Error).message).toMatch(
      /^retryBudget\.restore must be the state of a ratio budget \(10 buckets\); got /,
    );
    expect(budget.snapshot()).toEqual(before);
  });

  it("says what it got", () => {
    const budget = retryBudget();
    expect(messageOf(() => budget.restore(null as never))).toBe(
      "OptionError: retryBudget.restore must be the state of a ratio budget (10 buckets); got null",
    );
    expect(
      messageOf(() => budget.restore({ kind: "ratio", requests: [1, 2, 3], retries: [], bucketAt: 0 })),
    ).toBe(
      'OptionError: retryBudget.restore must be the state of a ratio budget (10 buckets); got {"kind":"ratio","requests":[1,2,3],"retries":[],"bucketAt":0}',
    );
  });

  it("keeps its window where it was made when the clock then reads earlier", () => {
    const clock = manualClock(5000);
    const budget = retryBudget({ clock });
    clock.at = 1000;
    budget.request();
    const requests = zeros();
    requests[5] = 1;
    expect(budget.snapshot()).toEqual({ kind: "ratio", requests, retries: zeros(), bucketAt: 5 });
  });
});

describe("a token budget's restore()", () => {
  it("takes a token count from 0 to maxTokens, which then decides", () => {
    const budget = retryBudget({ maxTokens: 4, tokenRatio: 1 });
    budget.restore({ kind: "tokens", tokens: 2.5 });
    expect(budget.snapshot()).toEqual({ kind: "tokens", tokens: 2.5 });
    expect(budget.available).toBe(true);
    budget.restore({ kind: "tokens", tokens: 0 });
    expect(budget.available).toBe(false);
    budget.restore({ kind: "tokens", tokens: 4 });
    expect(budget.snapshot()).toEqual({ kind: "tokens", tokens: 4 });
  });

  it("refuses another kind of state, or none, and keeps its own", () => {
    const budget = retryBudget({ maxTokens: 4, tokenRatio: 1 });
    budget.failure();
    for (const [state, shown] of [
      [null, "null"],
      [undefined, "undefined"],
      [{ kind: "ratio", requests: zeros(), retries: zeros(), bucketAt: 0 }, undefined],
      [{ tokens: 2 }, '{"tokens":2}'],
    ] as const) {
      const message = messageOf(() => budget.restore(state as never));
      expect(message).toMatch(/^OptionError: retryBudget\.restore must be the state of a token budget; got /);
      if (shown !== undefined)
        expect(message).toBe(
          `OptionError: retryBudget.restore must be the state of a token budget; got ${shown}`,
        );
    }
    expect(budget.snapshot()).toEqual({ kind: "tokens", tokens: 3 });
  });

  it("refuses a token count out of [0, maxTokens], naming the field, the bounds and the value", () => {
    const budget = retryBudget({ maxTokens: 4, tokenRatio: 1 });
    for (const [tokens, shown] of [
      [99, "99"],
      [-1, "-1"],
      [Number.NaN, "NaN"],
      ["2", '"2"'],
    ] as const) {
      expect(messageOf(() => budget.restore({ kind: "tokens", tokens: tokens as number }))).toBe(
        `OptionError: retryBudget.restore: tokens must be a finite number in [0, 4]; got ${shown}`,
      );
    }
    expect(budget.snapshot()).toEqual({ kind: "tokens", tokens: 4 });
  });
});

describe("a budget shared through a store", () => {
  /** Budgets on one memory store and key, as processes sharing Redis would be. */
  const sharing = (clock: VirtualClock) => ({ store: memoryStore({ clock }), key: "api", clock });

  it("gives a process that joins an idle fleet a standing lease of one retry once ready, on any ratio", async () => {
    for (const ratio of [0, 0.2]) {
      const clock = new VirtualClock();
      const budget = retryBudget({ ratio, minPerSecond: 1, window: 10_000, ...sharing(clock) });
      expect(budget.available).toBe(false); // no lease before its first exchange
      await budget.ready();
      expect(budget.available, `ratio ${ratio}`).toBe(true);
      expect(budget.tryRetry()).toBe(true);
      // The lease is counted as a retry in the window before it is spent.
      expect(budget.snapshot()).toEqual({
        kind: "ratio",
        requests: zeros(),
        retries: [1, ...Array(9).fill(0)],
        bucketAt: 0,
      });
      await budget.close();
      expect(clock.pending).toBe(0);
    }
  });

  it("counts the requests a process made between two exchanges in the buckets they were made in", async () => {
    const clock = new VirtualClock();
    const options = { ratio: 0.5, minPerSecond: 0, window: 10_000, syncEvery: 5000, ...sharing(clock) };
    const budget = retryBudget(options);
    await budget.ready();
    await clock.advance(2500);
    for (let i = 0; i < 50; i++) budget.request();
    await clock.advance(1000);
    for (let i = 0; i < 30; i++) budget.request();
    // The next exchange, at 5 s, hands the 80 requests to the fleet; another process then sees them.
    await clock.advance(1600);
    const other = retryBudget(options);
    await other.ready();
    const requests = zeros();
    requests[2] = 50;
    requests[3] = 30;
    expect(other.snapshot()).toMatchObject({ kind: "ratio", requests });
    expect(budget.snapshot()).toMatchObject({ kind: "ratio", requests });
    await Promise.all([budget.close(), other.close()]);
    expect(clock.pending).toBe(0);
  });

  it("lets the fleet spend the whole window: retries in the oldest bucket, about to leave, do not hold back the last second", async () => {
    const clock = new VirtualClock();
    // ratio 0 and 1 retry a second over 10 s: 10 retries in any window.
    const options = { ratio: 0, minPerSecond: 1, window: 10_000, ...sharing(clock) };
    const early = retryBudget(options);
    await early.ready();
    let spent = 0;
    while (spent < 4) {
      if (early.tryRetry()) spent += 1;
      else await clock.advance(10);
    }
    expect(clock.now()).toBeLessThan(1000);
    await early.close();
    // A process that joins in the window's last second may spend the 6 retries left, and no more.
    await clock.advance(9000 - clock.now());
    const late = retryBudget(options);
    await late.ready();
    expect(late.available).toBe(true);
    let granted = 0;
    while (clock.now() < 10_000) {
      if (late.tryRetry()) granted += 1;
      await clock.advance(10);
    }
    expect(granted).toBe(6);
    await late.close();
    expect(clock.pending).toBe(0);
  });

  it("keeps the outcomes seen while an exchange is under way: the fleet's tokens, then those successes, then those failures", async () => {
    const clock = new VirtualClock();
    const store = faultyStore(memoryStore({ clock }), clock);
    const options = { maxTokens: 10, tokenRatio: 0.5, store, key: "t", clock, syncEvery: 100 };
    const budget: RetryBudget = retryBudget(options);
    await budget.ready();
    for (let i = 0; i < 4; i++) budget.failure();
    expect(budget.snapshot()).toEqual({ kind: "tokens", tokens: 6 });
    // The next exchange, at 100 ms, takes 40 ms to answer; outcomes come in meanwhile.
    store.latency = 40;
    await clock.advance(110);
    budget.success();
    budget.failure();
    budget.failure();
    expect(budget.snapshot()).toEqual({ kind: "tokens", tokens: 4.5 });
    await clock.advance(30);
    // It landed with the fleet's 6 (the four failures); then min(10, 6 + 0.5) − 2.
    expect(budget.snapshot()).toEqual({ kind: "tokens", tokens: 4.5 });
    // The exchange after hands them to the fleet: a process that joins then starts from 4.5.
    store.latency = 0;
    await clock.advance(100);
    const other = retryBudget(options);
    await other.ready();
    expect(other.snapshot()).toEqual({ kind: "tokens", tokens: 4.5 });
    await Promise.all([budget.close(), other.close()]);
    expect(clock.pending).toBe(0);
  });
});
