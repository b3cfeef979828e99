// What the retry loop promises its callers beyond the value it ends with: which attempts it makes once the
// caller gave up, what it tells its callbacks then (once, with exact payloads), what the steps around and
// inside it hear of a retry step's answer and of its aborts, and that it leaves nothing behind.
import {
  type AttemptContext,
  backoff,
  circuitBreaker,
  type ExecutionContext,
  type GiveUpEvent,
  jitter,
  type Next,
  pipeline,
  type RetryOptions,
  retry,
  type Step,
  steps,
} from "robustly";
import { afterEach, describe, expect, it } from "vitest";
import { deadlinesOf, systemClock } from "../src/core/clock.js";
import { abortListeners, deferred, drive, tick, unhandledRejections, VirtualClock } from "./support/drive.js";

const unhandled = unhandledRejections();
afterEach(() => {
  expect(unhandled).toEqual([]);
});

/** A thenable whose outcome the test settles by hand, at once, from wherever it likes (a simulator's). */
function handThenable<T>(): {
  thenable: PromiseLike<T>;
  resolve: (value: T) => void;
  reject: (error: unknown) => void;
} {
  let ok: ((value: T) => unknown) | undefined;
  let fail: ((error: unknown) => unknown) | undefined;
  const thenable = {
    // biome-ignore lint/suspicious/noThenProperty: a thenable settled synchronously, as in the simulator
    then(onOk?: ((value: T) => unknown) | null, onFail?: ((error: unknown) => unknown) | null) {
      ok = onOk ?? undefined;
      fail = onFail ?? undefined;
      return thenable as never;
    },
  } as PromiseLike<T>;
  return {
    thenable,
    resolve: (value) => ok?.(value),
    reject: (error) => fail?.(error),
  };
}

/** Callbacks that record what they hear, errors by message. */
function recorder(): { heard: unknown[]; options: RetryOptions<number> } {
  const heard: unknown[] = [];
  const message = (e: unknown) => (e instanceof Error ? e.message : e);
  return {
    heard,
    options: {
      onError: (error, retries) => heard.push(["onError", message(error), retries]),
      onRetry: (event) => heard.push(["onRetry", message(event.error), event.attempt, event.delay]),
      onGiveUp: (event) => heard.push(["onGiveUp", { ...event, outcome: message(event.outcome) }]),
      onSuccess: (value, stats) => heard.push(["onSuccess", value, stats.attempts]),
    },
  };
}

describe("a per-attempt timeout on the real clock", () => {
  it("is a deadline of the clock's shared queue while the attempt runs, and leaves it when the attempt answers", async () => {
    const queue = deadlinesOf(systemClock);
    const before = queue?.size;
    const seen: (number | undefined)[] = [];
    const value = await retry(
      () => {
        seen.push(queue?.size);
        return Promise.resolve(7);
      },
      { timeout: 60_000, maxRetries: 0 },
    );
    expect(value).toBe(7);
    expect(seen).toEqual([(before ?? 0) + 1]);
    expect(queue?.size).toBe(before);
  });

  it("of 0 ms expires at the next turn on a timer of its own, queuing no deadline", async () => {
    const queue = deadlinesOf(systemClock);
    const before = queue?.size;
    const seen: (number | undefined)[] = [];
    const error = await retry(
      () => {
        seen.push(queue?.size);
        return new Promise<never>(() => {});
      },
      { timeout: 0, maxRetries: 0 },
    ).catch((e: unknown) => e);
    expect(seen).toEqual([before]);
    expect((error as Error).name).toBe("TimeoutError");
    expect(queue?.size).toBe(before);
  });
});

describe("an operation whose native promise has a `then` of its own that throws", () => {
  it("fails that attempt with the thrown error, which is retried like any other", async () => {
    const clock = new VirtualClock();
    const { heard, options } = recorder();
    let calls = 0;
    const settled = await drive(
      clock,
      retry(
        () => {
          calls += 1;
          if (calls > 1) return Promise.resolve(calls);
          const hostile = Promise.resolve(0);
          // biome-ignore lint/suspicious/noThenProperty: a native promise with a `then` of its own that throws
          Object.defineProperty(hostile, "then", {
            value: () => {
              throw new Error("then threw");
            },
          });
          return hostile;
        },
        {
          clock,
          maxRetries: 2,
          backoff: backoff.constant({ base: 10 }),
          jitter: jitter.none(),
          onError: options.onError,
        },
      ),
    );
    expect(settled).toEqual({ ok: true, value: 2 });
    expect(heard).toEqual([["onError", "then threw", 0]]);
    expect(clock.pending).toBe(0);
  });
});

describe("bail from a pipeline the first attempt runs inside it", () => {
  it("ends the call with the bail's error, though the attempt then resolves", async () => {
    const clock = new VirtualClock();
    let calls = 0;
    const inner = pipeline(steps.timeout(1000));
    const settled = await drive(
      clock,
      retry(
        async (ctx: AttemptContext) => {
          calls += 1;
          return await inner.execute((scope: ExecutionContext) => {
            scope.bail(new Error("not found"));
            return Promise.resolve(1);
          }, ctx);
        },
        { clock, maxRetries: 3 },
      ),
    );
    expect(settled.ok).toBe(false);
    expect((settled as { error: Error }).error.message).toBe("not found");
    expect(calls).toBe(1);
    expect(clock.pending).toBe(0);
  });
});

describe("bail from the first attempt that then resolves", () => {
  it("ends the call with the bail's error after one attempt", async () => {
    const clock = new VirtualClock();
    let calls = 0;
    const settled = await drive(
      clock,
      retry(
        (ctx: AttemptContext) => {
          calls += 1;
          ctx.bail(new Error("gone for good"));
          return Promise.resolve(1);
        },
        { clock, maxRetries: 3 },
      ),
    );
    expect(settled.ok).toBe(false);
    expect((settled as { error: Error }).error.message).toBe("gone for good");
    expect(calls).toBe(1);
    expect(clock.pending).toBe(0);
  });
});

describe("a retry step's listeners, on a pipeline run without the caller's signal", () => {
  for (const where of ["a clock of the caller's", "the system clock"] as const) {
    it(`hear the first attempt and its success, on ${where}`, async () => {
      const clock = where === "the system clock" ? undefined : new VirtualClock();
      const retryStep = steps.retry<number>({ maxRetries: 2 });
      const heard: unknown[] = [];
      retryStep.on("attempt", (event) => heard.push(["attempt", event]));
      retryStep.on("success", (event) => heard.push(["success", event.value, event.attempt]));
      const p = pipeline(retryStep);
      const value = await (clock === undefined
        ? p.execute(() => Promise.resolve(9))
        : p.execute(() => Promise.resolve(9), { clock }));
      expect(value).toBe(9);
      expect(heard).toEqual([
        ["attempt", { attempt: 1, retries: 0, retriesLeft: 2, elapsed: 0 }],
        ["success", 9, 1],
      ]);
    });
  }
});

describe("a retry step run in a step of the caller's own", () => {
  /** A step that records what the rest of the pipeline answered it, as it was answered. */
  function recording(answers: unknown[]): Step {
    return {
      execute<R>(next: Next<R>, context: ExecutionContext): R | PromiseLike<R> {
        const answer = next(context);
        answers.push(answer);
        return answer;
      },
    };
  }

  it("answers a value the operation gave synchronously as that value, not in a thenable", async () => {
    const answers: unknown[] = [];
    const p = pipeline(recording(answers), steps.retry({ maxRetries: 2 }));
    const value = await p.execute(() => 5, { clock: new VirtualClock() });
    expect(value).toBe(5);
    expect(answers).toEqual([5]);
  });

  it("makes no attempt, nor waits, when the caller aborted before the step ran, and tells giveUp so", async () => {
    const clock = new VirtualClock();
    const controller = new AbortController();
    const gaveUp: GiveUpEvent[] = [];
    let calls = 0;
    const late: Step = {
      execute<R>(next: Next<R>, context: ExecutionContext): PromiseLike<R> {
        return new Promise<void>((resolve) => clock.setTimer(10, resolve)).then(() => next(context));
      },
    };
    const p = pipeline(
      late,
      steps.retry({
        maxRetries: 3,
        delayFirstAttempt: true,
        backoff: backoff.constant({ base: 1000 }),
        jitter: jitter.none(),
        onGiveUp: (e) => gaveUp.push(e),
      }),
    );
    const outcome = p.execute(
      () => {
        calls += 1;
        return 1;
      },
      { signal: controller.signal, clock },
    );
    const ended = outcome.catch((error: unknown) => error);
    await clock.advance(5);
    controller.abort("gone");
    expect(await ended).toBe("gone");
    await clock.advance(5);
    // Not even the wait before the first attempt is started.
    expect(clock.pending).toBe(0);
    expect(calls).toBe(0);
    expect(gaveUp).toEqual([
      { reason: "aborted", outcome: "gone", isValue: false, attempts: 0, elapsed: 0, idle: 0 },
    ]);
    expect(clock.pending).toBe(0);
    await tick();
    expect(abortListeners(controller.signal)).toBe(0);
  });
});

describe("a retry step run with the caller's signal on a clock of the caller's", () => {
  it("aborts the attempt in progress when the caller aborts, and makes no other", async () => {
    const clock = new VirtualClock();
    const controller = new AbortController();
    const attempts: AbortSignal[] = [];
    const pending = deferred<number>();
    const p = pipeline(
      steps.retry({ maxRetries: 3, backoff: backoff.constant({ base: 10 }), jitter: jitter.none() }),
    );
    const outcome = p.execute(
      (ctx: ExecutionContext) => {
        attempts.push(ctx.signal);
        return pending.promise;
      },
      { signal: controller.signal, clock },
    );
    controller.abort("stop");
    expect(attempts.map((s) => [s.aborted, s.reason])).toEqual([[true, "stop"]]);
    pending.reject(new Error("cut short"));
    const settled = await drive(clock, outcome);
    expect(settled).toEqual({ ok: false, error: "stop" });
    expect(attempts).toHaveLength(1);
    expect(clock.pending).toBe(0);
  });
});

describe("a timeout step outside a retry step", () => {
  it("counts as a timeout against a breaker inside the retry step, which opens", async () => {
    const clock = new VirtualClock();
    const breaker = circuitBreaker({ consecutiveFailures: 1, clock });
    const p = pipeline(steps.timeout(100), steps.retry({ maxRetries: 3 }), steps.breaker(breaker));
    const settled = await drive(
      clock,
      p.execute(() => new Promise<never>(() => {}), { clock }),
    );
    expect(settled.ok).toBe(false);
    expect((settled as { error: Error }).error.name).toBe("TimeoutError");
    expect(breaker.state).toBe("open");
  });
});

describe("an attempt that fails while the caller's abort is being told", () => {
  // A listener the caller added to its signal before the call settles the attempt at once (as a simulated
  // request does): the call has not heard of the abort yet, and must not retry nor count that failure.
  it("ends the call as aborted with the signal's reason: no onError, no retry", async () => {
    const clock = new VirtualClock();
    const controller = new AbortController();
    const attempt = handThenable<number>();
    controller.signal.addEventListener("abort", () => attempt.reject(new Error("connection reset")), {
      once: true,
    });
    const { heard, options } = recorder();
    let calls = 0;
    const outcome = retry(
      () => {
        calls += 1;
        return attempt.thenable;
      },
      {
        ...options,
        clock,
        signal: controller.signal,
        maxRetries: 3,
        backoff: backoff.constant({ base: 10 }),
        jitter: jitter.none(),
      },
    );
    await clock.advance(4);
    controller.abort("user left");
    const settled = await drive(clock, outcome);
    expect(settled).toEqual({ ok: false, error: "user left" });
    expect(calls).toBe(1);
    expect(heard).toEqual([
      [
        "onGiveUp",
        { reason: "aborted", outcome: "user left", isValue: false, attempts: 1, elapsed: 4, idle: 0 },
      ],
    ]);
    expect(clock.pending).toBe(0);
    await tick();
    expect(abortListeners(controller.signal)).toBe(0);
  });

  it("inside a pipeline, ends the retry step as aborted with the scope's reason", async () => {
    const clock = new VirtualClock();
    const controller = new AbortController();
    const attempt = handThenable<number>();
    // A step outside the retry step that settles the attempt when its context aborts.
    const watching: Step = {
      execute<R>(next: Next<R>, context: ExecutionContext): R | PromiseLike<R> {
        context.signal.addEventListener("abort", () => attempt.reject(new Error("connection reset")));
        return next(context);
      },
    };
    const { heard, options } = recorder();
    let calls = 0;
    const p = pipeline(
      watching,
      steps.retry({
        ...options,
        maxRetries: 3,
        backoff: backoff.constant({ base: 10 }),
        jitter: jitter.none(),
      }),
    );
    const outcome = p.execute(
      () => {
        calls += 1;
        return attempt.thenable;
      },
      { signal: controller.signal, clock },
    );
    await clock.advance(4);
    controller.abort("user left");
    const settled = await drive(clock, outcome);
    expect(settled).toEqual({ ok: false, error: "user left" });
    expect(calls).toBe(1);
    expect(heard).toEqual([
      [
        "onGiveUp",
        { reason: "aborted", outcome: "user left", isValue: false, attempts: 1, elapsed: 4, idle: 0 },
      ],
    ]);
    expect(clock.pending).toBe(0);
  });
});

describe("delayFirstAttempt", () => {
  it("with a backoff that throws for the first delay, ends the call with that error before any attempt", async () => {
    const clock = new VirtualClock();
    let calls = 0;
    const broken = new Error("no delay for you");
    const settled = await drive(
      clock,
      retry(
        () => {
          calls += 1;
          return 1;
        },
        {
          clock,
          delayFirstAttempt: true,
          jitter: jitter.none(),
          backoff: () => {
            throw broken;
          },
        },
      ),
    );
    expect(settled).toEqual({ ok: false, error: broken });
    expect(calls).toBe(0);
    expect(clock.pending).toBe(0);
  });

  it("counts the attempt in progress when the caller aborts after the first delay", async () => {
    const clock = new VirtualClock();
    const controller = new AbortController();
    const { heard, options } = recorder();
    const outcome = retry(() => new Promise<number>(() => {}), {
      ...options,
      clock,
      signal: controller.signal,
      delayFirstAttempt: true,
      backoff: backoff.constant({ base: 50 }),
      jitter: jitter.none(),
    });
    await clock.advance(60);
    controller.abort("enough");
    const settled = await drive(clock, outcome);
    expect(settled).toEqual({ ok: false, error: "enough" });
    expect(heard).toEqual([
      [
        "onGiveUp",
        { reason: "aborted", outcome: "enough", isValue: false, attempts: 1, elapsed: 10, idle: 0 },
      ],
    ]);
  });
});

describe("a pending retryOnResult verdict when the caller aborts", () => {
  for (const verdict of ["accepts", "rejects"] as const) {
    it(`that later ${verdict} changes nothing: the call stays aborted, giveUp told once, no success`, async () => {
      const clock = new VirtualClock();
      const controller = new AbortController();
      const judged = deferred<boolean>();
      const { heard, options } = recorder();
      const outcome = retry(() => 3, {
        ...options,
        clock,
        signal: controller.signal,
        maxRetries: 2,
        retryOnResult: () => judged.promise,
      });
      await clock.advance(2);
      controller.abort("bye");
      if (verdict === "accepts") judged.resolve(false);
      else judged.reject(new Error("judge failed"));
      const settled = await drive(clock, outcome);
      await tick();
      expect(settled).toEqual({ ok: false, error: "bye" });
      expect(heard).toEqual([
        ["onGiveUp", { reason: "aborted", outcome: "bye", isValue: false, attempts: 1, elapsed: 2, idle: 0 }],
      ]);
      expect(clock.pending).toBe(0);
    });
  }
});
