import fc from "fast-check";
import {
  type BreakerState,
  BrokenCircuitError,
  backoff,
  type CircuitBreaker,
  type CircuitBreakerOptions,
  circuitBreaker,
  memoryStore,
  OptionError,
  PermanentError,
  pipeline,
  retry,
  steps,
} from "robustly";
import { VirtualClock } from "robustly/testing";
import { afterEach, describe, expect, it, vi } from "vitest";
import { breakerState } from "./support/breaker.js";
import { thrownBy } from "./support/drive.js";
import { faultyStore } from "./support/faulty-store.js";

/** The longest timer, 2^31 − 1 ms: the longest a breaker stays open. */
const LONGEST = 2 ** 31 - 1;

const down = new Error("down");

/** Lets `n` calls through `breaker`, then reports each as `outcome`. */
function calls(breaker: CircuitBreaker, outcome: "ok" | "fail", n = 1): void {
  for (let i = 0; i < n; i++) {
    breaker.acquire();
    if (outcome === "ok") breaker.success();
    else breaker.failure();
  }
}

/** The change events `breaker` emits from now on, as they come. */
function changes(breaker: CircuitBreaker): unknown[] {
  const seen: unknown[] = [];
  breaker.on("change", (change) => seen.push(change));
  return seen;
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe("a circuit breaker's defaults", () => {
  it("opens on the fifth failure in a row, not the fourth, and stays open five seconds", async () => {
    const clock = new VirtualClock();
    const breaker = circuitBreaker({ clock });
    const seen = changes(breaker);
    calls(breaker, "fail", 4);
    expect(breaker.state).toBe("closed");
    calls(breaker, "fail");
    expect(seen).toStrictEqual([{ from: "closed", to: "open", openFor: 5000 }]);
    await clock.advance(4999);
    expect(breaker.state).toBe("open");
    await clock.advance(1);
    expect(breaker.state).toBe("half-open");
  });

  it("with failureRatio alone, failures in a row never open it below the minimum throughput of 10", () => {
    const breaker = circuitBreaker({ failureRatio: 1, clock: new VirtualClock() });
    calls(breaker, "fail", 9);
    expect(breaker.state).toBe("closed");
    calls(breaker, "fail");
    expect(breaker.state).toBe("open");
  });

  it("with both consecutiveFailures and failureRatio, whichever is reached first opens it", () => {
    const clock = new VirtualClock();
    const byRun = circuitBreaker({
      consecutiveFailures: 3,
      failureRatio: 0.5,
      minimumThroughput: 100,
      clock,
    });
    calls(byRun, "fail", 2);
    expect(byRun.state).toBe("closed");
    calls(byRun, "fail");
    expect(byRun.state).toBe("open");
    const byRatio = circuitBreaker({
      consecutiveFailures: 3,
      failureRatio: 0.5,
      minimumThroughput: 4,
      clock,
    });
    for (const outcome of ["fail", "ok", "fail", "ok"] as const) calls(byRatio, outcome);
    expect(byRatio.state).toBe("closed"); // 2 of 4: a success never opens it
    calls(byRatio, "fail");
    expect(byRatio.state).toBe("open"); // 3 of 5, though never two in a row
  });

  it("draws openFor's randomness from Math.random when no random is given", () => {
    vi.spyOn(Math, "random").mockReturnValue(0.25);
    const clock = new VirtualClock();
    const breaker = circuitBreaker({
      consecutiveFailures: 1,
      openFor: (_x: number, random: () => number) => 1000 + 1000 * random(),
      clock,
    });
    const seen = changes(breaker);
    calls(breaker, "fail");
    expect(seen).toStrictEqual([{ from: "closed", to: "open", openFor: 1250 }]);
  });
});

describe("a circuit breaker's options, refused at once", () => {
  it.each([
    [
      { handles: 5 },
      "circuitBreaker: handles must be an Error class, an error name/code string, a list of those, or a predicate function; got 5",
    ],
    [{ handles: [] }, "circuitBreaker: handles must be a non-empty list of Error classes or names; got []"],
    [{ key: "k" }, 'circuitBreaker: key must be given only with a store; got "k"'],
    [{ syncEvery: 5 }, "circuitBreaker: syncEvery must be given only with a store; got 5"],
    [
      { windowCalls: 10 },
      "circuitBreaker: windowCalls must be given with failureRatio (the share of the last calls that opens it); got 10",
    ],
    [
      { failureRatio: 0.5, windowCalls: 10, window: 1000 },
      "circuitBreaker: windowCalls must be left out when window is given: a window counts time or calls, not both; got 10",
    ],
    [
      { failureRatio: 0.5, windowCalls: 10, minimumThroughput: 11 },
      "circuitBreaker: minimumThroughput must be at most windowCalls (10): the window never holds more calls; got 11",
    ],
    [{ clock: null }, "circuitBreaker: clock must be a Clock; got null"],
    [{ clock: { now: () => 0 } }, "circuitBreaker: clock must be a Clock; got {}"],
    [{ random: 5 }, "circuitBreaker: random must be a function; got 5"],
  ])("%o: an OptionError that names the option, the value and what it takes", (options, message) => {
    const error = thrownBy(() => circuitBreaker(options as never));
    expect(error).toBeInstanceOf(OptionError);
    expect((error as Error).message).toBe(message);
  });

  it("a random that draws outside [0, 1) is refused, by name, at the draw that opens the breaker", () => {
    const breaker = circuitBreaker({
      consecutiveFailures: 1,
      random: () => 2,
      openFor: (_x: number, random: () => number) => 1000 * random(),
      clock: new VirtualClock(),
    });
    breaker.acquire();
    expect(() => breaker.failure()).toThrow(
      "circuitBreaker: random must be a function returning numbers in [0, 1); got 2",
    );
  });
});

describe("how long it stays open", () => {
  /** The time a breaker with `openFor` stays open after its first opening, at clock time 10 000. */
  function openTime(openFor: unknown): { openFor: unknown; openUntil: number } {
    const clock = new VirtualClock(10_000);
    const breaker = circuitBreaker({ consecutiveFailures: 1, openFor: openFor as never, clock });
    const seen = changes(breaker);
    calls(breaker, "fail");
    const [change] = seen as { openFor: number }[];
    return { openFor: change?.openFor, openUntil: breaker.snapshot().openUntil - 10_000 };
  }

  const delaying = (ms: number, max?: unknown) => ({
    name: "custom",
    base: 0,
    ...(max === undefined ? {} : { max }),
    delay: () => ms,
  });

  it.each([
    ["a delay of 1000 ms and no max", 1000, delaying(1000)],
    ["a delay of 1000 ms and a max of Infinity", 1000, delaying(1000, Number.POSITIVE_INFINITY)],
    ["a delay of 1000 ms and a max above the delay", 1000, delaying(1000, 5000)],
    ["a delay of 1000 ms and a max below the delay", 400, delaying(1000, 400)],
    ["a delay of 1000 ms and a max of 0", 0, delaying(1000, 0)],
    ["a delay of 1000 ms and a negative max", 1000, delaying(1000, -1)],
    ["a delay of 1000 ms and a max of NaN", 1000, delaying(1000, Number.NaN)],
    ["a delay of 1000 ms and a max of null", 1000, delaying(1000, null)],
    ['a delay of 1000 ms and a max of "5"', 1000, delaying(1000, "5")],
    ["a delay beyond the longest timer and no max", LONGEST, delaying(3e9)],
    ["a delay beyond the longest timer and a larger max", LONGEST, delaying(3e9, 1e10)],
    ["a negative delay", 0, delaying(-5)],
    ["a delay of NaN", 0, delaying(Number.NaN)],
    ["a function answering 1500", 1500, () => 1500],
  ])("an openFor with %s opens it for %s ms", (_what, ms, openFor) => {
    expect(openTime(openFor)).toEqual({ openFor: ms, openUntil: ms });
  });

  it("is open for the delay, at most openFor's max (when it is a number >= 0) and the longest timer; 0 for a delay <= 0 (property)", () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.integer({ min: -1000, max: 100_000 }),
          fc.constantFrom(LONGEST - 1, LONGEST, LONGEST + 1, 3e9, 1e12),
        ),
        fc.option(
          fc.oneof(
            fc.integer({ min: -10, max: 100_000 }),
            fc.constantFrom(LONGEST, 3e9, Number.POSITIVE_INFINITY),
          ),
          { nil: undefined },
        ),
        (delay, max) => {
          const cap = max !== undefined && max >= 0 ? Math.min(max, LONGEST) : LONGEST;
          const expected = delay > 0 ? Math.min(delay, cap) : 0;
          expect(openTime(delaying(delay, max))).toEqual({ openFor: expected, openUntil: expected });
        },
      ),
      { numRuns: 300 },
    );
  });

  it("is half-open at once after an opening of 0 ms, and lets a probe through", () => {
    const breaker = circuitBreaker({
      consecutiveFailures: 1,
      openFor: delaying(1000, 0) as never,
      clock: new VirtualClock(),
    });
    calls(breaker, "fail");
    expect(breaker.state).toBe("half-open");
    calls(breaker, "ok");
    expect(breaker.state).toBe("closed");
  });
});

describe("half-open", () => {
  const options = (clock: VirtualClock) => ({
    consecutiveFailures: 1,
    openFor: backoff.constant({ base: 1000 }),
    halfOpenProbes: 2,
    halfOpenSuccesses: 3,
    clock,
  });

  it("lets halfOpenProbes probes out at once; one that succeeds, or one given back, frees its place", async () => {
    const clock = new VirtualClock();
    const breaker = circuitBreaker(options(clock));
    calls(breaker, "fail");
    await clock.advance(1000);
    breaker.acquire();
    breaker.acquire();
    expect(() => breaker.acquire()).toThrow(BrokenCircuitError);
    breaker.success();
    breaker.acquire();
    expect(() => breaker.acquire()).toThrow(BrokenCircuitError);
    breaker.release();
    breaker.acquire();
    expect(() => breaker.acquire()).toThrow(BrokenCircuitError);
    expect(breaker.state).toBe("half-open");
  });

  it("closes on the halfOpenSuccesses-th successful probe, not before, and then holds a fresh state", async () => {
    const clock = new VirtualClock(500);
    const breaker = circuitBreaker(options(clock));
    const seen = changes(breaker);
    calls(breaker, "fail");
    await clock.advance(1000);
    calls(breaker, "ok", 2);
    expect(breaker.state).toBe("half-open");
    expect(breaker.snapshot()).toStrictEqual(
      breakerState({ state: "half-open", openUntil: 1500, openings: 1, halfOpenSuccesses: 2 }),
    );
    calls(breaker, "ok");
    expect(breaker.snapshot()).toStrictEqual(breakerState({ openUntil: 1500 }));
    expect(seen).toStrictEqual([
      { from: "closed", to: "open", openFor: 1000 },
      { from: "open", to: "half-open" },
      { from: "half-open", to: "closed" },
    ]);
  });

  it("a failed probe opens it again at once, whatever the successes before it", async () => {
    const clock = new VirtualClock();
    const breaker = circuitBreaker({ ...options(clock), openFor: backoff.exponential({ base: 1000 }) });
    calls(breaker, "fail");
    await clock.advance(1000);
    calls(breaker, "ok", 2);
    calls(breaker, "fail");
    expect(breaker.snapshot()).toStrictEqual(
      breakerState({ state: "open", openUntil: 3000, openings: 2, consecutiveFailures: 1 }),
    );
  });

  it("a probe whose error handles does not count gives its place back", async () => {
    const clock = new VirtualClock();
    const breaker = circuitBreaker({
      consecutiveFailures: 1,
      openFor: backoff.constant({ base: 1000 }),
      handles: (error) => error === down,
      clock,
    });
    calls(breaker, "fail");
    await clock.advance(1000);
    const other = new Error("not the service");
    await expect(
      breaker.execute(() => {
        throw other;
      }),
    ).rejects.toBe(other);
    expect(breaker.state).toBe("half-open");
    await expect(breaker.execute(() => "probe")).resolves.toBe("probe");
    expect(breaker.state).toBe("closed");
  });

  it("a state restored open with successes already counted still takes halfOpenSuccesses fresh probes", async () => {
    const clock = new VirtualClock(100);
    const breaker = circuitBreaker(options(clock));
    breaker.restore(
      breakerState({
        state: "open",
        openUntil: 200,
        openings: 1,
        consecutiveFailures: 1,
        halfOpenSuccesses: 2,
      }),
    );
    await clock.advance(100);
    calls(breaker, "ok", 2);
    expect(breaker.state).toBe("half-open");
    calls(breaker, "ok");
    expect(breaker.state).toBe("closed");
  });
});

describe("what a breaker counts", () => {
  it("just opened: the run of failures that opened it, one opening, and no window without failureRatio", () => {
    const clock = new VirtualClock(1000);
    const breaker = circuitBreaker({
      consecutiveFailures: 3,
      openFor: backoff.constant({ base: 2000 }),
      clock,
    });
    calls(breaker, "ok", 4);
    calls(breaker, "fail", 3);
    expect(breaker.snapshot()).toStrictEqual(
      breakerState({ state: "open", openUntil: 3000, openings: 1, consecutiveFailures: 3 }),
    );
  });

  it("calls let through before it opened and ending while open are counted, and open it no further", async () => {
    const clock = new VirtualClock();
    const breaker = circuitBreaker({
      consecutiveFailures: 1,
      failureRatio: 1,
      minimumThroughput: 100,
      openFor: backoff.exponential({ base: 1000 }),
      clock,
    });
    const seen = changes(breaker);
    for (let i = 0; i < 4; i++) breaker.acquire();
    breaker.failure();
    await clock.advance(10);
    breaker.failure();
    breaker.failure();
    breaker.success();
    expect(breaker.snapshot()).toStrictEqual(
      breakerState({ state: "open", openUntil: 1000, openings: 1, window: [[0, 4, 3]] }),
    );
    expect(seen).toStrictEqual([{ from: "closed", to: "open", openFor: 1000 }]);
  });

  it("once a probe closes it, the calls that opened it leave the time window", async () => {
    const clock = new VirtualClock();
    const breaker = circuitBreaker({
      failureRatio: 0.5,
      minimumThroughput: 2,
      openFor: backoff.constant({ base: 1000 }),
      clock,
    });
    calls(breaker, "fail", 2);
    expect(breaker.state).toBe("open");
    await clock.advance(1000);
    calls(breaker, "ok");
    expect(breaker.snapshot().window).toEqual([]);
    calls(breaker, "fail");
    expect(breaker.state).toBe("closed"); // one call: below the minimum of 2
    expect(breaker.snapshot().window).toEqual([[1000, 1, 1]]);
  });
});

describe("refusals", () => {
  it("while open: BrokenCircuitError and a rejected event with the exact time left", async () => {
    const clock = new VirtualClock();
    const breaker = circuitBreaker({
      consecutiveFailures: 1,
      openFor: backoff.constant({ base: 1000 }),
      clock,
    });
    const rejected: unknown[] = [];
    breaker.on("rejected", (event) => rejected.push(event));
    calls(breaker, "fail");
    await clock.advance(300);
    const error = thrownBy(() => breaker.acquire()) as BrokenCircuitError;
    expect(error).toBeInstanceOf(BrokenCircuitError);
    expect([error.retryAfter, error.message]).toEqual([
      700,
      "the circuit is open; it lets a probe through in 700 ms",
    ]);
    await clock.advance(700);
    breaker.acquire(); // the probe
    const busy = thrownBy(() => breaker.acquire()) as BrokenCircuitError;
    expect(busy.retryAfter).toBe(0);
    const hold = breaker.isolate();
    const isolated = thrownBy(() => breaker.acquire()) as BrokenCircuitError;
    expect([isolated.retryAfter, isolated.message]).toEqual([
      0,
      "the circuit is isolated (held open by isolate())",
    ]);
    hold.dispose();
    expect(rejected).toStrictEqual([{ retryAfter: 700 }, { retryAfter: 0 }, { retryAfter: 0 }]);
  });
});

describe("reporting a call's outcome by hand", () => {
  it("settle and settleResult work without a callback, and tell no success or failure for a call not timed", () => {
    const clock = new VirtualClock();
    const reports: unknown[] = [];
    const breaker = circuitBreaker({
      consecutiveFailures: 2,
      clock,
      onCallbackError: (error, name) => reports.push([error, name]),
    });
    const heard: unknown[] = [];
    breaker.on("success", (event) => heard.push(event));
    breaker.on("failure", (event) => heard.push(event));
    breaker.acquire();
    breaker.settle(down, true);
    expect(breaker.snapshot().consecutiveFailures).toBe(1);
    breaker.acquire();
    breaker.settle("fine", false);
    expect(breaker.snapshot().consecutiveFailures).toBe(0);
    breaker.acquire();
    breaker.settleResult(503, undefined);
    breaker.acquire();
    breaker.settleResult(503, (value) => value === 503);
    breaker.acquire();
    breaker.settle(down, true);
    expect(breaker.state).toBe("open");
    expect(heard).toEqual([]);
    expect(reports).toEqual([]);
  });

  it("a synchronous handles or handlesResult decides before settle returns; the callback is called at once", () => {
    const clock = new VirtualClock();
    const order: string[] = [];
    const byError = circuitBreaker({ consecutiveFailures: 1, handles: (error) => error === down, clock });
    byError.acquire();
    byError.settle(down, true, () => order.push(`error: ${byError.state}`));
    const byValue = circuitBreaker({ consecutiveFailures: 1, clock });
    byValue.acquire();
    byValue.settleResult(
      503,
      (value) => value === 503,
      () => order.push(`value: ${byValue.state}`),
    );
    order.push("returned");
    expect(order).toEqual(["error: open", "value: open", "returned"]);
  });

  it("an asynchronous handlesResult is awaited: true counts the value as a failure, false as a success", async () => {
    const clock = new VirtualClock();
    const breaker = circuitBreaker({ consecutiveFailures: 2, clock });
    const heard: unknown[] = [];
    breaker.on("success", (event) => heard.push(["success", event]));
    breaker.on("failure", (event) => heard.push(["failure", event]));
    const settled = (value: number) =>
      new Promise<void>((resolve) => {
        const started = breaker.acquire();
        breaker.settleResult(value, async (v) => v === 503, resolve, started);
      });
    await settled(503);
    expect(breaker.snapshot().consecutiveFailures).toBe(1);
    await settled(200);
    expect(breaker.snapshot().consecutiveFailures).toBe(0);
    await settled(503);
    await settled(503);
    expect(breaker.state).toBe("open");
    expect(heard).toEqual([
      ["failure", { duration: 0, outcome: 503, isValue: true, handled: true }],
      ["success", { duration: 0, value: 200 }],
      ["failure", { duration: 0, outcome: 503, isValue: true, handled: true }],
      ["failure", { duration: 0, outcome: 503, isValue: true, handled: true }],
    ]);
  });

  it("an error retry gave up on as permanent counts as nothing, even once retry has unwrapped it", async () => {
    const clock = new VirtualClock();
    const breaker = circuitBreaker({ consecutiveFailures: 1, clock });
    const notFound = new Error("404");
    const gaveUp = breaker.execute(() =>
      retry(
        () => {
          throw new PermanentError(notFound);
        },
        { clock },
      ),
    );
    await expect(gaveUp).rejects.toBe(notFound);
    expect(breaker.state).toBe("closed");
    const outside = pipeline(steps.breaker(breaker), steps.retry({ maxRetries: 3 }));
    await expect(
      outside.execute(
        () => {
          throw new PermanentError(notFound);
        },
        { clock },
      ),
    ).rejects.toBe(notFound);
    expect(breaker.state).toBe("closed");
    await expect(breaker.execute(() => Promise.reject(down))).rejects.toBe(down);
    expect(breaker.state).toBe("open");
  });
});

describe("restoring a state", () => {
  const fresh = {
    state: "closed",
    openUntil: 0,
    openings: 0,
    consecutiveFailures: 0,
    halfOpenSuccesses: 0,
  } as const;

  it("counts a bucket dated later than now (another machine's clock ahead) in the current bucket", () => {
    const clock = new VirtualClock(5000);
    const breaker = circuitBreaker({ failureRatio: 0.5, minimumThroughput: 4, window: 10_000, clock });
    breaker.restore({ ...fresh, window: [[9000, 3, 1]] });
    expect(breaker.snapshot().window).toEqual([[5000, 3, 1]]);
    calls(breaker, "fail");
    expect(breaker.state).toBe("open"); // 2 of 4
  });

  it("a count-based breaker given a state without its last calls starts with none", () => {
    const clock = new VirtualClock();
    const breaker = circuitBreaker({ failureRatio: 0.5, windowCalls: 4, minimumThroughput: 1, clock });
    calls(breaker, "ok", 3);
    breaker.restore({ ...fresh, window: [[0, 5, 5]] });
    expect(breaker.snapshot().recent).toEqual([]);
    calls(breaker, "ok");
    expect(breaker.snapshot().recent).toEqual([0]);
  });
});

/**
 * Breakers on one store and key, each with `options`, `after` ms after their first exchange (at 0): each
 * then exchanges every 100 ms (at 100, 200, …), and after it opens or closes: at once, or 10 ms after the
 * last exchange if that was sooner.
 */
async function fleet(
  clock: VirtualClock,
  options: CircuitBreakerOptions,
  n = 2,
  after = 50,
): Promise<{ store: ReturnType<typeof memoryStore>; breakers: CircuitBreaker[] }> {
  const store = memoryStore({ clock });
  const breakers = Array.from({ length: n }, () => circuitBreaker({ store, key: "k", clock, ...options }));
  await Promise.all(breakers.map((b) => b.ready()));
  await clock.advance(after);
  return { store, breakers };
}

/** The fleet's state as the store holds it. */
async function stored(store: ReturnType<typeof memoryStore>): Promise<unknown> {
  return (await store.read("breaker:k")).value;
}

describe("a shared breaker, as each process hears of the fleet's changes", () => {
  it("announces an opening with the time left of it, and a closing without any", async () => {
    const clock = new VirtualClock();
    const { breakers } = await fleet(clock, {
      consecutiveFailures: 1,
      openFor: backoff.constant({ base: 1000 }),
    });
    const [a, b] = breakers as [CircuitBreaker, CircuitBreaker];
    const heard = changes(b);
    calls(a, "fail"); // at 50, open until 1050, told to the store at once
    await clock.advance(50); // B's exchange, at 100
    expect(heard).toStrictEqual([{ from: "closed", to: "open", openFor: 950 }]);
    await clock.advance(950);
    calls(a, "ok"); // A's probe closes it
    await clock.advance(100);
    expect(heard).toStrictEqual([
      { from: "closed", to: "open", openFor: 950 },
      { from: "open", to: "closed" },
    ]);
    await Promise.all(breakers.map((x) => x.close()));
    expect(clock.pending).toBe(0);
  });

  it("stays open openFor from the failure that opened it, though the store hears of it later", async () => {
    // Just after the first exchange (at 0): the opening at 0 reaches the store 10 ms later.
    const clock = new VirtualClock();
    const options = { consecutiveFailures: 1, openFor: backoff.constant({ base: 1000 }) };
    const { store, breakers } = await fleet(clock, options, 2, 0);
    const [a, b] = breakers as [CircuitBreaker, CircuitBreaker];
    const heard = changes(a);
    calls(a, "fail"); // at 0: open until 1000
    await clock.advance(100);
    expect(await stored(store)).toStrictEqual(
      breakerState({ state: "open", openUntil: 1000, openings: 1, consecutiveFailures: 1 }),
    );
    await clock.advance(899);
    expect([a.state, b.state]).toEqual(["open", "open"]);
    await clock.advance(1);
    expect([a.state, b.state]).toEqual(["half-open", "half-open"]);
    expect(heard).toStrictEqual([{ from: "closed", to: "open", openFor: 1000 }]);
    await Promise.all([a.close(), b.close()]);
  });

  it("stays open openFor from the failure that opened it, whatever the store's latency and however long it was out of reach (property)", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 0, max: 60 }),
        fc.integer({ min: 0, max: 250 }),
        fc.integer({ min: 0, max: 400 }),
        async (latency, failAt, outage) => {
          const clock = new VirtualClock();
          const inner = memoryStore({ clock });
          const store = faultyStore(inner, clock);
          store.latency = latency;
          const a = circuitBreaker({
            consecutiveFailures: 1,
            openFor: backoff.constant({ base: 2000 }),
            store,
            key: "k",
            clock,
          });
          const ready = a.ready();
          await clock.advance(2 * latency);
          await ready;
          await clock.advance(failAt);
          if (outage > 0) store.fault = "reject";
          calls(a, "fail");
          const opened = clock.now();
          await clock.advance(outage);
          store.fault = "none";
          await clock.advance(1000); // the report has landed by now
          expect(await stored(inner)).toMatchObject({ state: "open", openUntil: opened + 2000 });
          expect(a.state).toBe("open");
          await clock.advance(opened + 2000 - clock.now() - 1);
          expect(a.state).toBe("open");
          await clock.advance(1);
          expect(a.state).toBe("half-open");
          const done = a.close();
          await clock.advance(1000);
          await done;
        },
      ),
      { numRuns: 60 },
    );
  });

  it("a probe given back leaves it half-open: no change is told at the next exchange", async () => {
    const clock = new VirtualClock();
    const { breakers } = await fleet(clock, {
      consecutiveFailures: 1,
      openFor: backoff.constant({ base: 1000 }),
    });
    const [a, b] = breakers as [CircuitBreaker, CircuitBreaker];
    const heard = changes(a);
    calls(a, "fail"); // at 50, open until 1050
    await clock.advance(1010);
    a.acquire(); // at 1060, A's probe
    a.release(); // the call was never made
    await clock.advance(300); // A's exchanges, at 1100, 1200, 1300
    expect(heard).toStrictEqual([
      { from: "closed", to: "open", openFor: 1000 },
      { from: "open", to: "half-open" },
    ]);
    expect([a.state, b.state]).toEqual(["half-open", "half-open"]);
    calls(a, "ok"); // a probe again, which closes it
    expect(heard.slice(2)).toStrictEqual([{ from: "half-open", to: "closed" }]);
    await Promise.all(breakers.map((x) => x.close()));
  });

  it("with whenStoreDown: closed, refuses every call while the store is down, and tells each refusal", async () => {
    const clock = new VirtualClock();
    const store = faultyStore(memoryStore({ clock }));
    const breaker = circuitBreaker({ store, key: "k", clock, whenStoreDown: "closed" });
    const rejected: unknown[] = [];
    breaker.on("rejected", (event) => rejected.push(event));
    await breaker.ready();
    store.fault = "reject";
    await clock.advance(100);
    const error = thrownBy(() => breaker.acquire()) as BrokenCircuitError;
    expect([error.retryAfter, error.message]).toEqual([
      0,
      "the circuit's shared state is out of reach (whenStoreDown: closed)",
    ]);
    expect(() => breaker.acquire()).toThrow(BrokenCircuitError);
    expect(rejected).toStrictEqual([{ retryAfter: 0 }, { retryAfter: 0 }]);
    await breaker.close();
  });
});

describe("a shared breaker's state: as one breaker that saw every call of the fleet", () => {
  const options = {
    consecutiveFailures: 3,
    failureRatio: 1,
    minimumThroughput: 1000,
    openFor: backoff.constant({ base: 10_000 }),
  };

  it("counts the calls a process let through before it heard of the opening, and opens no further", async () => {
    const clock = new VirtualClock();
    const { store, breakers } = await fleet(clock, options);
    const [a, b] = breakers as [CircuitBreaker, CircuitBreaker];
    const one = circuitBreaker({ ...options, clock });
    const heard = changes(b);
    for (let i = 0; i < 3; i++) a.acquire();
    b.acquire();
    b.acquire();
    for (let i = 0; i < 5; i++) one.acquire();
    for (let i = 0; i < 3; i++) a.failure(); // A opens at 50, and tells the store at once
    b.failure();
    b.success();
    for (let i = 0; i < 4; i++) one.failure();
    one.success();
    await clock.advance(50); // B's exchange, at 100
    expect(await stored(store)).toStrictEqual(one.snapshot());
    expect(one.snapshot()).toStrictEqual(
      breakerState({ state: "open", openUntil: 10_050, openings: 1, window: [[0, 5, 4]] }),
    );
    expect(heard).toStrictEqual([{ from: "closed", to: "open", openFor: 9950 }]);
  });

  it("opens when the fleet's failures in a row reach the threshold, though no process saw that many, and counts the rest", async () => {
    const clock = new VirtualClock();
    const { store, breakers } = await fleet(clock, options);
    const [a, b] = breakers as [CircuitBreaker, CircuitBreaker];
    calls(a, "fail", 2);
    calls(b, "fail", 2);
    expect([a.state, b.state]).toEqual(["closed", "closed"]);
    await clock.advance(50); // both exchange at 100: A first, then B
    const one = circuitBreaker({ ...options, clock });
    for (let i = 0; i < 4; i++) one.acquire();
    for (let i = 0; i < 4; i++) one.failure();
    expect(await stored(store)).toStrictEqual(one.snapshot());
    expect(one.snapshot()).toStrictEqual(
      breakerState({
        state: "open",
        openUntil: 10_100,
        openings: 1,
        consecutiveFailures: 4,
        window: [[0, 4, 4]],
      }),
    );
    await clock.advance(100);
    expect([a.state, b.state]).toEqual(["open", "open"]);
  });
});

describe("a shared breaker's probes", () => {
  it("a failed probe anywhere opens it again for the fleet, for the next step of openFor", async () => {
    const clock = new VirtualClock();
    const { store, breakers } = await fleet(clock, {
      consecutiveFailures: 1,
      openFor: backoff.exponential({ base: 1000 }),
    });
    const [a, b] = breakers as [CircuitBreaker, CircuitBreaker];
    const heard = changes(a);
    calls(a, "fail"); // at 50: open for 1000 ms
    await clock.advance(1010);
    calls(b, "fail"); // at 1060, B's probe fails: open for 2000 ms more
    await clock.advance(0); // B tells the store at once
    expect(await stored(store)).toStrictEqual(
      breakerState({ state: "open", openUntil: 3060, openings: 2, consecutiveFailures: 2 }),
    );
    await clock.advance(100); // A's exchange
    expect(a.state).toBe("open");
    await clock.advance(1900);
    calls(a, "fail"); // at 3060, A's probe fails: open for 4000 ms
    expect(heard).toStrictEqual([
      { from: "closed", to: "open", openFor: 1000 },
      { from: "open", to: "half-open" },
      { from: "half-open", to: "open", openFor: 4000 },
    ]);
  });

  it("a probe that ends after another process's probe opened the fleet again changes nothing: that opening stands", async () => {
    const clock = new VirtualClock();
    const { store, breakers } = await fleet(clock, {
      consecutiveFailures: 1,
      openFor: backoff.constant({ base: 1000 }),
    });
    const [a, b] = breakers as [CircuitBreaker, CircuitBreaker];
    calls(a, "fail"); // at 50
    await clock.advance(1010);
    a.acquire();
    b.acquire();
    b.failure(); // at 1060: open again until 2060, for the fleet at once
    a.failure(); // and A's probe, out of date, at once too
    await clock.advance(0);
    expect(await stored(store)).toStrictEqual(
      breakerState({ state: "open", openUntil: 2060, openings: 2, consecutiveFailures: 2 }),
    );
  });

  it("each successful probe counts once toward halfOpenSuccesses", async () => {
    const clock = new VirtualClock();
    const { store, breakers } = await fleet(
      clock,
      { consecutiveFailures: 1, halfOpenSuccesses: 2, openFor: backoff.constant({ base: 1000 }) },
      1,
    );
    const [a] = breakers as [CircuitBreaker];
    calls(a, "fail"); // at 50
    await clock.advance(1010);
    calls(a, "ok"); // at 1060
    await clock.advance(100); // A's exchange, at 1150
    expect(await stored(store)).toStrictEqual(
      breakerState({ state: "half-open", openUntil: 1050, openings: 1, halfOpenSuccesses: 1 }),
    );
    expect(a.state).toBe("half-open");
    calls(a, "ok");
    expect(a.state).toBe("closed");
  });

  it("a probe that is out across one exchange closes the breaker when it succeeds", async () => {
    const clock = new VirtualClock();
    const { breakers } = await fleet(
      clock,
      { consecutiveFailures: 1, openFor: backoff.constant({ base: 1000 }) },
      1,
    );
    const [a] = breakers as [CircuitBreaker];
    const heard = changes(a);
    calls(a, "fail"); // at 50
    await clock.advance(1010);
    const probe = a.execute(() => clock.sleep(100).then(() => "ok")); // 1060 to 1160, across the exchange at 1150
    await clock.advance(100);
    await expect(probe).resolves.toBe("ok");
    expect(a.state).toBe("closed");
    expect(heard).toStrictEqual([
      { from: "closed", to: "open", openFor: 1000 },
      { from: "open", to: "half-open" },
      { from: "half-open", to: "closed" },
    ]);
  });

  it("a probe out while another process's probe opened the fleet again cannot close it when it succeeds", async () => {
    const clock = new VirtualClock();
    const { breakers } = await fleet(clock, {
      consecutiveFailures: 1,
      openFor: backoff.constant({ base: 1000 }),
    });
    const [a, b] = breakers as [CircuitBreaker, CircuitBreaker];
    const heard = changes(a);
    calls(a, "fail"); // at 50
    await clock.advance(1010);
    const probe = a.execute(() => clock.sleep(100).then(() => "ok")); // 1060 to 1160
    await clock.advance(10);
    calls(b, "fail"); // at 1070: open until 2070
    await clock.advance(90);
    await expect(probe).resolves.toBe("ok");
    expect(a.state).toBe("open");
    expect(heard).toStrictEqual([
      { from: "closed", to: "open", openFor: 1000 },
      { from: "open", to: "half-open" },
      { from: "half-open", to: "open", openFor: 920 },
    ]);
  });
});

describe("a shared breaker's exchanges", () => {
  it("an opening or a closing is told to the store at once; turning half-open waits for the next exchange", async () => {
    const clock = new VirtualClock();
    const store = faultyStore(memoryStore({ clock }));
    const a = circuitBreaker({
      consecutiveFailures: 1,
      openFor: backoff.constant({ base: 1000 }),
      store,
      key: "k",
      clock,
    });
    await a.ready();
    await clock.advance(50);
    const before = store.calls;
    calls(a, "fail"); // at 50
    await clock.advance(0);
    expect(store.calls).toBe(before + 1); // the opening, at once
    await clock.advance(1010); // exchanges at 150, 250, …, 1050
    const regular = store.calls;
    expect(regular).toBe(before + 11);
    a.acquire(); // at 1060: half-open
    await clock.advance(89);
    expect(store.calls).toBe(regular);
    await clock.advance(1); // the exchange at 1150
    expect(store.calls).toBe(regular + 1);
    a.success(); // closed
    await clock.advance(10);
    expect(store.calls).toBe(regular + 2);
    await a.close();
  });

  it("a store's state with more failures in a row than the threshold (which no breaker writes) counts each new failure once", async () => {
    const clock = new VirtualClock();
    const store = memoryStore({ clock });
    const junk: BreakerState = breakerState({ consecutiveFailures: 7 });
    await store.write("breaker:k", 0, junk, 86_400_000);
    const options = { consecutiveFailures: 5, openFor: backoff.constant({ base: 1000 }), clock };
    const a = circuitBreaker({ ...options, store, key: "k" });
    await a.ready();
    await clock.advance(50);
    calls(a, "fail");
    await clock.advance(0);
    const one = circuitBreaker(options);
    one.restore(junk);
    calls(one, "fail");
    expect(await stored(store)).toStrictEqual(one.snapshot());
    expect(one.snapshot()).toStrictEqual(
      breakerState({ state: "open", openUntil: 1050, openings: 1, consecutiveFailures: 8 }),
    );
    await a.close();
  });

  it("a key found holding something else is overwritten with a fresh, closed state, though this process opened it earlier", async () => {
    const clock = new VirtualClock();
    const { store, breakers } = await fleet(
      clock,
      { consecutiveFailures: 1, openFor: backoff.constant({ base: 10_000 }) },
      1,
    );
    const [a] = breakers as [CircuitBreaker];
    const corrupt: unknown[] = [];
    a.on("store-corrupt", (event) => corrupt.push(event));
    const heard = changes(a);
    calls(a, "fail"); // at 50, told to the store at once
    await clock.advance(10);
    const { version } = await store.read("breaker:k");
    await store.write("breaker:k", version, "garbage", 86_400_000);
    await clock.advance(90); // A's exchange, at 150
    expect(corrupt).toEqual([
      {
        found: '"garbage"',
        reason: 'circuitBreaker.restore: state must be "closed", "open" or "half-open"; got undefined',
      },
    ]);
    expect(await stored(store)).toStrictEqual(breakerState());
    expect(a.state).toBe("closed");
    expect(heard).toStrictEqual([
      { from: "closed", to: "open", openFor: 10_000 },
      { from: "open", to: "closed" },
    ]);
  });
});

describe("an opening whose report never reached the store", () => {
  it("is the fleet's when the store answers again, whatever closed state was written there meanwhile", async () => {
    const clock = new VirtualClock();
    const inner = memoryStore({ clock });
    const store = faultyStore(inner);
    const options = { consecutiveFailures: 1, openFor: backoff.constant({ base: 1000 }), key: "k", clock };
    const a = circuitBreaker({ ...options, store });
    await a.ready();
    await clock.advance(50);
    store.fault = "reject";
    calls(a, "fail"); // at 50, open until 1050; its report fails
    await clock.advance(100);
    // Another program writes a closed state, dated as if it had been open until 5000 (no breaker writes that).
    const { version } = await inner.read("breaker:k");
    const closedLater: BreakerState = breakerState({ openUntil: 5000 });
    await inner.write("breaker:k", version, closedLater, 86_400_000);
    store.fault = "none";
    await clock.advance(150); // A's exchange at 250 reaches the store
    expect(a.shared).toBe(true);
    expect(await stored(inner)).toStrictEqual(breakerState({ state: "open", openUntil: 1050, openings: 1 }));
    expect(a.state).toBe("open");
    await a.close();
  });

  it("that has run out by the time the store answers again leaves the fleet's state as it is", async () => {
    const clock = new VirtualClock();
    const inner = memoryStore({ clock });
    const store = faultyStore(inner);
    const options = { consecutiveFailures: 1, openFor: backoff.constant({ base: 600 }), key: "k", clock };
    const a = circuitBreaker({ ...options, store });
    const b = circuitBreaker({ ...options, store: inner });
    await Promise.all([a.ready(), b.ready()]);
    await clock.advance(50);
    store.fault = "reject";
    calls(a, "fail"); // at 50, open until 650; its report fails
    await clock.advance(0);
    expect(a.shared).toBe(false);
    await clock.advance(550); // A tries again at 250 (in vain) and at 650
    store.fault = "none";
    await clock.advance(50); // at 650, the store answers: A's opening has just run out
    expect(a.shared).toBe(true);
    expect(await stored(inner)).toStrictEqual(breakerState());
    expect([a.state, b.state]).toEqual(["closed", "closed"]);
    await Promise.all([a.close(), b.close()]);
  });
});

describe("an opening decided while an exchange is on its way", () => {
  /**
   * A reaches the store through 40 ms of latency (20 ms each way); B directly. Both exchange at 0; A's
   * first exchange ends at 80, and the next ones start every 100 ms after the last one ended.
   */
  async function slowAndFast(options: CircuitBreakerOptions) {
    const clock = new VirtualClock();
    const inner = memoryStore({ clock });
    const slow = faultyStore(inner, clock);
    slow.latency = 40;
    const a = circuitBreaker({ ...options, store: slow, key: "k", clock });
    const b = circuitBreaker({ ...options, store: inner, key: "k", clock });
    const ready = Promise.all([a.ready(), b.ready()]);
    await clock.advance(80);
    await ready;
    return { clock, inner, slow, a, b };
  }

  const until = async (clock: VirtualClock, time: number) => clock.advance(time - clock.now());

  it("holds for this process from the moment it was decided, and becomes the fleet's as it was decided", async () => {
    const { clock, inner, a, b } = await slowAndFast({
      consecutiveFailures: 2,
      openFor: backoff.constant({ base: 1000 }),
    });
    const heard = changes(a);
    await until(clock, 85);
    calls(a, "fail"); // reported by A's exchange of 180 to 260
    await until(clock, 265);
    calls(b, "ok"); // the fleet's run of failures is broken…
    const closing = b.close(); // …at once
    await until(clock, 410); // A's exchange of 360 to 440 merged at 400, before this:
    calls(a, "fail"); // A's second failure in a row: open until 1410
    await until(clock, 500);
    await closing;
    expect(a.state).toBe("open");
    expect(heard).toStrictEqual([{ from: "closed", to: "open", openFor: 1000 }]);
    expect(await stored(inner)).toStrictEqual(
      breakerState({ state: "open", openUntil: 1410, openings: 1, consecutiveFailures: 1 }),
    );
    await until(clock, 1409);
    expect(a.state).toBe("open");
    await until(clock, 1410);
    expect(a.state).toBe("half-open");
    const done = a.close();
    await clock.advance(100);
    await done;
    expect(clock.pending).toBe(0);
  });

  it("outlasts a shorter opening the fleet took meanwhile: the fleet stays open until the later end", async () => {
    const { clock, inner, a, b } = await slowAndFast({
      consecutiveFailures: 1,
      openFor: backoff.constant({ base: 1000 }),
    });
    const heard = changes(a);
    await until(clock, 390);
    calls(b, "fail"); // B opens until 1390, and tells the store at once
    await b.close();
    await until(clock, 450); // A's exchange of 360 to 480 merged at 440, before this:
    calls(a, "fail"); // A, not yet told, opens until 1450
    await until(clock, 600);
    expect(await stored(inner)).toStrictEqual(
      breakerState({ state: "open", openUntil: 1450, openings: 2, consecutiveFailures: 2 }),
    );
    await until(clock, 1449);
    expect(a.state).toBe("open");
    expect(heard).toStrictEqual([{ from: "closed", to: "open", openFor: 1000 }]);
    const done = a.close();
    await clock.advance(100);
    await done;
  });

  it.each([false, true])(
    "a probe that closed it is out of date once another's failed probe opened the fleet again: the process tells the opening, and no refusal (isolated meanwhile: %s)",
    async (isolated) => {
      const { clock, a, b } = await slowAndFast({
        consecutiveFailures: 1,
        openFor: backoff.constant({ base: 1000 }),
      });
      const heard = changes(a);
      const rejected: unknown[] = [];
      a.on("rejected", (event) => rejected.push(event));
      await until(clock, 150);
      calls(b, "fail"); // the fleet is open until 1150
      await until(clock, 1160);
      a.acquire(); // A's probe, as its exchange of 1160 to 1240 starts
      b.acquire();
      await until(clock, 1165);
      b.failure(); // B's probe fails: open until 2165, for the fleet at once
      await until(clock, 1205);
      const hold = isolated ? a.isolate() : undefined;
      await until(clock, 1210); // after A's exchange merged, at 1200
      a.success();
      await until(clock, 1300);
      hold?.dispose();
      expect(a.state).toBe("open");
      expect(heard).toStrictEqual([
        { from: "closed", to: "open", openFor: 890 },
        { from: "open", to: "half-open" },
        { from: "half-open", to: "closed" },
        { from: "closed", to: "open", openFor: 925 },
      ]);
      expect(rejected).toEqual([]);
      const done = Promise.all([a.close(), b.close()]);
      await clock.advance(100);
      await done;
    },
  );

  it("a probe that closed it while the exchange was on its way stays counted when the process is isolated before the answer: no flap", async () => {
    const { clock, inner, a, b } = await slowAndFast({
      consecutiveFailures: 1,
      openFor: backoff.constant({ base: 1000 }),
    });
    const heard = changes(a);
    await until(clock, 150);
    calls(b, "fail"); // the fleet is open until 1150
    await b.close();
    await until(clock, 1160);
    a.acquire(); // A's probe, as its exchange of 1160 to 1240 starts
    await until(clock, 1210); // after A's exchange merged, at 1200
    a.success(); // the probe closes it
    const hold = a.isolate(); // before the exchange's answer, at 1240
    await until(clock, 1500);
    expect(heard).toStrictEqual([
      { from: "closed", to: "open", openFor: 890 },
      { from: "open", to: "half-open" },
      { from: "half-open", to: "closed" },
    ]);
    expect(await stored(inner)).toStrictEqual(breakerState({ openUntil: 1150 }));
    hold.dispose();
    expect(a.state).toBe("closed");
    const done = a.close();
    await clock.advance(100);
    await done;
  });

  it.each([
    ["closed", false, { state: "open", openUntil: 940, openings: 1, consecutiveFailures: 1 }],
    ["open, its time up", true, { state: "open", openUntil: 900, openings: 2, consecutiveFailures: 3 }],
  ])(
    "by a process still on its own, the store's first answer back on its way, becomes the fleet's when it reports it (the fleet %s)",
    async (_fleet, fleetOpened, expected) => {
      const { clock, inner, slow, a, b } = await slowAndFast({
        consecutiveFailures: 2,
        openFor: backoff.constant({ base: 300 }),
      });
      const heard = changes(a);
      await until(clock, 100);
      slow.fault = "reject"; // A's exchange at 180 fails: A is on its own
      if (fleetOpened) {
        await until(clock, 160);
        calls(b, "fail", 2); // the fleet is open until 460, which A does not hear of
      }
      await until(clock, 200);
      calls(a, "fail");
      await until(clock, 300);
      slow.fault = "none"; // A's exchange of 380 to 460 reaches the store; its merge is at 420
      await until(clock, 430);
      expect(a.shared).toBe(false);
      calls(a, "fail"); // open until 730, on its own
      await until(clock, 470); // the exchange has landed at 460: A is open still, whatever the fleet said
      expect(a.state).toBe("open");
      await until(clock, 700);
      expect(a.shared).toBe(true);
      // Reported by A's next exchange, from 560 (merged again after each write of B's that came first):
      // when the opening began is not known, so it is open for 300 ms from the merge that is written.
      expect(await stored(inner)).toStrictEqual({ ...expected, halfOpenSuccesses: 0, window: [] });
      expect([a.state, b.state]).toEqual(["open", "open"]);
      expect(heard).toStrictEqual([{ from: "closed", to: "open", openFor: 300 }]);
      const done = Promise.all([a.close(), b.close()]);
      await clock.advance(100);
      await done;
    },
  );
});

describe("openings whose report has not landed yet", () => {
  it("the latest of them is the fleet's once a write lands, however many the store turned away meanwhile", async () => {
    const clock = new VirtualClock();
    const inner = memoryStore({ clock });
    const store = faultyStore(inner);
    const a = circuitBreaker({
      consecutiveFailures: 1,
      openFor: backoff.exponential({ base: 100 }),
      store,
      key: "k",
      clock,
      syncEvery: 50,
    });
    await a.ready();
    await clock.advance(50);
    const heard = changes(a);
    store.conflicts = 1_000_000; // every write loses its compare-and-set, as if others always wrote first
    calls(a, "fail"); // at 50: open until 150
    await clock.advance(110);
    calls(a, "fail"); // at 160, the probe: open until 360
    await clock.advance(40);
    store.conflicts = 0;
    await clock.advance(10); // the exchange at 210 lands
    expect(a.shared).toBe(true);
    expect(await stored(inner)).toStrictEqual(
      breakerState({ state: "open", openUntil: 360, openings: 2, consecutiveFailures: 1 }),
    );
    expect(heard).toStrictEqual([
      { from: "closed", to: "open", openFor: 100 },
      { from: "open", to: "half-open" },
      { from: "half-open", to: "open", openFor: 200 },
    ]);
    await clock.advance(149);
    expect(a.state).toBe("open");
    await clock.advance(1);
    expect(a.state).toBe("half-open");
    await a.close();
  });
});
