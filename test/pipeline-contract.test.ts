// What `pipeline(...steps)` and `execute(op, options)` promise at the caller's edge: what is refused and
// with which message, a pipeline with no steps as a no-op, the execution's clock and randomness reaching
// every step (randomness checked as it is drawn), the caller's abort winning whatever a step does, a
// `PermanentError` unwrapped exactly once whatever the outermost step, any thenable a step answers with,
// and a context a step makes for what runs inside it.
import fc from "fast-check";
import {
  type ExecutionContext,
  OptionError,
  PermanentError,
  pipeline,
  retry,
  type Step,
  steps,
} from "robustly";
import { seededRandom, VirtualClock } from "robustly/testing";
import { describe, expect, it } from "vitest";
import { abortListeners, drive } from "./support/drive.js";

/** A step of a user's that runs what is inside it as it is, in an async function. */
const passThrough = (): Step => ({
  async execute(next, context) {
    return await next(context);
  },
});

/** What `promise` rejected with (fails the test if it fulfils). */
async function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    (value) => {
      throw new Error(`expected a rejection, got ${String(value)}`);
    },
    (error: unknown) => error,
  );
}

/** Asserts that `error` is an OptionError for `option` with exactly `message`. */
function expectOptionError(error: unknown, option: string, message: string): void {
  expect(error).toBeInstanceOf(OptionError);
  expect((error as OptionError).option).toBe(option);
  expect((error as OptionError).message).toBe(message);
}

describe("pipeline() refuses what is not a step", () => {
  it("names the place, the value and what a step is", () => {
    const cases: [unknown[], string][] = [
      [
        [steps.retry(), {}],
        "pipeline: steps[1] must be a step (an object with execute(next, context)), e.g. steps.retry({ maxRetries: 3 }); got {}",
      ],
      [
        [null],
        "pipeline: steps[0] must be a step (an object with execute(next, context)), e.g. steps.retry({ maxRetries: 3 }); got null",
      ],
      [
        [steps.timeout(100), steps.retry(), { execute: 1 }],
        'pipeline: steps[2] must be a step (an object with execute(next, context)), e.g. steps.retry({ maxRetries: 3 }); got {"execute":1}',
      ],
    ];
    for (const [given, message] of cases) {
      let thrown: unknown;
      try {
        pipeline(...(given as Step[]));
      } catch (error) {
        thrown = error;
      }
      expect(thrown).toBeInstanceOf(OptionError);
      expect((thrown as OptionError).message).toBe(message);
    }
  });
});

describe("a pipeline with no steps runs the operation as it is", () => {
  it("answers with its value, without options and with a clock", async () => {
    const p = pipeline();
    expect(p.steps).toEqual([]);
    expect(await p.execute(async () => "info")).toBe("info");
    expect(await p.execute(() => 42)).toBe(42);
    const clock = new VirtualClock();
    expect(await p.execute(() => "sync", { clock })).toBe("sync");
    expect(clock.pending).toBe(0);
  });

  it("fails with the operation's error, a PermanentError's cause unwrapped", async () => {
    const p = pipeline();
    const down = new Error("down");
    expect(await rejection(p.execute(() => Promise.reject(down)))).toBe(down);
    expect(await rejection(p.execute(() => Promise.reject(new PermanentError(down))))).toBe(down);
    expect(
      await rejection(
        p.execute(() => {
          throw new PermanentError(down);
        }),
      ),
    ).toBe(down);
  });

  it("gives the operation the context of a first attempt on the execution's clock and randomness", async () => {
    const clock = new VirtualClock();
    const random = seededRandom(3);
    let seen: ExecutionContext | undefined;
    await pipeline().execute(
      (context) => {
        seen = context;
      },
      { clock, random },
    );
    const context = seen as ExecutionContext;
    expect({
      attempt: context.attempt,
      retries: context.retries,
      retriesLeft: context.retriesLeft,
      elapsed: context.elapsed,
      timeout: context.timeout,
      hedge: context.hedge,
      aborted: context.signal.aborted,
    }).toEqual({
      attempt: 1,
      retries: 0,
      retriesLeft: Number.POSITIVE_INFINITY,
      elapsed: 0,
      timeout: Number.POSITIVE_INFINITY,
      hedge: 1,
      aborted: false,
    });
    expect(context.clock).toBe(clock);
    expect(context.random).toBe(random);
  });
});

describe("execute() checks its options and rejects (never throws) when one is wrong", () => {
  // A retry step alone (whose calls without options, or with a signal alone, take a shorter route) and a
  // step of a user's: both check the same way.
  const pipelines = () => [pipeline(steps.retry({ maxRetries: 0 })), pipeline(passThrough())];

  it("refuses options that are not an object", async () => {
    const cases: [unknown, string][] = [
      [null, "execute must be an object; got null"],
      [5, "execute must be an object; got 5"],
      ["fast", 'execute must be an object; got "fast"'],
      [[], "execute must be an object; got []"],
      [() => {}, "execute must be an object; got function (anonymous)"],
      // Refused the same when it carries a signal, as a call with a signal alone would.
      [
        Object.assign(function options() {}, { signal: new AbortController().signal }),
        "execute must be an object; got function options",
      ],
    ];
    for (const p of pipelines()) {
      for (const [options, message] of cases) {
        let calls = 0;
        const error = await rejection(
          p.execute(() => {
            calls += 1;
          }, options as never),
        );
        expectOptionError(error, "execute", message);
        expect(calls).toBe(0);
      }
    }
  });

  it("refuses a signal that is not an AbortSignal", async () => {
    for (const p of pipelines()) {
      const error = await rejection(p.execute(async () => 1, { signal: "no" as unknown as AbortSignal }));
      expectOptionError(error, "execute: signal", 'execute: signal must be an AbortSignal; got "no"');
    }
  });

  it("refuses a clock without now() and setTimer()", async () => {
    const allowed = "a Clock with now() and setTimer(ms, callback) methods";
    const now = () => 0;
    const setTimer = () => () => {};
    const cases: [unknown, string][] = [
      [null, "null"],
      [5, "5"],
      [{}, "{}"],
      [{ now }, "{}"],
      [{ setTimer }, "{}"],
      [{ now: 0, setTimer }, '{"now":0}'],
    ];
    for (const p of pipelines()) {
      for (const [clock, shown] of cases) {
        let calls = 0;
        const error = await rejection(
          p.execute(
            () => {
              calls += 1;
            },
            { clock: clock as never },
          ),
        );
        expectOptionError(error, "execute: clock", `execute: clock must be ${allowed}; got ${shown}`);
        expect(calls).toBe(0);
      }
    }
  });

  it("takes any object with now() and setTimer() as the clock", async () => {
    const clock = { now: () => 1234, setTimer: () => () => {} };
    let seen: unknown;
    const value = await pipeline(passThrough()).execute(
      (context) => {
        seen = context.clock.now();
        return "ok";
      },
      { clock },
    );
    expect([value, seen]).toEqual(["ok", 1234]);
  });

  it("refuses a random that is not a function", async () => {
    const cases: [unknown, string][] = [
      ["x", '"x"'],
      [0.5, "0.5"],
      [null, "null"],
    ];
    for (const p of pipelines()) {
      for (const [random, shown] of cases) {
        const error = await rejection(p.execute(async () => 1, { random: random as never }));
        expectOptionError(
          error,
          "execute: random",
          `execute: random must be a function returning numbers in [0, 1); got ${shown}`,
        );
      }
    }
  });
});

describe("the execution's randomness", () => {
  /** A step that draws `n` numbers from its context's randomness before running what is inside. */
  const drawing = (n: number, drawn: number[]): Step => ({
    execute(next, context) {
      for (let i = 0; i < n; i++) drawn.push(context.random());
      return next(context);
    },
  });

  it("reaches the steps as it draws, number for number", () => {
    fc.assert(
      fc.asyncProperty(
        fc.array(fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }), {
          minLength: 1,
          maxLength: 8,
        }),
        async (values) => {
          let i = 0;
          const random = () => values[i++ % values.length] as number;
          const drawn: number[] = [];
          const clock = new VirtualClock();
          await pipeline(drawing(values.length, drawn)).execute(() => "ok", { clock, random });
          expect(drawn).toEqual(values);
        },
      ),
    );
  });

  it("fails the call, naming the option, when it draws a number outside [0, 1)", async () => {
    const cases: [unknown, string][] = [
      [1, "1"],
      [1.5, "1.5"],
      [-0.25, "-0.25"],
      [Number.NaN, "NaN"],
      ["0.5", '"0.5"'],
    ];
    for (const [bad, shown] of cases) {
      let calls = 0;
      const error = await rejection(
        pipeline(drawing(1, [])).execute(
          () => {
            calls += 1;
          },
          { clock: new VirtualClock(), random: () => bad as number },
        ),
      );
      expectOptionError(
        error,
        "execute: random",
        `execute: random must be a function returning numbers in [0, 1); got ${shown}`,
      );
      expect(calls).toBe(0);
    }
  });

  it("reaches the steps of an execution with a caller's signal too", async () => {
    const controller = new AbortController();
    const clock = new VirtualClock();
    const drawn: number[] = [];
    let seenClock: unknown;
    const value = await pipeline(drawing(3, drawn)).execute(
      (context) => {
        seenClock = context.clock;
        return "ok";
      },
      { signal: controller.signal, clock, random: seededRandom(11) },
    );
    const expected = seededRandom(11);
    expect(value).toBe("ok");
    expect(drawn).toEqual([expected(), expected(), expected()]);
    expect(seenClock).toBe(clock);
    expect(abortListeners(controller.signal)).toBe(0);
  });
});

describe("the caller's signal", () => {
  it("aborted before the call: no step runs and the call rejects with its reason", async () => {
    const reason = new Error("gone");
    for (const options of [{ clock: new VirtualClock() }, { random: seededRandom(1) }]) {
      const ran: string[] = [];
      const step: Step = {
        execute(next, context) {
          ran.push("step");
          return next(context);
        },
      };
      const error = await rejection(
        pipeline(step).execute(
          () => {
            ran.push("operation");
          },
          { ...options, signal: AbortSignal.abort(reason) },
        ),
      );
      expect(error).toBe(reason);
      expect(ran).toEqual([]);
    }
  });

  it("aborted while the steps run: the call rejects with its reason, whatever they answer", async () => {
    const clock = new VirtualClock();
    const answers: [string, () => unknown][] = [
      ["a value", () => "late"],
      ["a promise of a value", () => Promise.resolve("late")],
      ["a promise that never settles", () => new Promise(() => {})],
    ];
    for (const [, answer] of answers) {
      const controller = new AbortController();
      const reason = new Error("stop");
      const p = pipeline(passThrough());
      const outcome = await drive(
        clock,
        p.execute(
          () => {
            controller.abort(reason);
            return answer();
          },
          { signal: controller.signal, clock },
        ),
      );
      expect(outcome).toEqual({ ok: false, error: reason });
      expect(abortListeners(controller.signal)).toBe(0);
    }
    expect(clock.pending).toBe(0);
  });

  it("aborted by a synchronous step: the call rejects with its reason, not the step's value", async () => {
    const controller = new AbortController();
    const reason = new Error("stop");
    const step: Step = {
      execute() {
        controller.abort(reason);
        return "answered anyway" as never;
      },
    };
    const clock = new VirtualClock();
    const error = await rejection(pipeline(step).execute(() => "op", { signal: controller.signal, clock }));
    expect(error).toBe(reason);
    expect(abortListeners(controller.signal)).toBe(0);
  });
});

describe("a PermanentError reaches the caller unwrapped exactly once, whatever the outermost step", () => {
  const cause = new Error("404");
  const inner = new PermanentError(cause);

  it("a step of a user's outermost: the cause, with or without a clock or a signal", async () => {
    const optionsList = [undefined, { clock: new VirtualClock() }, { signal: new AbortController().signal }];
    for (const options of optionsList) {
      const p = pipeline(passThrough(), passThrough());
      expect(await rejection(p.execute(() => Promise.reject(new PermanentError(cause)), options))).toBe(
        cause,
      );
      // A PermanentError around another: the inner one, as retry() gives.
      expect(await rejection(p.execute(() => Promise.reject(new PermanentError(inner)), options))).toBe(
        inner,
      );
    }
  });

  it("a retry step outermost: its cause, as retry() gives, with or without a clock", async () => {
    const nested = () => Promise.reject(new PermanentError(inner));
    expect(await rejection(retry(nested, { maxRetries: 3, clock: new VirtualClock() }))).toBe(inner);
    for (const options of [undefined, { clock: new VirtualClock() }, { random: seededRandom(5) }]) {
      const p = pipeline(steps.retry({ maxRetries: 3 }));
      expect(await rejection(p.execute(nested, options))).toBe(inner);
      expect(await rejection(p.execute(() => Promise.reject(new PermanentError(cause)), options))).toBe(
        cause,
      );
    }
  });
});

describe("a step may answer with any thenable", () => {
  /** A thenable that is not a promise and settles as soon as someone listens. */
  const thenable = <T>(outcome: { value: T } | { error: unknown }): PromiseLike<T> => ({
    // biome-ignore lint/suspicious/noThenProperty: a thenable that is not a promise, on purpose
    then(onValue, onError) {
      if ("value" in outcome) onValue?.(outcome.value);
      else onError?.(outcome.error);
      return this as never;
    },
  });
  const answering = (outcome: { value: unknown } | { error: unknown }): Step => ({
    execute: () => thenable(outcome) as never,
  });

  it("the call settles as it does, a PermanentError's cause unwrapped", async () => {
    const cause = new Error("404");
    const plain = new Error("503");
    for (const options of [undefined, { clock: new VirtualClock() }]) {
      expect(await pipeline(answering({ value: "v" })).execute(() => "unused", options)).toBe("v");
      expect(await rejection(pipeline(answering({ error: plain })).execute(() => "unused", options))).toBe(
        plain,
      );
      expect(
        await rejection(
          pipeline(answering({ error: new PermanentError(cause) })).execute(() => "unused", options),
        ),
      ).toBe(cause);
    }
  });
});

describe("a step that passes next a context of its own making", () => {
  it("the operation receives that very context, from the innermost step", async () => {
    const clock = new VirtualClock();
    const made: ExecutionContext[] = [];
    const tagging: Step = {
      execute(next, context) {
        const own = { ...context, signal: context.signal, tenant: "blue" } as ExecutionContext;
        made.push(own);
        return next(own);
      },
    };
    const seen: unknown[] = [];
    const op = (context: ExecutionContext) => {
      seen.push(context);
      return (context as ExecutionContext & { tenant?: string }).tenant;
    };
    expect(await pipeline(tagging).execute(op, { clock })).toBe("blue");
    expect(await pipeline(passThrough(), tagging).execute(op, { clock })).toBe("blue");
    expect(
      await pipeline(steps.retry({ maxRetries: 1 }), passThrough(), tagging).execute(op, { clock }),
    ).toBe("blue");
    expect(seen).toHaveLength(3);
    seen.forEach((context, i) => {
      expect(context).toBe(made[i]);
    });
  });
});
