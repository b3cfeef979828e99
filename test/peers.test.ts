// Defects found by holding robustly to what its peers' users expect (p-retry, async-retry,
// exponential-backoff, tenacity): each test is named after what broke.
import {
  backoff,
  circuitBreaker,
  jitter,
  OptionError,
  PermanentError,
  retry,
  retryReport,
  wrap,
} from "robustly";
import { VirtualClock } from "robustly/testing";
import { describe, expect, it } from "vitest";
import { BACKOFF_SCHEMAS } from "../src/backoff/schema.js";
import { JITTER_SCHEMAS } from "../src/jitter/schema.js";
import { drive, retried } from "./support/drive.js";

const steady = { backoff: backoff.constant({ base: 1000 }), jitter: jitter.none() };

function thrown(make: () => unknown): Error {
  try {
    make();
  } catch (error) {
    return error as Error;
  }
  throw new Error("nothing thrown");
}

describe("PermanentError with a message", () => {
  it("new PermanentError('stop') rejects with an Error carrying the message, not the bare string", async () => {
    const error = await retry(() => {
      throw new PermanentError("stop");
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Error);
    expect(error).toBeInstanceOf(PermanentError);
    expect((error as Error).message).toBe("stop");
    expect((error as Error).cause).toBeUndefined();
    expect(retryReport(error)?.reason).toBe("permanent");
  });

  it("through wrap with a timeout (the pipeline's edge) too", async () => {
    const viaWrap = await wrap(() => Promise.reject(new PermanentError("gone")), { timeout: 1000 })().catch(
      (e: unknown) => e,
    );
    expect(viaWrap).toBeInstanceOf(PermanentError);
    expect((viaWrap as Error).message).toBe("gone");
  });

  it("given an Error, it still rejects with that error, which is its cause", async () => {
    const cause = new RangeError("no such id");
    const permanent = new PermanentError(cause);
    expect(permanent.cause).toBe(cause);
    expect(permanent.message).toBe("no such id");
    await expect(
      retry(() => {
        throw permanent;
      }),
    ).rejects.toBe(cause);
  });

  it("given a message and a cause, it keeps both", () => {
    const cause = new Error("404");
    const permanent = new PermanentError(cause, "not found");
    expect(permanent.message).toBe("not found");
    expect(permanent.cause).toBe(cause);
  });

  it("a number or another primitive is a message too, never what the call rejects with", async () => {
    const error = await retry(() => {
      throw new PermanentError(42);
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PermanentError);
    expect((error as Error).message).toBe("42");
  });
});

describe("wrap and this", () => {
  it("a wrapped method keeps its receiver", async () => {
    const service = {
      name: "users",
      get: wrap(
        async function (this: { name: string }, _context, id: string) {
          return `${this.name}/${id}`;
        },
        { maxRetries: 0 },
      ),
      ping: wrap(
        function (this: { name: string }) {
          return this.name;
        },
        { maxRetries: 0 },
      ),
    };
    await expect(service.get("42")).resolves.toBe("users/42");
    await expect(service.ping()).resolves.toBe("users");
  });

  it("the receiver is kept on every attempt, with call or apply", async () => {
    const clock = new VirtualClock();
    const receivers: unknown[] = [];
    const fn = wrap(
      function (this: unknown, { attempt }) {
        receivers.push(this);
        if (attempt < 3) throw new Error("again");
        return attempt;
      },
      { clock, ...steady },
    );
    const self = { id: 1 };
    expect(await drive(clock, fn.call(self))).toEqual({ ok: true, value: 3 });
    expect(receivers).toEqual([self, self, self]);
  });
});

describe("a backoff's max below its base", () => {
  it("the options' descriptions say that max must be at least base", () => {
    for (const name of ["exponential", "linear", "fibonacci", "polynomial", "random"]) {
      expect(BACKOFF_SCHEMAS[name]?.fields.max?.doc).toMatch(/at least base/);
    }
    expect(JITTER_SCHEMAS.decorrelatedAws?.fields.max?.doc).toMatch(/at least base/);
  });

  it("the error names the rule and the base it compared with, and says when that base is the default", () => {
    const given = thrown(() => backoff.exponential({ base: 500, max: 100 }));
    expect(given).toBeInstanceOf(OptionError);
    expect(given.message).toBe("backoff.exponential: max must be a number >= base, here 500; got 100");
    const defaulted = thrown(() => backoff.linear({ max: 100 }));
    expect(defaulted.message).toBe(
      "backoff.linear: max must be a number >= base, here 1000 (base's default); got 100",
    );
    expect(thrown(() => backoff.random({ base: 500, max: 100 })).message).toMatch(
      /^backoff\.random: max must be a number >= base, here 500; got 100$/,
    );
    expect(thrown(() => jitter.decorrelatedAws({ base: 500, max: 100 })).message).toBe(
      "jitter.decorrelatedAws: max must be a number >= base, here 500; got 100",
    );
  });
});

describe("predicates that answer with a promise", () => {
  class Transient extends Error {}

  /** Fails with `errors[i]` on attempt i+1 while there are any, then returns the attempt number. */
  function failing(errors: unknown[], calls: number[]) {
    return ({ attempt }: { attempt: number }) => {
      calls.push(attempt);
      const error = errors[attempt - 1];
      if (error !== undefined) throw error;
      return attempt;
    };
  }

  it("retryOn answering Promise<false> is awaited, not taken as true", async () => {
    const calls: number[] = [];
    const error = new Transient("no");
    const result = await retried(failing([error, error], calls), { ...steady, retryOn: async () => false });
    expect(result).toEqual({ ok: false, error });
    expect(calls).toEqual([1]);
    expect(retryReport(error)?.reason).toBe("not-retryable");
  });

  it("retryOn answering Promise<true> retries", async () => {
    const calls: number[] = [];
    const result = await retried(failing([new Transient("a"), new Transient("b")], calls), {
      ...steady,
      retryOn: (e) => Promise.resolve(e instanceof Transient),
    });
    expect(result).toEqual({ ok: true, value: 3 });
    expect(calls).toEqual([1, 2, 3]);
  });

  it("a rule's when answering Promise<false> lets the next rule or the top level decide", async () => {
    const granted: number[] = [];
    const result = await retried(failing([new Transient("a")], []), {
      ...steady,
      rules: [
        { when: async () => false, backoff: backoff.constant({ base: 5000 }) },
        { when: async (e) => e instanceof Transient, backoff: backoff.constant({ base: 70 }) },
      ],
      onRetry: ({ rule, delay }) => granted.push(rule, delay),
    });
    expect(result).toEqual({ ok: true, value: 2 });
    expect(granted).toEqual([1, 70]);
  });

  it("an async matcher that rejects ends the call with its rejection, as one that throws does", async () => {
    const broken = new Error("matcher down");
    const calls: number[] = [];
    const rejecting = await retried(failing([new Transient("a"), new Transient("b")], calls), {
      ...steady,
      retryOn: () => Promise.reject(broken),
    });
    expect(rejecting).toEqual({ ok: false, error: broken });
    expect(calls).toEqual([1]);
    const inRule = await retried(failing([new Transient("a")], []), {
      ...steady,
      rules: [{ when: () => Promise.reject(broken) }],
    });
    expect(inRule).toEqual({ ok: false, error: broken });
  });

  it("retryOnResult answering Promise<false> accepts the value; Promise<true> retries it", async () => {
    let polls = 0;
    const accepted = await retried(
      () => {
        polls += 1;
        return "pending";
      },
      { ...steady, retryOnResult: async () => false },
    );
    expect(accepted).toEqual({ ok: true, value: "pending" });
    expect(polls).toBe(1);
    polls = 0;
    const successes: unknown[] = [];
    const again = await retried(() => (++polls < 3 ? "pending" : "done"), {
      ...steady,
      retryOnResult: async (value) => value === "pending",
      onSuccess: (value) => successes.push(value),
    });
    expect(again).toEqual({ ok: true, value: "done" });
    expect(polls).toBe(3);
    expect(successes).toEqual(["done"]);
  });

  it("retryOnResult's rejection is that attempt's error, as its throw is: retried, and the last one ends the call", async () => {
    const broken = new Error("check failed");
    let polls = 0;
    const errors: unknown[] = [];
    const result = await retried(
      () => {
        polls += 1;
        return polls;
      },
      {
        ...steady,
        maxRetries: 2,
        retryOnResult: (n) => (n < 3 ? Promise.reject(broken) : Promise.resolve(false)),
        onError: (error) => errors.push(error),
      },
    );
    expect(result).toEqual({ ok: true, value: 3 });
    expect(errors).toEqual([broken, broken]);
  });

  it("with an async retryOnResult, also when the call has a signal and a timeout (the loop, not the fast path)", async () => {
    const controller = new AbortController();
    let polls = 0;
    const result = await retried(() => ++polls, {
      ...steady,
      timeout: 10_000,
      signal: controller.signal,
      retryOnResult: async (n) => n < 2,
      retryOn: async () => true,
    });
    expect(result).toEqual({ ok: true, value: 2 });
  });

  it("the caller's abort while an async predicate is pending ends the call with the signal's reason", async () => {
    const clock = new VirtualClock();
    const controller = new AbortController();
    let answer!: (retry: boolean) => void;
    const call = retry(
      () => {
        throw new Transient("a");
      },
      {
        clock,
        ...steady,
        signal: controller.signal,
        retryOn: () =>
          new Promise<boolean>((resolve) => {
            answer = resolve;
          }),
      },
    ).catch((e: unknown) => e);
    await Promise.resolve();
    const reason = new Error("bye");
    controller.abort(reason);
    answer(true);
    expect(await call).toBe(reason);
    await clock.runAll();
    expect(clock.pending).toBe(0);
  });

  it("a short form's breaker hears a value an async retryOnResult retries as a failure", async () => {
    const clock = new VirtualClock();
    const breaker = circuitBreaker({ consecutiveFailures: 2, clock });
    let polls = 0;
    const result = await retried(() => ++polls, {
      clock,
      ...steady,
      breaker,
      maxRetries: 5,
      retryOnResult: async () => true,
    });
    // Two values counted as failures open the circuit: the third attempt is refused.
    expect(result.ok).toBe(false);
    expect(polls).toBe(2);
    expect(breaker.state).toBe("open");
  });
});

describe("the caller's stack after retries", () => {
  class Flaky extends Error {}

  // Named functions, so that their frames can be looked for in a stack.
  async function callerOfRetry<T>(run: () => Promise<T>): Promise<T> {
    return await run();
  }

  async function settledError(clock: VirtualClock, run: () => Promise<unknown>): Promise<Error> {
    const result = await drive(clock, callerOfRetry(run));
    if (result.ok) throw new Error("the call succeeded");
    return result.error as Error;
  }

  /** Fails every time, remembering each error's own stack as it was made. */
  function flaky(stacks: Map<Error, string>) {
    return async () => {
      const error = new Flaky("down");
      stacks.set(error, error.stack ?? "");
      throw error;
    };
  }

  const cases: [string, (clock: VirtualClock, stacks: Map<Error, string>) => () => Promise<unknown>][] = [
    [
      "a synchronous operation",
      (clock, stacks) => () =>
        retry(
          () => {
            const error = new Flaky("down");
            stacks.set(error, error.stack ?? "");
            throw error;
          },
          { clock, ...steady },
        ),
    ],
    ["an async operation", (clock, stacks) => () => retry(flaky(stacks), { clock, ...steady })],
    [
      "an attempt timeout",
      (clock, stacks) => () => retry(flaky(stacks), { clock, ...steady, timeout: 5000 }),
    ],
    [
      "the caller's signal",
      (clock, stacks) => () =>
        retry(flaky(stacks), { clock, ...steady, signal: new AbortController().signal }),
    ],
    ["wrap", (clock, stacks) => wrap(flaky(stacks), { clock, ...steady })],
  ];

  it.each(cases)(
    "with %s, the last error keeps its own stack and gains the caller's frames",
    async (_name, make) => {
      const clock = new VirtualClock();
      const stacks = new Map<Error, string>();
      const error = await settledError(clock, make(clock, stacks));
      expect(error).toBeInstanceOf(Flaky);
      expect(retryReport(error)?.attempts).toBe(4);
      const own = stacks.get(error) as string;
      expect(own).not.toContain("callerOfRetry");
      const stack = error.stack ?? "";
      expect(stack.startsWith(own)).toBe(true);
      const added = stack.slice(own.length).split("\n").slice(1);
      expect(added.some((frame) => frame.includes("callerOfRetry"))).toBe(true);
      // No frame of its own is repeated.
      expect(added.filter((frame) => own.includes(frame))).toEqual([]);
    },
  );

  it("an error thrown by many calls is extended once, not once per call", async () => {
    const clock = new VirtualClock();
    const shared = new Flaky("always");
    const before = shared.stack;
    for (let i = 0; i < 3; i++) {
      await settledError(clock, () =>
        retry(
          async () => {
            throw shared;
          },
          { clock, ...steady, maxRetries: 1 },
        ),
      );
    }
    const added = (shared.stack ?? "").slice((before ?? "").length);
    expect(added.match(/callerOfRetry/g)?.length).toBe(1);
  });

  it("a frozen error, or an outcome that is no Error, comes out as it was", async () => {
    const clock = new VirtualClock();
    const endsWith = (thrown: unknown) =>
      drive(
        clock,
        callerOfRetry(() =>
          retry(
            async () => {
              throw thrown;
            },
            { clock, ...steady, maxRetries: 1 },
          ),
        ),
      );
    const frozen = Object.freeze(new Flaky("frozen"));
    const stack = frozen.stack;
    expect(await endsWith(frozen)).toEqual({ ok: false, error: frozen });
    expect(frozen.stack).toBe(stack);
    expect(await endsWith("plain")).toEqual({ ok: false, error: "plain" });
  });
});
