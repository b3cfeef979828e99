// Defects found by attacking the one retry loop (src/retry/call.ts), each named after what broke.
import { pipeline, type RetryEvent, retry, steps } from "robustly";
import { VirtualClock } from "robustly/testing";
import { describe, expect, it } from "vitest";

describe("a call tells the callbacks it was given, as they were when it began", () => {
  it("one options object reused with its callback changed between calls: each call tells its own", async () => {
    const clock = new VirtualClock();
    const options: { clock: VirtualClock; maxRetries: number; onRetry?: (e: RetryEvent) => void } = {
      clock,
      maxRetries: 2,
    };
    const told: string[] = [];
    const calls: Promise<unknown>[] = [];
    for (let i = 0; i < 6; i++) {
      options.onRetry = (event) => told.push(`callback ${i} told of ${(event.error as Error).message}`);
      let n = 0;
      calls.push(retry(() => (++n < 2 ? Promise.reject(new Error(`call ${i}`)) : i), options));
    }
    await clock.runAll();
    expect(await Promise.all(calls)).toEqual([0, 1, 2, 3, 4, 5]);
    expect(told).toEqual([0, 1, 2, 3, 4, 5].map((i) => `callback ${i} told of call ${i}`));
  });

  it("a callback changed to a non-function after the call began is not used: the call goes on with the one it checked", async () => {
    const clock = new VirtualClock();
    // Many calls of this shape first.
    for (let i = 0; i < 70; i++) await retry(() => 1, { clock, maxRetries: 3, retryOnResult: () => false });
    const options: Record<string, unknown> = { clock, maxRetries: 3, retryOnResult: () => false };
    let n = 0;
    const call = retry(() => (++n < 2 ? Promise.reject(new Error("x")) : "v"), options);
    options.retryOnResult = "yes";
    const settled = call.then(
      (value) => ({ value }),
      (error: Error) => ({ error: `${error.name}: ${error.message}` }),
    );
    await clock.runAll();
    expect(await settled).toEqual({ value: "v" });
  });
});

describe("a first attempt answered by a Promise subclass", () => {
  /** A promise whose `then` answers `answer` instead of a promise. */
  const odd = (answer: unknown) =>
    class Odd<T> extends Promise<T> {
      // biome-ignore lint/suspicious/noThenProperty: the hostile answer under test
      override then(ok?: never, fail?: never): never {
        super.then(ok, fail);
        return answer as never;
      }
    };

  it("whose then answers undefined: the call answers the attempt's value", async () => {
    const Odd = odd(undefined);
    await expect(retry(() => new Odd<string>((resolve) => resolve("val")))).resolves.toBe("val");
  });

  it("whose then answers a number: retry and a pipeline's retry step still answer a promise of the value", async () => {
    const Odd = odd(42);
    const answer = retry(() => new Odd<string>((resolve) => resolve("val")));
    expect(answer).toBeInstanceOf(Promise);
    await expect(answer).resolves.toBe("val");
    const piped = pipeline(steps.retry()).execute(() => new Odd<string>((resolve) => resolve("val")));
    expect(piped).toBeInstanceOf(Promise);
    await expect(piped).resolves.toBe("val");
  });
});

describe("what callbacks do once a call has its outcome", () => {
  it("onSuccess that aborts the caller's signal: the call still succeeds, and onGiveUp is not told", async () => {
    for (const timeout of [undefined, 1000]) {
      const controller = new AbortController();
      const told: string[] = [];
      const outcome = await retry(() => "v", {
        signal: controller.signal,
        ...(timeout === undefined ? {} : { timeout }),
        onSuccess: () => {
          told.push("success");
          controller.abort(new Error("aborted in onSuccess"));
        },
        onGiveUp: (event) => told.push(`giveUp ${event.reason}`),
      }).then(
        (value) => value,
        (error: Error) => `rejected: ${error.message}`,
      );
      expect({ outcome, told }).toEqual({ outcome: "v", told: ["success"] });
    }
  });

  it("an abort while an async retryOn is pending: shouldConsumeRetry is not asked afterwards", async () => {
    const clock = new VirtualClock();
    const controller = new AbortController();
    let answer: (retry: boolean) => void = () => {};
    const asked: string[] = [];
    const call = retry(() => Promise.reject(new Error("down")), {
      clock,
      signal: controller.signal,
      retryOn: () => new Promise<boolean>((resolve) => (answer = resolve)),
      shouldConsumeRetry: () => {
        asked.push("shouldConsumeRetry");
        return true;
      },
    });
    const settled = call.then(
      () => "value",
      (error: Error) => error.message,
    );
    await new Promise((resolve) => setImmediate(resolve));
    controller.abort(new Error("caller left"));
    answer(true);
    await clock.runAll();
    expect(await settled).toBe("caller left");
    expect(asked).toEqual([]);
  });
});

describe("a time limit of 0, as the docs say it works", () => {
  it("times out every attempt that has not answered by the next turn; one that answers at once gets through", async () => {
    const clock = new VirtualClock();
    const atOnce = await retry(() => "now", { clock, timeout: 0 });
    expect(atOnce).toBe("now");
    const settledAlready = await retry(() => Promise.resolve("settled"), { clock, timeout: 0 });
    expect(settledAlready).toBe("settled");
    let attempts = 0;
    const later = retry(
      () => {
        attempts += 1;
        return clock.sleep(1).then(() => "late");
      },
      { clock, timeout: 0, maxRetries: 2 },
    ).then(
      (value) => value,
      (error: Error) => error.name,
    );
    await clock.runAll();
    expect({ outcome: await later, attempts }).toEqual({ outcome: "TimeoutError", attempts: 3 });
  });
});

describe("leaving an attempts() loop after a failure", () => {
  it("tells onGiveUp the call was aborted with an AbortError of its own, not an error of robustly's inside", async () => {
    const { attempts } = await import("robustly");
    const clock = new VirtualClock();
    const gaveUp: { reason: string; outcome: unknown }[] = [];
    const run = async () => {
      for await (const attempt of attempts({
        clock,
        maxRetries: 3,
        onGiveUp: (event) => gaveUp.push({ reason: event.reason, outcome: event.outcome }),
      })) {
        attempt.failure(new Error("down"));
        break;
      }
    };
    await run();
    await run();
    expect(gaveUp).toHaveLength(2);
    for (const { reason, outcome } of gaveUp) {
      expect(reason).toBe("aborted");
      expect(outcome).toBeInstanceOf(DOMException);
      expect((outcome as DOMException).name).toBe("AbortError");
    }
    // Each loop's own: a listener that keeps or changes one changes no other loop's.
    expect(gaveUp[0]?.outcome).not.toBe(gaveUp[1]?.outcome);
    expect(clock.pending).toBe(0);
  });
});

describe("leaving an attempts() loop right after reporting a failure", () => {
  it("tells onError of that failure, as after every failed attempt, makes no retry, and ends the loop without throwing", async () => {
    const { attempts } = await import("robustly");
    const clock = new VirtualClock();
    for (const maxRetries of [3, 0]) {
      const told: string[] = [];
      let iterations = 0;
      for await (const attempt of attempts({
        clock,
        maxRetries,
        onError: (error, retries) => told.push(`error ${(error as Error).message} after ${retries} retries`),
        onRetry: () => told.push("retry"),
        onGiveUp: (event) => told.push(`give up: ${event.reason}`),
      })) {
        iterations += 1;
        attempt.failure(new Error("down"));
        break;
      }
      // With retries left, the call is stopped before the retry (aborted by the loop); without, it gives up.
      expect({ iterations, told }).toEqual({
        iterations: 1,
        told: ["error down after 0 retries", maxRetries === 0 ? "give up: retries" : "give up: aborted"],
      });
      expect(clock.pending).toBe(0);
    }
  });
});

/** A thenable that is no promise, which calls `then`'s callbacks as `then` says. */
function thenable(then: (resolve: (value: unknown) => void) => void): PromiseLike<unknown> {
  return { then } as PromiseLike<unknown>;
}

describe("an attempt answered by a thenable of another kind", () => {
  it("that resolves with a rejected promise failed, as `await` has it: it is retried, and onSuccess is not told", async () => {
    let calls = 0;
    const successes: unknown[] = [];
    const outcome = await retry(
      () => {
        calls += 1;
        return thenable((resolve) => resolve(Promise.reject(new Error("inner"))));
      },
      { maxRetries: 1, backoff: () => 0, onSuccess: (value) => successes.push(value) },
    ).then(
      () => "resolved",
      (error: Error) => error.message,
    );
    expect({ outcome, calls, successes: successes.length }).toEqual({
      outcome: "inner",
      calls: 2,
      successes: 0,
    });
  });

  it("that resolves with another such thenable answers that one's value", async () => {
    const inner = thenable((resolve) => resolve("deep"));
    await expect(retry(() => thenable((resolve) => resolve(inner)))).resolves.toBe("deep");
  });

  it("that resolves with itself fails with a TypeError rather than waiting forever", async () => {
    const self: PromiseLike<unknown> = thenable((resolve) => resolve(self));
    const error = await retry(() => self, { maxRetries: 0 }).catch((thrown: unknown) => thrown);
    expect(error).toBeInstanceOf(TypeError);
  });
});
