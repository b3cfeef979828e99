// The iterator form `attempts(options)` at its edges (leaving early, ending, a signal aborted before it
// starts), the pipeline `retryPipeline(options)` builds, and a pipeline of a retry step executed without
// options, which runs its first attempt without the steps' machinery.
import {
  type Attempt,
  attempts,
  BreakerStep,
  backoff,
  circuitBreaker,
  jitter,
  pipeline,
  RetryStep,
  retry,
  retryPipeline,
  type Step,
  steps,
  TimeoutError,
  TimeoutStep,
} from "robustly";
import { VirtualClock } from "robustly/testing";
import { afterEach, describe, expect, it, vi } from "vitest";
import { abortListeners, deferred, drive } from "./support/drive.js";

const steady = { backoff: backoff.constant({ base: 1000 }), jitter: jitter.none() };

afterEach(() => {
  vi.useRealTimers();
});

describe("attempts(): an iterator at its ends", () => {
  it("return() before the first iteration answers done, and the loop then yields nothing", async () => {
    const clock = new VirtualClock();
    const iterator = attempts({ clock });
    expect(await iterator.return?.()).toEqual({ done: true, value: undefined });
    expect(await iterator.next()).toEqual({ done: true, value: undefined });
    expect(clock.pending).toBe(0);
  });

  it("once the loop has thrown the call's error, further next() and return() answer done without throwing again", async () => {
    const clock = new VirtualClock();
    const iterator = attempts({ clock, ...steady, maxRetries: 0 });
    const first = await iterator.next();
    const down = new Error("down");
    (first.value as Attempt).failure(down);
    await expect(iterator.next()).rejects.toBe(down);
    expect(await iterator.next()).toEqual({ done: true, value: undefined });
    expect(await iterator.return?.()).toEqual({ done: true, value: undefined });
    expect(clock.pending).toBe(0);
  });
});

describe("attempts() with a caller's signal aborted before the loop starts", () => {
  it("throws the signal's reason at the first iteration: no attempt is yielded and nothing is left watching the signal", async () => {
    const clock = new VirtualClock();
    const controller = new AbortController();
    const reason = new Error("shutting down");
    controller.abort(reason);
    const heard: string[] = [];
    let bodies = 0;
    const run = (async () => {
      for await (const attempt of attempts({
        clock,
        ...steady,
        signal: controller.signal,
        onAttempt: () => heard.push("attempt"),
      })) {
        bodies += 1;
        attempt.failure(new Error("never"));
      }
    })();
    expect(await drive(clock, run)).toEqual({ ok: false, error: reason });
    expect({ bodies, heard }).toEqual({ bodies: 0, heard: [] });
    expect(abortListeners(controller.signal)).toBe(0);
    expect(clock.pending).toBe(0);
  });
});

describe("attempts(): return() while the loop sleeps its backoff", () => {
  it("stops the wait at once, ends without throwing, and onGiveUp hears the loop's own abort", async () => {
    const clock = new VirtualClock();
    const heard: unknown[] = [];
    const iterator = attempts({
      clock,
      ...steady,
      maxRetries: 3,
      onRetry: ({ attempt, delay }) => heard.push(["retry", attempt, delay]),
      onGiveUp: ({ reason, outcome }) =>
        heard.push(["give up", reason, (outcome as Error).name, (outcome as Error).message]),
    });
    const first = await iterator.next();
    (first.value as Attempt).failure(new Error("down"));
    // The next iteration sleeps the backoff before the second attempt.
    const waiting = iterator.next();
    await Promise.resolve();
    expect(clock.pending).toBe(1);
    const left = iterator.return?.() as Promise<IteratorResult<Attempt>>;
    // The backoff's timer is cancelled at once, not when it would have fired.
    expect(clock.pending).toBe(0);
    expect(await left).toEqual({ done: true, value: undefined });
    expect(heard).toEqual([
      ["retry", 1, 1000],
      ["give up", "aborted", "AbortError", "the attempts() loop was left"],
    ]);
    expect(clock.now()).toBe(0);
    // The iteration that was waiting ends too, as the loop does: done, without throwing the loop's own abort.
    expect(await waiting).toEqual({ done: true, value: undefined });
  });
});

describe("attempts(): what the body reports", () => {
  it("the first report counts: failure(error) then success(value), then break, is a failure the loop does not rethrow", async () => {
    const clock = new VirtualClock();
    const heard: unknown[] = [];
    const down = new Error("down");
    const run = async () => {
      let iterations = 0;
      for await (const attempt of attempts({
        clock,
        ...steady,
        maxRetries: 0,
        onError: (error, retries) => heard.push(["error", (error as Error).message, retries]),
        onSuccess: (value) => heard.push(["success", value]),
        onGiveUp: ({ reason, outcome }) => heard.push(["give up", reason, outcome]),
      })) {
        iterations += 1;
        attempt.failure(down);
        attempt.success(42);
        break;
      }
      return iterations;
    };
    expect(await drive(clock, run())).toEqual({ ok: true, value: 1 });
    expect(heard).toEqual([
      ["error", "down", 0],
      ["give up", "retries", down],
    ]);
    expect(clock.pending).toBe(0);
  });

  it("a break after success(value) whose retryOnResult throws, with no retry left, throws that error: it is the attempt's", async () => {
    const clock = new VirtualClock();
    const verdictFailed = new Error("cannot judge");
    const successes: unknown[] = [];
    const run = async () => {
      for await (const attempt of attempts<number>({
        clock,
        ...steady,
        maxRetries: 0,
        retryOnResult: () => {
          throw verdictFailed;
        },
        onSuccess: (value) => successes.push(value),
      })) {
        attempt.success(7);
        break;
      }
    };
    expect(await drive(clock, run())).toEqual({ ok: false, error: verdictFailed });
    expect(successes).toEqual([]);
    expect(clock.pending).toBe(0);
  });

  it("a break after the last attempt timed out throws the TimeoutError the call gave up with, reported or not", async () => {
    for (const report of [false, true]) {
      const clock = new VirtualClock();
      const gaveUp: unknown[] = [];
      let iterations = 0;
      const run = async () => {
        for await (const attempt of attempts({
          clock,
          ...steady,
          maxRetries: 0,
          timeout: 500,
          onGiveUp: ({ reason }) => gaveUp.push(reason),
        })) {
          iterations += 1;
          await clock.sleep(600);
          if (report) attempt.success("too late");
          break;
        }
      };
      const result = await drive(clock, run());
      expect(result.ok).toBe(false);
      const error = (result as { error: unknown }).error;
      expect(error).toBeInstanceOf(TimeoutError);
      expect((error as Error).message).toBe("The attempt timed out after 500 ms");
      expect({ iterations, gaveUp }).toEqual({ iterations: 1, gaveUp: ["retries"] });
      expect(clock.pending).toBe(0);
    }
  });

  it("leaving after an attempt timed out, while an async retryOn still judges its error, stops the call at once", async () => {
    const clock = new VirtualClock();
    const verdict = deferred<boolean>();
    const heard: unknown[] = [];
    let iterations = 0;
    const run = (async () => {
      for await (const attempt of attempts({
        clock,
        ...steady,
        timeout: 500,
        retryOn: () => verdict.promise,
        onError: (error) => heard.push(["error", (error as Error).name]),
        onRetry: () => heard.push(["retry"]),
        onGiveUp: ({ reason, outcome }) => heard.push(["give up", reason, (outcome as Error).name]),
      })) {
        iterations += 1;
        await clock.sleep(600);
        expect(attempt.signal.aborted).toBe(true);
        break;
      }
    })();
    await clock.advance(600);
    // The policy would not have retried the timeout: the call was stopped before it said so.
    verdict.resolve(false);
    expect(await drive(clock, run)).toEqual({ ok: true, value: undefined });
    expect({ iterations, heard }).toEqual({
      iterations: 1,
      heard: [
        ["error", "TimeoutError"],
        ["give up", "aborted", "AbortError"],
      ],
    });
    expect(clock.pending).toBe(0);
  });

  it("a loop that retries without an onRetry of its own hears no callback error", async () => {
    const clock = new VirtualClock();
    const callbackErrors: unknown[] = [];
    const seen: number[] = [];
    const run = async () => {
      for await (const attempt of attempts({
        clock,
        ...steady,
        onCallbackError: (error, callback) => callbackErrors.push([callback, error]),
      })) {
        seen.push(attempt.attempt);
        if (attempt.attempt < 3) attempt.failure(new Error("not yet"));
        else break;
      }
    };
    expect(await drive(clock, run())).toEqual({ ok: true, value: undefined });
    expect(seen).toEqual([1, 2, 3]);
    expect(callbackErrors).toEqual([]);
    expect(clock.now()).toBe(2000);
  });

  it("leaving right after a failure: onGiveUp's outcome is an AbortError that says the loop was left", async () => {
    const clock = new VirtualClock();
    const outcomes: unknown[] = [];
    for await (const attempt of attempts({
      clock,
      ...steady,
      onGiveUp: ({ reason, outcome }) => outcomes.push(reason, outcome),
    })) {
      attempt.failure(new Error("down"));
      break;
    }
    expect(outcomes).toHaveLength(2);
    expect(outcomes[0]).toBe("aborted");
    expect(outcomes[1]).toBeInstanceOf(DOMException);
    expect(outcomes[1]).toMatchObject({ name: "AbortError", message: "the attempts() loop was left" });
    expect(clock.pending).toBe(0);
  });
});

/** The kinds of a pipeline's steps, outermost first, with a timeout's limit; given steps by identity. */
function shape(p: { steps: readonly Step[] }, given: Record<string, Step> = {}): unknown[] {
  return p.steps.map((step) => {
    for (const [name, value] of Object.entries(given)) if (step === value) return name;
    if (step instanceof RetryStep) return "retry";
    if (step instanceof BreakerStep) return "breaker";
    if (step instanceof TimeoutStep) return `timeout ${step.ms}`;
    return "other";
  });
}

describe("retryPipeline(options): the steps, in the documented order retry → breaker → timeout → hedge → chaos", () => {
  it("holds only the steps the options name", () => {
    const hedge = steps.hedge({ delay: 100 });
    const chaos = steps.chaos({ fault: { rate: 0, error: () => new Error("injected") } });
    const breaker = circuitBreaker();
    expect(shape(retryPipeline())).toEqual(["retry"]);
    expect(shape(retryPipeline({ timeout: 2000 }))).toEqual(["retry", "timeout 2000"]);
    expect(shape(retryPipeline({ breaker }))).toEqual(["retry", "breaker"]);
    expect(shape(retryPipeline({ breaker, timeout: 2000 }))).toEqual(["retry", "breaker", "timeout 2000"]);
    expect(shape(retryPipeline({ hedge }), { hedge })).toEqual(["retry", "hedge"]);
    expect(shape(retryPipeline({ chaos }), { chaos })).toEqual(["retry", "chaos"]);
    expect(shape(retryPipeline({ hedge, timeout: 2000 }), { hedge })).toEqual([
      "retry",
      "timeout 2000",
      "hedge",
    ]);
    expect(shape(retryPipeline({ hedge, chaos, timeout: 2000 }), { hedge, chaos })).toEqual([
      "retry",
      "timeout 2000",
      "hedge",
      "chaos",
    ]);
    expect(shape(retryPipeline({ breaker, hedge, chaos, timeout: 2000 }), { hedge, chaos })).toEqual([
      "retry",
      "breaker",
      "timeout 2000",
      "hedge",
      "chaos",
    ]);
    expect(shape(retryPipeline({ breaker, chaos }), { chaos })).toEqual(["retry", "breaker", "chaos"]);
  });
});

describe("retry(op, options) with several steps inside each attempt", () => {
  it("runs each attempt through the breaker, then the chaos step: a fault injected in place of the operation reaches the breaker", async () => {
    const clock = new VirtualClock();
    const breaker = circuitBreaker({ clock });
    const chaos = steps.chaos({ fault: { rate: 1, error: () => new Error("injected") } });
    let calls = 0;
    const op = () => {
      calls += 1;
      return "answer";
    };
    const result = await drive(clock, retry(op, { clock, breaker, chaos, maxRetries: 0 }));
    expect(result.ok).toBe(false);
    expect((result as { error: Error }).error.message).toBe("injected");
    expect(calls).toBe(0);
    expect(breaker.snapshot()).toMatchObject({ state: "closed", consecutiveFailures: 1 });
  });

  it("runs each attempt through the hedge step, then the chaos step", async () => {
    const clock = new VirtualClock();
    const hedge = steps.hedge({ delay: 100 });
    const chaos = steps.chaos({ fault: { rate: 1, error: () => new Error("injected") } });
    let calls = 0;
    const op = () => {
      calls += 1;
      return "answer";
    };
    const result = await drive(clock, retry(op, { clock, hedge, chaos, maxRetries: 0 }));
    expect(result.ok).toBe(false);
    expect((result as { error: Error }).error.message).toBe("injected");
    expect(calls).toBe(0);
  });
});

/** A step of the caller's that records the attempt it runs in, then runs the rest. */
function recorder(seen: number[]): Step {
  return {
    execute: (next, context) => {
      seen.push(context.attempt);
      return next(context);
    },
  };
}

describe("a pipeline that starts with a retry step, executed without options", () => {
  it("runs a step of the caller's placed right after the retry step on every attempt", async () => {
    const seen: number[] = [];
    const p = pipeline(steps.retry({ maxRetries: 2, backoff: backoff.none() }), recorder(seen));
    let calls = 0;
    const value = await p.execute(() => {
      calls += 1;
      if (calls < 3) throw new Error("not yet");
      return calls;
    });
    expect(value).toBe(3);
    expect(seen).toEqual([1, 2, 3]);
  });

  it("runs a step of the caller's placed after a retry step and a timeout", async () => {
    const seen: number[] = [];
    const p = pipeline(steps.retry({ maxRetries: 0 }), steps.timeout(60_000), recorder(seen));
    expect(await p.execute(() => "answer")).toBe("answer");
    expect(await p.execute(async () => "later")).toBe("later");
    expect(seen).toEqual([1, 1]);
  });

  it("with a cooperative timeout after it, lets the operation's own late answer stand once its signal aborted", async () => {
    vi.useFakeTimers({
      toFake: ["setTimeout", "clearTimeout", "setInterval", "clearInterval", "performance", "Date"],
    });
    const p = pipeline(steps.retry({ maxRetries: 0 }), steps.timeout({ ms: 100, cooperative: true }));
    const gate = deferred<string>();
    let signal: AbortSignal | undefined;
    const call = p.execute((context) => {
      signal = context.signal;
      return gate.promise;
    });
    await vi.advanceTimersByTimeAsync(150);
    expect(signal?.aborted).toBe(true);
    expect(signal?.reason).toBeInstanceOf(TimeoutError);
    gate.resolve("late but whole");
    expect(await call).toBe("late but whole");
  });
});
