import fc from "fast-check";
import { OptionError, retry } from "robustly";
import { describe, expect, it } from "vitest";

// `retry(op, options)` resolves an options object once and finds it again by its keys and values (options
// written inline) or by identity (objects holding functions or objects). These tests check that whatever
// was cached, each call runs on the options it was given, and that a bad one still fails at once.

/** What the attempt saw of its options: retries left (maxRetries) and the timeout. */
const sees = (ctx: { retriesLeft: number; timeout: number }) => [ctx.retriesLeft, ctx.timeout];

describe("options written inline", () => {
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

  it("an unknown key fails at once even beside cached ones", async () => {
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

  it("more shapes than the cache holds all still resolve to their own values", async () => {
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

  it("options holding a function (not cached by value) still see their own values", async () => {
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
