// A call with the caller's signal makes its first attempt without the pipeline (see src/retry/first.ts).
// These tests race the caller's abort against that attempt's answer, microtask by microtask, and check
// that the call ends exactly as the full path (`execute(op, { signal, clock })`, through the steps) ends
// it: the same value or error, report, callbacks and fields, and nothing left behind.
import fc from "fast-check";
import {
  type AttemptContext,
  backoff,
  bulkhead,
  circuitBreaker,
  jitter,
  PermanentError,
  pipeline,
  type RetryOptions,
  retry,
  retryReport,
  steps,
  systemClock,
  wrap,
} from "robustly";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { deadlinesOf } from "../src/core/clock.js";
import { abortListeners, captureWarnings } from "./support/drive.js";

let unhandled: unknown[] = [];
const collect = (reason: unknown) => unhandled.push(reason);
beforeEach(() => {
  unhandled = [];
  process.on("unhandledRejection", collect);
});
afterEach(() => {
  process.off("unhandledRejection", collect);
});

type Entry = "full path" | "retry" | "wrap" | "pipeline";

/** How the first attempt answers. */
type Answer =
  | "value"
  | "resolve"
  | "reject"
  | "throw"
  | "bail, value"
  | "bail, resolve"
  | "thenable, value"
  | "thenable, error"
  | "thenable, both"
  | "then throws"
  | "then answers at once"
  | "hang";

const answers: Answer[] = [
  "value",
  "resolve",
  "reject",
  "throw",
  "bail, value",
  "bail, resolve",
  "thenable, value",
  "thenable, error",
  "thenable, both",
  "then throws",
  "then answers at once",
  "hang",
];

/** A promise whose `then` throws, as a hostile subclass's may. */
class HostilePromise<T> extends Promise<T> {
  // biome-ignore lint/suspicious/noThenProperty: the hostile answer under test
  override then(): never {
    throw new Error("then threw");
  }
}

/** A promise whose `then` calls back at once, before returning. */
class EagerPromise<T> extends Promise<T> {
  // biome-ignore lint/suspicious/noThenProperty: the hostile answer under test
  override then(ok?: ((value: T) => unknown) | null): never {
    ok?.(4 as T);
    return this as never;
  }
}

/** A thenable that is no promise (it settles at once when `then` says so), as the simulator's are. */
function thenable(then: (ok: (value: number) => void, fail: (error: unknown) => void) => void): unknown {
  return { then };
}

/** The first attempt's answer; later attempts answer 5 at once. */
function answer(kind: Answer, ctx: AttemptContext): unknown {
  switch (kind) {
    case "value":
      return 7;
    case "resolve":
      return Promise.resolve(7);
    case "reject":
      return Promise.reject(new Error("rejected"));
    case "throw":
      throw new Error("thrown");
    case "bail, value":
      ctx.bail(new Error("bailed"));
      return 1;
    case "bail, resolve":
      ctx.bail(new Error("bailed"));
      return Promise.resolve(1);
    case "thenable, value":
      return thenable((ok) => ok(9));
    case "thenable, error":
      return thenable((_, fail) => fail(new Error("thenable failed")));
    case "thenable, both":
      return thenable((ok, fail) => {
        fail(new Error("both, error first"));
        ok(3);
      });
    case "then throws":
      return HostilePromise.resolve(1);
    case "then answers at once":
      return EagerPromise.resolve(1);
    case "hang":
      return new Promise(() => {});
  }
}

/** What a call shows: its callbacks and ending in order, what the attempts saw, and what it left behind. */
interface Seen {
  heard: unknown[];
  listeners: number;
  queued: number | undefined;
}

const describeError = (error: unknown) =>
  error instanceof Error ? `${error.constructor.name}: ${error.message}` : String(error);

/**
 * Runs one call through `entry` with fake timers: the first attempt answers as `kind`, and the caller
 * aborts `abortAfter` microtasks after the attempt began (-1: inside the attempt, before it answers;
 * undefined: never, unless the call still hangs when every timer has run).
 */
async function run(
  entry: Entry,
  kind: Answer,
  abortAfter: number | undefined,
  timeout: number | undefined,
  maxRetries: number,
  reason: unknown,
): Promise<Seen> {
  vi.useFakeTimers();
  try {
    const heard: unknown[] = [];
    const controller = new AbortController();
    const abort = () => controller.abort(reason);
    const options: RetryOptions<number> = {
      maxRetries,
      backoff: backoff.constant({ base: 3 }),
      jitter: jitter.none(),
      onError: (error, retries) => heard.push(["onError", describeError(error), retries]),
      onRetry: ({ retries, delay, attempt, elapsed }) =>
        heard.push(["onRetry", retries, delay, attempt, elapsed]),
      onGiveUp: ({ reason, outcome, attempts, elapsed, idle }) =>
        heard.push(["onGiveUp", reason, describeError(outcome), attempts, elapsed, idle]),
    };
    const op = (ctx: AttemptContext): number => {
      const { attempt, retries, retriesLeft, timeout, elapsed } = ctx;
      heard.push(["attempt", attempt, retries, retriesLeft, timeout, elapsed]);
      const signal = ctx.signal;
      signal.addEventListener("abort", () => heard.push(["attempt's signal", describeError(signal.reason)]));
      if (attempt > 1) return 5;
      if (abortAfter === -1) abort();
      else if (abortAfter !== undefined) {
        let left = abortAfter;
        const later = () => (left-- === 0 ? abort() : queueMicrotask(later));
        queueMicrotask(later);
      }
      return answer(kind, ctx) as number;
    };
    const signal = controller.signal;
    const limit = timeout === undefined ? [] : [steps.timeout(timeout)];
    const short = timeout === undefined ? {} : { timeout };
    const call =
      entry === "retry"
        ? retry(op, { ...options, ...short, signal })
        : entry === "wrap"
          ? wrap(op, { ...options, ...short, signal })()
          : pipeline(steps.retry(options), ...limit).execute(
              op,
              entry === "pipeline" ? { signal } : { signal, clock: systemClock },
            );
    const ended = call.then(
      (value) => heard.push(["value", value]),
      (error) => {
        const report = retryReport(error);
        heard.push(["error", describeError(error), report === undefined ? undefined : { ...report }]);
      },
    );
    await vi.runAllTimersAsync();
    if (!controller.signal.aborted) abort();
    await vi.runAllTimersAsync();
    await ended;
    return { heard, listeners: abortListeners(signal), queued: deadlinesOf(systemClock)?.size };
  } finally {
    vi.useRealTimers();
  }
}

async function expectAsFullPath(
  kind: Answer,
  abortAfter: number | undefined,
  timeout: number | undefined,
  maxRetries = 1,
  reason: unknown = new Error("caller left"),
): Promise<void> {
  const reference = await run("full path", kind, abortAfter, timeout, maxRetries, reason);
  expect(reference).toMatchObject({ listeners: 0, queued: 0 });
  for (const entry of ["retry", "wrap", "pipeline"] as const) {
    expect({ entry, ...(await run(entry, kind, abortAfter, timeout, maxRetries, reason)) }).toEqual({
      entry,
      ...reference,
    });
  }
  expect(unhandled).toEqual([]);
}

describe("the caller's abort racing the first attempt made without the pipeline", () => {
  it("a value answered at once ends the call, though the caller aborts in the next microtask", async () => {
    for (const timeout of [undefined, 50]) {
      await expectAsFullPath("value", 0, timeout);
      await expectAsFullPath("thenable, value", 0, timeout);
    }
  });

  it("a bail with a value answered at once ends the call with the bail's error, though the caller aborts in the next microtask", async () => {
    for (const timeout of [undefined, 50]) await expectAsFullPath("bail, value", 0, timeout);
  });

  it("a thenable that fails at once is heard at once: the abort that follows comes after onError and onRetry", async () => {
    for (const timeout of [undefined, 50]) {
      await expectAsFullPath("thenable, error", 0, timeout);
      await expectAsFullPath("thenable, both", 0, timeout);
    }
  });

  it("without a time limit, an abort right after the attempt's promise rejects comes after onError and onRetry", async () => {
    await expectAsFullPath("reject", 1, undefined);
    await expectAsFullPath("bail, resolve", 1, undefined);
  });

  it("with a time limit, an abort right after the attempt's promise fulfils ends the call as the full path does", async () => {
    await expectAsFullPath("resolve", 1, 50);
  });

  it("a caller's signal aborted by the attempt's as its time runs out: onGiveUp is told before onTimeout, as the full path tells them", async () => {
    const run = async (entry: Entry) => {
      vi.useFakeTimers();
      try {
        const heard: string[] = [];
        const controller = new AbortController();
        const options: RetryOptions<number> = {
          maxRetries: 1,
          onGiveUp: ({ reason }) => heard.push(`onGiveUp ${reason}`),
          onError: (error) => heard.push(`onError ${describeError(error)}`),
        };
        const limit = steps.timeout({ ms: 10, onTimeout: () => heard.push("onTimeout") });
        const op = (ctx: AttemptContext) => {
          // The caller's work ends with any of its parts (a parent controller linked to its children's).
          ctx.signal.addEventListener("abort", () => {
            heard.push(`attempt's signal ${describeError(ctx.signal.reason)}`);
            controller.abort(new Error("a part ended"));
          });
          return new Promise<number>(() => {});
        };
        const signal = controller.signal;
        const p = pipeline(steps.retry(options), limit);
        const call = p.execute(op, entry === "pipeline" ? { signal } : { signal, clock: systemClock });
        const ended = call.then(
          () => heard.push("value"),
          (error) => heard.push(`error ${describeError(error)}`),
        );
        await vi.runAllTimersAsync();
        await ended;
        return { heard, listeners: abortListeners(signal), queued: deadlinesOf(systemClock)?.size };
      } finally {
        vi.useRealTimers();
      }
    };
    const reference = await run("full path");
    expect(reference.heard.indexOf("onGiveUp aborted")).toBeLessThan(reference.heard.indexOf("onTimeout"));
    expect(await run("pipeline")).toEqual(reference);
  });

  it("ends as the full path does, whatever the answer, the microtask of the abort and its reason", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...answers),
        fc.option(fc.integer({ min: -1, max: 6 }), { nil: undefined }),
        fc.constantFrom(undefined, 50),
        fc.integer({ min: 0, max: 2 }),
        fc.constantFrom<() => unknown>(
          () => new Error("caller left"),
          () => new PermanentError(new Error("permanent reason")),
          () => undefined,
          () => "a string",
          () => {
            const earlier = new Error("reported earlier");
            return Object.assign(earlier, {});
          },
        ),
        async (kind, abortAfter, timeout, maxRetries, reason) => {
          await expectAsFullPath(kind, abortAfter, timeout, maxRetries, reason());
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe("one caller's signal shared by many calls, some made without the pipeline, some through its steps", () => {
  it("aborted mid-way, rejects every call at once with its reason, tells each onGiveUp once, and leaves nothing behind", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.constantFrom("hang", "fail", "fail then hang"), { minLength: 100, maxLength: 100 }),
        fc.integer({ min: 0, max: 40 }),
        async (moves, abortAt) => {
          const captured = captureWarnings();
          vi.useFakeTimers();
          try {
            const controller = new AbortController();
            const { signal } = controller;
            const reason = new Error("shutting down");
            const gaveUp: number[] = [];
            const options = (i: number): RetryOptions<unknown> => ({
              maxRetries: 2,
              backoff: backoff.constant({ base: 7 }),
              jitter: jitter.none(),
              onGiveUp: () => gaveUp.push(i),
            });
            const pool = bulkhead({ limit: 10, queue: 100 });
            const breaker = circuitBreaker();
            const calls = moves.map((move, i) => {
              const op = (ctx: AttemptContext) => {
                void ctx.signal;
                if (move === "hang" || (move === "fail then hang" && ctx.attempt > 1))
                  return new Promise(() => {});
                return Promise.reject(new Error(`failed ${i}`));
              };
              switch (i % 8) {
                case 0:
                  return retry(op, { ...options(i), signal });
                case 1:
                  return retry(op, { ...options(i), timeout: 25, signal });
                case 2:
                  return wrap(op, { ...options(i), signal })();
                case 3:
                  return pipeline(steps.retry(options(i))).execute(op, { signal });
                case 4:
                  return pipeline(steps.retry(options(i)), steps.timeout(25)).execute(op, {
                    signal,
                    clock: systemClock,
                  });
                case 5:
                  return pipeline(steps.bulkhead(pool), steps.retry(options(i))).execute(op, { signal });
                case 6:
                  return pipeline(steps.retry(options(i)), steps.breaker(breaker)).execute(op, { signal });
                default:
                  return pipeline(steps.retry(options(i)), steps.hedge({ delay: 5 })).execute(op, { signal });
              }
            });
            const outcomes: string[] = [];
            for (const [i, call] of calls.entries()) {
              call.then(
                () => (outcomes[i] = "fulfilled"),
                (error) => (outcomes[i] = error === reason ? "aborted" : describeError(error)),
              );
            }
            await vi.advanceTimersByTimeAsync(abortAt);
            const before = [...outcomes];
            controller.abort(reason);
            // Every call still running rejects within microtasks of the abort, without any timer running.
            for (let hop = 0; hop < 50; hop++) await Promise.resolve();
            for (let i = 0; i < calls.length; i++) {
              expect({ i, outcome: outcomes[i] }).toEqual({ i, outcome: before[i] ?? "aborted" });
            }
            // Each call's retry step gives up once (one behind a bulkhead may have been waiting for a place).
            for (let i = 0; i < calls.length; i++) {
              const told = gaveUp.filter((j) => j === i).length;
              expect({ i, told }).toEqual({ i, told: i % 8 === 5 ? Math.min(told, 1) : 1 });
            }
            expect(abortListeners(signal)).toBe(0);
            expect(deadlinesOf(systemClock)?.size).toBe(0);
            expect(pool.running).toBe(0);
          } finally {
            vi.useRealTimers();
            captured.restore();
          }
          expect(captured.warnings).toEqual([]);
          expect(unhandled).toEqual([]);
        },
      ),
      { numRuns: 30 },
    );
  });
});
