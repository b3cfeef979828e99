// The fallback step: a value (or a function's answer) in place of an error `when` matches, tested on the
// error as the caller would see it, or of a value `whenResult` refuses; never in place of the caller's
// own abort.
import { describe, expect, it } from "vitest";
import { backoff } from "../src/backoff/index.js";
import { OptionError, PermanentError, TimeoutError } from "../src/core/errors.js";
import { Eventual, settleWith } from "../src/core/invoke.js";
import { FallbackStep, fallbackStep } from "../src/fallback/fallback.js";
import { jitter } from "../src/jitter/index.js";
import { Scope } from "../src/pipeline/context.js";
import { pipeline } from "../src/pipeline/pipeline.js";
import { retryStep } from "../src/retry/step.js";
import { VirtualClock } from "../src/testing/virtual-clock.js";
import { timeoutStep } from "../src/timeout/step.js";
import { deferred } from "./support/drive.js";

const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

class Unavailable extends Error {
  override readonly name = "Unavailable";
}

const failWith = (error: unknown) => () => {
  throw error;
};

describe("fallbackStep", () => {
  it("answers with the value in place of an error, and passes a value through", async () => {
    const step = fallbackStep(42);
    expect(step).toBeInstanceOf(FallbackStep);
    const p = pipeline(step);
    expect(await p.execute(failWith(new Error("down")))).toBe(42);
    expect(await p.execute(() => Promise.reject(new Error("down")))).toBe(42);
    expect(await p.execute(() => 7)).toBe(7);
    expect(await p.execute(async () => 8)).toBe(8);
  });

  it("calls a function with the error and the context, and answers with its (awaited) result", async () => {
    const boom = new Unavailable("503");
    const seen: unknown[] = [];
    const p = pipeline(
      fallbackStep(async (error, context) => {
        seen.push(error, context.attempt, context.clock);
        return "cached";
      }),
    );
    const clock = new VirtualClock();
    expect(await p.execute(failWith(boom), { clock })).toBe("cached");
    expect(seen).toEqual([boom, 1, clock]);
  });

  it("a promise given as the value is awaited", async () => {
    const p = pipeline(fallbackStep(Promise.resolve("later")));
    expect(await p.execute(failWith(new Error("x")))).toBe("later");
  });

  it("answers with a function when it is wrapped in one", async () => {
    const handler = () => "I am the answer";
    const p = pipeline(fallbackStep(() => handler));
    expect(await p.execute<unknown>(failWith(new Error("x")))).toBe(handler);
  });

  it("rethrows an error `when` does not match, unchanged", async () => {
    const other = new Error("other");
    const p = pipeline(fallbackStep("fb", { when: Unavailable }));
    await expect(p.execute(failWith(other))).rejects.toBe(other);
    expect(await p.execute(failWith(new Unavailable("u")))).toBe("fb");
    const byName = pipeline(fallbackStep("fb", { when: ["ECONNRESET", TimeoutError] }));
    expect(await byName.execute(failWith(Object.assign(new Error("reset"), { code: "ECONNRESET" })))).toBe(
      "fb",
    );
    expect(await byName.execute(failWith(new TimeoutError(5)))).toBe("fb");
    await expect(byName.execute(failWith(other))).rejects.toBe(other);
    const byPredicate = pipeline(fallbackStep("fb", { when: (e) => (e as Error).message === "soft" }));
    expect(await byPredicate.execute(failWith(new Error("soft")))).toBe("fb");
    await expect(byPredicate.execute(failWith(new Error("hard")))).rejects.toThrow("hard");
  });

  it("tests and passes a PermanentError's cause; an unmatched PermanentError goes on as it was", async () => {
    const cause = new Unavailable("gone");
    const permanent = new PermanentError(cause);
    const seen: unknown[] = [];
    const events: unknown[] = [];
    const step = fallbackStep(
      (error) => {
        seen.push(error);
        return "fb";
      },
      { when: Unavailable, onFallback: (event) => events.push(event.error) },
    );
    expect(await pipeline(step).execute(failWith(permanent))).toBe("fb");
    expect(seen).toEqual([cause]);
    expect(events).toEqual([cause]);
    // Not matched: the step rethrows the PermanentError itself, so that a retry step outside still stops.
    const other = new PermanentError(new Error("404"));
    const scope = new Scope(new VirtualClock(), Math.random);
    const direct = fallbackStep("fb", { when: Unavailable }).execute(failWith(other), scope);
    await expect(Promise.resolve(direct)).rejects.toBe(other);
    // A PermanentError without a cause is tested as itself.
    const bare = new PermanentError(undefined, "no cause");
    expect(await pipeline(fallbackStep("fb", { when: PermanentError })).execute(failWith(bare))).toBe("fb");
  });

  it("does not answer for the caller's abort, even when the operation fails because of it", async () => {
    let called = 0;
    let events = 0;
    const step = fallbackStep(() => {
      called += 1;
      return "fb";
    });
    step.on("fallback", () => {
      events += 1;
    });
    const p = pipeline(step);
    const controller = new AbortController();
    let rejectedInside = false;
    const call = p
      .execute(
        ({ signal }) =>
          new Promise<string>((_, reject) =>
            signal.addEventListener("abort", () => {
              rejectedInside = true;
              reject(signal.reason);
            }),
          ),
        { signal: controller.signal },
      )
      .catch((e: unknown) => e);
    const reason = new Error("caller gave up");
    controller.abort(reason);
    expect(await call).toBe(reason);
    await tick();
    expect(rejectedInside).toBe(true);
    expect([called, events]).toEqual([0, 0]);
    // Outside a pipeline too: a step given an aborted scope fails with its reason at once.
    const scope = new Scope(new VirtualClock(), Math.random, undefined, undefined, true);
    scope.abort("gone", "caller");
    expect(() => step.execute(() => "x", scope)).toThrow();
    expect(called).toBe(0);
  });

  it("answers for a timeout inside it: that is not the caller's abort", async () => {
    const clock = new VirtualClock();
    const p = pipeline(fallbackStep("slow", { when: TimeoutError }), timeoutStep(100));
    const call = p.execute(() => new Promise<string>(() => {}), {
      clock,
      signal: new AbortController().signal,
    });
    await clock.runAll();
    expect(await call).toBe("slow");
  });

  it("a fallback function that throws or rejects: that error is the outcome", async () => {
    const original = new Error("original");
    const thrown = new Error("fallback threw");
    const rejected = new Error("fallback rejected");
    await expect(pipeline(fallbackStep(failWith(thrown))).execute(failWith(original))).rejects.toBe(thrown);
    await expect(
      pipeline(fallbackStep(() => Promise.reject(rejected))).execute(failWith(original)),
    ).rejects.toBe(rejected);
  });

  it("a `when` predicate that throws: that error is the outcome", async () => {
    const broken = new Error("predicate broke");
    const p = pipeline(fallbackStep("fb", { when: failWith(broken) }));
    await expect(p.execute(failWith(new Error("x")))).rejects.toBe(broken);
  });

  it("a `when` predicate that answers with a promise is awaited, not taken as true", async () => {
    const original = new Error("not ours");
    const ours = new Unavailable("ours");
    const p = pipeline(fallbackStep("fb", { when: async (error) => error instanceof Unavailable }));
    await expect(p.execute(failWith(original))).rejects.toBe(original);
    expect(await p.execute(failWith(ours))).toBe("fb");
    // A PermanentError unmatched goes on unchanged, so that a retry step outside still sees it.
    const step = fallbackStep("fb", { when: async (error) => error instanceof Unavailable });
    const permanent = new PermanentError(original);
    const scope = new Scope(new VirtualClock(), Math.random);
    await expect(Promise.resolve(step.execute(failWith(permanent), scope))).rejects.toBe(permanent);
  });

  it("a `when` predicate that rejects: that error is the outcome, as when it throws", async () => {
    const broken = new Error("predicate rejected");
    const p = pipeline(fallbackStep("fb", { when: () => Promise.reject(broken) }));
    await expect(p.execute(failWith(new Error("x")))).rejects.toBe(broken);
  });

  it("the caller's abort while an async `when` is pending ends the step with the abort's reason", async () => {
    const answer = deferred<boolean>();
    const controller = new AbortController();
    const p = pipeline(fallbackStep("fb", { when: () => answer.promise }));
    const run = p.execute(failWith(new Error("x")), { signal: controller.signal });
    await tick();
    controller.abort(new Error("caller"));
    answer.resolve(true);
    await expect(run).rejects.toThrow("caller");
  });

  it("emits `fallback` with the error; a listener that throws goes to onCallbackError", async () => {
    const reports: [unknown, string][] = [];
    const step = fallbackStep("fb", { onCallbackError: (error, name) => reports.push([error, name]) });
    const heard: unknown[] = [];
    const handle = step.on("fallback", (event) => heard.push(event.error));
    const bad = new Error("listener");
    step.on("fallback", failWith(bad));
    const boom = new Error("boom");
    expect(await pipeline(step).execute(failWith(boom))).toBe("fb");
    handle.dispose();
    expect(await pipeline(step).execute(failWith(boom))).toBe("fb");
    expect(heard).toEqual([boom]);
    expect(reports).toEqual([
      [bad, "fallback"],
      [bad, "fallback"],
    ]);
  });

  it("`whenResult`: answers in place of a refused value, told it is a value; other values pass through", async () => {
    const clock = new VirtualClock();
    const seen: unknown[] = [];
    const heard: unknown[] = [];
    const step = fallbackStep(
      (outcome, context, what) => {
        seen.push(outcome, context.clock, what);
        return what.isValue ? "stale" : "error";
      },
      { whenResult: (status: number) => status === 503, onFallback: (event) => heard.push(event) },
    );
    const p = pipeline(step);
    expect(await p.execute(() => 503, { clock })).toBe("stale");
    expect(await p.execute(async () => 200, { clock })).toBe(200);
    const boom = new Error("boom");
    expect(await p.execute(failWith(boom), { clock })).toBe("error");
    expect(seen).toEqual([
      503,
      clock,
      { isValue: true, value: 503 },
      boom,
      clock,
      { isValue: false, error: boom },
    ]);
    expect(heard).toEqual([
      { isValue: true, value: 503 },
      { isValue: false, error: boom },
    ]);
    // `when` does not touch values: an error-only `when` still answers for refused values.
    const onlyValues = pipeline(fallbackStep("fb", { when: () => false, whenResult: (v) => v === null }));
    expect(await onlyValues.execute(() => null)).toBe("fb");
    await expect(onlyValues.execute(failWith(boom))).rejects.toBe(boom);
  });

  it("a `whenResult` predicate that answers with a promise is awaited, not taken as true", async () => {
    const p = pipeline(fallbackStep("fb", { whenResult: async (v) => v === "bad" }));
    expect(await p.execute(() => "good")).toBe("good");
    expect(await p.execute(() => "bad")).toBe("fb");
  });

  it("a `whenResult` predicate that throws or rejects: that error is the outcome", async () => {
    const broken = new Error("predicate broke");
    let called = 0;
    const fallback = () => {
      called += 1;
      return "fb";
    };
    for (const whenResult of [failWith(broken), () => Promise.reject(broken)]) {
      await expect(pipeline(fallbackStep(fallback, { whenResult })).execute(() => "x")).rejects.toBe(broken);
    }
    expect(called).toBe(0);
  });

  it("the caller's abort while an async `whenResult` is pending ends the step with the abort's reason", async () => {
    const answer = deferred<boolean>();
    const controller = new AbortController();
    let called = 0;
    const step = fallbackStep(
      () => {
        called += 1;
        return "fb";
      },
      { whenResult: () => answer.promise },
    );
    const run = pipeline(step).execute(() => "x", { signal: controller.signal });
    await tick();
    controller.abort(new Error("caller"));
    answer.resolve(true);
    await expect(run).rejects.toThrow("caller");
    await tick();
    expect(called).toBe(0);
  });

  it("settles synchronously over a synchronous outcome", () => {
    const scope = new Scope(new VirtualClock(), Math.random);
    const answer = fallbackStep("fb").execute<string>(failWith(new Error("x")), scope);
    expect(answer).toBeInstanceOf(Eventual);
    let value: unknown;
    settleWith(
      answer,
      (v) => {
        value = v;
      },
      () => {},
    );
    expect(value).toBe("fb");
  });

  it("refuses bad options, naming them", () => {
    const option = (make: () => unknown) => {
      try {
        make();
      } catch (error) {
        expect(error).toBeInstanceOf(OptionError);
        return (error as OptionError).option;
      }
      return undefined;
    };
    expect(option(() => fallbackStep(1, { when: 5 as never }))).toBe("steps.fallback: when");
    expect(option(() => fallbackStep(1, { when: [] }))).toBe("steps.fallback: when");
    expect(option(() => fallbackStep(1, { onFallback: "x" as never }))).toBe("steps.fallback: onFallback");
    expect(option(() => fallbackStep(1, { whenResult: true as never }))).toBe("steps.fallback: whenResult");
    expect(option(() => fallbackStep(1, { onCallbackError: 1 as never }))).toBe(
      "steps.fallback: onCallbackError",
    );
    expect(option(() => fallbackStep(1, { other: 1 } as never))).toBe("steps.fallback.other");
    expect(option(() => fallbackStep(1, 5 as never))).toBe("steps.fallback");
  });
});

describe("fallbackStep around a retry step", () => {
  const constant100 = { backoff: backoff.constant({ base: 100 }), jitter: jitter.none() };

  it("answers once the retries are spent", async () => {
    const clock = new VirtualClock();
    let attempts = 0;
    const fallbacks: unknown[] = [];
    const last = new Unavailable("still down");
    const p = pipeline(
      fallbackStep("fb", { onFallback: (event) => fallbacks.push(event.error) }),
      retryStep({ maxRetries: 2, ...constant100 }),
    );
    const call = p.execute(
      () => {
        attempts += 1;
        throw attempts === 3 ? last : new Unavailable(`down ${attempts}`);
      },
      { clock },
    );
    await clock.runAll();
    expect(await call).toBe("fb");
    expect(attempts).toBe(3);
    expect(clock.now()).toBe(200);
    expect(fallbacks).toEqual([last]);
  });

  it("answers at once for a PermanentError's cause: the retry step stops, the fallback sees the cause", async () => {
    const clock = new VirtualClock();
    let attempts = 0;
    const cause = new Unavailable("404");
    const seen: unknown[] = [];
    const p = pipeline(
      fallbackStep(
        (error) => {
          seen.push(error);
          return "default";
        },
        { when: Unavailable },
      ),
      retryStep({ maxRetries: 5, ...constant100 }),
    );
    const call = p.execute(
      () => {
        attempts += 1;
        throw new PermanentError(cause);
      },
      { clock },
    );
    await clock.runAll();
    expect(await call).toBe("default");
    expect(attempts).toBe(1);
    expect(seen).toEqual([cause]);
  });

  it("answers in place of the value the retries ended with, once `retryOnResult` gave up on it", async () => {
    const clock = new VirtualClock();
    let attempts = 0;
    const heard: unknown[] = [];
    const p = pipeline(
      fallbackStep("cached", { whenResult: (v) => v === 503, onFallback: (event) => heard.push(event) }),
      retryStep({ maxRetries: 2, retryOnResult: (v) => v === 503, ...constant100 }),
    );
    const call = p.execute(
      () => {
        attempts += 1;
        return 503;
      },
      { clock },
    );
    await clock.runAll();
    expect(await call).toBe("cached");
    expect(attempts).toBe(3);
    expect(heard).toEqual([{ isValue: true, value: 503 }]);
  });

  it("a success on a retry goes through untouched", async () => {
    const clock = new VirtualClock();
    let attempts = 0;
    const p = pipeline(fallbackStep("fb"), retryStep({ maxRetries: 2, ...constant100 }));
    const call = p.execute(
      () => {
        attempts += 1;
        if (attempts < 2) throw new Error("once");
        return "ok";
      },
      { clock },
    );
    await clock.runAll();
    expect(await call).toBe("ok");
  });

  it("the caller's abort during the retries is not answered for", async () => {
    const clock = new VirtualClock();
    const controller = new AbortController();
    let called = false;
    const p = pipeline(
      fallbackStep(() => {
        called = true;
        return "fb";
      }),
      retryStep({ maxRetries: 5, ...constant100 }),
    );
    const call = p
      .execute(failWith(new Error("down")), { clock, signal: controller.signal })
      .catch((e: unknown) => e);
    await clock.advance(150);
    controller.abort("stop");
    await clock.runAll();
    expect(await call).toBe("stop");
    expect(called).toBe(false);
  });
});
