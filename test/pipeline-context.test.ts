// The execution context as steps hand it on: a step of one's own may pass `next` a copy of its context
// (`{ ...context, attempt: 2 }`) or nothing at all, and what runs inside still gets a whole context tied to
// the call; an operation of `retry` may hand its attempt's context to a pipeline, which then runs inside
// that attempt; a built-in step may be called on its own; and `pipeline(...)` refuses what is not a step.
import {
  backoff,
  type ExecutionContext,
  jitter,
  OptionError,
  pipeline,
  type RetryBudget,
  retry,
  retryBudget,
  type Step,
  steps,
  TimeoutError,
} from "robustly";
import { describe, expect, it } from "vitest";
import { drive, VirtualClock } from "./support/drive.js";

const c100 = { backoff: backoff.constant({ base: 100 }), jitter: jitter.none() };

/** The numbers of a context, as a step or an operation reads them. */
function numbers(context: ExecutionContext) {
  const { attempt, retries, retriesLeft, elapsed, timeout, hedge } = context;
  return { attempt, retries, retriesLeft, elapsed, timeout, hedge };
}

/** A step of one's own that passes `next` what `change` makes of the context it was given. */
function passing(change: (context: ExecutionContext) => unknown): Step {
  return {
    execute(next, context) {
      return next(change(context) as ExecutionContext);
    },
  };
}

/** A step of one's own that records the context it is given and passes it on unchanged. */
function observing(seen: ExecutionContext[]): Step {
  return {
    execute(next, context) {
      seen.push(context);
      return next(context);
    },
  };
}

/** Waits on the context's clock until its signal aborts, then rejects with the signal's reason. */
function hang(context: ExecutionContext): Promise<never> {
  return new Promise<never>((_, reject) => {
    const { signal } = context;
    if (signal.aborted) reject(signal.reason);
    else signal.addEventListener("abort", () => reject(signal.reason), { once: true });
  });
}

describe("a step of one's own that passes next a copy of its context", () => {
  it("gives the steps and the operation inside the copy's numbers, with the signal of the call", async () => {
    const clock = new VirtualClock();
    const controller = new AbortController();
    const seen: ExecutionContext[] = [];
    const renumber = passing((context) => ({
      ...context,
      attempt: 7,
      retries: 6,
      retriesLeft: 3,
      elapsed: 40,
    }));
    const p = pipeline(steps.timeout(500), renumber, observing(seen));
    const call = drive(
      clock,
      p.execute((context) => hang(context), { clock, signal: controller.signal }),
    );
    expect(seen).toHaveLength(1);
    const inside = seen[0] as ExecutionContext;
    // The copy's numbers; what it does not change (the timeout step's limit, the hedge) as they were.
    expect(numbers(inside)).toEqual({
      attempt: 7,
      retries: 6,
      retriesLeft: 3,
      elapsed: 40,
      timeout: 500,
      hedge: 1,
    });
    expect(inside.clock).toBe(clock);
    expect(inside.signal).toBeInstanceOf(AbortSignal);
    expect(inside.signal.aborted).toBe(false);
    expect(typeof inside.bail).toBe("function");
    // The caller's abort reaches what runs inside the copy.
    const reason = new Error("caller gave up");
    controller.abort(reason);
    expect(inside.signal.aborted).toBe(true);
    expect(inside.signal.reason).toBe(reason);
    expect(await call).toEqual({ ok: false, error: reason });
    expect(clock.pending).toBe(0);
  });

  it("keeps the context's own numbers in place of a copy's that are not numbers, or NaN", async () => {
    const clock = new VirtualClock();
    const seen: ExecutionContext[] = [];
    const junk = passing((context) => ({
      ...context,
      attempt: "3",
      retries: Number.NaN,
      retriesLeft: null,
      elapsed: undefined,
      timeout: "250",
    }));
    const p = pipeline(steps.retry({ maxRetries: 2, ...c100 }), steps.timeout(500), junk, observing(seen));
    let calls = 0;
    const call = drive(
      clock,
      p.execute(
        () => {
          calls += 1;
          return calls === 1 ? Promise.reject(new Error("busy")) : "done";
        },
        { clock },
      ),
    );
    expect(await call).toEqual({ ok: true, value: "done" });
    // The second attempt, 100 ms after the first: its numbers, not the copy's junk.
    expect(seen.map(numbers)).toEqual([
      { attempt: 1, retries: 0, retriesLeft: 2, elapsed: 0, timeout: 500, hedge: 1 },
      { attempt: 2, retries: 1, retriesLeft: 1, elapsed: 100, timeout: 500, hedge: 1 },
    ]);
    expect(clock.pending).toBe(0);
  });

  it("gives a copy's numbers, whatever numbers they are, and the context's own for the rest", () => {
    const clock = new VirtualClock();
    const samples = [0, -1, 2.5, 1e308, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY];
    for (const attempt of samples) {
      for (const timeout of samples) {
        const seen: ExecutionContext[] = [];
        const p = pipeline(
          steps.retry({ maxRetries: 0 }),
          passing((context) => ({ ...context, attempt, timeout, retries: "1" })),
          observing(seen),
        );
        // Synchronous all the way: the answer is there at once.
        void p.execute(() => "ok", { clock });
        expect(seen.map(numbers)).toEqual([
          { attempt, retries: 0, retriesLeft: 0, elapsed: 0, timeout, hedge: 1 },
        ]);
      }
    }
  });
});

describe("a step of one's own that passes next no context", () => {
  for (const [name, given] of [
    ["undefined", undefined],
    ["null", null],
    ["a number", 42],
  ] as const) {
    it(`runs what is inside in the context it was given (${name})`, async () => {
      const clock = new VirtualClock();
      const controller = new AbortController();
      const seen: ExecutionContext[] = [];
      const p = pipeline(
        steps.timeout(500),
        passing(() => given),
        observing(seen),
      );
      const call = drive(
        clock,
        p.execute((context) => hang(context), { clock, signal: controller.signal }),
      );
      expect(seen).toHaveLength(1);
      const inside = seen[0] as ExecutionContext;
      expect(numbers(inside)).toEqual({
        attempt: 1,
        retries: 0,
        retriesLeft: Number.POSITIVE_INFINITY,
        elapsed: 0,
        timeout: 500,
        hedge: 1,
      });
      const reason = new Error("caller gave up");
      controller.abort(reason);
      expect(inside.signal.reason).toBe(reason);
      expect(await call).toEqual({ ok: false, error: reason });
      expect(clock.pending).toBe(0);
    });
  }

  it("still times out with the timeout step outside it", async () => {
    const clock = new VirtualClock();
    const p = pipeline(
      steps.timeout(300),
      passing(() => undefined),
      observing([]),
    );
    const call = drive(
      clock,
      p.execute((context) => hang(context), { clock }),
    );
    const settled = await call;
    expect(settled.ok).toBe(false);
    expect(settled.ok ? undefined : settled.error).toBeInstanceOf(TimeoutError);
    expect(clock.now()).toBe(300);
    expect(clock.pending).toBe(0);
  });
});

describe("an operation of retry that hands its attempt's context to a pipeline", () => {
  it("runs both of two pipelines given that context inside the attempt: its time limit aborts both", async () => {
    const clock = new VirtualClock();
    const inner = pipeline(observing([]));
    const signals: AbortSignal[] = [];
    const call = drive(
      clock,
      retry(
        (context) =>
          Promise.all([
            inner.execute((c) => {
              signals.push(c.signal);
              return hang(c);
            }, context),
            inner.execute((c) => {
              signals.push(c.signal);
              return hang(c);
            }, context),
          ]),
        { clock, timeout: 200, maxRetries: 0 },
      ),
    );
    const settled = await call;
    expect(settled.ok).toBe(false);
    const error = settled.ok ? undefined : settled.error;
    expect(error).toBeInstanceOf(TimeoutError);
    expect(signals).toHaveLength(2);
    expect(signals.map((s) => [s.aborted, s.reason])).toEqual([
      [true, error],
      [true, error],
    ]);
    expect(clock.pending).toBe(0);
  });

  for (const [name, inner, runs] of [
    ["with no steps", () => pipeline(), true],
    ["with steps of one's own", () => pipeline(observing([]), observing([])), true],
    [
      "with a step of one's own passing a copy",
      () =>
        pipeline(
          passing((c) => ({ ...c })),
          observing([]),
        ),
      true,
    ],
    ["with a timeout step, which does not run it", () => pipeline(steps.timeout(1000)), false],
  ] as const) {
    it(`after the attempt's time ran out, gives what runs there a signal already aborted (${name})`, async () => {
      const clock = new VirtualClock();
      const p = inner();
      let late: Promise<{ ok: boolean; value?: string; error?: unknown }> | undefined;
      const seen: { aborted: boolean; reason: unknown }[] = [];
      const call = drive(
        clock,
        retry(
          (context) =>
            new Promise<string>((resolve) => {
              // The operation ignores its signal, and goes on after its time ran out.
              clock.setTimer(500, () => {
                // Run as a step, the pipeline may throw at once: taken as its rejection.
                late = (async () =>
                  p.execute((c) => {
                    seen.push({ aborted: c.signal.aborted, reason: c.signal.reason });
                    if (c.signal.aborted) throw c.signal.reason;
                    return "fresh";
                  }, context))().then(
                  (value) => ({ ok: true, value }),
                  (error: unknown) => ({ ok: false, error }),
                );
                resolve("slow");
              });
            }),
          { clock, timeout: 200, maxRetries: 0 },
        ),
      );
      const settled = await call;
      expect(settled.ok).toBe(false);
      const error = settled.ok ? undefined : settled.error;
      expect(error).toBeInstanceOf(TimeoutError);
      expect((error as TimeoutError).message).toBe("The attempt timed out after 200 ms");
      expect(seen).toEqual(runs ? [{ aborted: true, reason: error }] : []);
      expect(await late).toEqual({ ok: false, error });
      expect(clock.pending).toBe(0);
    });
  }
});

describe("a step called on its own, outside a pipeline", () => {
  it("runs without a context, on the system's clock and randomness", async () => {
    const seen: ExecutionContext[] = [];
    const answer = await steps.fallback("cached").execute(
      (context) => {
        seen.push(context);
        throw new Error("down");
      },
      undefined as unknown as ExecutionContext,
    );
    expect(answer).toBe("cached");
    expect(seen).toHaveLength(1);
    const context = seen[0] as ExecutionContext;
    expect(numbers(context)).toEqual({
      attempt: 1,
      retries: 0,
      retriesLeft: Number.POSITIVE_INFINITY,
      elapsed: 0,
      timeout: Number.POSITIVE_INFINITY,
      hedge: 1,
    });
    expect(typeof context.clock.now()).toBe("number");
    const drawn = context.random();
    expect(drawn >= 0 && drawn < 1).toBe(true);
  });

  it("reads the clock and randomness of a plain object given as its context", async () => {
    const clock = new VirtualClock();
    const draws: number[] = [];
    const random = () => {
      draws.push(0.5);
      return 0.5;
    };
    // Full jitter of a constant 1000 ms: the retry sleeps random × 1000 on the given clock.
    const step = steps.retry({
      maxRetries: 1,
      backoff: backoff.constant({ base: 1000 }),
      jitter: jitter.full(),
    });
    let calls = 0;
    const seen: ExecutionContext[] = [];
    const call = drive(
      clock,
      Promise.resolve(
        step.execute(
          (context) => {
            seen.push(context);
            calls += 1;
            return calls === 1 ? Promise.reject(new Error("busy")) : clock.now();
          },
          { clock, random } as unknown as ExecutionContext,
        ),
      ),
    );
    expect(await call).toEqual({ ok: true, value: 500 });
    expect(draws).toEqual([0.5]);
    expect(seen.map((c) => [c.clock === clock, c.random === random])).toEqual([
      [true, true],
      [true, true],
    ]);
    expect(clock.pending).toBe(0);
  });
});

describe("execute's options are not an attempt's context", () => {
  it("uses the options' signal, clock and randomness, and leaves the options as they were", async () => {
    const clock = new VirtualClock();
    const controller = new AbortController();
    const random = () => 0.25;
    const options = { signal: controller.signal, clock, random };
    const seen: ExecutionContext[] = [];
    const p = pipeline(observing(seen), observing([]));
    const call = drive(
      clock,
      p.execute((context) => hang(context), options),
    );
    expect(seen).toHaveLength(1);
    const context = seen[0] as ExecutionContext;
    expect(context.clock).toBe(clock);
    expect(context.random()).toBe(0.25);
    const reason = new Error("caller gave up");
    controller.abort(reason);
    expect(await call).toEqual({ ok: false, error: reason });
    expect(Object.keys(options)).toEqual(["signal", "clock", "random"]);
  });

  it("without a signal, still draws from the system's randomness when none is given", async () => {
    const clock = new VirtualClock();
    const options = { clock };
    const seen: ExecutionContext[] = [];
    const p = pipeline(observing(seen), observing([]));
    expect(await p.execute(() => "ok", options)).toBe("ok");
    const drawn = (seen[0] as ExecutionContext).random();
    expect(drawn >= 0 && drawn < 1).toBe(true);
    expect(Object.keys(options)).toEqual(["clock"]);
  });
});

describe("retry budgets given to a retry step and to a hedge step inside it", () => {
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

  it("hears of the execution once, however deep the hedge step is", async () => {
    const clock = new VirtualClock();
    const { budget, counts } = countingBudget();
    const p = pipeline(
      steps.retry({ maxRetries: 1, ...c100, budget }),
      steps.timeout(10_000),
      observing([]),
      steps.hedge({ delay: 100, budget }),
    );
    let calls = 0;
    const settled = await drive(
      clock,
      p.execute(
        () => {
          calls += 1;
          return Promise.reject(new Error("down"));
        },
        { clock },
      ),
    );
    expect(settled.ok ? undefined : (settled.error as Error).message).toBe("down");
    // Two attempts × two hedges; one request, four failed runs each told once, one retry and two hedges.
    expect(calls).toBe(4);
    expect(counts).toEqual({ request: 1, success: 0, failure: 4, tryRetry: 3 });
    expect(clock.pending).toBe(0);
  });

  it("two budgets, one for each step, hear of the execution each", async () => {
    const clock = new VirtualClock();
    const outer = countingBudget();
    const inner = countingBudget();
    const p = pipeline(
      steps.retry({ maxRetries: 1, ...c100, budget: outer.budget }),
      steps.hedge({ delay: 100, budget: inner.budget }),
    );
    let calls = 0;
    const settled = await drive(
      clock,
      p.execute(
        () => {
          calls += 1;
          return Promise.reject(new Error("down"));
        },
        { clock },
      ),
    );
    expect(settled.ok ? undefined : (settled.error as Error).message).toBe("down");
    expect(calls).toBe(4);
    // The retry step's budget: one request, two failed attempts, one retry.
    expect(outer.counts).toEqual({ request: 1, success: 0, failure: 2, tryRetry: 1 });
    // The hedge step's: one request per attempt, four failed runs, one hedge per attempt.
    expect(inner.counts).toEqual({ request: 2, success: 0, failure: 4, tryRetry: 2 });
    expect(clock.pending).toBe(0);
  });
});

describe("pipeline(...steps) takes steps only", () => {
  for (const [name, value, got] of [
    ["null", null, "null"],
    ["undefined", undefined, "undefined"],
    ["a number", 42, "42"],
    ["a string", "retry", '"retry"'],
    ["an object without execute", {}, "{}"],
    ["an object whose execute is not a function", { execute: 1 }, '{"execute":1}'],
  ] as const) {
    it(`refuses ${name} at once, naming its place`, () => {
      const good = steps.timeout(100);
      expect(() => pipeline(good, value as unknown as Step)).toThrow(OptionError);
      expect(() => pipeline(good, value as unknown as Step)).toThrow(
        `pipeline: steps[1] must be a step (an object with execute(next, context)), e.g. steps.retry({ maxRetries: 3 }); got ${got}`,
      );
    });
  }

  it("takes a function that has an execute method, and runs it as a step", async () => {
    const clock = new VirtualClock();
    const step = Object.assign(() => "not called", {
      execute<T>(next: (context: ExecutionContext) => T | PromiseLike<T>, context: ExecutionContext) {
        return next(context);
      },
    });
    const p = pipeline(step as Step, observing([]));
    expect(p.steps).toEqual([step, expect.anything()]);
    expect(await p.execute(() => "ran", { clock })).toBe("ran");
  });
});
