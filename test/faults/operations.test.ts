// Operations that answer with something hostile: whatever an attempt answers, it is that attempt's outcome,
// judged by the policy like any other; nothing escapes into a timer's callback or past the caller.
import { backoff, jitter, pipeline, retry, steps } from "robustly";
import { describe, expect, it } from "vitest";
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
