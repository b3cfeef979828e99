// The pipeline's own contract: one context per execution, the caller's signal watched once however many
// calls share it, the execution's clock and randomness reaching every step, typed events whose
// listeners cannot disturb a call, and steps that settle synchronously over synchronous outcomes.
import fc from "fast-check";
import {
  backoff,
  circuitBreaker,
  type ExecutionContext,
  type GiveUpEvent,
  jitter,
  OptionError,
  PermanentError,
  pipeline,
  retry,
  retryBudget,
  type Step,
  steps,
} from "robustly";
import { seededRandom } from "robustly/testing";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { abortListeners, drive, tick, VirtualClock } from "./support/drive.js";

const constant100 = { backoff: backoff.constant({ base: 100 }), jitter: jitter.none() };

describe("one caller's signal shared by many calls", () => {
  const warnings: Error[] = [];
  const onWarning = (warning: Error) => warnings.push(warning);
  beforeEach(() => {
    warnings.length = 0;
    process.on("warning", onWarning);
  });
  afterEach(() => {
    process.off("warning", onWarning);
  });

  it("adds one abort listener for all of them, and none is left once they settle", async () => {
    const clock = new VirtualClock();
    const controller = new AbortController();
    const calls = Array.from({ length: 50 }, (_, i) =>
      retry(async () => i, { signal: controller.signal, timeout: 1000, clock, maxRetries: 0 }),
    );
    const p = pipeline(steps.retry({ maxRetries: 1 }), steps.timeout(1000));
    const more = Array.from({ length: 50 }, (_, i) =>
      p.execute(() => new Promise<number>((resolve) => clock.setTimer(10, () => resolve(i))), {
        signal: controller.signal,
        clock,
      }),
    );
    expect(abortListeners(controller.signal)).toBeLessThanOrEqual(1);
    await clock.runAll();
    expect(await Promise.all(calls)).toHaveLength(50);
    expect(await Promise.all(more)).toHaveLength(50);
    expect(abortListeners(controller.signal)).toBe(0);
    await tick();
    expect(warnings.filter((w) => w.name === "MaxListenersExceededWarning")).toEqual([]);
  });

  it("aborting it rejects every call at once with its reason", async () => {
    const clock = new VirtualClock();
    const controller = new AbortController();
    const p = pipeline(steps.retry({ maxRetries: 5, ...constant100 }), steps.timeout(1000));
    const hung = Array.from({ length: 20 }, () =>
      p.execute(() => new Promise<never>(() => {}), { signal: controller.signal, clock }).catch((e) => e),
    );
    const reason = new Error("shutting down");
    controller.abort(reason);
    for (const outcome of await Promise.all(hung)) expect(outcome).toBe(reason);
    expect(clock.pending).toBe(0);
    expect(abortListeners(controller.signal)).toBe(0);
  });
});

describe("pipeline() and execute() check what they are given", () => {
  it("refuses what is not a step, naming its place", () => {
    expect(() => pipeline(steps.retry(), {} as Step)).toThrow(OptionError);
    expect(() => pipeline(steps.retry(), {} as Step)).toThrow(/pipeline: steps\[1\]/);
  });

  it("rejects a bad execute option, an unknown one and a non-function operation", async () => {
    const p = pipeline(steps.retry());
    await expect(p.execute(async () => 1, { signal: "no" as unknown as AbortSignal })).rejects.toThrow(
      /execute: signal/,
    );
    await expect(p.execute(async () => 1, { clocks: 1 } as never)).rejects.toThrow(/execute\.clocks/);
    await expect(p.execute(42 as never)).rejects.toThrow(/operation must be a function/);
  });

  it("an execution whose signal aborted already runs nothing", async () => {
    let calls = 0;
    const reason = new Error("gone");
    const p = pipeline(steps.retry(), steps.timeout(100));
    await expect(
      p.execute(
        async () => {
          calls += 1;
        },
        { signal: AbortSignal.abort(reason) },
      ),
    ).rejects.toBe(reason);
    expect(calls).toBe(0);
  });
});

describe("the execution's clock and randomness reach every step", () => {
  it("jitter draws from execute's random: the same seed gives the same sleeps", async () => {
    const sleeps = async (seed: number) => {
      const clock = new VirtualClock();
      const seen: number[] = [];
      const p = pipeline(
        steps.retry({
          maxRetries: 4,
          backoff: backoff.exponential({ base: 100 }),
          jitter: jitter.full(),
          onRetry: (e) => seen.push(e.delay),
        }),
      );
      await drive(
        clock,
        p.execute(() => Promise.reject(new Error("x")), { clock, random: seededRandom(seed) }),
      );
      return seen;
    };
    const a = await sleeps(7);
    expect(a).toHaveLength(4);
    expect(await sleeps(7)).toEqual(a);
    expect(await sleeps(8)).not.toEqual(a);
  });

  it("a breaker built with its own clock keeps it, whatever the execution's", async () => {
    const own = new VirtualClock();
    const other = new VirtualClock();
    const breaker = circuitBreaker({
      consecutiveFailures: 1,
      openFor: backoff.constant({ base: 1000 }),
      clock: own,
    });
    const p = pipeline(steps.breaker(breaker));
    await expect(p.execute(() => Promise.reject(new Error("x")), { clock: other })).rejects.toThrow("x");
    await other.advance(5000); // the execution's clock moving does not close it
    expect(breaker.state).toBe("open");
    await own.advance(1000);
    expect(breaker.state).toBe("half-open");
  });

  it("every step and the operation see one context per attempt, with the attempt's numbers", async () => {
    const clock = new VirtualClock();
    const seen: [string, number, number][] = [];
    const spy = (name: string): Step => ({
      execute(next, context) {
        seen.push([name, context.attempt, context.timeout]);
        return next(context);
      },
    });
    const p = pipeline(
      spy("outer"),
      steps.retry({ maxRetries: 2, ...constant100 }),
      spy("inner"),
      steps.timeout(500),
    );
    const op = (context: ExecutionContext) => {
      seen.push(["op", context.attempt, context.timeout]);
      return context.attempt < 3 ? Promise.reject(new Error("again")) : Promise.resolve("ok");
    };
    const outcome = await drive(clock, p.execute(op, { clock }));
    expect(outcome).toEqual({ ok: true, value: "ok" });
    expect(seen).toEqual([
      ["outer", 1, Number.POSITIVE_INFINITY],
      ["inner", 1, Number.POSITIVE_INFINITY],
      ["op", 1, 500],
      ["inner", 2, Number.POSITIVE_INFINITY],
      ["op", 2, 500],
      ["inner", 3, Number.POSITIVE_INFINITY],
      ["op", 3, 500],
    ]);
  });
});

describe("the retry step's giveUp event", () => {
  async function giveUp(
    setUp: (clock: VirtualClock) => {
      p: ReturnType<typeof pipeline>;
      signal?: AbortSignal;
      abortAt?: () => void;
    },
    op: () => Promise<unknown>,
  ): Promise<GiveUpEvent[]> {
    const clock = new VirtualClock();
    const { p, abortAt } = setUp(clock);
    const events: GiveUpEvent[] = [];
    const step = p.steps[0] as ReturnType<typeof steps.retry>;
    const handle = step.on("giveUp", (e) => events.push(e));
    const controller = new AbortController();
    if (abortAt !== undefined) clock.setTimer(150, () => controller.abort(new Error("stop")));
    await drive(clock, p.execute(op, { clock, signal: controller.signal }));
    handle.dispose();
    return events;
  }
  const fail = () => Promise.reject(new Error("503"));

  it("says why, once, for each reason", async () => {
    const reasons = async (
      options: Parameters<typeof steps.retry>[0],
      op: () => Promise<unknown> = fail,
      extra: Step[] = [],
      abort = false,
    ) =>
      (
        await giveUp(
          () => ({
            p: pipeline(steps.retry({ ...constant100, ...options }), ...extra),
            abortAt: abort ? () => {} : undefined,
          }),
          op,
        )
      ).map((e) => [e.reason, e.attempts]);
    expect(await reasons({ maxRetries: 2 })).toEqual([["retries", 3]]);
    expect(await reasons({ maxRetries: 10, maxElapsed: 250 })).toEqual([["elapsed", 3]]);
    expect(await reasons({ retryOn: TypeError })).toEqual([["not-retryable", 1]]);
    expect(await reasons({}, () => Promise.reject(new PermanentError(new Error("404"))))).toEqual([
      ["permanent", 1],
    ]);
    expect(await reasons({ maxRetries: 5, budget: retryBudget({ maxTokens: 4, tokenRatio: 0.1 }) })).toEqual([
      ["budget", 2],
    ]);
    expect(await reasons({ maxRetries: 5 }, fail, [], true)).toEqual([["aborted", 2]]);
    const breaker = circuitBreaker({ consecutiveFailures: 1 });
    expect(await reasons({ maxRetries: 5 }, fail, [steps.breaker(breaker)])).toEqual([["breaker", 1]]);
  });

  it("a listener or callback that throws or rejects goes to onCallbackError and changes nothing", async () => {
    const clock = new VirtualClock();
    const reported: [string, string][] = [];
    const step = steps.retry({
      maxRetries: 1,
      ...constant100,
      onGiveUp: () => {
        throw new Error("sync");
      },
      onRetry: async () => {
        throw new Error("async");
      },
      onCallbackError: (error, name) => reported.push([name, (error as Error).message]),
    });
    step.on("giveUp", () => Promise.reject(new Error("listener")));
    step.on("retry", () => new Promise(() => {})); // never settles: nothing waits for it
    const outcome = await drive(clock, pipeline(step).execute(fail, { clock }));
    await tick();
    expect(outcome.ok).toBe(false);
    expect((outcome as { error: Error }).error.message).toBe("503");
    expect(reported.sort()).toEqual([
      ["giveUp", "listener"],
      ["onGiveUp", "sync"],
      ["onRetry", "async"],
    ]);
  });
});

describe("steps over synchronous outcomes settle synchronously", () => {
  // The simulator's operations answer with thenables it settles itself, with no microtask; the steps over
  // them must answer the same way, or a simulation would depend on the microtask queue.
  const syncThenable = <T>(ok: boolean, value: T): PromiseLike<T> => ({
    // biome-ignore lint/suspicious/noThenProperty: a synchronous thenable on purpose
    then(onValue, onError) {
      if (ok) onValue?.(value);
      else onError?.(new Error("sync failure"));
      return this as never;
    },
  });

  it("retry + breaker + timeout over a synchronous thenable: the outcome is known before execute returns", () => {
    fc.assert(
      fc.property(fc.array(fc.boolean(), { minLength: 1, maxLength: 6 }), (outcomes) => {
        const clock = new VirtualClock();
        const breaker = circuitBreaker({ consecutiveFailures: 100, clock });
        const p = pipeline(steps.retry({ maxRetries: 0 }), steps.breaker(breaker), steps.timeout(1000));
        for (const ok of outcomes) {
          let heard: string | undefined;
          const answer = p.execute(() => syncThenable(ok, 1), { clock });
          // Internally: the pipeline as a step over a scope answers synchronously.
          void answer.catch(() => {});
          const inner = pipeline(steps.retry({ maxRetries: 0 }), steps.breaker(breaker), steps.timeout(1000));
          const outer: Step = {
            execute(next, context) {
              const result = inner.execute(next, context) as PromiseLike<unknown>;
              (result as { listen?: (a: () => void, b: () => void) => void }).listen?.(
                () => {
                  heard = "ok";
                },
                () => {
                  heard = "failed";
                },
              );
              return result as never;
            },
          };
          void pipeline(outer)
            .execute(() => syncThenable(ok, 1), { clock })
            .catch(() => {});
          expect(heard).toBe(ok ? "ok" : "failed");
        }
        expect(clock.pending).toBe(0);
      }),
    );
  });
});
