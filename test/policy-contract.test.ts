/**
 * What a user relies on from the retry policy's decisions, at their boundaries: the give-up reason of
 * `maxElapsed: 0`, and each kind of answer a `delayFrom` may give (a least wait with the delay on top, an
 * exact wait, nothing or garbage for the policy's own delay; Infinity capped as every delay is).
 */
import { backoff, ResponsiveBackoff, type RetryOptions, retry, retryReport, steps } from "robustly";
import { VirtualClock } from "robustly/testing";
import { describe, expect, it } from "vitest";

/** The times of each attempt of a call that always fails, under `options`, on a virtual clock. */
async function attemptTimes(options: RetryOptions): Promise<{ times: number[]; error: unknown }> {
  const clock = new VirtualClock();
  const times: number[] = [];
  const failure = new Error("down");
  const call = retry(
    () => {
      times.push(clock.now());
      throw failure;
    },
    { budget: false, ...options, clock },
  ).catch((error: unknown) => error);
  await clock.runAll();
  return { times, error: await call };
}

const every100 = { backoff: backoff.constant({ base: 100 }), jitter: (d: number) => d, maxRetries: 2 };

describe("maxElapsed: 0", () => {
  it("allows the first attempt only, and gives up saying the time ran out", async () => {
    const { times, error } = await attemptTimes({ maxElapsed: 0, maxRetries: 5 });
    expect(times).toEqual([0]);
    expect(retryReport(error)).toMatchObject({ reason: "elapsed", attempts: 1 });
  });

  it("gives up on the retries first when maxRetries is 0 as well", async () => {
    const { error } = await attemptTimes({ maxElapsed: 0, maxRetries: 0 });
    expect(retryReport(error)).toMatchObject({ reason: "retries", attempts: 1 });
  });
});

describe("a delayFrom's answer", () => {
  const answers: [string, () => unknown, number[]][] = [
    ["a number: that least wait, and the delay on top", () => 50, [0, 150, 300]],
    ["{ exactly }: that wait alone", () => ({ exactly: 30 }), [0, 30, 60]],
    ["{ exactly: 0 }: no wait", () => ({ exactly: 0 }), [0, 0, 0]],
    ["0: the delay alone", () => 0, [0, 100, 200]],
    ["undefined: the policy's delay", () => undefined, [0, 100, 200]],
    ["null: the policy's delay", () => null, [0, 100, 200]],
    ["NaN: the policy's delay", () => Number.NaN, [0, 100, 200]],
    ["a negative number: the policy's delay", () => -5, [0, 100, 200]],
    ["{ exactly: -1 }: the policy's delay", () => ({ exactly: -1 }), [0, 100, 200]],
    ["a string: the policy's delay", () => "50", [0, 100, 200]],
  ];
  it.each(answers)("%s", async (_, delayFrom, expected) => {
    const { times } = await attemptTimes({ ...every100, delayFrom: delayFrom as never });
    expect(times).toEqual(expected);
  });

  it("Infinity waits the longest a timer can, as any delay is capped", async () => {
    const { times } = await attemptTimes({
      ...every100,
      maxRetries: 1,
      delayFrom: () => Number.POSITIVE_INFINITY,
    });
    expect(times).toEqual([0, 2 ** 31 - 1]);
  });

  it("is told the failed attempt's error and the delay the policy worked out", async () => {
    const seen: unknown[] = [];
    await attemptTimes({
      ...every100,
      maxRetries: 1,
      delayFrom: (error, context) => {
        seen.push((error as Error).message, context.delay, context.rule);
        return undefined;
      },
    });
    expect(seen).toEqual(["down", 100, -1]);
  });
});

describe("what is thrown, and what retryOn is", () => {
  const tenMs = { backoff: backoff.constant({ base: 10 }), jitter: (d: number) => d, maxRetries: 1 };

  it.each([
    ["null", null],
    ["a string", "down"],
    ["a number", 503],
  ])("%s thrown is retried with the policy's delay, and is what the call rejects with", async (_, thrown) => {
    const clock = new VirtualClock();
    const times: number[] = [];
    const call = retry(
      () => {
        times.push(clock.now());
        throw thrown;
      },
      { ...tenMs, budget: false, clock },
    ).then(
      () => "resolved",
      (error: unknown) => error,
    );
    await clock.runAll();
    expect(await call).toBe(thrown);
    expect(times).toEqual([0, 10]);
  });

  it.each([
    ["null", null],
    ["undefined", undefined],
    ["a string equal to the name", "ECONNRESET"],
  ])("a name matcher does not retry %s, and the call rejects with it", async (_, thrown) => {
    const clock = new VirtualClock();
    let attempts = 0;
    const call = retry(
      () => {
        attempts += 1;
        throw thrown;
      },
      { ...tenMs, retryOn: "ECONNRESET", budget: false, clock },
    ).catch((error: unknown) => error);
    await clock.runAll();
    expect(await call).toBe(thrown);
    expect(attempts).toBe(1);
  });

  it("Error matches only errors; a class of any kind is matched with instanceof, never called", async () => {
    class Custom {}
    function LegacyError(this: Error) {}
    LegacyError.prototype = Object.create(Error.prototype);
    const cases: [unknown, () => unknown, number][] = [
      [Error, () => "a string", 1],
      [Error, () => new TypeError("t"), 2],
      [Custom, () => new Custom(), 2],
      [Custom, () => new Error("e"), 1],
      [LegacyError, () => new (LegacyError as unknown as new () => Error)(), 2],
      [LegacyError, () => new Error("e"), 1],
    ];
    for (const [retryOn, make, expected] of cases) {
      const clock = new VirtualClock();
      let attempts = 0;
      const call = retry(
        () => {
          attempts += 1;
          throw make();
        },
        { ...tenMs, retryOn: retryOn as never, budget: false, clock },
      ).catch(() => undefined);
      await clock.runAll();
      await call;
      expect(attempts, String(retryOn)).toBe(expected);
    }
  });

  it("a predicate whose source mentions a class is called as a predicate", async () => {
    const clock = new VirtualClock();
    let attempts = 0;
    const retryOn = (error: unknown) => (error as { kind?: string }).kind === "class transient";
    const call = retry(
      () => {
        attempts += 1;
        throw Object.assign(new Error("e"), { kind: "class transient" });
      },
      { ...tenMs, retryOn, budget: false, clock },
    ).catch(() => undefined);
    await clock.runAll();
    await call;
    expect(attempts).toBe(2);
  });

  it("a retryOn that throws ends the call with what it threw, after that attempt", async () => {
    const broken = new Error("predicate broke");
    const clock = new VirtualClock();
    let attempts = 0;
    const call = retry(
      () => {
        attempts += 1;
        throw new Error("down");
      },
      {
        ...tenMs,
        retryOn: () => {
          throw broken;
        },
        budget: false,
        clock,
      },
    ).catch((error: unknown) => error);
    await clock.runAll();
    expect(await call).toBe(broken);
    expect(attempts).toBe(1);
  });
});

describe("options only some forms take", () => {
  it("steps.retry refuses signal and timeout, which belong to the call", () => {
    expect(() => steps.retry({ timeout: 100 } as never)).toThrow(/timeout must be one of the known options/);
    expect(() => steps.retry({ signal: new AbortController().signal } as never)).toThrow(
      /signal must be one of the known options/,
    );
  });

  it.each([[{}], [null], [5]])("a breaker that is not one is refused, naming it: %j", async (breaker) => {
    await expect(retry(() => 1, { breaker: breaker as never })).rejects.toThrow(
      /^breaker must be a circuit breaker \(from circuitBreaker\(\)\); got /,
    );
  });
});

describe("a stateful backoff and a rule's time limit", () => {
  /** A call that fails `failures` times (with `make()`'s error) and then succeeds, under `options(responsive)`. */
  async function succeedsAfter(
    failures: number,
    make: () => Error,
    options: (responsive: ResponsiveBackoff) => RetryOptions,
  ): Promise<ResponsiveBackoff> {
    const clock = new VirtualClock();
    const responsive = new ResponsiveBackoff({ base: 10, max: 10_000, spread: 0, clock });
    let attempts = 0;
    const call = retry(
      () => {
        attempts += 1;
        if (attempts <= failures) throw make();
        return "ok";
      },
      { ...options(responsive), budget: false, clock },
    );
    await clock.runAll();
    expect(await call).toBe("ok");
    return responsive;
  }

  it("a responsive backoff in a rule hears of the call's success", async () => {
    const responsive = await succeedsAfter(
      2,
      () => new TypeError("flaky"),
      (backoff) => ({ rules: [{ when: TypeError, backoff, maxRetries: 5 }] }),
    );
    // Two failures raised it, the success counts towards bringing it down.
    expect(responsive.snapshot()).toMatchObject({ wentUp: 2, successes: 1 });
  });

  it("a responsive backoff at the top hears of the call's success", async () => {
    const responsive = await succeedsAfter(
      1,
      () => new Error("flaky"),
      (backoff) => ({ backoff }),
    );
    expect(responsive.snapshot()).toMatchObject({ wentUp: 1, successes: 1 });
  });

  it("a rule's maxElapsed ends the call in time even when the top level has none", async () => {
    const { times, error } = await attemptTimes({
      rules: [
        {
          when: Error,
          maxElapsed: 250,
          maxRetries: 100,
          backoff: backoff.constant({ base: 100 }),
          jitter: (d: number) => d,
        },
      ],
    });
    expect(times).toEqual([0, 100, 200]);
    expect(retryReport(error)).toMatchObject({ reason: "elapsed" });
  });
});

describe("options of any shape, and the short form's own", () => {
  it.each([
    "onAttempt",
    "onSuccess",
    "onError",
    "onRetry",
    "onGiveUp",
    "onCallbackError",
    "retryOnResult",
    "shouldConsumeRetry",
  ])("%s that is no function is refused, naming it", async (key) => {
    await expect(retry(() => 1, { [key]: 5 } as never)).rejects.toThrow(`${key} must be a function; got 5`);
  });

  it("hedge and chaos take only a step of their own kind", async () => {
    await expect(retry(() => 1, { hedge: {} as never })).rejects.toThrow(
      "hedge must be a hedge step (steps.hedge({ delay })); got {}",
    );
    await expect(
      retry(() => 1, { hedge: steps.chaos({ fault: { rate: 0, error: new Error("x") } }) as never }),
    ).rejects.toThrow(/^hedge must be a hedge step/);
    await expect(retry(() => 1, { chaos: null as never })).rejects.toThrow(
      "chaos must be a chaos step (steps.chaos({ fault: { rate, error } })); got null",
    );
  });

  it("hedge and chaos refuse a look-alike: an object tagged as the step without execute, a function", async () => {
    const kind = Symbol.for("robustly.stepKind");
    const execute = () => 1;
    for (const option of ["hedge", "chaos"] as const) {
      const tagged = { [kind]: option };
      const fn = Object.assign(() => 1, { [kind]: option, execute });
      for (const value of [tagged, fn]) {
        let attempts = 0;
        const call = retry(
          () => {
            attempts += 1;
            return 1;
          },
          { [option]: value } as never,
        );
        await expect(call).rejects.toThrow(new RegExp(`^${option} must be a ${option} step`));
        expect(attempts).toBe(0);
      }
    }
  });

  it("budget takes an object with the four methods a call uses, and refuses one lacking any of them", async () => {
    const methods = ["request", "tryRetry", "success", "failure"] as const;
    const full = () => Object.fromEntries(methods.map((m) => [m, () => true]));
    for (const lacking of methods) {
      const budget: Record<string, unknown> = full();
      delete budget[lacking];
      await expect(retry(() => 1, { budget: budget as never })).rejects.toThrow(
        "budget must be a retry budget (from retryBudget()), or false for none",
      );
    }
    for (const budget of [null, 5, "budget", { ...full(), failure: "not a function" }]) {
      await expect(retry(() => 1, { budget: budget as never })).rejects.toThrow(
        /^budget must be a retry budget/,
      );
    }
    await expect(retry(() => 1, { budget: full() as never })).resolves.toBe(1);
  });

  it("random and unref are checked when given", async () => {
    await expect(retry(() => 1, { random: 5 as never })).rejects.toThrow("random must be a function; got 5");
    await expect(retry(() => 1, { unref: 1 as never })).rejects.toThrow("unref must be true or false; got 1");
  });

  it("reads the options of a class instance or an object made with Object.create by name", async () => {
    class Options {
      get maxRetries() {
        return 0;
      }
    }
    for (const options of [new Options(), Object.create({ maxRetries: 0 })]) {
      let attempts = 0;
      await expect(
        retry(() => {
          attempts += 1;
          throw new Error("down");
        }, options),
      ).rejects.toThrow("down");
      expect(attempts).toBe(1);
    }
  });
});
