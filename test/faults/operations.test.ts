// Operations that answer with something hostile: whatever an attempt answers, it is that attempt's outcome,
// judged by the policy like any other; nothing escapes into a timer's callback or past the caller.
import { backoff, jitter, pipeline, retry, steps } from "robustly";
import { describe, expect, it, vi } from "vitest";
import { deadlinesOf, systemClock } from "../../src/core/clock.js";
import { drive, VirtualClock } from "../support/drive.js";

const quick = { backoff: backoff.constant({ base: 10 }), jitter: jitter.none() };

/** An object whose `then` getter throws: awaiting it rejects with that error. */
function hostileThenable(): object {
  const answer = {};
  // biome-ignore lint/suspicious/noThenProperty: a hostile thenable is what this test is about
  Object.defineProperty(answer, "then", {
    get() {
      throw new Error("then getter");
    },
  });
  return answer;
}

/** Attempt i answers `plan[i]()`. */
function operation(plan: (() => unknown)[]) {
  let calls = 0;
  return () => {
    calls += 1;
    return (plan[Math.min(calls, plan.length) - 1] as () => unknown)();
  };
}

const fail = () => Promise.reject(new Error("down"));
const ok = () => "ok";

describe("an operation whose answer has a `then` getter that throws", () => {
  it("on a retry, fails that attempt, which is retried, instead of throwing out of the backoff timer", async () => {
    const clock = new VirtualClock();
    const errors: string[] = [];
    const result = await drive(
      clock,
      retry(operation([fail, hostileThenable, ok]), {
        ...quick,
        clock,
        maxRetries: 3,
        onError: (error) => errors.push((error as Error).message),
      }),
    );
    expect(result).toEqual({ ok: true, value: "ok" });
    expect(errors).toEqual(["down", "then getter"]);
  });

  it("on the first attempt of a pipeline's retry step, fails that attempt, which is retried, as retry() does", async () => {
    for (const run of [
      (op: () => unknown, clock: VirtualClock) => retry(op, { ...quick, clock }),
      (op: () => unknown, clock: VirtualClock) => pipeline(steps.retry(quick)).execute(op, { clock }),
      (op: () => unknown, clock: VirtualClock) =>
        pipeline(steps.retry(quick), steps.timeout(1000)).execute(op, { clock }),
    ]) {
      const clock = new VirtualClock();
      const result = await drive(clock, run(operation([hostileThenable, ok]), clock) as Promise<unknown>);
      expect(result).toEqual({ ok: true, value: "ok" });
    }
  });
});

/** A promise whose `then` throws, as a hostile subclass's can: awaiting it rejects with that error. */
class ThenThrows<T> extends Promise<T> {
  // biome-ignore lint/suspicious/noThenProperty: a hostile promise is what this test is about
  override then(): never {
    throw new Error("then throws");
  }
}

describe("an operation answering with a promise whose `then` throws", () => {
  it("fails that attempt, which is retried, on every path; nothing throws at the caller, and no timeout fires later", async () => {
    const again = { maxRetries: 1, backoff: backoff.none() };
    const ways: [string, (op: () => unknown) => Promise<unknown>][] = [
      ["retry", (op) => retry(op, again)],
      ["retry with a timeout", (op) => retry(op, { ...again, timeout: 20 })],
      ["pipeline", (op) => pipeline(steps.retry(again)).execute(op)],
      ["pipeline with a timeout", (op) => pipeline(steps.retry(again), steps.timeout(20)).execute(op)],
      ["pipeline run through its steps", (op) => pipeline(steps.retry(again)).execute(op, {})],
      [
        "pipeline with a timeout run through its steps",
        (op) => pipeline(steps.retry(again), steps.timeout(20)).execute(op, {}),
      ],
    ];
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on("unhandledRejection", onUnhandled);
    // Fake timers drive the real clock, so that a timeout left behind would fire within the test.
    vi.useFakeTimers();
    try {
      const seen: { [how: string]: unknown } = {};
      for (const [how, run] of ways) {
        let attempts = 0;
        const op = () => {
          attempts += 1;
          return attempts === 1 ? new ThenThrows<string>(() => {}) : "ok";
        };
        let outcome: Promise<unknown>;
        try {
          outcome = run(op).then(
            (value) => value,
            (error: unknown) => `rejected: ${(error as Error).message}`,
          );
        } catch (error) {
          outcome = Promise.resolve(`threw: ${(error as Error).message}`);
        }
        await vi.advanceTimersByTimeAsync(50);
        seen[how] = { outcome: await outcome, queued: deadlinesOf(systemClock)?.size };
      }
      expect(seen).toEqual(Object.fromEntries(ways.map(([how]) => [how, { outcome: "ok", queued: 0 }])));
      expect(unhandled).toEqual([]);
    } finally {
      vi.useRealTimers();
      process.off("unhandledRejection", onUnhandled);
    }
  });
});
