// How a call ends, and what it tells its callbacks and a retry step's listeners on the way there.
import {
  backoff,
  circuitBreaker,
  type GiveUpEvent,
  jitter,
  PermanentError,
  pipeline,
  retry,
  type Step,
  steps,
} from "robustly";
import { VirtualClock } from "robustly/testing";
import { describe, expect, it } from "vitest";
import { abortListeners, drive } from "./support/drive.js";

/** One second between attempts, exactly. */
const steady = { backoff: backoff.constant({ base: 1000 }), jitter: jitter.none() };

/** A thenable that settles when told, at once (as an operation in the simulator answers). */
function syncThenable<T>() {
  let ok: ((value: T) => void) | undefined;
  let fail: ((error: unknown) => void) | undefined;
  const thenable: PromiseLike<T> = {
    // biome-ignore lint/suspicious/noThenProperty: a thenable of its own is what is under test
    then(onValue?: ((value: T) => unknown) | null, onError?: ((error: unknown) => unknown) | null) {
      ok = onValue ?? undefined;
      fail = onError ?? undefined;
      return thenable as never;
    },
  };
  return {
    thenable,
    resolve: (value: T) => ok?.(value),
    reject: (error: unknown) => fail?.(error),
  };
}

describe("a retry step tells its listeners, without any callback given", () => {
  it("attempt, error, retry and success, each with its payload, in order", async () => {
    const clock = new VirtualClock();
    const step = steps.retry({
      maxRetries: 3,
      ...steady,
      onCallbackError: (e, name) => told.push({ e, name }),
    });
    const told: unknown[] = [];
    const heard: [string, unknown][] = [];
    step.on("attempt", (event) => heard.push(["attempt", event]));
    step.on("error", (event) => heard.push(["error", event]));
    step.on("retry", (event) => heard.push(["retry", event]));
    step.on("success", (event) => heard.push(["success", event]));
    step.on("giveUp", (event) => heard.push(["giveUp", event]));
    const first = new Error("first");
    const second = new Error("second");
    let n = 0;
    const outcome = await drive(
      clock,
      Promise.resolve(
        pipeline(step).execute(
          () => {
            n += 1;
            return n === 1 ? Promise.reject(first) : n === 2 ? Promise.reject(second) : Promise.resolve("ok");
          },
          { clock },
        ),
      ),
    );
    expect(outcome).toEqual({ ok: true, value: "ok" });
    expect(heard).toEqual([
      ["attempt", { attempt: 1, retries: 0, retriesLeft: 3, elapsed: 0 }],
      ["error", { error: first, retries: 0 }],
      ["retry", { error: first, retries: 0, delay: 1000, attempt: 1, elapsed: 0, rule: -1 }],
      ["attempt", { attempt: 2, retries: 1, retriesLeft: 2, elapsed: 1000 }],
      ["error", { error: second, retries: 1 }],
      ["retry", { error: second, retries: 1, delay: 1000, attempt: 2, elapsed: 1000, rule: -1 }],
      ["attempt", { attempt: 3, retries: 2, retriesLeft: 1, elapsed: 2000 }],
      ["success", { value: "ok", attempt: 3, elapsed: 2000, idle: 2000 }],
    ]);
    expect(told).toEqual([]);
    expect(clock.pending).toBe(0);
  });

  it("giveUp after the last error, and onCallbackError hears of nothing", async () => {
    const clock = new VirtualClock();
    const told: unknown[] = [];
    const step = steps.retry({
      maxRetries: 1,
      ...steady,
      onCallbackError: (e, name) => told.push({ e, name }),
    });
    const heard: [string, unknown][] = [];
    step.on("error", (event) => heard.push(["error", event]));
    step.on("giveUp", (event) => heard.push(["giveUp", event]));
    const down = new Error("down");
    const outcome = await drive(
      clock,
      Promise.resolve(pipeline(step).execute(() => Promise.reject(down), { clock })),
    );
    expect(outcome).toEqual({ ok: false, error: down });
    expect(heard).toEqual([
      ["error", { error: down, retries: 0 }],
      ["error", { error: down, retries: 1 }],
      [
        "giveUp",
        { reason: "retries", outcome: down, isValue: false, attempts: 2, elapsed: 1000, idle: 1000 },
      ],
    ]);
    expect(told).toEqual([]);
  });
});

describe("the giveUp payload says whether the outcome is a value", () => {
  it("an error the policy stops retrying: isValue false", async () => {
    const clock = new VirtualClock();
    const given: GiveUpEvent[] = [];
    const down = new Error("down");
    const outcome = await drive(
      clock,
      retry(() => Promise.reject(down), { clock, maxRetries: 2, ...steady, onGiveUp: (e) => given.push(e) }),
    );
    expect(outcome).toEqual({ ok: false, error: down });
    expect(given).toEqual([
      { reason: "retries", outcome: down, isValue: false, attempts: 3, elapsed: 2000, idle: 2000 },
    ]);
  });

  it("a value retryOnResult kept rejecting: isValue true, and the call answers that value", async () => {
    const clock = new VirtualClock();
    const given: GiveUpEvent[] = [];
    const outcome = await drive(
      clock,
      retry(() => Promise.resolve({ status: 503 }), {
        clock,
        maxRetries: 1,
        ...steady,
        retryOnResult: (r) => r.status === 503,
        onGiveUp: (e) => given.push(e),
      }),
    );
    expect(outcome).toEqual({ ok: true, value: { status: 503 } });
    expect(given).toEqual([
      {
        reason: "retries",
        outcome: { status: 503 },
        isValue: true,
        attempts: 2,
        elapsed: 1000,
        idle: 1000,
      },
    ]);
  });

  it("the caller's abort during the second attempt: isValue false, two attempts, idle the one backoff slept", async () => {
    const clock = new VirtualClock();
    const controller = new AbortController();
    const given: GiveUpEvent[] = [];
    const reason = new Error("caller left");
    let n = 0;
    const call = retry(
      () => {
        n += 1;
        if (n === 1) return Promise.reject(new Error("down"));
        clock.setTimer(300, () => controller.abort(reason));
        return new Promise<never>(() => {});
      },
      { clock, signal: controller.signal, maxRetries: 3, ...steady, onGiveUp: (e) => given.push(e) },
    );
    const outcome = await drive(clock, call);
    expect(outcome).toEqual({ ok: false, error: reason });
    expect(given).toEqual([
      { reason: "aborted", outcome: reason, isValue: false, attempts: 2, elapsed: 1300, idle: 1000 },
    ]);
    expect(clock.pending).toBe(0);
    expect(abortListeners(controller.signal)).toBe(0);
  });

  it("the caller's abort during the first attempt, with onAttempt told of it: one attempt, nothing slept", async () => {
    const clock = new VirtualClock();
    const controller = new AbortController();
    const given: GiveUpEvent[] = [];
    const announced: number[] = [];
    const reason = new Error("caller left");
    const call = retry(
      () => {
        clock.setTimer(250, () => controller.abort(reason));
        return new Promise<never>(() => {});
      },
      {
        clock,
        signal: controller.signal,
        onAttempt: (e) => announced.push(e.attempt),
        onGiveUp: (e) => given.push(e),
      },
    );
    const outcome = await drive(clock, call);
    expect(outcome).toEqual({ ok: false, error: reason });
    expect(announced).toEqual([1]);
    expect(given).toEqual([
      { reason: "aborted", outcome: reason, isValue: false, attempts: 1, elapsed: 250, idle: 0 },
    ]);
  });
});

describe("shouldConsumeRetry", () => {
  it("a retry that counts is asked about after every failure, past the 100 free ones a call may have", async () => {
    const clock = new VirtualClock();
    let asked = 0;
    let attempts = 0;
    const outcome = await drive(
      clock,
      retry(
        () => {
          attempts += 1;
          return Promise.reject(new Error("down"));
        },
        {
          clock,
          budget: false,
          maxRetries: 150,
          backoff: backoff.constant({ base: 1 }),
          jitter: jitter.none(),
          shouldConsumeRetry: () => {
            asked += 1;
            return true;
          },
        },
      ),
    );
    expect(outcome.ok).toBe(false);
    expect({ attempts, asked }).toEqual({ attempts: 151, asked: 151 });
  });

  it("an abort while an async answer is pending: onRetry is not told, and no timer is left", async () => {
    const clock = new VirtualClock();
    const controller = new AbortController();
    let answer: (consume: boolean) => void = () => {};
    const told: string[] = [];
    const reason = new Error("caller left");
    const call = retry(() => Promise.reject(new Error("down")), {
      clock,
      signal: controller.signal,
      ...steady,
      shouldConsumeRetry: () => new Promise<boolean>((resolve) => (answer = resolve)),
      onRetry: () => told.push("retry"),
      onGiveUp: (e) => told.push(`giveUp ${e.reason}`),
    });
    const settled = call.then(
      () => "value",
      (error: Error) => error.message,
    );
    await new Promise((resolve) => setImmediate(resolve));
    controller.abort(reason);
    answer(true);
    await clock.runAll();
    expect(await settled).toBe("caller left");
    expect(told).toEqual(["giveUp aborted"]);
    expect(clock.pending).toBe(0);
  });
});

describe("onError that aborts the caller's signal", () => {
  it("ends the call as aborted at once: retryOn is not asked, onGiveUp is told once", async () => {
    for (const failure of [new Error("down"), new PermanentError(new Error("gone"))]) {
      const clock = new VirtualClock();
      const controller = new AbortController();
      const reason = new Error("caller left");
      const told: string[] = [];
      const outcome = await drive(
        clock,
        retry(() => Promise.reject(failure), {
          clock,
          signal: controller.signal,
          ...steady,
          onError: () => controller.abort(reason),
          retryOn: () => {
            told.push("retryOn");
            return true;
          },
          onGiveUp: (e) => told.push(`giveUp ${e.reason} after ${e.attempts}`),
        }),
      );
      expect(outcome).toEqual({ ok: false, error: reason });
      expect(told).toEqual(["giveUp aborted after 1"]);
    }
  });
});

describe("a retryOn that throws", () => {
  it("ends the call with its error and lets go of the caller's signal: a later abort tells no one", async () => {
    const clock = new VirtualClock();
    const controller = new AbortController();
    const told: string[] = [];
    const broken = new Error("matcher broke");
    const outcome = await drive(
      clock,
      retry(() => Promise.reject(new Error("down")), {
        clock,
        signal: controller.signal,
        retryOn: () => {
          throw broken;
        },
        onGiveUp: (e) => told.push(`giveUp ${e.reason}`),
      }),
    );
    expect(outcome).toEqual({ ok: false, error: broken });
    expect(abortListeners(controller.signal)).toBe(0);
    controller.abort(new Error("late"));
    expect(told).toEqual([]);
  });
});

describe("an operation whose answer settles at once when the caller aborts", () => {
  it("fails while the caller's signal is aborting: the call ends once, as aborted, after one attempt", async () => {
    const clock = new VirtualClock();
    const controller = new AbortController();
    const pending = syncThenable<string>();
    // The operation's own resource hears of the abort first, and fails its answer at once.
    controller.signal.addEventListener("abort", () => pending.reject(new Error("connection closed")));
    const given: GiveUpEvent[] = [];
    const reason = new Error("caller left");
    const call = retry(() => pending.thenable, {
      clock,
      signal: controller.signal,
      onGiveUp: (e) => given.push(e),
    });
    controller.abort(reason);
    const outcome = await drive(clock, call);
    expect(outcome).toEqual({ ok: false, error: reason });
    expect(given).toEqual([
      { reason: "aborted", outcome: reason, isValue: false, attempts: 1, elapsed: 0, idle: 0 },
    ]);
    expect(clock.pending).toBe(0);
  });

  it("a retryOn whose answer comes while the caller's signal is aborting: no backoff is slept, the call ends once", async () => {
    const clock = new VirtualClock();
    const controller = new AbortController();
    const verdict = syncThenable<boolean>();
    controller.signal.addEventListener("abort", () => verdict.resolve(true));
    const told: string[] = [];
    const reason = new Error("caller left");
    const call = retry(() => Promise.reject(new Error("down")), {
      clock,
      signal: controller.signal,
      ...steady,
      retryOn: () => verdict.thenable,
      onRetry: () => told.push("retry"),
      onGiveUp: (e) => told.push(`giveUp ${e.reason} after ${e.attempts}`),
    });
    await new Promise((resolve) => setImmediate(resolve));
    controller.abort(reason);
    expect(clock.pending).toBe(0);
    const outcome = await drive(clock, call);
    expect(outcome).toEqual({ ok: false, error: reason });
    expect(told).toEqual(["retry", "giveUp aborted after 1"]);
  });

  it("two calls on one signal sharing a connection: the first one's abort fails the second's answer, which gives up once", async () => {
    const clock = new VirtualClock();
    const controller = new AbortController();
    const connection = syncThenable<string>();
    const reason = new Error("request over");
    const given: GiveUpEvent[] = [];
    // The first call's attempt closes the shared connection when its signal aborts.
    const first = retry(
      ({ signal }) => {
        signal.addEventListener("abort", () => connection.reject(new Error("connection closed")));
        return new Promise<string>(() => {});
      },
      { clock, signal: controller.signal },
    );
    const second = retry(() => connection.thenable, {
      clock,
      signal: controller.signal,
      onGiveUp: (e) => given.push(e),
    });
    const outcomes = Promise.all(
      [first, second].map((call) => call.then(undefined, (error: unknown) => error)),
    );
    controller.abort(reason);
    await clock.runAll();
    expect(await outcomes).toEqual([reason, reason]);
    expect(given).toEqual([
      { reason: "aborted", outcome: reason, isValue: false, attempts: 1, elapsed: 0, idle: 0 },
    ]);
    expect(abortListeners(controller.signal)).toBe(0);
  });

  it("inside a pipeline whose outer step cancels its work on its own signal: the retry step gives up once", async () => {
    const clock = new VirtualClock();
    const controller = new AbortController();
    const pending = syncThenable<string>();
    // A step outside the retry step that closes what it opened when its signal aborts.
    const closing: Step = {
      execute(next, context) {
        context.signal.addEventListener("abort", () => pending.reject(new Error("connection closed")));
        return next(context);
      },
    };
    const retrying = steps.retry({ maxRetries: 2 });
    const given: unknown[] = [];
    retrying.on("giveUp", (e) => given.push(e));
    const reason = new Error("caller left");
    const call = Promise.resolve(
      pipeline(closing, retrying).execute(() => pending.thenable, { clock, signal: controller.signal }),
    );
    controller.abort(reason);
    const outcome = await drive(clock, call);
    expect(outcome).toEqual({ ok: false, error: reason });
    expect(given).toEqual([
      { reason: "aborted", outcome: reason, isValue: false, attempts: 1, elapsed: 0, idle: 0 },
    ]);
  });
});

describe("an attempt that runs out of time", () => {
  it("counts against a breaker inside the call as a failure of the service", async () => {
    const clock = new VirtualClock();
    const breaker = circuitBreaker({ consecutiveFailures: 2, clock });
    const outcome = await drive(
      clock,
      retry(() => new Promise<never>(() => {}), { clock, timeout: 100, maxRetries: 1, ...steady, breaker }),
    );
    expect(outcome.ok).toBe(false);
    expect((outcome as { error: Error }).error.name).toBe("TimeoutError");
    expect(breaker.state).toBe("open");
  });
});

describe("a step inside a retry step's attempt", () => {
  it("sees the hedge it runs in, from a hedge step outside the retry step", async () => {
    const clock = new VirtualClock();
    const seen: [number, number][] = [];
    const p = pipeline(steps.hedge({ delay: 100 }), steps.retry({ maxRetries: 0 }), steps.timeout(5000));
    const outcome = await drive(
      clock,
      Promise.resolve(
        p.execute(
          (ctx) => {
            seen.push([ctx.hedge, ctx.attempt]);
            return new Promise<string>((resolve) =>
              clock.setTimer(ctx.hedge === 1 ? 1000 : 30, () => resolve(`hedge ${ctx.hedge}`)),
            );
          },
          { clock },
        ),
      ),
    );
    expect(outcome).toEqual({ ok: true, value: "hedge 2" });
    expect(seen).toEqual([
      [1, 1],
      [2, 1],
    ]);
  });
});
