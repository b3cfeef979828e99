// Every step alone, and every ordered pair of steps in both orders, with the semantics each order implies:
// what is outside a retry step sees the call, what is inside sees each attempt; a timeout outside limits
// the whole, inside each run; a breaker outside counts calls, inside attempts (or hedges); and so on for
// hedge, chaos, bulkhead, fallback, a user-written step and a pipeline nested as a step. Everything runs on
// a VirtualClock with fixed randomness; every call that is aborted or timed out must leave no timer behind.
import {
  BrokenCircuitError,
  BulkheadRejectedError,
  backoff,
  bulkhead,
  type CircuitBreaker,
  circuitBreaker,
  type ExecutionContext,
  type GiveUpEvent,
  type HedgeEvent,
  HedgeLostError,
  jitter,
  PermanentError,
  type Pipeline,
  pipeline,
  type RetryBudget,
  type RetryEvent,
  retryBudget,
  retryReport,
  type Step,
  sleep,
  steps,
  TimeoutError,
} from "robustly";
import { seededRandom, VirtualClock } from "robustly/testing";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { abortListeners } from "./support/drive.js";

// ---------------------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------------------

/** Constant 100 ms between attempts, no jitter: exact virtual times. */
const c100 = { backoff: backoff.constant({ base: 100 }), jitter: jitter.none() };

/** Lets queued continuations run (no time passes on any clock). */
const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

/** How a call settled, with the virtual time and the timers still set at that very moment. */
type Settled<T> =
  | { ok: true; value: T; time: number; pending: number }
  | { ok: false; error: unknown; time: number; pending: number };

/** Notes how `promise` settles (never leaving a rejection unhandled). */
function settle<T>(clock: VirtualClock, promise: Promise<T>): Promise<Settled<T>> {
  return promise.then(
    (value): Settled<T> => ({ ok: true, value, time: clock.now(), pending: clock.pending }),
    (error: unknown): Settled<T> => ({ ok: false, error, time: clock.now(), pending: clock.pending }),
  );
}

/** Runs the clock until no timer is left, and tells how `promise` settled. */
async function run<T>(clock: VirtualClock, promise: Promise<T>): Promise<Settled<T>> {
  const settled = settle(clock, promise);
  await clock.runAll();
  return settled;
}

/** The error of a call expected to fail. */
function errorOf(settled: Settled<unknown>): unknown {
  if (settled.ok) throw new Error(`expected a rejection; the call resolved with ${String(settled.value)}`);
  return settled.error;
}

/** The `i`th element, which must be there. */
function nth<T>(list: readonly T[], i: number): T {
  if (i >= list.length) throw new Error(`expected at least ${i + 1} elements; got ${list.length}`);
  return list[i] as T;
}

/** Waits `ms` of the execution's time, stopping with the signal's reason if the context aborts. */
const wait = (ctx: ExecutionContext, ms: number) => sleep(ctx.clock, ms, ctx.signal);

/** Never settles unless the context aborts (then rejects with its reason); sets no timer. */
function hang(ctx: ExecutionContext): Promise<never> {
  const signal = ctx.signal;
  return new Promise<never>((_, reject) => {
    if (signal.aborted) reject(signal.reason);
    else signal.addEventListener("abort", () => reject(signal.reason), { once: true });
  });
}

/** What the operation (or a step) saw in one context. */
interface Seen {
  attempt: number;
  retries: number;
  elapsed: number;
  hedge: number;
  timeout: number;
  time: number;
  signal: AbortSignal;
}

function record(clock: VirtualClock, log: Seen[], ctx: ExecutionContext): Seen {
  const seen: Seen = {
    attempt: ctx.attempt,
    retries: ctx.retries,
    elapsed: ctx.elapsed,
    hedge: ctx.hedge,
    timeout: ctx.timeout,
    time: clock.now(),
    signal: ctx.signal,
  };
  log.push(seen);
  return seen;
}

/** A user-written step that notes the context it is given and the outcome of what ran inside it. */
function spyStep(clock: VirtualClock) {
  const seen: Seen[] = [];
  const outcomes: { ok: boolean; outcome: unknown; time: number }[] = [];
  const step: Step = {
    async execute(next, context) {
      record(clock, seen, context);
      try {
        const value = await next(context);
        outcomes.push({ ok: true, outcome: value, time: clock.now() });
        return value;
      } catch (error) {
        outcomes.push({ ok: false, outcome: error, time: clock.now() });
        throw error;
      }
    },
  };
  return { step, seen, outcomes };
}

function breakerOn(clock: VirtualClock, consecutiveFailures: number) {
  return circuitBreaker({ consecutiveFailures, openFor: backoff.constant({ base: 1000 }), clock });
}

const injected = () => new Error("injected");

/** Execute options: the virtual clock, a fixed seed, and the caller's signal when there is one. */
const on = (clock: VirtualClock, signal?: AbortSignal) =>
  signal === undefined ? { clock, random: seededRandom(1) } : { clock, random: seededRandom(1), signal };

let unhandled: unknown[] = [];
const collect = (reason: unknown) => {
  unhandled.push(reason);
};
beforeEach(() => {
  unhandled = [];
  process.on("unhandledRejection", collect);
});
afterEach(async () => {
  await tick();
  await tick();
  process.off("unhandledRejection", collect);
  expect(unhandled).toEqual([]);
});

// ---------------------------------------------------------------------------------------------------------
// Each step alone
// ---------------------------------------------------------------------------------------------------------

describe("each step alone", () => {
  it("retry: attempts 1, 2, 3 see their retries and elapsed time; constant backoff sleeps exactly 100 ms", async () => {
    const clock = new VirtualClock();
    const log: Seen[] = [];
    const p = pipeline(steps.retry({ maxRetries: 3, ...c100 }));
    const s = await run(
      clock,
      p.execute((ctx) => {
        record(clock, log, ctx);
        return ctx.attempt < 3 ? Promise.reject(new Error(`fail ${ctx.attempt}`)) : Promise.resolve("ok");
      }, on(clock)),
    );
    expect(s).toMatchObject({ ok: true, value: "ok", time: 200, pending: 0 });
    expect(log.map((c) => [c.attempt, c.retries, c.elapsed, c.time])).toEqual([
      [1, 0, 0, 0],
      [2, 1, 100, 100],
      [3, 2, 200, 200],
    ]);
  });

  it("retry: gives up with the last error and files why (retries, attempts, elapsed)", async () => {
    const clock = new VirtualClock();
    const errors: Error[] = [];
    const p = pipeline(steps.retry({ maxRetries: 2, ...c100 }));
    const s = await run(
      clock,
      p.execute((ctx) => {
        const error = new Error(`fail ${ctx.attempt}`);
        errors.push(error);
        return Promise.reject(error);
      }, on(clock)),
    );
    const error = errorOf(s);
    expect(errors).toHaveLength(3);
    expect(error).toBe(errors[2]);
    expect(retryReport(error)).toEqual({ reason: "retries", attempts: 3, elapsed: 200, idle: 200 });
    expect(s.pending).toBe(0);
  });

  it("timeout: rejects with a TimeoutError after exactly ms; the operation's signal aborts with that error", async () => {
    const clock = new VirtualClock();
    const log: Seen[] = [];
    const p = pipeline(steps.timeout(500));
    const s = await run(
      clock,
      p.execute((ctx) => {
        record(clock, log, ctx);
        return hang(ctx);
      }, on(clock)),
    );
    const error = errorOf(s);
    expect(error).toBeInstanceOf(TimeoutError);
    expect((error as TimeoutError).timeout).toBe(500);
    expect(s).toMatchObject({ time: 500, pending: 0 });
    expect(log).toHaveLength(1);
    expect(log[0]?.timeout).toBe(500);
    expect(log[0]?.signal.reason).toBe(error);
  });

  it("timeout: a fast answer passes through and its timer is removed", async () => {
    const clock = new VirtualClock();
    const p = pipeline(steps.timeout(500));
    const s = await run(
      clock,
      p.execute((ctx) => wait(ctx, 100).then(() => "fast"), on(clock)),
    );
    expect(s).toEqual({ ok: true, value: "fast", time: 100, pending: 0 });
  });

  it("breaker: opens after consecutiveFailures calls, refuses without running, lets a probe through after openFor", async () => {
    const clock = new VirtualClock();
    const breaker = breakerOn(clock, 2);
    const p = pipeline(steps.breaker(breaker));
    let calls = 0;
    const failing = () => {
      calls += 1;
      return Promise.reject(new Error("down"));
    };
    await expect(p.execute(failing, on(clock))).rejects.toThrow("down");
    expect(breaker.state).toBe("closed");
    expect(breaker.snapshot().consecutiveFailures).toBe(1);
    await expect(p.execute(failing, on(clock))).rejects.toThrow("down");
    expect(breaker.state).toBe("open");
    await expect(p.execute(failing, on(clock))).rejects.toBeInstanceOf(BrokenCircuitError);
    expect(calls).toBe(2);
    await clock.advance(1000);
    expect(breaker.state).toBe("half-open");
    await expect(p.execute(async () => "probe", on(clock))).resolves.toBe("probe");
    expect(breaker.state).toBe("closed");
  });

  it("hedge: a second attempt starts after delay with context.hedge 2; the winner's value; the loser aborted", async () => {
    const clock = new VirtualClock();
    const log: Seen[] = [];
    const p = pipeline(steps.hedge({ delay: 100 }));
    const s = await run(
      clock,
      p.execute(async (ctx) => {
        record(clock, log, ctx);
        await wait(ctx, ctx.hedge === 1 ? 1000 : 30);
        return `hedge ${ctx.hedge}`;
      }, on(clock)),
    );
    expect(s).toEqual({ ok: true, value: "hedge 2", time: 130, pending: 0 });
    expect(log.map((c) => [c.hedge, c.attempt, c.time])).toEqual([
      [1, 1, 0],
      [2, 1, 100],
    ]);
    expect(log[0]?.signal.reason).toBeInstanceOf(HedgeLostError);
    expect((nth(log, 0).signal.reason as HedgeLostError).settledBy).toBe(2);
    expect(log[1]?.signal.aborted).toBe(false);
  });

  it("chaos: a fault at rate 1 replaces the call; enabled: false and rate 0 pass through; latency waits; result replaces", async () => {
    const clock = new VirtualClock();
    let calls = 0;
    const op = async () => {
      calls += 1;
      return "real";
    };
    const fault = steps.chaos({ fault: { rate: 1, error: injected } });
    await expect(pipeline(fault).execute(op, on(clock))).rejects.toThrow("injected");
    expect(calls).toBe(0);
    expect(fault.metrics()).toEqual({ calls: 1, latencies: 0, faults: 1, results: 0 });

    const off = steps.chaos({ fault: { rate: 1, error: injected }, enabled: false });
    await expect(pipeline(off).execute(op, on(clock))).resolves.toBe("real");
    const zero = steps.chaos({ fault: { rate: 0, error: injected } });
    await expect(pipeline(zero).execute(op, on(clock))).resolves.toBe("real");
    expect(calls).toBe(2);

    const result = steps.chaos<string>({ result: { rate: 1, value: "chaos" } });
    await expect(pipeline(result).execute(op, on(clock))).resolves.toBe("chaos");
    expect(calls).toBe(2);

    const slow = steps.chaos({ latency: { rate: 1, ms: 250 } });
    const startedAt: number[] = [];
    const s = await run(
      clock,
      pipeline(slow).execute(async () => {
        startedAt.push(clock.now());
        return "late";
      }, on(clock)),
    );
    expect(s).toEqual({ ok: true, value: "late", time: 250, pending: 0 });
    expect(startedAt).toEqual([250]);
  });

  it("bulkhead: limit 1, queue 1: the second waits its turn, the third is refused at once", async () => {
    const clock = new VirtualClock();
    const pool = bulkhead({ limit: 1, queue: 1 });
    const p = pipeline(steps.bulkhead(pool));
    const started: [string, number][] = [];
    const op = (name: string) => async (ctx: ExecutionContext) => {
      started.push([name, clock.now()]);
      await wait(ctx, 100);
      return name;
    };
    const a = settle(clock, p.execute(op("A"), on(clock)));
    const b = settle(clock, p.execute(op("B"), on(clock)));
    const c = settle(clock, p.execute(op("C"), on(clock)));
    expect([pool.running, pool.queued]).toEqual([1, 1]);
    await clock.runAll();
    expect(await a).toMatchObject({ ok: true, value: "A", time: 100 });
    expect(await b).toMatchObject({ ok: true, value: "B", time: 200 });
    const refused = await c;
    expect(errorOf(refused)).toBeInstanceOf(BulkheadRejectedError);
    expect(refused.time).toBe(0);
    expect(started).toEqual([
      ["A", 0],
      ["B", 100],
    ]);
    expect([pool.running, pool.queued, clock.pending]).toEqual([0, 0, 0]);
  });

  it("fallback: answers for the errors `when` matches, passes the others; a function gets the error and the context", async () => {
    const clock = new VirtualClock();
    const soft = new Error("soft");
    const hard = new Error("hard");
    const p = pipeline(steps.fallback("fallback", { when: (e) => e === soft }));
    await expect(p.execute(() => Promise.reject(soft), on(clock))).resolves.toBe("fallback");
    await expect(p.execute(() => Promise.reject(hard), on(clock))).rejects.toBe(hard);
    await expect(p.execute(async () => "value", on(clock))).resolves.toBe("value");
    const heard: unknown[] = [];
    const q = pipeline(
      steps.fallback((error, context) => {
        heard.push(error, context.attempt, context.clock);
        return "made";
      }),
    );
    await expect(q.execute(() => Promise.reject(hard), on(clock))).resolves.toBe("made");
    expect(heard).toEqual([hard, 1, clock]);
  });

  it("a user-written step: called once with the execution's context (attempt 1, hedge 1, no timeout, its clock and random)", async () => {
    const clock = new VirtualClock();
    const random = seededRandom(1);
    const contexts: ExecutionContext[] = [];
    const step: Step = {
      async execute(next, context) {
        contexts.push(context);
        const value = await next(context);
        return `wrapped ${String(value)}` as never;
      },
    };
    const s = await run(
      clock,
      pipeline(step).execute(async () => "value", { clock, random }),
    );
    expect(s).toEqual({ ok: true, value: "wrapped value", time: 0, pending: 0 });
    expect(contexts).toHaveLength(1);
    const [ctx] = contexts as [ExecutionContext];
    expect([ctx.attempt, ctx.retries, ctx.elapsed, ctx.hedge, ctx.timeout]).toEqual([
      1,
      0,
      0,
      1,
      Number.POSITIVE_INFINITY,
    ]);
    expect(ctx.clock).toBe(clock);
    expect(ctx.random).toBe(random);
  });

  it("a pipeline nested as a step runs its own steps over the operation", async () => {
    const clock = new VirtualClock();
    const inner = pipeline(steps.retry({ maxRetries: 2, ...c100 }));
    const p = pipeline(inner);
    const attempts: number[] = [];
    const s = await run(
      clock,
      p.execute((ctx) => {
        attempts.push(ctx.attempt);
        return ctx.attempt < 2 ? Promise.reject(new Error("again")) : Promise.resolve("ok");
      }, on(clock)),
    );
    expect(s).toEqual({ ok: true, value: "ok", time: 100, pending: 0 });
    expect(attempts).toEqual([1, 2]);
  });
});

// ---------------------------------------------------------------------------------------------------------
// Pairs: retry with each other step
// ---------------------------------------------------------------------------------------------------------

describe("retry × timeout", () => {
  it("timeout outside retry: one limit on the whole call, even though retries remain", async () => {
    const clock = new VirtualClock();
    const log: Seen[] = [];
    const giveUps: GiveUpEvent[] = [];
    const timeouts: [number, number][] = [];
    const p = pipeline(
      steps.timeout({ ms: 250, onTimeout: (e) => timeouts.push([e.timeout, e.attempt]) }),
      steps.retry({ maxRetries: 5, ...c100, onGiveUp: (e) => giveUps.push(e) }),
    );
    const s = await run(
      clock,
      p.execute(async (ctx) => {
        record(clock, log, ctx);
        await wait(ctx, 80);
        throw new Error(`fail ${ctx.attempt}`);
      }, on(clock)),
    );
    const error = errorOf(s);
    expect(error).toBeInstanceOf(TimeoutError);
    expect((error as TimeoutError).timeout).toBe(250);
    expect(s).toMatchObject({ time: 250, pending: 0 });
    // Attempt 1: 0–80, backoff 100, attempt 2 from 180, cut at 250.
    expect(log.map((c) => [c.attempt, c.time, c.timeout])).toEqual([
      [1, 0, 250],
      [2, 180, 250],
    ]);
    expect(log[0]?.signal.aborted).toBe(false);
    expect(log[1]?.signal.reason).toBe(error);
    expect(giveUps.map((e) => [e.reason, e.attempts, e.outcome])).toEqual([["aborted", 2, error]]);
    // Outside the retry step, the timeout sees the call: attempt 1, whatever attempt was running.
    expect(timeouts).toEqual([[250, 1]]);
  });

  it("retry outside timeout: a limit per attempt; each attempt times out and is retried", async () => {
    const clock = new VirtualClock();
    const log: Seen[] = [];
    const timeouts: [number, number][] = [];
    const p = pipeline(
      steps.retry({ maxRetries: 2, ...c100 }),
      steps.timeout({ ms: 50, onTimeout: (e) => timeouts.push([e.timeout, e.attempt]) }),
    );
    const s = await run(
      clock,
      p.execute((ctx) => {
        record(clock, log, ctx);
        return hang(ctx);
      }, on(clock)),
    );
    const error = errorOf(s);
    expect(error).toBeInstanceOf(TimeoutError);
    expect((error as TimeoutError).timeout).toBe(50);
    // 0–50, sleep 100, 150–200, sleep 100, 300–350.
    expect(s).toMatchObject({ time: 350, pending: 0 });
    expect(log.map((c) => [c.attempt, c.time, c.timeout])).toEqual([
      [1, 0, 50],
      [2, 150, 50],
      [3, 300, 50],
    ]);
    const reasons = log.map((c) => c.signal.reason);
    for (const reason of reasons) expect(reason).toBeInstanceOf(TimeoutError);
    expect(new Set(reasons).size).toBe(3);
    expect(reasons[2]).toBe(error);
    expect(retryReport(error)).toEqual({ reason: "retries", attempts: 3, elapsed: 350, idle: 200 });
    expect(timeouts).toEqual([
      [50, 1],
      [50, 2],
      [50, 3],
    ]);
  });
});

describe("retry × breaker", () => {
  it("breaker outside retry counts calls: a call whose 3 attempts fail is one failure; two such calls open it", async () => {
    const clock = new VirtualClock();
    const breaker = breakerOn(clock, 2);
    const p = pipeline(steps.breaker(breaker), steps.retry({ maxRetries: 2, ...c100 }));
    let calls = 0;
    const op = () => {
      calls += 1;
      return Promise.reject(new Error("down"));
    };
    const first = await run(clock, p.execute(op, on(clock)));
    expect(retryReport(errorOf(first))).toEqual({ reason: "retries", attempts: 3, elapsed: 200, idle: 200 });
    expect(calls).toBe(3);
    expect(breaker.state).toBe("closed");
    expect(breaker.snapshot().consecutiveFailures).toBe(1);
    await run(clock, p.execute(op, on(clock)));
    expect(calls).toBe(6);
    expect(breaker.state).toBe("open");
    const third = await run(clock, p.execute(op, on(clock)));
    expect(errorOf(third)).toBeInstanceOf(BrokenCircuitError);
    expect(calls).toBe(6);
  });

  it("breaker inside retry counts attempts: one call opens it, and retry gives up with BrokenCircuitError (reason breaker)", async () => {
    const clock = new VirtualClock();
    const breaker = breakerOn(clock, 2);
    const p = pipeline(steps.retry({ maxRetries: 5, ...c100 }), steps.breaker(breaker));
    const log: Seen[] = [];
    const s = await run(
      clock,
      p.execute((ctx) => {
        record(clock, log, ctx);
        return Promise.reject(new Error("down"));
      }, on(clock)),
    );
    const error = errorOf(s);
    expect(error).toBeInstanceOf(BrokenCircuitError);
    expect(retryReport(error)?.reason).toBe("breaker");
    expect(retryReport(error)).toEqual({ reason: "breaker", attempts: 2, elapsed: 200, idle: 200 });
    expect(log.map((c) => [c.attempt, c.time])).toEqual([
      [1, 0],
      [2, 100],
    ]);
    expect(breaker.state).toBe("open");
    expect(s).toMatchObject({ time: 200, pending: 0 });
  });
});

describe("retry × hedge", () => {
  // The operation fails 40 ms after it starts; hedge delay 70; retry: 2 retries, 100 ms apart.
  const failing =
    (clock: VirtualClock, log: Seen[], errors: Map<string, Error>) => async (ctx: ExecutionContext) => {
      record(clock, log, ctx);
      await wait(ctx, 40);
      const error = new Error(`attempt ${ctx.attempt} hedge ${ctx.hedge}`);
      errors.set(`${ctx.attempt}/${ctx.hedge}`, error);
      throw error;
    };

  it("hedge outside retry: each hedge runs a whole retry loop of its own, its attempts counted from 1", async () => {
    const clock = new VirtualClock();
    const log: Seen[] = [];
    const errors = new Map<string, Error>();
    const hedges: HedgeEvent[] = [];
    const p = pipeline(
      steps.hedge({ delay: 70, onHedge: (e) => hedges.push(e) }),
      steps.retry({ maxRetries: 2, ...c100 }),
    );
    const s = await run(clock, p.execute(failing(clock, log, errors), on(clock)));
    // Hedge 1: attempts at 0, 140, 280. Hedge 2 (from 70, while hedge 1 sleeps): 70, 210, 350.
    expect(log.map((c) => [c.attempt, c.hedge, c.time])).toEqual([
      [1, 1, 0],
      [1, 2, 70],
      [2, 1, 140],
      [2, 2, 210],
      [3, 1, 280],
      [3, 2, 350],
    ]);
    expect(hedges).toEqual([{ attempt: 2, after: 70, trigger: "delay" }]);
    const error = errorOf(s);
    // The last loop to give up is hedge 2's, at 390.
    expect(error).toBe(errors.get("3/2"));
    expect(retryReport(error)).toEqual({ reason: "retries", attempts: 3, elapsed: 320, idle: 200 });
    expect(s).toMatchObject({ time: 390, pending: 0 });
  });

  it("retry outside hedge: each attempt is hedged; both hedges of an attempt carry its number", async () => {
    const clock = new VirtualClock();
    const log: Seen[] = [];
    const errors = new Map<string, Error>();
    const hedges: HedgeEvent[] = [];
    const p = pipeline(
      steps.retry({ maxRetries: 2, ...c100 }),
      steps.hedge({ delay: 70, onHedge: (e) => hedges.push(e) }),
    );
    const s = await run(clock, p.execute(failing(clock, log, errors), on(clock)));
    // Hedge 1 fails at +40, so hedge 2 starts at once (hedgeOnFailure); the attempt fails at +80.
    expect(log.map((c) => [c.attempt, c.hedge, c.time])).toEqual([
      [1, 1, 0],
      [1, 2, 40],
      [2, 1, 180],
      [2, 2, 220],
      [3, 1, 360],
      [3, 2, 400],
    ]);
    expect(hedges).toEqual([
      { attempt: 2, after: 40, trigger: "failure" },
      { attempt: 2, after: 40, trigger: "failure" },
      { attempt: 2, after: 40, trigger: "failure" },
    ]);
    const error = errorOf(s);
    expect(error).toBe(errors.get("3/2"));
    expect(retryReport(error)).toEqual({ reason: "retries", attempts: 3, elapsed: 440, idle: 200 });
    expect(s).toMatchObject({ time: 440, pending: 0 });
  });
});

describe("retry × hedge sharing one budget", () => {
  /** A real token budget (never spent here), counting what each step tells it. */
  function countingBudget() {
    const real = retryBudget({ maxTokens: 1000, tokenRatio: 1 });
    const counts = { request: 0, success: 0, failure: 0, tryRetry: 0 };
    const budget: RetryBudget = Object.assign(Object.create(real) as RetryBudget, {
      request: () => {
        counts.request += 1;
        real.request();
      },
      success: () => {
        counts.success += 1;
        real.success();
      },
      failure: () => {
        counts.failure += 1;
        real.failure();
      },
      tryRetry: () => {
        counts.tryRetry += 1;
        return real.tryRetry();
      },
    });
    return { budget, counts };
  }

  for (const order of ["retry outside", "hedge outside"] as const) {
    it(`${order}: the budget hears of the execution once, of each run's outcome once, and is charged per retry and per hedge`, async () => {
      const clock = new VirtualClock();
      const { budget, counts } = countingBudget();
      const retry = steps.retry({ maxRetries: 1, ...c100, budget });
      const hedge = steps.hedge({ delay: 100, budget });
      const p = order === "retry outside" ? pipeline(retry, hedge) : pipeline(hedge, retry);
      let calls = 0;
      const s = await run(
        clock,
        p.execute(() => {
          calls += 1;
          return Promise.reject(new Error("down"));
        }, on(clock)),
      );
      expect((errorOf(s) as Error).message).toBe("down");
      expect(s.pending).toBe(0);
      // Two attempts × two hedges (or two hedges × two attempts): four runs of the operation.
      expect(calls).toBe(4);
      // One request; four failed runs, each told once; one retry per loop and one hedge per attempt, or
      // one retry per hedge and one hedge: three extra runs either way.
      expect(counts).toEqual({ request: 1, success: 0, failure: 4, tryRetry: 3 });
    });
  }
});

describe("retry × chaos", () => {
  it("chaos inside retry: injected faults are attempts' failures, retried", async () => {
    const clock = new VirtualClock();
    let enabledCalls = 0;
    const chaosStep = steps.chaos({
      fault: { rate: 1, error: injected },
      enabled: () => enabledCalls++ < 2,
    });
    const retried: RetryEvent[] = [];
    const p = pipeline(steps.retry({ maxRetries: 3, ...c100, onRetry: (e) => retried.push(e) }), chaosStep);
    const log: Seen[] = [];
    const s = await run(
      clock,
      p.execute(async (ctx) => {
        record(clock, log, ctx);
        return "real";
      }, on(clock)),
    );
    expect(s).toEqual({ ok: true, value: "real", time: 200, pending: 0 });
    expect(retried.map((e) => [e.attempt, (e.error as Error).message])).toEqual([
      [1, "injected"],
      [2, "injected"],
    ]);
    expect(log.map((c) => [c.attempt, c.time])).toEqual([[3, 200]]);
    expect(chaosStep.metrics()).toEqual({ calls: 3, latencies: 0, faults: 2, results: 0 });

    // Always on: every attempt faulted, the retries spent.
    const always = steps.chaos({ fault: { rate: 1, error: injected } });
    const q = pipeline(steps.retry({ maxRetries: 2, ...c100 }), always);
    const t = await run(
      clock,
      q.execute(async () => "never", on(clock)),
    );
    expect((errorOf(t) as Error).message).toBe("injected");
    expect(retryReport(errorOf(t))).toEqual({ reason: "retries", attempts: 3, elapsed: 200, idle: 200 });
    expect(always.metrics().faults).toBe(3);
  });

  it("chaos outside retry: an injected fault ends the call without a retry", async () => {
    const clock = new VirtualClock();
    const chaosStep = steps.chaos({ fault: { rate: 1, error: injected } });
    const retried: RetryEvent[] = [];
    const p = pipeline(chaosStep, steps.retry({ maxRetries: 3, ...c100, onRetry: (e) => retried.push(e) }));
    let calls = 0;
    const s = await run(
      clock,
      p.execute(async () => {
        calls += 1;
        return "real";
      }, on(clock)),
    );
    const error = errorOf(s);
    expect((error as Error).message).toBe("injected");
    expect(retryReport(error)).toBeUndefined();
    expect(s).toMatchObject({ time: 0, pending: 0 });
    expect([calls, retried.length]).toEqual([0, 0]);
    expect(chaosStep.metrics()).toEqual({ calls: 1, latencies: 0, faults: 1, results: 0 });

    // At rate 0 it passes the call to the retry step, which retries the operation's own failures.
    const quiet = pipeline(steps.chaos({ fault: { rate: 0, error: injected } }), steps.retry({ ...c100 }));
    const t = await run(
      clock,
      quiet.execute((ctx) => (ctx.attempt < 2 ? Promise.reject(new Error("own")) : "ok"), on(clock)),
    );
    expect(t).toMatchObject({ ok: true, value: "ok", pending: 0 });
  });
});

describe("retry × bulkhead", () => {
  // Call A's first attempt fails after 50 ms, its second succeeds after 50; call B takes 50 ms.
  const scenario = async (order: "retry outside" | "bulkhead outside", queue: number) => {
    const clock = new VirtualClock();
    const pool = bulkhead({ limit: 1, queue });
    const retry = steps.retry({ maxRetries: 2, ...c100 });
    const p =
      order === "retry outside"
        ? pipeline(retry, steps.bulkhead(pool))
        : pipeline(steps.bulkhead(pool), retry);
    const started: [string, number, number][] = [];
    const a = settle(
      clock,
      p.execute(async (ctx) => {
        started.push(["A", ctx.attempt, clock.now()]);
        await wait(ctx, 50);
        if (ctx.attempt === 1) throw new Error("A fails once");
        return "A";
      }, on(clock)),
    );
    const b = settle(
      clock,
      p.execute(async (ctx) => {
        started.push(["B", ctx.attempt, clock.now()]);
        await wait(ctx, 50);
        return "B";
      }, on(clock)),
    );
    await clock.runAll();
    return { a: await a, b: await b, started, pool, clock };
  };

  it("retry outside bulkhead: each attempt takes a place; another call slips in during the backoff", async () => {
    const { a, b, started, pool, clock } = await scenario("retry outside", 1);
    expect(started).toEqual([
      ["A", 1, 0],
      ["B", 1, 50],
      ["A", 2, 150],
    ]);
    expect(a).toMatchObject({ ok: true, value: "A", time: 200 });
    expect(b).toMatchObject({ ok: true, value: "B", time: 100 });
    expect([pool.running, pool.queued, clock.pending]).toEqual([0, 0, 0]);
  });

  it("bulkhead outside retry: the call holds its place through its backoff; the other waits for the whole call", async () => {
    const { a, b, started, pool, clock } = await scenario("bulkhead outside", 1);
    expect(started).toEqual([
      ["A", 1, 0],
      ["A", 2, 150],
      ["B", 1, 200],
    ]);
    expect(a).toMatchObject({ ok: true, value: "A", time: 200 });
    expect(b).toMatchObject({ ok: true, value: "B", time: 250 });
    expect([pool.running, pool.queued, clock.pending]).toEqual([0, 0, 0]);
  });

  it("retry outside bulkhead: a refusal is an attempt's failure, retried until a place is free", async () => {
    const clock = new VirtualClock();
    const pool = bulkhead({ limit: 1, queue: 0 });
    const retried: RetryEvent[] = [];
    const p = pipeline(
      steps.retry({ maxRetries: 3, ...c100, onRetry: (e) => retried.push(e) }),
      steps.bulkhead(pool),
    );
    const started: [string, number, number][] = [];
    const op = (name: string) => async (ctx: ExecutionContext) => {
      started.push([name, ctx.attempt, clock.now()]);
      await wait(ctx, 150);
      return name;
    };
    const a = settle(clock, p.execute(op("A"), on(clock)));
    const b = settle(clock, p.execute(op("B"), on(clock)));
    await clock.runAll();
    expect(await a).toMatchObject({ ok: true, value: "A", time: 150 });
    expect(await b).toMatchObject({ ok: true, value: "B", time: 350 });
    // B: refused at 0 and 100 (A holds the place until 150), runs at 200.
    expect(started).toEqual([
      ["A", 1, 0],
      ["B", 3, 200],
    ]);
    expect(retried.map((e) => [e.attempt, e.error instanceof BulkheadRejectedError])).toEqual([
      [1, true],
      [2, true],
    ]);
    expect([pool.running, clock.pending]).toEqual([0, 0]);
  });

  it("bulkhead outside retry: a refused call is refused once, not retried", async () => {
    const clock = new VirtualClock();
    const pool = bulkhead({ limit: 1, queue: 0 });
    const p = pipeline(steps.bulkhead(pool), steps.retry({ maxRetries: 3, ...c100 }));
    const names: string[] = [];
    const op = (name: string) => async (ctx: ExecutionContext) => {
      names.push(name);
      await wait(ctx, 150);
      return name;
    };
    const a = settle(clock, p.execute(op("A"), on(clock)));
    const b = settle(clock, p.execute(op("B"), on(clock)));
    await clock.runAll();
    expect(await a).toMatchObject({ ok: true, value: "A", time: 150 });
    const refused = await b;
    expect(errorOf(refused)).toBeInstanceOf(BulkheadRejectedError);
    expect(retryReport(errorOf(refused))).toBeUndefined();
    expect(refused.time).toBe(0);
    expect(names).toEqual(["A"]);
  });
});

describe("retry × fallback", () => {
  it("fallback outside retry: answers once the retries are spent, for the last error", async () => {
    const clock = new VirtualClock();
    const heard: unknown[] = [];
    const p = pipeline(
      steps.fallback("fallback", { onFallback: (e) => heard.push(e.error) }),
      steps.retry({ maxRetries: 2, ...c100 }),
    );
    const errors: Error[] = [];
    const s = await run(
      clock,
      p.execute((ctx) => {
        const error = new Error(`fail ${ctx.attempt}`);
        errors.push(error);
        return Promise.reject(error);
      }, on(clock)),
    );
    expect(s).toEqual({ ok: true, value: "fallback", time: 200, pending: 0 });
    expect(errors).toHaveLength(3);
    expect(heard).toEqual([errors[2]]);
  });

  it("fallback inside retry: answers each failed attempt it matches, so those are never retried", async () => {
    const clock = new VirtualClock();
    const retried: RetryEvent[] = [];
    const soft = (e: unknown) => e instanceof Error && e.message === "soft";
    const p = pipeline(
      steps.retry({ maxRetries: 3, ...c100, onRetry: (e) => retried.push(e) }),
      steps.fallback("fallback", { when: soft }),
    );
    let calls = 0;
    const s = await run(
      clock,
      p.execute(() => {
        calls += 1;
        return Promise.reject(new Error("soft"));
      }, on(clock)),
    );
    expect(s).toEqual({ ok: true, value: "fallback", time: 0, pending: 0 });
    expect([calls, retried.length]).toEqual([1, 0]);

    // An error it does not match is retried; the next attempt's soft error is answered.
    const log: Seen[] = [];
    const t = await run(
      clock,
      p.execute((ctx) => {
        record(clock, log, ctx);
        return Promise.reject(new Error(ctx.attempt === 1 ? "hard" : "soft"));
      }, on(clock)),
    );
    expect(t).toMatchObject({ ok: true, value: "fallback", pending: 0 });
    expect(log.map((c) => c.attempt)).toEqual([1, 2]);
    expect(retried.map((e) => (e.error as Error).message)).toEqual(["hard"]);
  });

  it("fallback inside retry: a PermanentError it does not answer reaches the retry step unchanged, which stops", async () => {
    const clock = new VirtualClock();
    const cause = new Error("404");
    let calls = 0;
    const op = () => {
      calls += 1;
      return Promise.reject(new PermanentError(cause));
    };
    const passes = pipeline(
      steps.retry({ maxRetries: 3, ...c100 }),
      steps.fallback("fallback", { when: TypeError }),
    );
    const s = await run(clock, passes.execute(op, on(clock)));
    expect(errorOf(s)).toBe(cause);
    expect(retryReport(cause)?.reason).toBe("permanent");
    expect(calls).toBe(1);
    // `when` is tested on the cause, as the caller would see it.
    const answers = pipeline(
      steps.retry({ maxRetries: 3, ...c100 }),
      steps.fallback("fallback", { when: (e) => e === cause }),
    );
    await expect(answers.execute(op, on(clock))).resolves.toBe("fallback");
    expect(calls).toBe(2);
  });
});

describe("retry × user step", () => {
  const op = (ctx: ExecutionContext) =>
    ctx.attempt < 3 ? Promise.reject(new Error(`fail ${ctx.attempt}`)) : Promise.resolve("ok");

  it("user step outside retry: called once, with attempt 1, and sees the call's final value", async () => {
    const clock = new VirtualClock();
    const spy = spyStep(clock);
    const attempts: number[] = [];
    const p = pipeline(spy.step, steps.retry({ maxRetries: 3, ...c100 }));
    const s = await run(
      clock,
      p.execute((ctx) => {
        attempts.push(ctx.attempt);
        return op(ctx);
      }, on(clock)),
    );
    expect(s).toEqual({ ok: true, value: "ok", time: 200, pending: 0 });
    expect(spy.seen.map((c) => [c.attempt, c.retries, c.elapsed])).toEqual([[1, 0, 0]]);
    expect(spy.outcomes).toEqual([{ ok: true, outcome: "ok", time: 200 }]);
    expect(attempts).toEqual([1, 2, 3]);
  });

  it("user step inside retry: called for each attempt, its context.attempt incrementing", async () => {
    const clock = new VirtualClock();
    const spy = spyStep(clock);
    const p = pipeline(steps.retry({ maxRetries: 3, ...c100 }), spy.step);
    const s = await run(clock, p.execute(op, on(clock)));
    expect(s).toEqual({ ok: true, value: "ok", time: 200, pending: 0 });
    expect(spy.seen.map((c) => [c.attempt, c.retries, c.elapsed, c.time])).toEqual([
      [1, 0, 0, 0],
      [2, 1, 100, 100],
      [3, 2, 200, 200],
    ]);
    expect(spy.outcomes.map((o) => (o.ok ? o.outcome : (o.outcome as Error).message))).toEqual([
      "fail 1",
      "fail 2",
      "ok",
    ]);
  });
});

// ---------------------------------------------------------------------------------------------------------
// Pairs: timeout with the steps after retry
// ---------------------------------------------------------------------------------------------------------

describe("timeout × breaker", () => {
  const scenario = async (order: "timeout outside" | "breaker outside") => {
    const clock = new VirtualClock();
    const told: unknown[] = [];
    const breaker = circuitBreaker({
      consecutiveFailures: 1,
      openFor: backoff.constant({ base: 1000 }),
      clock,
      handles: (e) => {
        told.push(e);
        return true;
      },
    });
    const p =
      order === "timeout outside"
        ? pipeline(steps.timeout(100), steps.breaker(breaker))
        : pipeline(steps.breaker(breaker), steps.timeout(100));
    return { clock, breaker, p, told };
  };

  for (const order of ["timeout outside", "breaker outside"] as const) {
    it(`${order}: a call the timeout cuts counts as a failure (the TimeoutError), opening the breaker`, async () => {
      const { clock, breaker, p, told } = await scenario(order);
      const log: Seen[] = [];
      const s = await run(
        clock,
        p.execute((ctx) => {
          record(clock, log, ctx);
          return hang(ctx);
        }, on(clock)),
      );
      const error = errorOf(s);
      expect(error).toBeInstanceOf(TimeoutError);
      expect(s).toMatchObject({ time: 100, pending: 0 });
      expect(log[0]?.signal.reason).toBe(error);
      expect(told).toEqual([error]);
      expect(breaker.state).toBe("open");
      const next = await run(
        clock,
        p.execute(() => "unreached", on(clock)),
      );
      expect(errorOf(next)).toBeInstanceOf(BrokenCircuitError);
      expect(log).toHaveLength(1);
    });

    it(`${order}: the caller's own abort does not count (consecutiveFailures 1 stays closed)`, async () => {
      const { clock, breaker, p, told } = await scenario(order);
      const controller = new AbortController();
      const reason = new Error("caller gave up");
      clock.setTimer(50, () => controller.abort(reason));
      const log: Seen[] = [];
      const s = await run(
        clock,
        p.execute(
          (ctx) => {
            record(clock, log, ctx);
            return hang(ctx);
          },
          on(clock, controller.signal),
        ),
      );
      expect(errorOf(s)).toBe(reason);
      expect(s).toMatchObject({ time: 50, pending: 0 });
      expect(log[0]?.signal.reason).toBe(reason);
      expect(told).toEqual([]);
      expect(breaker.state).toBe("closed");
      expect(breaker.snapshot().consecutiveFailures).toBe(0);
      expect(abortListeners(controller.signal)).toBe(0);
      await expect(p.execute(async () => "still closed", on(clock))).resolves.toBe("still closed");
    });

    it(`${order}: a half-open probe the caller aborts gives its place back (the next call is a probe, not refused)`, async () => {
      const { clock, breaker, p } = await scenario(order);
      await expect(p.execute(() => Promise.reject(new Error("down")), on(clock))).rejects.toThrow("down");
      expect(breaker.state).toBe("open");
      await clock.advance(1000);
      expect(breaker.state).toBe("half-open");
      const controller = new AbortController();
      const reason = new Error("caller gave up");
      clock.setTimer(50, () => controller.abort(reason));
      const s = await run(
        clock,
        p.execute((ctx) => hang(ctx), on(clock, controller.signal)),
      );
      expect(errorOf(s)).toBe(reason);
      expect(s).toMatchObject({ time: 1050, pending: 0 });
      expect(breaker.state).toBe("half-open");
      await expect(p.execute(async () => "probe", on(clock))).resolves.toBe("probe");
      expect(breaker.state).toBe("closed");
    });
  }
});

describe("timeout × hedge", () => {
  // Hedge 1 hangs; hedge 2 answers 120 ms after it starts.
  const op = (clock: VirtualClock, log: Seen[]) => async (ctx: ExecutionContext) => {
    record(clock, log, ctx);
    if (ctx.hedge === 1) return hang(ctx);
    await wait(ctx, 120);
    return `hedge ${ctx.hedge}`;
  };

  it("timeout outside hedge: one limit over all the hedges; every hedge is aborted with the TimeoutError", async () => {
    const clock = new VirtualClock();
    const log: Seen[] = [];
    const p = pipeline(steps.timeout(150), steps.hedge({ delay: 100 }));
    const s = await run(clock, p.execute(op(clock, log), on(clock)));
    const error = errorOf(s);
    expect(error).toBeInstanceOf(TimeoutError);
    expect(s).toMatchObject({ time: 150, pending: 0 });
    expect(log.map((c) => [c.hedge, c.time, c.timeout])).toEqual([
      [1, 0, 150],
      [2, 100, 150],
    ]);
    expect(log.map((c) => c.signal.reason)).toEqual([error, error]);
  });

  it("hedge outside timeout: each hedge has its own limit; the first times out, the second answers in time", async () => {
    const clock = new VirtualClock();
    const log: Seen[] = [];
    const p = pipeline(steps.hedge({ delay: 100 }), steps.timeout(150));
    const s = await run(clock, p.execute(op(clock, log), on(clock)));
    expect(s).toEqual({ ok: true, value: "hedge 2", time: 220, pending: 0 });
    expect(log.map((c) => [c.hedge, c.time, c.timeout])).toEqual([
      [1, 0, 150],
      [2, 100, 150],
    ]);
    expect(log[0]?.signal.reason).toBeInstanceOf(TimeoutError);
    expect(log[1]?.signal.aborted).toBe(false);
  });
});

describe("timeout × chaos", () => {
  it("timeout outside chaos: injected latency counts against the limit (the operation never runs)", async () => {
    const clock = new VirtualClock();
    const chaosStep = steps.chaos({ latency: { rate: 1, ms: 500 } });
    const p = pipeline(steps.timeout(100), chaosStep);
    let calls = 0;
    const s = await run(
      clock,
      p.execute(async () => {
        calls += 1;
        return "ok";
      }, on(clock)),
    );
    expect(errorOf(s)).toBeInstanceOf(TimeoutError);
    expect(s).toMatchObject({ time: 100, pending: 0 });
    expect(calls).toBe(0);
    expect(chaosStep.metrics()).toEqual({ calls: 1, latencies: 1, faults: 0, results: 0 });
  });

  it("chaos outside timeout: the latency comes before the limit starts", async () => {
    const clock = new VirtualClock();
    const p = pipeline(steps.chaos({ latency: { rate: 1, ms: 500 } }), steps.timeout(100));
    const log: Seen[] = [];
    const s = await run(
      clock,
      p.execute(async (ctx) => {
        record(clock, log, ctx);
        await wait(ctx, 80);
        return "ok";
      }, on(clock)),
    );
    expect(s).toEqual({ ok: true, value: "ok", time: 580, pending: 0 });
    expect(log.map((c) => [c.time, c.timeout])).toEqual([[500, 100]]);
  });
});

describe("timeout × bulkhead", () => {
  // Call A (no timeout) holds the only place for `holdFor` ms; call B goes through `p`.
  const scenario = async (order: "timeout outside" | "bulkhead outside", holdFor: number) => {
    const clock = new VirtualClock();
    const pool = bulkhead({ limit: 1, queue: 1 });
    const p =
      order === "timeout outside"
        ? pipeline(steps.timeout(100), steps.bulkhead(pool))
        : pipeline(steps.bulkhead(pool), steps.timeout(100));
    const a = settle(
      clock,
      pipeline(steps.bulkhead(pool)).execute((ctx) => wait(ctx, holdFor).then(() => "A"), on(clock)),
    );
    const log: Seen[] = [];
    const b = settle(
      clock,
      p.execute(async (ctx) => {
        record(clock, log, ctx);
        await wait(ctx, 50);
        return "B";
      }, on(clock)),
    );
    expect(pool.queued).toBe(1);
    return { clock, pool, a, b, log };
  };

  it("timeout outside bulkhead: the wait in the queue counts against the limit", async () => {
    const { clock, pool, a, b, log } = await scenario("timeout outside", 80);
    await clock.runAll();
    expect(await a).toMatchObject({ ok: true, value: "A", time: 80 });
    const s = await b;
    // Queued at 0, started at 80, cut at 100 though it ran only 20 ms.
    expect(errorOf(s)).toBeInstanceOf(TimeoutError);
    expect(s).toMatchObject({ time: 100, pending: 0 });
    expect(log.map((c) => [c.time, c.timeout])).toEqual([[80, 100]]);
    expect(log[0]?.signal.reason).toBe(errorOf(s));
    expect([pool.running, pool.queued]).toEqual([0, 0]);
  });

  it("timeout outside bulkhead: a call timed out while waiting leaves the queue and never runs", async () => {
    const { clock, pool, a, b, log } = await scenario("timeout outside", 300);
    await clock.advance(100);
    const s = await b;
    expect(errorOf(s)).toBeInstanceOf(TimeoutError);
    expect(s.time).toBe(100);
    expect([pool.running, pool.queued]).toEqual([1, 0]);
    await clock.runAll();
    expect(await a).toMatchObject({ ok: true, value: "A", time: 300 });
    expect(log).toEqual([]);
    expect([pool.running, pool.queued, clock.pending]).toEqual([0, 0, 0]);
  });

  it("bulkhead outside timeout: the limit starts when the place is granted", async () => {
    const { clock, pool, a, b, log } = await scenario("bulkhead outside", 80);
    await clock.runAll();
    expect(await a).toMatchObject({ ok: true, value: "A", time: 80 });
    expect(await b).toEqual({ ok: true, value: "B", time: 130, pending: 0 });
    expect(log.map((c) => [c.time, c.timeout])).toEqual([[80, 100]]);
    expect([pool.running, pool.queued]).toEqual([0, 0]);
  });
});

describe("timeout × fallback", () => {
  it("fallback outside timeout: answers for the TimeoutError", async () => {
    const clock = new VirtualClock();
    const heard: unknown[] = [];
    const p = pipeline(
      steps.fallback("fallback", { when: TimeoutError, onFallback: (e) => heard.push(e.error) }),
      steps.timeout(100),
    );
    const log: Seen[] = [];
    const s = await run(
      clock,
      p.execute((ctx) => {
        record(clock, log, ctx);
        return hang(ctx);
      }, on(clock)),
    );
    expect(s).toEqual({ ok: true, value: "fallback", time: 100, pending: 0 });
    expect(heard).toHaveLength(1);
    expect(heard[0]).toBeInstanceOf(TimeoutError);
    expect(log[0]?.signal.reason).toBe(heard[0]);
  });

  it("timeout outside fallback: the timeout's abort is never answered for; the call rejects with the TimeoutError", async () => {
    const clock = new VirtualClock();
    const heard: unknown[] = [];
    const p = pipeline(
      steps.timeout(100),
      steps.fallback("fallback", { onFallback: (e) => heard.push(e.error) }),
    );
    const log: Seen[] = [];
    const s = await run(
      clock,
      p.execute((ctx) => {
        record(clock, log, ctx);
        return hang(ctx);
      }, on(clock)),
    );
    const error = errorOf(s);
    expect(error).toBeInstanceOf(TimeoutError);
    expect(s).toMatchObject({ time: 100, pending: 0 });
    expect(heard).toEqual([]);
    expect(log[0]?.signal.reason).toBe(error);
  });
});

describe("timeout × user step", () => {
  it("user step outside timeout: sees no limit (Infinity) and the TimeoutError as what ran inside failed", async () => {
    const clock = new VirtualClock();
    const spy = spyStep(clock);
    const p = pipeline(spy.step, steps.timeout(100));
    const log: Seen[] = [];
    const s = await run(
      clock,
      p.execute((ctx) => {
        record(clock, log, ctx);
        return hang(ctx);
      }, on(clock)),
    );
    const error = errorOf(s);
    expect(error).toBeInstanceOf(TimeoutError);
    expect(s).toMatchObject({ time: 100, pending: 0 });
    expect(spy.seen.map((c) => [c.timeout, c.signal.aborted])).toEqual([[Number.POSITIVE_INFINITY, false]]);
    expect(spy.outcomes).toEqual([{ ok: false, outcome: error, time: 100 }]);
    expect(log.map((c) => c.timeout)).toEqual([100]);
  });

  it("timeout outside user step: the step sees the limit, and its signal aborts with the TimeoutError", async () => {
    const clock = new VirtualClock();
    const abortedAt: number[] = [];
    const seen: Seen[] = [];
    const step: Step = {
      execute(next, context) {
        record(clock, seen, context);
        context.signal.addEventListener("abort", () => abortedAt.push(clock.now()), { once: true });
        return next(context);
      },
    };
    const p = pipeline(steps.timeout(100), step);
    const s = await run(
      clock,
      p.execute((ctx) => hang(ctx), on(clock)),
    );
    const error = errorOf(s);
    expect(error).toBeInstanceOf(TimeoutError);
    expect(s).toMatchObject({ time: 100, pending: 0 });
    expect(seen.map((c) => c.timeout)).toEqual([100]);
    expect(seen[0]?.signal.reason).toBe(error);
    expect(abortedAt).toEqual([100]);
  });
});

// ---------------------------------------------------------------------------------------------------------
// Pairs: breaker with the steps after timeout
// ---------------------------------------------------------------------------------------------------------

describe("breaker × hedge", () => {
  // Every run fails 10 ms after it starts: hedge 1 fails, hedge 2 starts at once (hedgeOnFailure), fails.
  const failing = (clock: VirtualClock, log: Seen[]) => async (ctx: ExecutionContext) => {
    record(clock, log, ctx);
    await wait(ctx, 10);
    throw new Error(`hedge ${ctx.hedge} failed`);
  };

  it("breaker outside hedge: a hedged call counts once, however many hedges failed", async () => {
    const clock = new VirtualClock();
    const breaker = breakerOn(clock, 2);
    const p = pipeline(steps.breaker(breaker), steps.hedge({ delay: 100 }));
    const log: Seen[] = [];
    const s = await run(clock, p.execute(failing(clock, log), on(clock)));
    expect((errorOf(s) as Error).message).toBe("hedge 2 failed");
    expect(s).toMatchObject({ time: 20, pending: 0 });
    expect(log.map((c) => c.hedge)).toEqual([1, 2]);
    expect(breaker.state).toBe("closed");
    expect(breaker.snapshot().consecutiveFailures).toBe(1);
    await run(clock, p.execute(failing(clock, log), on(clock)));
    expect(breaker.state).toBe("open");
  });

  it("hedge outside breaker: each hedge passes the breaker; one call's two failed hedges open it", async () => {
    const clock = new VirtualClock();
    const breaker = breakerOn(clock, 2);
    const p = pipeline(steps.hedge({ delay: 100 }), steps.breaker(breaker));
    const log: Seen[] = [];
    const s = await run(clock, p.execute(failing(clock, log), on(clock)));
    expect((errorOf(s) as Error).message).toBe("hedge 2 failed");
    expect(breaker.state).toBe("open");
    // Now both hedges are refused at once, and nothing runs.
    const t = await run(clock, p.execute(failing(clock, log), on(clock)));
    expect(errorOf(t)).toBeInstanceOf(BrokenCircuitError);
    expect(t).toMatchObject({ time: 20, pending: 0 });
    expect(log).toHaveLength(2);
  });

  it("hedge outside breaker: a hedge that lost the race is not a failure", async () => {
    const clock = new VirtualClock();
    const breaker = breakerOn(clock, 1);
    const p = pipeline(steps.hedge({ delay: 100 }), steps.breaker(breaker));
    const log: Seen[] = [];
    const s = await run(
      clock,
      p.execute(async (ctx) => {
        record(clock, log, ctx);
        if (ctx.hedge === 1) return hang(ctx);
        await wait(ctx, 30);
        return "hedge 2";
      }, on(clock)),
    );
    expect(s).toEqual({ ok: true, value: "hedge 2", time: 130, pending: 0 });
    expect(log[0]?.signal.reason).toBeInstanceOf(HedgeLostError);
    expect(breaker.state).toBe("closed");
    expect(breaker.snapshot().consecutiveFailures).toBe(0);
  });
});

describe("breaker × chaos", () => {
  it("breaker outside chaos: injected faults count against the breaker, which then refuses before chaos runs", async () => {
    const clock = new VirtualClock();
    const breaker = breakerOn(clock, 2);
    const chaosStep = steps.chaos({ fault: { rate: 1, error: injected } });
    const p = pipeline(steps.breaker(breaker), chaosStep);
    for (let i = 0; i < 2; i++) {
      await expect(p.execute(async () => "real", on(clock))).rejects.toThrow("injected");
    }
    expect(breaker.state).toBe("open");
    await expect(p.execute(async () => "real", on(clock))).rejects.toBeInstanceOf(BrokenCircuitError);
    expect(chaosStep.metrics()).toEqual({ calls: 2, latencies: 0, faults: 2, results: 0 });
  });

  it("chaos outside breaker: an injected fault never reaches the breaker", async () => {
    const clock = new VirtualClock();
    const breaker = breakerOn(clock, 2);
    const chaosStep = steps.chaos({ fault: { rate: 1, error: injected } });
    const p = pipeline(chaosStep, steps.breaker(breaker));
    for (let i = 0; i < 3; i++) {
      await expect(p.execute(async () => "real", on(clock))).rejects.toThrow("injected");
    }
    expect(breaker.state).toBe("closed");
    expect(breaker.snapshot().consecutiveFailures).toBe(0);
    expect(chaosStep.metrics().faults).toBe(3);
  });
});

describe("breaker × bulkhead", () => {
  const holding = (ctx: ExecutionContext) => wait(ctx, 100).then(() => "A");

  it("breaker outside bulkhead: a bulkhead refusal is a failure the breaker counts (unless `handles` excludes it)", async () => {
    const clock = new VirtualClock();
    const breaker = breakerOn(clock, 1);
    const p = pipeline(steps.breaker(breaker), steps.bulkhead({ limit: 1 }));
    const a = settle(clock, p.execute(holding, on(clock)));
    await expect(p.execute(async () => "B", on(clock))).rejects.toBeInstanceOf(BulkheadRejectedError);
    expect(breaker.state).toBe("open");
    await clock.runAll();
    expect(await a).toMatchObject({ ok: true, value: "A", time: 100, pending: 0 });

    const lenient = circuitBreaker({
      consecutiveFailures: 1,
      clock,
      handles: (e) => !(e instanceof BulkheadRejectedError),
    });
    const q = pipeline(steps.breaker(lenient), steps.bulkhead({ limit: 1 }));
    const c = settle(clock, q.execute(holding, on(clock)));
    await expect(q.execute(async () => "D", on(clock))).rejects.toBeInstanceOf(BulkheadRejectedError);
    expect(lenient.state).toBe("closed");
    await clock.runAll();
    expect(await c).toMatchObject({ ok: true, value: "A" });
  });

  it("bulkhead outside breaker: a refused call never reaches the breaker", async () => {
    const clock = new VirtualClock();
    const breaker = breakerOn(clock, 1);
    const pool = bulkhead({ limit: 1 });
    const p = pipeline(steps.bulkhead(pool), steps.breaker(breaker));
    const a = settle(clock, p.execute(holding, on(clock)));
    await expect(p.execute(async () => "B", on(clock))).rejects.toBeInstanceOf(BulkheadRejectedError);
    expect(breaker.state).toBe("closed");
    expect(breaker.snapshot().consecutiveFailures).toBe(0);
    await clock.runAll();
    expect(await a).toMatchObject({ ok: true, value: "A", time: 100, pending: 0 });
    // An open breaker's refusal frees the place at once.
    await expect(p.execute(() => Promise.reject(new Error("down")), on(clock))).rejects.toThrow("down");
    expect(breaker.state).toBe("open");
    await expect(p.execute(async () => "C", on(clock))).rejects.toBeInstanceOf(BrokenCircuitError);
    expect([pool.running, pool.queued]).toEqual([0, 0]);
  });
});

describe("breaker × fallback", () => {
  it("fallback outside breaker: answers for the open circuit's refusal, not for what `when` leaves out", async () => {
    const clock = new VirtualClock();
    const breaker = breakerOn(clock, 1);
    const p = pipeline(steps.fallback("cached", { when: BrokenCircuitError }), steps.breaker(breaker));
    let calls = 0;
    const op = () => {
      calls += 1;
      return Promise.reject(new Error("down"));
    };
    await expect(p.execute(op, on(clock))).rejects.toThrow("down");
    expect(breaker.state).toBe("open");
    await expect(p.execute(op, on(clock))).resolves.toBe("cached");
    expect(calls).toBe(1);
  });

  it("breaker outside fallback: errors the fallback answers are successes to the breaker", async () => {
    const clock = new VirtualClock();
    const breaker = breakerOn(clock, 1);
    const p = pipeline(steps.breaker(breaker), steps.fallback("fallback"));
    let calls = 0;
    for (let i = 0; i < 3; i++) {
      await expect(
        p.execute(() => {
          calls += 1;
          return Promise.reject(new Error("down"));
        }, on(clock)),
      ).resolves.toBe("fallback");
    }
    expect(calls).toBe(3);
    expect(breaker.state).toBe("closed");
    expect(breaker.snapshot().consecutiveFailures).toBe(0);
  });
});

describe("breaker × user step", () => {
  it("user step outside breaker: runs for every call, and sees the open circuit's refusal", async () => {
    const clock = new VirtualClock();
    const breaker = breakerOn(clock, 1);
    const spy = spyStep(clock);
    const p = pipeline(spy.step, steps.breaker(breaker));
    const fail = () => Promise.reject(new Error("down"));
    await expect(p.execute(fail, on(clock))).rejects.toThrow("down");
    await expect(p.execute(fail, on(clock))).rejects.toBeInstanceOf(BrokenCircuitError);
    expect(spy.seen).toHaveLength(2);
    expect((nth(spy.outcomes, 0).outcome as Error).message).toBe("down");
    expect(spy.outcomes[1]?.outcome).toBeInstanceOf(BrokenCircuitError);
  });

  it("breaker outside user step: the step does not run while the circuit is open", async () => {
    const clock = new VirtualClock();
    const breaker = breakerOn(clock, 1);
    const spy = spyStep(clock);
    const p = pipeline(steps.breaker(breaker), spy.step);
    const fail = () => Promise.reject(new Error("down"));
    await expect(p.execute(fail, on(clock))).rejects.toThrow("down");
    await expect(p.execute(fail, on(clock))).rejects.toBeInstanceOf(BrokenCircuitError);
    expect(spy.seen.map((c) => [c.attempt, c.hedge])).toEqual([[1, 1]]);
    await clock.advance(1000);
    await expect(p.execute(async () => "probe", on(clock))).resolves.toBe("probe");
    expect(spy.seen).toHaveLength(2);
  });
});

// ---------------------------------------------------------------------------------------------------------
// Pairs: hedge with the steps after breaker
// ---------------------------------------------------------------------------------------------------------

describe("hedge × chaos", () => {
  it("hedge outside chaos: each hedge draws its own chaos; a hedge beats the first's injected latency", async () => {
    const clock = new VirtualClock();
    let enabledCalls = 0;
    const chaosStep = steps.chaos({ latency: { rate: 1, ms: 500 }, enabled: () => enabledCalls++ === 0 });
    const p = pipeline(steps.hedge({ delay: 100 }), chaosStep);
    const log: Seen[] = [];
    const s = await run(
      clock,
      p.execute(async (ctx) => {
        record(clock, log, ctx);
        await wait(ctx, 10);
        return `hedge ${ctx.hedge}`;
      }, on(clock)),
    );
    expect(s).toEqual({ ok: true, value: "hedge 2", time: 110, pending: 0 });
    expect(log.map((c) => [c.hedge, c.time])).toEqual([[2, 100]]);
    expect(chaosStep.metrics()).toEqual({ calls: 2, latencies: 1, faults: 0, results: 0 });

    // Faults: the first hedge's fault starts the second at once, whose fault ends the call.
    const faults = steps.chaos({ fault: { rate: 1, error: injected } });
    const t = await run(
      clock,
      pipeline(steps.hedge({ delay: 100 }), faults).execute(async () => "x", on(clock)),
    );
    expect((errorOf(t) as Error).message).toBe("injected");
    expect(faults.metrics().faults).toBe(2);
  });

  it("chaos outside hedge: the latency comes before the hedged call, which is not hedged against it", async () => {
    const clock = new VirtualClock();
    const chaosStep = steps.chaos({ latency: { rate: 1, ms: 500 } });
    const p = pipeline(chaosStep, steps.hedge({ delay: 100 }));
    const log: Seen[] = [];
    const s = await run(
      clock,
      p.execute(async (ctx) => {
        record(clock, log, ctx);
        await wait(ctx, 10);
        return `hedge ${ctx.hedge}`;
      }, on(clock)),
    );
    expect(s).toEqual({ ok: true, value: "hedge 1", time: 510, pending: 0 });
    expect(log.map((c) => [c.hedge, c.time])).toEqual([[1, 500]]);

    const faults = steps.chaos({ fault: { rate: 1, error: injected } });
    const t = await run(
      clock,
      pipeline(faults, steps.hedge({ delay: 100 })).execute(async () => "x", on(clock)),
    );
    expect((errorOf(t) as Error).message).toBe("injected");
    expect(faults.metrics().faults).toBe(1);
  });
});

describe("hedge × bulkhead", () => {
  // Hedge 1 answers after 300 ms, hedge 2 after 10.
  const op = (clock: VirtualClock, log: Seen[]) => async (ctx: ExecutionContext) => {
    record(clock, log, ctx);
    await wait(ctx, ctx.hedge === 1 ? 300 : 10);
    return `hedge ${ctx.hedge}`;
  };

  it("hedge outside bulkhead: a hedge must take a place of its own; with none free it is refused", async () => {
    const clock = new VirtualClock();
    const pool = bulkhead({ limit: 1 });
    const hedges: HedgeEvent[] = [];
    const p = pipeline(steps.hedge({ delay: 100, onHedge: (e) => hedges.push(e) }), steps.bulkhead(pool));
    const log: Seen[] = [];
    const s = await run(clock, p.execute(op(clock, log), on(clock)));
    expect(s).toEqual({ ok: true, value: "hedge 1", time: 300, pending: 0 });
    expect(hedges).toHaveLength(1);
    expect(log.map((c) => c.hedge)).toEqual([1]);
    expect(pool.running).toBe(0);
  });

  it("hedge outside bulkhead: with a place for each, the losing hedge's place is freed when it is aborted", async () => {
    const clock = new VirtualClock();
    const pool = bulkhead({ limit: 2 });
    const p = pipeline(steps.hedge({ delay: 100 }), steps.bulkhead(pool));
    const log: Seen[] = [];
    const s = await run(clock, p.execute(op(clock, log), on(clock)));
    expect(s).toEqual({ ok: true, value: "hedge 2", time: 110, pending: 0 });
    expect(log[0]?.signal.reason).toBeInstanceOf(HedgeLostError);
    expect([pool.running, pool.queued]).toEqual([0, 0]);
  });

  it("bulkhead outside hedge: the whole hedged call takes one place, its hedges inside it", async () => {
    const clock = new VirtualClock();
    const pool = bulkhead({ limit: 1 });
    const p = pipeline(steps.bulkhead(pool), steps.hedge({ delay: 100 }));
    const log: Seen[] = [];
    const a = settle(clock, p.execute(op(clock, log), on(clock)));
    await expect(p.execute(async () => "other", on(clock))).rejects.toBeInstanceOf(BulkheadRejectedError);
    await clock.runAll();
    expect(await a).toEqual({ ok: true, value: "hedge 2", time: 110, pending: 0 });
    expect(log.map((c) => [c.hedge, c.time])).toEqual([
      [1, 0],
      [2, 100],
    ]);
    expect(pool.running).toBe(0);
  });
});

describe("hedge × fallback", () => {
  const failing = (clock: VirtualClock, log: Seen[]) => async (ctx: ExecutionContext) => {
    record(clock, log, ctx);
    await wait(ctx, 10);
    throw new Error(`hedge ${ctx.hedge} failed`);
  };

  it("fallback outside hedge: answers only when every hedge has failed", async () => {
    const clock = new VirtualClock();
    const heard: unknown[] = [];
    const p = pipeline(
      steps.fallback("fallback", { onFallback: (e) => heard.push(e.error) }),
      steps.hedge({ delay: 100 }),
    );
    const log: Seen[] = [];
    const s = await run(clock, p.execute(failing(clock, log), on(clock)));
    expect(s).toEqual({ ok: true, value: "fallback", time: 20, pending: 0 });
    expect(log.map((c) => c.hedge)).toEqual([1, 2]);
    expect((heard as Error[]).map((e) => e.message)).toEqual(["hedge 2 failed"]);
  });

  it("hedge outside fallback: the first hedge's failure is answered at once, so no hedge starts; a lost hedge is never answered", async () => {
    const clock = new VirtualClock();
    const heard: unknown[] = [];
    const hedges: HedgeEvent[] = [];
    const p = pipeline(
      steps.hedge({ delay: 100, onHedge: (e) => hedges.push(e) }),
      steps.fallback("fallback", { onFallback: (e) => heard.push(e.error) }),
    );
    const log: Seen[] = [];
    const s = await run(clock, p.execute(failing(clock, log), on(clock)));
    expect(s).toEqual({ ok: true, value: "fallback", time: 10, pending: 0 });
    expect(log.map((c) => c.hedge)).toEqual([1]);
    expect(hedges).toEqual([]);
    expect(heard).toHaveLength(1);

    const race: Seen[] = [];
    const t = await run(
      clock,
      p.execute(async (ctx) => {
        record(clock, race, ctx);
        if (ctx.hedge === 1) return hang(ctx);
        await wait(ctx, 30);
        return "hedge 2";
      }, on(clock)),
    );
    expect(t).toMatchObject({ ok: true, value: "hedge 2", pending: 0 });
    expect(race[0]?.signal.reason).toBeInstanceOf(HedgeLostError);
    expect(heard).toHaveLength(1);
  });
});

describe("hedge × user step", () => {
  const op = (clock: VirtualClock, log: Seen[]) => async (ctx: ExecutionContext) => {
    record(clock, log, ctx);
    if (ctx.hedge === 1) return hang(ctx);
    await wait(ctx, 30);
    return `hedge ${ctx.hedge}`;
  };

  it("user step outside hedge: called once, with hedge 1; the operation sees hedges 1 and 2", async () => {
    const clock = new VirtualClock();
    const spy = spyStep(clock);
    const p = pipeline(spy.step, steps.hedge({ delay: 100 }));
    const log: Seen[] = [];
    const s = await run(clock, p.execute(op(clock, log), on(clock)));
    expect(s).toEqual({ ok: true, value: "hedge 2", time: 130, pending: 0 });
    expect(spy.seen.map((c) => [c.hedge, c.time])).toEqual([[1, 0]]);
    expect(spy.seen[0]?.signal.aborted).toBe(false);
    expect(log.map((c) => c.hedge)).toEqual([1, 2]);
  });

  it("hedge outside user step: called for each hedge with context.hedge 1, 2; the loser's signal aborts", async () => {
    const clock = new VirtualClock();
    const spy = spyStep(clock);
    const p = pipeline(steps.hedge({ delay: 100 }), spy.step);
    const log: Seen[] = [];
    const s = await run(clock, p.execute(op(clock, log), on(clock)));
    expect(s).toEqual({ ok: true, value: "hedge 2", time: 130, pending: 0 });
    expect(spy.seen.map((c) => [c.hedge, c.attempt, c.time])).toEqual([
      [1, 1, 0],
      [2, 1, 100],
    ]);
    expect(spy.seen[0]?.signal.reason).toBeInstanceOf(HedgeLostError);
    expect(spy.seen[1]?.signal.aborted).toBe(false);
    // Both runs of the step end at 130: the winner with its value, the loser with the HedgeLostError.
    expect(spy.outcomes.map((o) => [o.ok, o.time]).sort()).toEqual([
      [false, 130],
      [true, 130],
    ]);
    expect(spy.outcomes.find((o) => !o.ok)?.outcome).toBe(spy.seen[0]?.signal.reason);
  });
});

// ---------------------------------------------------------------------------------------------------------
// Pairs: chaos, bulkhead, fallback, user step among themselves
// ---------------------------------------------------------------------------------------------------------

describe("chaos × bulkhead", () => {
  // Chaos delays the first call (A, at 0) by 100 ms; B starts at 50; each operation takes 100 ms.
  const scenario = async (order: "bulkhead outside" | "chaos outside") => {
    const clock = new VirtualClock();
    let enabledCalls = 0;
    const chaosStep = steps.chaos({ latency: { rate: 1, ms: 100 }, enabled: () => enabledCalls++ === 0 });
    const pool = bulkhead({ limit: 1 });
    const p =
      order === "bulkhead outside"
        ? pipeline(steps.bulkhead(pool), chaosStep)
        : pipeline(chaosStep, steps.bulkhead(pool));
    const started: [string, number][] = [];
    const op = (name: string) => async (ctx: ExecutionContext) => {
      started.push([name, clock.now()]);
      await wait(ctx, 100);
      return name;
    };
    const a = settle(clock, p.execute(op("A"), on(clock)));
    let b: Promise<Settled<string>> | undefined;
    clock.setTimer(50, () => {
      b = settle(clock, p.execute(op("B"), on(clock)));
    });
    await clock.runAll();
    return { a: await a, b: await (b as Promise<Settled<string>>), started, pool, clock };
  };

  it("bulkhead outside chaos: injected latency holds the place", async () => {
    const { a, b, started, pool, clock } = await scenario("bulkhead outside");
    expect(a).toMatchObject({ ok: true, value: "A", time: 200 });
    expect(errorOf(b)).toBeInstanceOf(BulkheadRejectedError);
    expect(b.time).toBe(50);
    expect(started).toEqual([["A", 100]]);
    expect([pool.running, clock.pending]).toEqual([0, 0]);
  });

  it("chaos outside bulkhead: the latency is waited without a place; another call takes it meanwhile", async () => {
    const { a, b, started, pool, clock } = await scenario("chaos outside");
    expect(b).toMatchObject({ ok: true, value: "B", time: 150 });
    expect(errorOf(a)).toBeInstanceOf(BulkheadRejectedError);
    expect(a.time).toBe(100);
    expect(started).toEqual([["B", 50]]);
    expect([pool.running, clock.pending]).toEqual([0, 0]);
  });
});

describe("chaos × fallback", () => {
  it("fallback outside chaos: answers for an injected fault", async () => {
    const clock = new VirtualClock();
    const heard: unknown[] = [];
    const p = pipeline(
      steps.fallback("fallback", { onFallback: (e) => heard.push(e.error) }),
      steps.chaos({ fault: { rate: 1, error: injected } }),
    );
    let calls = 0;
    await expect(
      p.execute(async () => {
        calls += 1;
        return "real";
      }, on(clock)),
    ).resolves.toBe("fallback");
    expect(calls).toBe(0);
    expect((heard as Error[]).map((e) => e.message)).toEqual(["injected"]);
  });

  it("chaos outside fallback: a fault injected outside is not the fallback's to answer", async () => {
    const clock = new VirtualClock();
    const heard: unknown[] = [];
    const p = pipeline(
      steps.chaos({ fault: { rate: 1, error: injected } }),
      steps.fallback("fallback", { onFallback: (e) => heard.push(e.error) }),
    );
    await expect(p.execute(async () => "real", on(clock))).rejects.toThrow("injected");
    expect(heard).toEqual([]);
    // And a result injected outside replaces whatever the fallback would answer.
    const q = pipeline(
      steps.chaos<string>({ result: { rate: 1, value: "chaos" } }),
      steps.fallback("fallback"),
    );
    await expect(q.execute(() => Promise.reject(new Error("down")), on(clock))).resolves.toBe("chaos");
  });
});

describe("chaos × user step", () => {
  it("user step outside chaos: runs first, and sees the injected fault and latency as what ran inside", async () => {
    const clock = new VirtualClock();
    const spy = spyStep(clock);
    const p = pipeline(spy.step, steps.chaos({ fault: { rate: 1, error: injected } }));
    await expect(p.execute(async () => "real", on(clock))).rejects.toThrow("injected");
    expect(spy.seen).toHaveLength(1);
    expect((nth(spy.outcomes, 0).outcome as Error).message).toBe("injected");

    const slow = spyStep(clock);
    const q = pipeline(slow.step, steps.chaos({ latency: { rate: 1, ms: 100 } }));
    const opAt: number[] = [];
    const s = await run(
      clock,
      q.execute(async () => {
        opAt.push(clock.now());
        return "late";
      }, on(clock)),
    );
    expect(s).toMatchObject({ ok: true, value: "late", pending: 0 });
    const start = slow.seen[0]?.time as number;
    expect(opAt).toEqual([start + 100]);
    expect(slow.outcomes).toEqual([{ ok: true, outcome: "late", time: start + 100 }]);
  });

  it("chaos outside user step: an injected fault means the step never runs; latency delays it", async () => {
    const clock = new VirtualClock();
    const spy = spyStep(clock);
    const p = pipeline(steps.chaos({ fault: { rate: 1, error: injected } }), spy.step);
    await expect(p.execute(async () => "real", on(clock))).rejects.toThrow("injected");
    expect(spy.seen).toEqual([]);

    const slow = spyStep(clock);
    const q = pipeline(steps.chaos({ latency: { rate: 1, ms: 100 } }), slow.step);
    const s = await run(
      clock,
      q.execute(async () => "late", on(clock)),
    );
    expect(s).toEqual({ ok: true, value: "late", time: 100, pending: 0 });
    expect(slow.seen.map((c) => c.time)).toEqual([100]);
  });
});

describe("bulkhead × fallback", () => {
  it("fallback outside bulkhead: a refused call gets the fallback", async () => {
    const clock = new VirtualClock();
    const p = pipeline(steps.fallback("busy", { when: BulkheadRejectedError }), steps.bulkhead({ limit: 1 }));
    const a = settle(
      clock,
      p.execute((ctx) => wait(ctx, 100).then(() => "A"), on(clock)),
    );
    await expect(p.execute(async () => "B", on(clock))).resolves.toBe("busy");
    await clock.runAll();
    expect(await a).toEqual({ ok: true, value: "A", time: 100, pending: 0 });
  });

  it("bulkhead outside fallback: the refusal happens outside the fallback, which never sees it", async () => {
    const clock = new VirtualClock();
    const heard: unknown[] = [];
    const pool = bulkhead({ limit: 1 });
    const p = pipeline(
      steps.bulkhead(pool),
      steps.fallback("busy", { onFallback: (e) => heard.push(e.error) }),
    );
    const a = settle(
      clock,
      p.execute((ctx) => wait(ctx, 100).then(() => Promise.reject(new Error("A failed"))), on(clock)),
    );
    await expect(p.execute(async () => "B", on(clock))).rejects.toBeInstanceOf(BulkheadRejectedError);
    await clock.runAll();
    // A's own failure is answered inside its place.
    expect(await a).toEqual({ ok: true, value: "busy", time: 100, pending: 0 });
    expect((heard as Error[]).map((e) => e.message)).toEqual(["A failed"]);
    expect(pool.running).toBe(0);
  });
});

describe("bulkhead × user step", () => {
  const op = (name: string) => (ctx: ExecutionContext) => wait(ctx, 100).then(() => name);

  it("user step outside bulkhead: runs at once for every call, the queued and the refused too", async () => {
    const clock = new VirtualClock();
    const spy = spyStep(clock);
    const p = pipeline(spy.step, steps.bulkhead({ limit: 1, queue: 1 }));
    const a = settle(clock, p.execute(op("A"), on(clock)));
    const b = settle(clock, p.execute(op("B"), on(clock)));
    const c = settle(clock, p.execute(op("C"), on(clock)));
    await clock.runAll();
    expect((await a).ok && (await b).ok).toBe(true);
    expect(errorOf(await c)).toBeInstanceOf(BulkheadRejectedError);
    expect(spy.seen.map((s) => s.time)).toEqual([0, 0, 0]);
    expect(spy.outcomes.map((o) => [o.ok, o.time])).toEqual([
      [false, 0],
      [true, 100],
      [true, 200],
    ]);
  });

  it("bulkhead outside user step: the step runs only once a place is granted", async () => {
    const clock = new VirtualClock();
    const spy = spyStep(clock);
    const p = pipeline(steps.bulkhead({ limit: 1, queue: 1 }), spy.step);
    const a = settle(clock, p.execute(op("A"), on(clock)));
    const b = settle(clock, p.execute(op("B"), on(clock)));
    const c = settle(clock, p.execute(op("C"), on(clock)));
    await clock.runAll();
    expect(await a).toMatchObject({ ok: true, value: "A", time: 100 });
    expect(await b).toMatchObject({ ok: true, value: "B", time: 200 });
    expect(errorOf(await c)).toBeInstanceOf(BulkheadRejectedError);
    expect(spy.seen.map((s) => s.time)).toEqual([0, 100]);
    expect(clock.pending).toBe(0);
  });
});

describe("fallback × user step", () => {
  it("user step outside fallback: sees the fallback's value, never the error", async () => {
    const clock = new VirtualClock();
    const spy = spyStep(clock);
    const p = pipeline(spy.step, steps.fallback("fallback"));
    await expect(p.execute(() => Promise.reject(new Error("down")), on(clock))).resolves.toBe("fallback");
    expect(spy.outcomes.map((o) => [o.ok, o.outcome])).toEqual([[true, "fallback"]]);
  });

  it("fallback outside user step: the step sees the error; the caller gets the fallback", async () => {
    const clock = new VirtualClock();
    const spy = spyStep(clock);
    const p = pipeline(steps.fallback("fallback"), spy.step);
    await expect(p.execute(() => Promise.reject(new Error("down")), on(clock))).resolves.toBe("fallback");
    expect(spy.outcomes.map((o) => [o.ok, (o.outcome as Error).message])).toEqual([[false, "down"]]);
  });
});

// ---------------------------------------------------------------------------------------------------------
// A pipeline nested as a step
// ---------------------------------------------------------------------------------------------------------

describe("a pipeline nested as a step", () => {
  it("inside an outer timeout: the outer limit cuts the nested retry loop of per-attempt timeouts", async () => {
    const clock = new VirtualClock();
    const inner = pipeline(steps.retry({ maxRetries: 5, ...c100 }), steps.timeout(50));
    const p = pipeline(steps.timeout(250), inner);
    const log: Seen[] = [];
    const s = await run(
      clock,
      p.execute((ctx) => {
        record(clock, log, ctx);
        return hang(ctx);
      }, on(clock)),
    );
    const error = errorOf(s);
    expect(error).toBeInstanceOf(TimeoutError);
    expect((error as TimeoutError).timeout).toBe(250);
    // Attempts 0–50 and 150–200; the third would start at 300.
    expect(s).toMatchObject({ time: 250, pending: 0 });
    expect(log.map((c) => [c.attempt, c.time, c.timeout])).toEqual([
      [1, 0, 50],
      [2, 150, 50],
    ]);
  });

  it("inside an outer retry: its steps see the outer attempt numbers, and its breaker counts attempts", async () => {
    const clock = new VirtualClock();
    const breaker = breakerOn(clock, 2);
    const spy = spyStep(clock);
    const inner = pipeline(spy.step, steps.breaker(breaker));
    const p = pipeline(steps.retry({ maxRetries: 5, ...c100 }), inner);
    const s = await run(
      clock,
      p.execute(() => Promise.reject(new Error("down")), on(clock)),
    );
    const error = errorOf(s);
    expect(error).toBeInstanceOf(BrokenCircuitError);
    expect(retryReport(error)?.reason).toBe("breaker");
    expect(spy.seen.map((c) => [c.attempt, c.time])).toEqual([
      [1, 0],
      [2, 100],
      [3, 200],
    ]);
    expect(s).toMatchObject({ time: 200, pending: 0 });
  });

  it("a retry nested in a retry: inner attempts count from 1 again for each outer attempt", async () => {
    const clock = new VirtualClock();
    const inner = pipeline(steps.retry({ maxRetries: 1, ...c100 }));
    const p = pipeline(
      steps.retry({ maxRetries: 1, backoff: backoff.constant({ base: 1000 }), jitter: jitter.none() }),
      inner,
    );
    const log: Seen[] = [];
    const errors: Error[] = [];
    const s = await run(
      clock,
      p.execute((ctx) => {
        record(clock, log, ctx);
        const e = new Error(`fail ${log.length}`);
        errors.push(e);
        return Promise.reject(e);
      }, on(clock)),
    );
    expect(log.map((c) => [c.attempt, c.elapsed, c.time])).toEqual([
      [1, 0, 0],
      [2, 100, 100],
      [1, 0, 1100],
      [2, 100, 1200],
    ]);
    const error = errorOf(s);
    expect(error).toBe(errors[3]);
    // The outer step files its word last.
    expect(retryReport(error)).toEqual({ reason: "retries", attempts: 2, elapsed: 1200, idle: 1000 });
  });

  it("a PermanentError from inside a nested pipeline stops the outer retry; the caller gets its cause", async () => {
    const clock = new VirtualClock();
    const inner = pipeline(spyStep(clock).step, steps.timeout(1000));
    const p = pipeline(steps.retry({ maxRetries: 5, ...c100 }), inner);
    const cause = new Error("404");
    let calls = 0;
    const s = await run(
      clock,
      p.execute(() => {
        calls += 1;
        return Promise.reject(new PermanentError(cause));
      }, on(clock)),
    );
    expect(errorOf(s)).toBe(cause);
    expect(calls).toBe(1);
    expect(s).toMatchObject({ time: 0, pending: 0 });
  });

  it("the caller's abort reaches inside a nested pipeline and leaves nothing behind", async () => {
    const clock = new VirtualClock();
    const breaker = breakerOn(clock, 1);
    const inner = pipeline(
      steps.retry({ maxRetries: 5, ...c100 }),
      steps.breaker(breaker),
      steps.timeout(500),
    );
    const p = pipeline(steps.timeout(1000), inner);
    const controller = new AbortController();
    const reason = new Error("stop");
    clock.setTimer(120, () => controller.abort(reason));
    const log: Seen[] = [];
    const s = await run(
      clock,
      p.execute(
        (ctx) => {
          record(clock, log, ctx);
          return hang(ctx);
        },
        on(clock, controller.signal),
      ),
    );
    expect(errorOf(s)).toBe(reason);
    expect(s).toMatchObject({ time: 120, pending: 0 });
    expect(log[0]?.signal.reason).toBe(reason);
    expect(breaker.state).toBe("closed");
    expect(abortListeners(controller.signal)).toBe(0);
  });
});

// ---------------------------------------------------------------------------------------------------------
// The whole matrix: every step alone and every ordered pair, on a success and on the caller's abort
// ---------------------------------------------------------------------------------------------------------

interface Kit {
  step: Step;
  /** Extra virtual time the step adds to a call that succeeds. */
  adds: number;
  /** Checks after the caller aborted a call. */
  afterAbort(): void;
  /** Checks after a call succeeded. */
  afterSuccess(): void;
}

type Kind =
  | "retry"
  | "timeout"
  | "breaker"
  | "hedge"
  | "chaos"
  | "bulkhead"
  | "fallback"
  | "user step"
  | "nested pipeline";

function kit(kind: Kind, clock: VirtualClock): Kit {
  const none = () => {};
  switch (kind) {
    case "retry": {
      const giveUps: GiveUpEvent[] = [];
      return {
        step: steps.retry({ maxRetries: 2, ...c100, onGiveUp: (e) => giveUps.push(e) }),
        adds: 0,
        afterAbort: () => expect(giveUps.map((e) => e.reason)).toEqual(["aborted"]),
        afterSuccess: () => expect(giveUps).toEqual([]),
      };
    }
    case "timeout":
      return { step: steps.timeout(1000), adds: 0, afterAbort: none, afterSuccess: none };
    case "breaker": {
      const breaker: CircuitBreaker = breakerOn(clock, 1);
      const closed = () => {
        expect(breaker.state).toBe("closed");
        expect(breaker.snapshot().consecutiveFailures).toBe(0);
      };
      return { step: steps.breaker(breaker), adds: 0, afterAbort: closed, afterSuccess: closed };
    }
    case "hedge":
      return { step: steps.hedge({ delay: 100 }), adds: 0, afterAbort: none, afterSuccess: none };
    case "chaos": {
      const chaosStep = steps.chaos({ latency: { rate: 1, ms: 10 } });
      return {
        step: chaosStep,
        adds: 10,
        afterAbort: none,
        afterSuccess: () => expect(chaosStep.metrics().latencies).toBeGreaterThanOrEqual(1),
      };
    }
    case "bulkhead": {
      const pool = bulkhead({ limit: 1 });
      const empty = () => expect([pool.running, pool.queued]).toEqual([0, 0]);
      return { step: steps.bulkhead(pool), adds: 0, afterAbort: empty, afterSuccess: empty };
    }
    case "fallback": {
      const heard: unknown[] = [];
      const never = () => expect(heard).toEqual([]);
      return {
        step: steps.fallback("fallback", { onFallback: (e) => heard.push(e.error) }),
        adds: 0,
        afterAbort: never,
        afterSuccess: never,
      };
    }
    case "user step": {
      const spy = spyStep(clock);
      return {
        step: spy.step,
        adds: 0,
        afterAbort: () => expect(spy.outcomes.every((o) => !o.ok)).toBe(true),
        afterSuccess: () => expect(spy.outcomes.every((o) => o.ok && o.outcome === "ok")).toBe(true),
      };
    }
    case "nested pipeline": {
      const nested: Pipeline = pipeline(steps.timeout(2000), steps.retry({ maxRetries: 1, ...c100 }));
      return { step: nested, adds: 0, afterAbort: none, afterSuccess: none };
    }
  }
}

const KINDS: readonly Kind[] = [
  "retry",
  "timeout",
  "breaker",
  "hedge",
  "chaos",
  "bulkhead",
  "fallback",
  "user step",
  "nested pipeline",
];

const combos: Kind[][] = [
  ...KINDS.map((k) => [k]),
  ...KINDS.flatMap((outer) => KINDS.filter((inner) => inner !== outer).map((inner) => [outer, inner])),
];

describe("every step alone and every ordered pair", () => {
  for (const combo of combos) {
    const name = combo.join(" outside ");

    it(`${name}: a call that succeeds answers with the value at the exact time, leaving no timer`, async () => {
      const clock = new VirtualClock();
      const kits = combo.map((k) => kit(k, clock));
      const p = pipeline(...kits.map((k) => k.step));
      let calls = 0;
      const s = await run(
        clock,
        p.execute(async (ctx) => {
          calls += 1;
          await wait(ctx, 30);
          return "ok";
        }, on(clock)),
      );
      const time = 30 + kits.reduce((sum, k) => sum + k.adds, 0);
      expect(s).toEqual({ ok: true, value: "ok", time, pending: 0 });
      expect(calls).toBe(1);
      for (const k of kits) k.afterSuccess();
    });

    it(`${name}: the caller's abort rejects at once with its reason, counts for nothing and leaves nothing`, async () => {
      const clock = new VirtualClock();
      const kits = combo.map((k) => kit(k, clock));
      const p = pipeline(...kits.map((k) => k.step));
      const controller = new AbortController();
      const reason = new Error("caller gave up");
      clock.setTimer(50, () => controller.abort(reason));
      const log: Seen[] = [];
      const s = await run(
        clock,
        p.execute(
          (ctx) => {
            record(clock, log, ctx);
            return hang(ctx);
          },
          on(clock, controller.signal),
        ),
      );
      expect(errorOf(s)).toBe(reason);
      expect(s).toMatchObject({ time: 50, pending: 0 });
      expect(log).toHaveLength(1);
      expect(log[0]?.signal.reason).toBe(reason);
      expect(abortListeners(controller.signal)).toBe(0);
      for (const k of kits) k.afterAbort();
    });
  }
});
