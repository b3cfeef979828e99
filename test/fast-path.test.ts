import fc from "fast-check";
import {
  type AttemptContext,
  backoff,
  jitter,
  type Pipeline,
  pipeline,
  type RetryOptions,
  type RetryStep,
  retry,
  retryPipeline,
  retryReport,
  type Step,
  steps,
  wrap,
} from "robustly";
import { seededRandom, VirtualClock } from "robustly/testing";
import { afterEach, describe, expect, it, vi } from "vitest";
import {
  COARSE_READS,
  callStart,
  coarseRefreshTimer,
  deadlinesOf,
  systemClock,
  unrefClock,
} from "../src/core/clock.js";
import { abortListeners, deferred } from "./support/drive.js";

// `retry(op, options)` makes its first attempt without building the retry loop, and builds it only when
// that attempt fails. These tests check that the call behaves exactly as the retry step run in a pipeline
// built explicitly, and that a call whose first attempt succeeds reads no clock it does not need.

/** What one attempt does: answer or fail, at once or in a promise; bail with an error, then answer. */
type Outcome =
  | { kind: "value" | "resolve"; value: number }
  | { kind: "throw" | "reject"; error: number }
  | { kind: "bail"; error: number };

const outcome: fc.Arbitrary<Outcome> = fc.oneof(
  fc.record({
    kind: fc.constantFrom("value" as const, "resolve" as const),
    value: fc.integer({ min: -2, max: 9 }),
  }),
  fc.record({
    kind: fc.constantFrom("throw" as const, "reject" as const),
    error: fc.integer({ min: 0, max: 9 }),
  }),
  fc.record({ kind: fc.constant("bail" as const), error: fc.integer({ min: 0, max: 9 }) }),
);

/** An error that tells which attempt threw it, compared by its message. */
const failure = (code: number, attempt: number) => new Error(`e${code}@${attempt}`);

/** What a call shows of itself: the contexts its attempts saw, its callbacks and events, and how it ended. */
interface Record {
  contexts: unknown[];
  heard: unknown[];
}

/** The operation: attempt i does `plan[i]` (the last entry again past the end). */
function operation(plan: readonly Outcome[], record: Record, withElapsed: boolean) {
  return (ctx: AttemptContext): number | Promise<number> => {
    const { attempt, retries, retriesLeft, timeout, hedge } = ctx;
    record.contexts.push({
      attempt,
      retries,
      retriesLeft,
      timeout,
      hedge,
      ...(withElapsed ? { elapsed: ctx.elapsed } : {}),
    });
    const step = plan[Math.min(attempt - 1, plan.length - 1)] as Outcome;
    switch (step.kind) {
      case "value":
        return step.value;
      case "resolve":
        return Promise.resolve(step.value);
      case "throw":
        throw failure(step.error, attempt);
      case "reject":
        return Promise.reject(failure(step.error, attempt));
      case "bail":
        ctx.bail(failure(step.error, attempt));
        return Promise.resolve(0);
    }
  };
}

/** The error or value a call ended with, and the report filed beside an error. */
async function ending(promise: Promise<number>): Promise<unknown> {
  try {
    return { value: await promise };
  } catch (error) {
    const report = retryReport(error);
    return { error: (error as Error).message, report: report === undefined ? undefined : { ...report } };
  }
}

/** The callbacks, each recording what it heard. */
function callbacks(record: Record, withElapsed: boolean): RetryOptions<number> {
  const keep = (name: string) => (event: object) => {
    const copy = { ...(event as { error?: unknown; elapsed?: number }) };
    if (copy.error instanceof Error) copy.error = copy.error.message;
    if (!withElapsed) delete copy.elapsed;
    record.heard.push([name, copy]);
  };
  return {
    onAttempt: keep("onAttempt"),
    onRetry: keep("onRetry"),
    onGiveUp: keep("onGiveUp"),
    onError: (error, retries) => record.heard.push(["onError", (error as Error).message, retries]),
    onSuccess: (value, stats) =>
      record.heard.push(["onSuccess", value, withElapsed ? stats : stats.attempts]),
  };
}

/** Records every event of the pipeline's retry step. */
function listen(p: Pipeline, record: Record): void {
  const step = p.steps[0] as RetryStep<number>;
  for (const name of ["attempt", "retry", "giveUp", "success", "error"] as const) {
    step.on(name, (payload: object) => {
      const copy = { ...(payload as { error?: unknown; outcome?: unknown }) };
      if (copy.error instanceof Error) copy.error = copy.error.message;
      if (copy.outcome instanceof Error) copy.outcome = copy.outcome.message;
      record.heard.push([`event ${name}`, copy]);
    });
  }
}

/**
 * A default budget belongs to a target: `retry`'s calls share the process's, each pipeline has its own. The
 * runs compared here make hundreds of failing calls on one frozen or fake clock, so they run without it
 * (test/default-budget.test.ts checks the budget).
 */
const COMPARED_WITHOUT_BUDGET = { budget: false } as const;

const settings = fc.record({
  plan: fc.array(outcome, { minLength: 1, maxLength: 5 }),
  maxRetries: fc.integer({ min: 0, max: 3 }),
  retryOnResult: fc.boolean(),
  withCallbacks: fc.boolean(),
  seed: fc.integer({ min: 0, max: 1000 }),
});

afterEach(() => {
  vi.restoreAllMocks();
});

describe("the first attempt made without the retry loop", () => {
  it("gives the same values, errors, attempts, callbacks and events as the retry step in a pipeline", async () => {
    await fc.assert(
      fc.asyncProperty(settings, async ({ plan, maxRetries, retryOnResult, withCallbacks, seed }) => {
        const run = async (how: "retry" | "retryPipeline" | "pipeline") => {
          const record: Record = { contexts: [], heard: [] };
          const clock = new VirtualClock();
          const options: RetryOptions<number> = {
            maxRetries,
            ...(retryOnResult ? { retryOnResult: (value: number) => value < 0 } : {}),
            ...(withCallbacks ? callbacks(record, true) : {}),
          };
          const op = operation(plan, record, true);
          const random = seededRandom(seed);
          let call: Promise<number>;
          if (how === "retry") {
            call = retry(op, { ...options, clock, random });
          } else {
            const p = how === "retryPipeline" ? retryPipeline(options) : pipeline(steps.retry(options));
            if (withCallbacks) listen(p, record);
            call = p.execute(op, { clock, random });
          }
          const ended = ending(call);
          await clock.runAll();
          return { ended: await ended, ...record };
        };
        const explicit = await run("pipeline");
        expect(await run("retry")).toEqual(
          withCallbacks ? { ...explicit, heard: explicit.heard.filter(notEvent) } : explicit,
        );
        expect(await run("retryPipeline")).toEqual(explicit);
      }),
      { numRuns: 300 },
    );
  });

  it("on the system clock, gives the same as the retry step in a pipeline", async () => {
    // A frozen clock, so that elapsed times match too.
    vi.spyOn(performance, "now").mockReturnValue(1000);
    await fc.assert(
      fc.asyncProperty(settings, fc.boolean(), async ({ plan, maxRetries, retryOnResult }, timed) => {
        const run = async (how: "retry" | "pipeline" | "full pipeline") => {
          const record: Record = { contexts: [], heard: [] };
          const options: RetryOptions<number> = {
            ...COMPARED_WITHOUT_BUDGET,
            maxRetries,
            backoff: backoff.none(),
            onError: (error, retries) => record.heard.push([(error as Error).message, retries]),
            ...(retryOnResult ? { retryOnResult: (value: number) => value < 0 } : {}),
          };
          const op = operation(plan, record, true);
          // With a timeout, the first attempt runs against the clock's shared deadlines.
          const limit = timed ? [steps.timeout(60_000)] : [];
          const p = pipeline(steps.retry(options), ...limit);
          // Executed without options, a pipeline of a retry step (and a timeout) makes its first attempt
          // as `retry` does; with options (even none), through its steps: the reference.
          const call =
            how === "retry"
              ? retry(op, timed ? { ...options, timeout: 60_000 } : options)
              : how === "pipeline"
                ? p.execute(op)
                : p.execute(op, {});
          return { ended: await ending(call), ...record };
        };
        const reference = await run("full pipeline");
        expect(await run("retry")).toEqual(reference);
        expect(await run("pipeline")).toEqual(reference);
      }),
      { numRuns: 100 },
    );
  });
});

function notEvent(entry: unknown): boolean {
  return !(Array.isArray(entry) && String(entry[0]).startsWith("event "));
}

describe("the clock", () => {
  it("is read at the start when a callback reports elapsed time", async () => {
    let t = 0;
    vi.spyOn(performance, "now").mockImplementation(() => t);
    const stats: unknown[] = [];
    await retry(
      async () => {
        t += 40;
        return 1;
      },
      { onSuccess: (_value, s) => stats.push(s) },
    );
    expect(stats).toEqual([{ attempts: 1, elapsed: 40, idle: 0 }]);
  });

  it("counts the first attempt's own time in the call's elapsed time, whatever the options", async () => {
    let t = 0;
    vi.spyOn(performance, "now").mockImplementation(() => t);
    const slowFailure = async () => {
      t += 500;
      throw new Error("down");
    };
    const signal = new AbortController().signal;
    for (const extra of [
      {},
      { onGiveUp: () => {} },
      { maxElapsed: 10_000 },
      { timeout: 10_000 },
      { signal },
    ]) {
      const error = await retry(slowFailure, { maxRetries: 0, ...extra }).catch((thrown: unknown) => thrown);
      expect(retryReport(error)).toEqual({ reason: "retries", attempts: 1, elapsed: 500, idle: 0 });
    }
  });

  it("is read at the start by the pipeline retryPipeline builds, which may hold steps of the caller's inside", async () => {
    let t = 0;
    vi.spyOn(performance, "now").mockImplementation(() => t);
    const slowFailure = async () => {
      t += 500;
      throw new Error("down");
    };
    const p = pipeline(retryPipeline({ maxRetries: 0 }), steps.timeout(10_000));
    const error = await p.execute(slowFailure).catch((thrown: unknown) => thrown);
    expect(retryReport(error)?.elapsed).toBe(500);
  });
});

describe("the shared reading of the real clock a call without a time limit starts from", () => {
  const realWait = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

  it("is never after the call and is taken again after COARSE_READS calls", () => {
    for (const clock of [systemClock, unrefClock]) {
      const readings: number[] = [];
      for (let i = 0; i < 10 * COARSE_READS; i++) {
        const before = performance.now();
        const start = callStart(clock);
        readings.push(start);
        expect(start).toBeLessThanOrEqual(performance.now());
        // A synchronous loop lets no timer fire: its calls share a reading taken at most COARSE_READS calls
        // before (generous bound on how long those calls took).
        expect(before - start).toBeLessThan(1000);
      }
      for (let i = 1; i < readings.length; i++) {
        expect(readings[i] as number).toBeGreaterThanOrEqual(readings[i - 1] as number);
      }
      expect(new Set(readings).size).toBeGreaterThanOrEqual(10);
      expect(new Set(readings).size).toBeLessThanOrEqual(11);
    }
  });

  it("reads any other clock, and a replaced performance.now, at every call", async () => {
    const clock = new VirtualClock();
    await clock.advance(123);
    expect(callStart(clock)).toBe(123);
    let t = 5;
    vi.spyOn(performance, "now").mockImplementation(() => t++);
    expect([callStart(systemClock), callStart(systemClock), callStart(systemClock)]).toEqual([5, 6, 7]);
  });

  it("is not mixed with the readings of fake timers installed after it was taken", async () => {
    // Shared readings of the real clock are in use...
    for (let i = 0; i < 3; i++) await retry(async () => 1);
    vi.useFakeTimers({
      toFake: ["setTimeout", "clearTimeout", "setInterval", "clearInterval", "performance", "Date"],
    });
    try {
      // ...when a test's fake timers take over the clock: a call now starts from a reading of theirs, made
      // by `retry` or by a pipeline's retry step with a step of the caller's inside.
      const slowFailure = async () => {
        vi.advanceTimersByTime(500);
        throw new Error("down");
      };
      const passOn: Step = { execute: (next, context) => next(context) };
      for (const call of [
        () => retry(slowFailure, { maxRetries: 0 }),
        () => pipeline(steps.retry({ maxRetries: 0 }), passOn).execute(slowFailure),
      ]) {
        const error = await call().catch((thrown: unknown) => thrown);
        expect(retryReport(error)?.elapsed).toBe(500);
      }
    } finally {
      vi.useRealTimers();
    }
  });

  it("of a timed call, is not compared with a fake performance installed alone while the call ran", async () => {
    // Deadlines compare `setTimeout` at every call and the global `performance` only now and then: a failure
    // compares both, so a start read from the real clock is never subtracted from a fake one.
    for (let i = 0; i < 3; i++) await retry(async () => 1, { timeout: 60_000 });
    const gate = deferred<void>();
    const pending = retry(
      async () => {
        await gate.promise;
        throw new Error("down");
      },
      { maxRetries: 0, timeout: 60_000 },
    ).catch((thrown: unknown) => thrown);
    vi.useFakeTimers({ toFake: ["performance"] });
    try {
      gate.resolve();
      expect(retryReport(await pending)?.elapsed).toBe(0);
    } finally {
      vi.useRealTimers();
    }
  });

  it("is not compared with the readings of fake timers installed while the call ran", async () => {
    const passOn: Step = { execute: (next, context) => next(context) };
    for (const call of [
      (op: () => Promise<never>) => retry(op, { maxRetries: 0 }),
      (op: () => Promise<never>) => pipeline(steps.retry({ maxRetries: 0 }), passOn).execute(op),
    ]) {
      // Shared readings of the real clock are in use when the call starts...
      for (let i = 0; i < 3; i++) await retry(async () => 1);
      const gate = deferred<void>();
      const pending = call(async () => {
        await gate.promise;
        vi.advanceTimersByTime(500);
        throw new Error("down");
      }).catch((thrown: unknown) => thrown);
      // ...and fake timers, on a clock of their own, take over before its attempt fails.
      vi.useFakeTimers({
        toFake: ["setTimeout", "clearTimeout", "setInterval", "clearInterval", "performance", "Date"],
      });
      try {
        gate.resolve();
        const elapsed = retryReport(await pending)?.elapsed;
        // The time before they came is unknown on their clock: counted from the failure, never a difference
        // of two clocks.
        expect(elapsed).toBe(0);
      } finally {
        vi.useRealTimers();
      }
    }
  });

  it("counts a failed first attempt's own time in the call's elapsed time", async () => {
    const error = await retry(
      async () => {
        await realWait(30);
        throw new Error("down");
      },
      { maxRetries: 0 },
    ).catch((thrown: unknown) => thrown);
    const elapsed = retryReport(error)?.elapsed as number;
    // A timer may fire up to a millisecond early by performance.now(); the upper bound is generous.
    expect(elapsed).toBeGreaterThanOrEqual(29);
    expect(elapsed).toBeLessThan(2000);
  });

  it("is refreshed by a timer that does not hold the process and stops once no call reads it", async () => {
    // Let a refresh timer left by earlier calls find itself unused and stop.
    await realWait(20);
    expect(coarseRefreshTimer()).toBeUndefined();
    expect(await retry(async () => 1, { maxRetries: 1 })).toBe(1);
    const timer = coarseRefreshTimer();
    expect(timer?.hasRef?.()).toBe(false);
    await realWait(20);
    expect(coarseRefreshTimer()).toBeUndefined();
  });
});

describe("a call on the real clock while fake timers take over", () => {
  const fakeAll = () =>
    vi.useFakeTimers({
      toFake: ["setTimeout", "clearTimeout", "setInterval", "clearInterval", "performance", "Date"],
    });

  it("with a per-attempt timeout, does not subtract the real start from a fake reading in its report", async () => {
    for (const call of [
      (op: () => Promise<never>) => retry(op, { maxRetries: 0, timeout: 10_000 }),
      (op: () => Promise<never>) =>
        pipeline(steps.retry({ maxRetries: 0 }), steps.timeout(10_000)).execute(op),
    ]) {
      const gate = deferred<void>();
      const pending = call(async () => {
        await gate.promise;
        throw new Error("down");
      }).catch((thrown: unknown) => thrown);
      fakeAll();
      try {
        gate.resolve();
        // Counted from the failure, as a call without a timeout counts it: never a difference of two clocks.
        expect(retryReport(await pending)?.elapsed).toBe(0);
      } finally {
        vi.useRealTimers();
      }
    }
  });

  it("tells a success listener an elapsed time on one clock", async () => {
    const p = pipeline(steps.retry({ maxRetries: 0 }));
    const elapsed: number[] = [];
    (p.steps[0] as RetryStep<number>).on("success", (event) => elapsed.push(event.elapsed));
    // Shared readings of the real clock are in use when the call starts...
    for (let i = 0; i < 3; i++) await retry(async () => 1);
    const gate = deferred<void>();
    const pending = p.execute(async () => {
      await gate.promise;
      return 1;
    }, {});
    // ...and fake timers take over before its attempt answers.
    fakeAll();
    try {
      gate.resolve();
      await pending;
    } finally {
      vi.useRealTimers();
    }
    expect(elapsed).toEqual([0]);
  });
});

describe("a listener that comes while the first attempt runs", () => {
  it("hears its success, as it does when the pipeline runs the attempt", async () => {
    for (const [timed, options] of [
      [false, undefined],
      [false, {}],
      [true, undefined],
      [true, {}],
    ] as const) {
      const p = pipeline(steps.retry({ maxRetries: 0 }), ...(timed ? [steps.timeout(10_000)] : []));
      const heard: unknown[] = [];
      const value = await p.execute(async () => {
        (p.steps[0] as RetryStep<number>).on("success", ({ value, attempt }) =>
          heard.push({ value, attempt }),
        );
        return 7;
      }, options);
      expect({ timed, options, value, heard }).toEqual({
        timed,
        options,
        value: 7,
        heard: [{ value: 7, attempt: 1 }],
      });
    }
  });
});

describe("an attempt's context passed on to a pipeline of the operation's own", () => {
  type Run = (op: (ctx: AttemptContext) => Promise<unknown>) => Promise<unknown>;
  const ways = (timeout: number): [string, Run][] => [
    ["retry", (op) => retry(op, { maxRetries: 1, backoff: backoff.none(), timeout })],
    [
      "pipeline",
      (op) =>
        pipeline(steps.retry({ maxRetries: 1, backoff: backoff.none() }), steps.timeout(timeout)).execute(op),
    ],
    [
      "full pipeline",
      (op) =>
        pipeline(steps.retry({ maxRetries: 1, backoff: backoff.none() }), steps.timeout(timeout)).execute(
          op,
          {},
        ),
    ],
  ];

  it("runs it inside the attempt: its fields, its bail and its signal are the attempt's", async () => {
    const inner = pipeline(steps.timeout(60_000));
    const seen: { [how: string]: unknown } = {};
    for (const [how, run] of ways(20)) {
      const fields: unknown[] = [];
      const value = await run((ctx) =>
        inner.execute(async (innerCtx) => {
          const { attempt, retries, retriesLeft } = innerCtx;
          fields.push({ attempt, retries, retriesLeft });
          if (attempt === 1) {
            // The attempt's limit (20 ms, not the inner 60 s) aborts the signal inside.
            await new Promise((resolve) => innerCtx.signal.addEventListener("abort", resolve));
            return "late";
          }
          innerCtx.bail(new Error(`bailed in ${how}`));
          return "ignored";
        }, ctx),
      ).catch((error: unknown) => (error as Error).message);
      seen[how] = { value, fields };
    }
    const expected = (how: string) => ({
      value: `bailed in ${how}`,
      fields: [
        { attempt: 1, retries: 0, retriesLeft: 1 },
        { attempt: 2, retries: 1, retriesLeft: 0 },
      ],
    });
    expect(seen).toEqual({
      retry: expected("retry"),
      pipeline: expected("pipeline"),
      "full pipeline": expected("full pipeline"),
    });
  });
});

describe("the refresh timer of the shared reading, when fake timers take over while it runs", () => {
  it("stops on the real timers it was set on, without asking the fake ones (which would leave it running)", async () => {
    const realWait = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
    const spin = async (ms: number) => {
      const until = Date.now() + ms;
      while (Date.now() < until) await new Promise((resolve) => setImmediate(resolve));
    };
    const warn = vi.spyOn(console, "warn").mockImplementation(() => {});
    for (let i = 0; i < 3; i++) await retry(async () => 1);
    expect(coarseRefreshTimer()).toBeDefined();
    // Fake timers that do not pass a native timer's clearing on (jest's, or vitest's when told so).
    vi.useFakeTimers({
      toFake: ["setTimeout", "clearTimeout", "setInterval", "clearInterval", "performance"],
      shouldClearNativeTimers: false,
    });
    try {
      await spin(10);
    } finally {
      vi.useRealTimers();
    }
    expect(warn).not.toHaveBeenCalled();
    // A refresh timer left running would clear (nothing) at every tick from now on.
    const clear = vi.spyOn(globalThis, "clearInterval");
    await realWait(20);
    expect(clear.mock.calls.length).toBeLessThanOrEqual(1);
  });
});

describe("the first attempt made without the pipeline, on the real clock driven by fake timers", () => {
  /** What one attempt does; `after`: ms before it answers (on the clock the fake timers drive). */
  type Move =
    | { kind: "value" | "resolve"; after: number }
    | { kind: "throw" | "reject"; after: number; error: number }
    | { kind: "hang" | "bail late" | "bail then throw" | "bail twice" | "stale bail"; after: number };
  const move: fc.Arbitrary<Move> = fc.oneof(
    fc.record({
      kind: fc.constantFrom("value" as const, "resolve" as const),
      after: fc.integer({ min: 0, max: 30 }),
    }),
    fc.record({
      kind: fc.constantFrom("throw" as const, "reject" as const),
      after: fc.integer({ min: 0, max: 30 }),
      error: fc.integer({ min: 0, max: 3 }),
    }),
    fc.record({
      kind: fc.constantFrom(
        "hang" as const,
        "bail late" as const,
        "bail then throw" as const,
        "bail twice" as const,
        "stale bail" as const,
      ),
      after: fc.integer({ min: 0, max: 30 }),
    }),
  );

  it("times out, bails, retries and reports as the retry step and timeout step in a pipeline do", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ move, readSignal: fc.boolean() }), { minLength: 1, maxLength: 4 }),
        fc.integer({ min: 0, max: 3 }),
        fc.constantFrom(5, 10, 20),
        async (plan, maxRetries, ms) => {
          vi.useFakeTimers();
          try {
            const run = async (how: "retry" | "pipeline" | "full pipeline") => {
              const heard: unknown[] = [];
              const signals: AbortSignal[] = [];
              let stale: ((error?: unknown) => void) | undefined;
              const options: RetryOptions<number> = {
                ...COMPARED_WITHOUT_BUDGET,
                maxRetries,
                backoff: backoff.constant({ base: 3 }),
                jitter: jitter.none(),
                onError: (error, retries) => heard.push(["onError", (error as Error).message, retries]),
                onRetry: ({ retries, delay, elapsed }) => heard.push(["onRetry", retries, delay, elapsed]),
                onGiveUp: ({ reason, attempts, elapsed, idle }) =>
                  heard.push(["onGiveUp", reason, attempts, elapsed, idle]),
              };
              const wait = (after: number) => new Promise((resolve) => setTimeout(resolve, after));
              const op = async (ctx: AttemptContext): Promise<number> => {
                const { attempt, retries, retriesLeft, timeout, hedge, elapsed } = ctx;
                heard.push(["attempt", { attempt, retries, retriesLeft, timeout, hedge, elapsed }]);
                const { move: step, readSignal } = plan[
                  Math.min(attempt, plan.length) - 1
                ] as (typeof plan)[0];
                if (readSignal) signals.push(ctx.signal);
                if (step.kind === "stale bail") {
                  stale?.(new Error(`stale from before ${attempt}`));
                  stale = ctx.bail;
                }
                if (step.kind === "throw" && step.after === 0) throw failure(step.error, attempt);
                await wait(step.after);
                switch (step.kind) {
                  case "value":
                  case "resolve":
                  case "stale bail":
                    return attempt * 10;
                  case "throw":
                  case "reject":
                    throw failure(step.error, attempt);
                  case "hang":
                    return new Promise<number>(() => {});
                  case "bail late":
                    ctx.bail(failure(9, attempt));
                    return 0;
                  case "bail then throw":
                    ctx.bail(failure(8, attempt));
                    throw failure(7, attempt);
                  case "bail twice":
                    ctx.bail(failure(6, attempt));
                    ctx.bail(failure(5, attempt));
                    return 0;
                }
              };
              const p = pipeline(steps.retry(options), steps.timeout(ms));
              const call =
                how === "retry"
                  ? retry(op, { ...options, timeout: ms })
                  : p.execute(op, how === "pipeline" ? undefined : {});
              const ended = ending(call);
              await vi.runAllTimersAsync();
              const result = await ended;
              return {
                result,
                heard,
                signals: signals.map((s) => [s.aborted, (s.reason as Error | undefined)?.name]),
                queued: deadlinesOf(systemClock)?.size,
              };
            };
            const reference = await run("full pipeline");
            expect(reference.queued).toBe(0);
            expect(await run("retry")).toEqual(reference);
            expect(await run("pipeline")).toEqual(reference);
          } finally {
            vi.useRealTimers();
          }
        },
      ),
      { numRuns: 150 },
    );
  });
});

describe("the first attempt made without the pipeline, with the caller's signal", () => {
  /** What one attempt does: answer or fail after `after` ms, or hang; the caller may abort meanwhile. */
  type Move = {
    kind: "value" | "throw" | "reject" | "hang" | "bail late";
    after: number;
    /** Abort the caller's signal as the attempt starts (before it answers), or this many ms into it. */
    abort: "no" | "at once" | number;
  };
  const move: fc.Arbitrary<Move> = fc.record({
    kind: fc.constantFrom(
      "value" as const,
      "throw" as const,
      "reject" as const,
      "hang" as const,
      "bail late" as const,
    ),
    after: fc.integer({ min: 0, max: 30 }),
    abort: fc.oneof(
      fc.constantFrom("no" as const, "no" as const, "at once" as const),
      fc.integer({ min: 0, max: 30 }),
    ),
  });

  it("ends, aborts, reports and cleans up as the retry step and timeout step in a pipeline do", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ move, readSignal: fc.boolean() }), { minLength: 1, maxLength: 4 }),
        fc.integer({ min: 0, max: 3 }),
        fc.constantFrom(0, 5, 20),
        async (plan, maxRetries, ms) => {
          vi.useFakeTimers();
          try {
            const run = async (how: "retry" | "wrap" | "pipeline" | "full pipeline") => {
              const heard: unknown[] = [];
              const signals: AbortSignal[] = [];
              const controller = new AbortController();
              const reason = new Error("caller left");
              const options: RetryOptions<number> = {
                ...COMPARED_WITHOUT_BUDGET,
                maxRetries,
                backoff: backoff.constant({ base: 3 }),
                jitter: jitter.none(),
                onError: (error, retries) => heard.push(["onError", (error as Error).message, retries]),
                onRetry: ({ retries, delay, elapsed }) => heard.push(["onRetry", retries, delay, elapsed]),
                onGiveUp: ({ reason, outcome, attempts, elapsed, idle }) =>
                  heard.push(["onGiveUp", reason, (outcome as Error).message, attempts, elapsed, idle]),
              };
              const wait = (after: number) => new Promise((resolve) => setTimeout(resolve, after));
              const op = async (ctx: AttemptContext): Promise<number> => {
                const { attempt, retries, retriesLeft, timeout, hedge, elapsed } = ctx;
                heard.push(["attempt", { attempt, retries, retriesLeft, timeout, hedge, elapsed }]);
                const { move: step, readSignal } = plan[
                  Math.min(attempt, plan.length) - 1
                ] as (typeof plan)[0];
                if (readSignal) signals.push(ctx.signal);
                if (step.abort === "at once") controller.abort(reason);
                else if (step.abort !== "no") setTimeout(() => controller.abort(reason), step.abort);
                if (step.kind === "throw" && step.after === 0) throw failure(1, attempt);
                await wait(step.after);
                switch (step.kind) {
                  case "value":
                    return attempt * 10;
                  case "throw":
                  case "reject":
                    throw failure(2, attempt);
                  case "hang":
                    return new Promise<number>(() => {});
                  case "bail late":
                    ctx.bail(failure(9, attempt));
                    return 0;
                }
              };
              const signal = controller.signal;
              const limit = ms > 0 ? [steps.timeout(ms)] : [];
              const timeout = ms > 0 ? { timeout: ms } : {};
              const p = pipeline(steps.retry(options), ...limit);
              const started = performance.now();
              const call =
                how === "retry"
                  ? retry(op, { ...options, ...timeout, signal })
                  : how === "wrap"
                    ? wrap(op, { ...options, ...timeout, signal })()
                    : p.execute(op, how === "pipeline" ? { signal } : { signal, clock: systemClock });
              let settledAt: number | undefined;
              const ended = ending(call.finally(() => (settledAt = performance.now() - started)));
              await vi.runAllTimersAsync();
              // An attempt that hangs with no time limit and no abort: still pending, until the caller leaves.
              const pending = settledAt === undefined;
              if (pending) controller.abort(new Error("caller gave up waiting"));
              await vi.runAllTimersAsync();
              const result = await ended;
              return {
                result,
                pending,
                settledAt,
                heard,
                signals: signals.map((s) => [s.aborted, (s.reason as Error | undefined)?.message]),
                queued: deadlinesOf(systemClock)?.size,
                listeners: abortListeners(signal),
              };
            };
            const reference = await run("full pipeline");
            expect(reference).toMatchObject({ queued: 0, listeners: 0 });
            expect(await run("retry")).toEqual(reference);
            expect(await run("wrap")).toEqual(reference);
            expect(await run("pipeline")).toEqual(reference);
          } finally {
            vi.useRealTimers();
          }
        },
      ),
      { numRuns: 200 },
    );
  });
});

describe("a wrapped function's first attempt made without the pipeline", () => {
  it("gives what the pipeline gives, with the receiver and arguments it was called with", async () => {
    await fc.assert(
      fc.asyncProperty(
        settings,
        fc.array(fc.integer(), { maxLength: 3 }),
        fc.boolean(),
        async ({ plan, maxRetries, retryOnResult, withCallbacks, seed }, args, withThis) => {
          const run = async (through: "first attempt" | "with a signal" | "pipeline") => {
            const record: Record = { contexts: [], heard: [] };
            const clock = new VirtualClock();
            const inner = operation(plan, record, true);
            const seen: unknown[] = [];
            const fn = function (this: unknown, ctx: AttemptContext, ...given: number[]) {
              seen.push([this, given]);
              return inner(ctx);
            };
            const options: RetryOptions<number> = {
              maxRetries,
              ...(retryOnResult ? { retryOnResult: (value: number) => value < 0 } : {}),
              ...(withCallbacks ? callbacks(record, true) : {}),
            };
            const random = seededRandom(seed);
            const receiver = { name: "receiver" };
            let call: Promise<number>;
            if (through === "pipeline") {
              // The reference: the pipeline the options build, executed with options (through its steps).
              call = retryPipeline(options).execute(
                (ctx: AttemptContext) => fn.call(withThis ? receiver : undefined, ctx, ...args),
                { clock, random },
              );
            } else {
              // A signal that never aborts, watched by the first attempt.
              const signal = through === "with a signal" ? { signal: new AbortController().signal } : {};
              const wrapped = wrap(fn, { ...options, clock, random, ...signal });
              call = withThis ? wrapped.call(receiver, ...args) : wrapped(...args);
            }
            const ended = ending(call);
            await clock.runAll();
            return { ended: await ended, seen, ...record };
          };
          const reference = await run("pipeline");
          expect(await run("first attempt")).toEqual(reference);
          expect(await run("with a signal")).toEqual(reference);
        },
      ),
      { numRuns: 200 },
    );
  });
});
