import v8 from "node:v8";
import vm from "node:vm";
import fc from "fast-check";
import { backoff, jitter, OptionError, type RetryOptions, retry } from "robustly";
import { VirtualClock } from "robustly/testing";
import { describe, expect, it } from "vitest";
import { resolveOptions } from "../src/policy/options.js";

v8.setFlagsFromString("--expose-gc");
const gc = vm.runInNewContext("gc") as () => void;

// `retry(op, options)` resolves the options of each call, written inline or built once, functions and
// objects among them. These tests check that each call runs on the options it was given, however many
// calls of other shapes or values came before, that a bad one still fails at once, and that a call keeps
// nothing of the caller's alive once it is over.

/** Calls of one shape made in a row, enough for any state kept between calls to show. */
const REPEATS = 64;

/** What the attempt saw of its options: retries left (maxRetries) and the timeout. */
const sees = (ctx: { retriesLeft: number; timeout: number }) => [ctx.retriesLeft, ctx.timeout];

describe("options written inline", () => {
  it("with maxRetries alone, below and above the values whose resolution calls share, each call counts its own retries", async () => {
    const clock = new VirtualClock();
    for (const maxRetries of [0, 1, 3, 31, 32, 33, 40]) {
      // Two calls at once on the same value: each fails until its retries run out, and counts its own.
      const seen: number[][] = [[], []];
      const calls = [0, 1].map((i) =>
        retry(
          (ctx) => {
            seen[i]?.push(ctx.retriesLeft);
            throw new Error(`call ${i}`);
          },
          { maxRetries, clock },
        ).catch((error: Error) => error.message),
      );
      await clock.runAll();
      expect(await Promise.all(calls)).toEqual(["call 0", "call 1"]);
      const left = Array.from({ length: maxRetries + 1 }, (_, k) => maxRetries - k);
      expect(seen).toEqual([left, left]);
    }
  });

  it("each call runs on its own values, whatever shapes were resolved before", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            maxRetries: fc.integer({ min: 0, max: 50 }),
            timeout: fc.integer({ min: 1, max: 1e6 }),
          }),
          { minLength: 1, maxLength: 40 },
        ),
        async (calls) => {
          for (const { maxRetries, timeout } of calls) {
            await expect(retry(sees, { maxRetries, timeout })).resolves.toEqual([maxRetries, timeout]);
            // The same values in another order are another shape, and mean the same.
            await expect(retry(sees, { timeout, maxRetries })).resolves.toEqual([maxRetries, timeout]);
            await expect(retry(sees, { maxRetries })).resolves.toEqual([
              maxRetries,
              Number.POSITIVE_INFINITY,
            ]);
          }
        },
      ),
      { numRuns: 30 },
    );
  });

  it("a bad value fails at once, before any attempt, right after the same shape was resolved", async () => {
    const bad = fc.oneof(
      fc.double({ noNaN: true }).filter((n) => !Number.isInteger(n) && Number.isFinite(n)),
      fc.constant(Number.NaN),
      fc.string(),
      fc.constant(null),
    );
    await fc.assert(
      fc.asyncProperty(bad, async (value) => {
        await expect(retry(sees, { maxRetries: 2 })).resolves.toEqual([2, Number.POSITIVE_INFINITY]);
        let calls = 0;
        const counted = () => {
          calls += 1;
          return 1;
        };
        await expect(retry(counted, { maxRetries: value as number })).rejects.toBeInstanceOf(OptionError);
        expect(calls).toBe(0);
      }),
      { numRuns: 50 },
    );
  });

  it("an unknown key fails at once even beside calls of other shapes", async () => {
    await retry(sees, { maxRetries: 1 });
    await expect(retry(sees, { maxRetries: 1, maxRetry: 2 } as never)).rejects.toThrow(/maxRetry/);
  });

  it("an object changed between calls is resolved again, and validated again", async () => {
    const options: { maxRetries: number } = { maxRetries: 1 };
    await expect(retry(sees, options)).resolves.toEqual([1, Number.POSITIVE_INFINITY]);
    options.maxRetries = 4;
    await expect(retry(sees, options)).resolves.toEqual([4, Number.POSITIVE_INFINITY]);
    options.maxRetries = 0.5;
    await expect(retry(sees, options)).rejects.toBeInstanceOf(OptionError);
  });

  it("many shapes called in turn all resolve to their own values", async () => {
    for (let round = 0; round < 2; round++) {
      for (let k = 0; k < 40; k++) {
        await expect(retry(sees, { maxRetries: k, timeout: 1000 + k })).resolves.toEqual([k, 1000 + k]);
      }
    }
  });

  it("the signal is the call's own: each inline signal is honoured, a bad one fails at once", async () => {
    await expect(retry(sees, { maxRetries: 1, signal: new AbortController().signal })).resolves.toEqual([
      1,
      Number.POSITIVE_INFINITY,
    ]);
    const aborted = new AbortController();
    aborted.abort(new Error("stop"));
    await expect(retry(sees, { maxRetries: 1, signal: aborted.signal })).rejects.toThrow("stop");
    await expect(retry(sees, { maxRetries: 1, signal: {} as AbortSignal })).rejects.toBeInstanceOf(
      OptionError,
    );
    await expect(retry(sees, { maxRetries: 1, signal: undefined })).resolves.toEqual([
      1,
      Number.POSITIVE_INFINITY,
    ]);
  });

  it("options holding a function still see their own values", async () => {
    const seen: number[] = [];
    for (const maxRetries of [0, 1, 2]) {
      const onSuccess = () => seen.push(maxRetries);
      await expect(retry(sees, { maxRetries, onSuccess })).resolves.toEqual([
        maxRetries,
        Number.POSITIVE_INFINITY,
      ]);
    }
    expect(seen).toEqual([0, 1, 2]);
  });
});

/**
 * The default retry budget is shared by every `retry` call of the process (per clock), and the properties
 * below retry thousands of calls within seconds: they run without it, each call on its own (the budget has
 * test/default-budget.test.ts).
 */
const ALONE = { budget: false } as const;

describe("options holding functions and objects", () => {
  it("each call hears its own callbacks, whichever came before (shared ones or new ones each call)", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            callback: fc.integer({ min: -3, max: 2 }),
            maxRetries: fc.integer({ min: 1, max: 2 }),
          }),
          {
            minLength: 1,
            maxLength: 30,
          },
        ),
        async (calls) => {
          const heard: string[] = [];
          // Three callbacks shared by every call that names them (0–2); a new one for each call otherwise.
          const shared = [0, 1, 2].map((n) => () => heard.push(`shared ${n}`));
          for (const [i, { callback, maxRetries }] of calls.entries()) {
            const onRetry = callback >= 0 ? (shared[callback] as () => number) : () => heard.push(`own ${i}`);
            let attempts = 0;
            const op = () => {
              attempts += 1;
              if (attempts === 1) throw new Error("once");
              return attempts;
            };
            await expect(retry(op, { ...ALONE, maxRetries, backoff: backoff.none(), onRetry })).resolves.toBe(
              2,
            );
            expect(heard.pop()).toBe(callback >= 0 ? `shared ${callback}` : `own ${i}`);
          }
          expect(heard).toEqual([]);
        },
      ),
      { numRuns: 100 },
    );
  });

  it("a callback written inline in options of a shape called before is heard when the first attempt fails, or the caller aborts it", async () => {
    const heard: string[] = [];
    const options = (i: number, signal: AbortSignal) =>
      ({
        ...ALONE,
        maxRetries: 1,
        backoff: backoff.none(),
        signal,
        onRetry: () => heard.push(`retry ${i}`),
        onGiveUp: (e: { reason: string }) => heard.push(`give up ${i} ${e.reason}`),
      }) as RetryOptions<number>;
    const never = new AbortController().signal;
    for (let i = 0; i < REPEATS + 1; i++) await retry(() => 1, options(-1, never));
    // A call's resolution holds its own callbacks.
    const own = options(0, never);
    expect(resolveOptions(own).retry.onRetry).toBe(own.onRetry);
    const again = options(0, never);
    expect(resolveOptions(again).retry.onRetry).toBe(again.onRetry);
    for (let i = 1; i <= 2 * REPEATS; i++) {
      let attempts = 0;
      const op = () => {
        attempts += 1;
        if (attempts === 1) throw new Error("once");
        return attempts;
      };
      await expect(retry(op, options(i, never))).resolves.toBe(2);
      expect(heard.splice(0)).toEqual([`retry ${i}`]);
      await expect(retry(() => Promise.reject(new Error("no")), options(i, never))).rejects.toThrow("no");
      expect(heard.splice(0)).toEqual([`retry ${i}`, `give up ${i} retries`]);
      const controller = new AbortController();
      const call = retry(() => new Promise<number>(() => {}), options(i, controller.signal));
      controller.abort(new Error("stop"));
      await expect(call).rejects.toThrow("stop");
      expect(heard.splice(0)).toEqual([`give up ${i} aborted`]);
    }
  });

  it("keep nothing of the caller's alive: a callback written inline is collected once its call is over", async () => {
    const refs: WeakRef<object>[] = [];
    // A call in a function of its own, so that no frame of the test holds its callback.
    const call = async (i: number) => {
      const big = new Array(1000).fill(i);
      const onGiveUp = () => big.length;
      refs.push(new WeakRef(onGiveUp));
      await retry(() => i, { maxRetries: 1, onGiveUp, backoff: backoff.none() });
    };
    for (let i = 0; i < 2 * REPEATS + 1; i++) await call(i);
    // A turn of the event loop first: a new WeakRef keeps its target until the current job is over.
    await new Promise<void>((resolve) => setImmediate(resolve));
    gc();
    expect(refs.filter((ref) => ref.deref() !== undefined)).toEqual([]);
  });

  it("each call runs on its own backoff and hears its own hooks, however they mix with earlier calls'", async () => {
    const clock = new VirtualClock();
    const backoffs = [backoff.constant({ base: 10 }), backoff.constant({ base: 20 })];
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            backoff: fc.integer({ min: -1, max: 1 }),
            onRetry: fc.integer({ min: -1, max: 1 }),
            onGiveUp: fc.integer({ min: -1, max: 1 }),
          }),
          { minLength: 1, maxLength: 25 },
        ),
        async (calls) => {
          const heard: string[] = [];
          const sharedRetry = [0, 1].map(
            (n) => (e: { delay: number }) => heard.push(`retry ${n} ${e.delay}`),
          );
          const sharedGiveUp = [0, 1].map((n) => () => heard.push(`give up ${n}`));
          for (const [i, pick] of calls.entries()) {
            // -1: a new one for this call; 0 or 1: one of two shared by every call that picks it.
            const ownBackoff = backoff.constant({ base: 30 + i });
            const options: RetryOptions<number> = {
              ...ALONE,
              maxRetries: 1,
              backoff: pick.backoff < 0 ? ownBackoff : (backoffs[pick.backoff] as typeof ownBackoff),
              jitter: jitter.none(),
              clock,
              onRetry:
                pick.onRetry < 0
                  ? (e) => heard.push(`retry own ${e.delay}`)
                  : (sharedRetry[pick.onRetry] as (e: { delay: number }) => number),
              onGiveUp: pick.onGiveUp < 0 ? () => heard.push("give up own") : sharedGiveUp[pick.onGiveUp],
            };
            const call = retry(() => Promise.reject(new Error("no")), options);
            const ended = call.then(
              () => "value",
              (error: Error) => error.message,
            );
            await clock.runAll();
            expect(await ended).toBe("no");
            const delay = pick.backoff < 0 ? 30 + i : pick.backoff === 0 ? 10 : 20;
            expect(heard.splice(0)).toEqual([
              pick.onRetry < 0 ? `retry own ${delay}` : `retry ${pick.onRetry} ${delay}`,
              pick.onGiveUp < 0 ? "give up own" : `give up ${pick.onGiveUp}`,
            ]);
          }
        },
      ),
      { numRuns: 60 },
    );
  });

  it("a callback or predicate that is not a function fails at once, naming it, right after calls of the same shape", async () => {
    const op = () => 1;
    const keys = ["onRetry", "onError", "onGiveUp", "onAttempt", "onSuccess", "onCallbackError"];
    for (const key of [
      ...keys,
      "retryOn",
      "retryOnResult",
      "shouldConsumeRetry",
      "delayFrom",
      "backoff",
      "jitter",
    ]) {
      // Calls of the shape first, with a function each call.
      const shape = (value: unknown) => ({ maxRetries: 2, [key]: value }) as RetryOptions<number>;
      for (let i = 0; i < REPEATS + 1; i++)
        await retry(
          op,
          shape(() => {}),
        );
      let calls = 0;
      const counted = () => {
        calls += 1;
        return 1;
      };
      const call = retry(counted, shape({ notA: "function" }));
      await expect(call).rejects.toBeInstanceOf(OptionError);
      await expect(call).rejects.toThrow(key);
      expect(calls).toBe(0);
    }
  });

  it("each call runs on its own retryOn, retryOnResult and delayFrom, written inline or shared, after calls of the same shape", async () => {
    const clock = new VirtualClock();
    const steady = backoff.constant({ base: 1 });
    const none = jitter.none();
    const shared = {
      retryOn: [() => true, () => false],
      retryOnResult: [(v: number) => v < 0, () => false],
      delayFrom: [() => ({ exactly: 7 }), () => ({ exactly: 9 })],
    };
    const heard: number[] = [];
    const onRetry = (e: { delay: number }) => heard.push(e.delay);
    const options = (retryOn: unknown, retryOnResult: unknown, delayFrom: unknown) =>
      ({
        maxRetries: 1,
        backoff: steady,
        jitter: none,
        clock,
        retryOn,
        retryOnResult,
        delayFrom,
        onRetry,
      }) as RetryOptions<number>;
    // Calls of the shape first.
    for (let i = 0; i < REPEATS + 1; i++) {
      await retry(() => 1, options(shared.retryOn[0], shared.retryOnResult[0], shared.delayFrom[0]));
    }
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            throws: fc.boolean(),
            // -1: made for this call (answering `accept`), 0 or 1: shared (0 accepts, 1 refuses).
            retryOn: fc.integer({ min: -1, max: 1 }),
            retryOnResult: fc.integer({ min: -1, max: 1 }),
            delayFrom: fc.integer({ min: -1, max: 1 }),
            accept: fc.boolean(),
          }),
          { minLength: 1, maxLength: 20 },
        ),
        async (calls) => {
          for (const [i, c] of calls.entries()) {
            const retryOn = c.retryOn < 0 ? () => c.accept : shared.retryOn[c.retryOn];
            const retryOnResult =
              c.retryOnResult < 0 ? (v: number) => c.accept && v < 0 : shared.retryOnResult[c.retryOnResult];
            const delayFrom = c.delayFrom < 0 ? () => ({ exactly: 100 + i }) : shared.delayFrom[c.delayFrom];
            let attempts = 0;
            const op = () => {
              attempts += 1;
              if (attempts > 1) return 2;
              if (c.throws) throw new Error("x");
              return -1;
            };
            const ended = retry(op, options(retryOn, retryOnResult, delayFrom)).then(
              (value) => value,
              (error: Error) => error.message,
            );
            await clock.runAll();
            const accepts = (choice: number) => (choice < 0 ? c.accept : choice === 0);
            // A value retryOnResult asks to retry is an error to retryOn (a RetryableResultError) too.
            const retried = accepts(c.retryOn) && (c.throws || accepts(c.retryOnResult));
            expect(await ended).toBe(retried ? 2 : c.throws ? "x" : -1);
            const delay = c.delayFrom < 0 ? 100 + i : c.delayFrom === 0 ? 7 : 9;
            expect(heard.splice(0)).toEqual(retried ? [delay] : []);
          }
        },
      ),
      { numRuns: 60 },
    );
  });

  it("calls written as the README writes them (a timeout, a backoff and a jitter made inline) each run on their own", async () => {
    const clock = new VirtualClock();
    const heard: string[] = [];
    const options = (i: number, judged: boolean) =>
      ({
        ...ALONE,
        timeout: 50,
        maxRetries: 2,
        backoff: backoff.constant({ base: 10 + i }),
        jitter: jitter.none(),
        clock,
        onRetry: (e: { delay: number; error: unknown }) =>
          heard.push(`${i} ${(e.error as Error).name} ${e.delay}`),
        // A retryOnResult sends the first attempt through the pipeline of the retry and timeout steps.
        ...(judged ? { retryOnResult: (v: number) => v < 0 } : {}),
      }) as RetryOptions<number>;
    // Calls of both shapes first.
    for (const judged of [false, true]) {
      for (let i = 0; i < REPEATS + 1; i++) await retry(() => 1, options(0, judged));
    }
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ hang: fc.boolean(), judged: fc.boolean(), negative: fc.boolean() }), {
          minLength: 1,
          maxLength: 12,
        }),
        async (calls) => {
          for (const [i, c] of calls.entries()) {
            let attempts = 0;
            const op = () => {
              attempts += 1;
              if (attempts === 1 && c.hang) return new Promise<number>(() => {});
              if (attempts === 1) throw new Error("first");
              return c.negative && attempts === 2 ? -1 : attempts;
            };
            const ended = retry(op, options(i, c.judged)).then(
              (value) => value,
              (error: Error) => error.name,
            );
            await clock.runAll();
            const first = `${i} ${c.hang ? "TimeoutError" : "Error"} ${10 + i}`;
            if (c.judged && c.negative) {
              // The -1 of the second attempt is retried too, and the third answers 3.
              expect(await ended).toBe(3);
              expect(heard.splice(0)).toEqual([first, `${i} RetryableResultError ${10 + i}`]);
            } else {
              expect(await ended).toBe(c.negative ? -1 : 2);
              expect(heard.splice(0)).toEqual([first]);
            }
          }
        },
      ),
      { numRuns: 40 },
    );
  });
});

describe("what calls share of a resolution", () => {
  // The hot path's promise (BENCHMARKS.md): options that set nothing of the retry step but maxRetries cost
  // no resolution after the first call of each value, and what is kept for them stays bounded.
  it("options with maxRetries alone (0 to 32, or left out) share one resolution per value; others are resolved afresh", () => {
    for (const maxRetries of [undefined, 0, 1, 3, 32]) {
      const first = resolveOptions({ maxRetries }).retry;
      expect(resolveOptions({ maxRetries }).retry, String(maxRetries)).toBe(first);
      expect(first.maxRetries, String(maxRetries)).toBe(maxRetries ?? 3);
    }
    // Kept for 33 values at most: past 32, fractions, negatives (no limit) and Infinity are not kept.
    for (const maxRetries of [33, 1000, -1, Number.POSITIVE_INFINITY]) {
      const first = resolveOptions({ maxRetries }).retry;
      expect(resolveOptions({ maxRetries }).retry, String(maxRetries)).not.toBe(first);
      expect(first.maxRetries, String(maxRetries)).toBe(
        maxRetries < 0 ? Number.POSITIVE_INFINITY : maxRetries,
      );
    }
  });

  it("options that add callbacks, a budget or a first delay get a resolution of their own, on the shared policies", () => {
    const onRetry = () => {};
    const plain = resolveOptions({ maxRetries: 2 }).retry;
    for (const options of [{ onRetry }, { budget: false as const }, { delayFirstAttempt: true }]) {
      const own = resolveOptions({ maxRetries: 2, ...options }).retry;
      expect(own).not.toBe(plain);
      expect(own.policies).toBe(plain.policies);
    }
  });

  it("is marked time-bound (each call then reads its clock at its start, not the shared start) whenever a policy, a rule's included, has a maxElapsed", () => {
    expect(resolveOptions({}).retry.timeBound).toBe(false);
    expect(resolveOptions({ maxElapsed: 1000 }).retry.timeBound).toBe(true);
    expect(resolveOptions({ rules: [{ when: Error }] }).retry.timeBound).toBe(false);
    expect(resolveOptions({ rules: [{ when: Error, maxElapsed: 1000 }] }).retry.timeBound).toBe(true);
    expect(
      resolveOptions({ rules: [{ when: TypeError }, { when: Error, maxElapsed: 5 }] }).retry.timeBound,
    ).toBe(true);
  });
});
