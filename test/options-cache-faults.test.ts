import { backoff, OptionError, type RetryOptions, retry } from "robustly";
import { VirtualClock } from "robustly/testing";
import { describe, expect, it } from "vitest";
import { HELD_EVERY } from "../src/retry/retry.js";

// Options the short form's cache could mistake for others: objects changed after they were kept, objects
// whose options are not all enumerable own data (getters, class instances, prototypes), values that are no
// options object at all, and objects whose insides a resolution reads (hedge, chaos, a retryOn list).

/** What the attempt saw of its options: retries left (maxRetries) and the timeout. */
const sees = (ctx: { retriesLeft: number; timeout: number }) => [ctx.retriesLeft, ctx.timeout];
const log = () => {};
const none = Number.POSITIVE_INFINITY;

/** Calls `retry(op, options)` often enough that options holding functions are kept (see `HELD_EVERY`). */
async function keep(options: RetryOptions<unknown>): Promise<void> {
  for (let i = 0; i <= HELD_EVERY; i++) await retry(sees, options);
}

describe("options the cache must not mistake for others", () => {
  it("an options object kept by identity and changed since runs on its new values, and a bad one fails", async () => {
    const options: Record<string, unknown> = { maxRetries: 1, onRetry: log };
    await keep(options);
    options.maxRetries = 5;
    await expect(retry(sees, options)).resolves.toEqual([5, none]);
    options.maxRetries = 0.5;
    await expect(retry(sees, options)).rejects.toThrow(OptionError);
    options.maxRetries = 1;
    options.onRetry = "not a function";
    await expect(retry(sees, options)).rejects.toThrow(/onRetry/);
  });

  it("a class instance's options (accessors on its prototype) are read, not matched to {} by their enumerable keys", async () => {
    await retry(sees, {});
    await retry(sees, { maxRetries: 2 });
    class Settings {
      maxRetries = 2;
      get timeout() {
        return 500;
      }
    }
    await expect(retry(sees, new Settings() as RetryOptions)).resolves.toEqual([2, 500]);
    class Bad {
      get maxRetries() {
        return 0.5;
      }
    }
    await expect(retry(sees, new Bad() as RetryOptions)).rejects.toThrow(/maxRetries/);
  });

  it("null, a number, a string or an array as options fails at once, however often {} was resolved", async () => {
    await retry(sees, {});
    await retry(sees, {});
    for (const value of [null, 5, "", [], Object.assign([], { maxRetries: 2 })]) {
      let calls = 0;
      const counted = () => {
        calls += 1;
        return 1;
      };
      await expect(retry(counted, value as RetryOptions)).rejects.toThrow(OptionError);
      expect(calls).toBe(0);
    }
  });

  it("a getter that answers differently at each read leaves no entry that other options are then run on", async () => {
    let reads = 0;
    const counting = {
      get maxRetries() {
        reads += 1;
        return reads;
      },
    };
    await retry(sees, counting);
    for (let maxRetries = 0; maxRetries < 2 * HELD_EVERY; maxRetries++) {
      await expect(retry(sees, { maxRetries })).resolves.toEqual([maxRetries, none]);
    }
    // The same with a function among the values (an entry kept weakly).
    const fns = Array.from({ length: 4 * HELD_EVERY }, () => () => true);
    let turns = 0;
    const alternating = {
      maxRetries: 2,
      get retryOn() {
        turns += 1;
        return fns[turns] as () => boolean;
      },
    };
    await keep(alternating);
    for (const retryOn of fns) {
      await expect(retry(sees, { maxRetries: 3, retryOn })).resolves.toEqual([3, none]);
    }
  });

  it("a hedge object changed between calls is checked again: a bad change fails at once", async () => {
    const hedge: { delay: number; maxHedges: number } = { delay: 100, maxHedges: 1 };
    let calls = 0;
    const op = () => {
      calls += 1;
      return calls;
    };
    const options = { maxRetries: 0, clock: new VirtualClock(), hedge };
    for (let i = 0; i <= HELD_EVERY; i++) await retry(op, options);
    hedge.maxHedges = 0.5;
    calls = 0;
    await expect(retry(op, options)).rejects.toThrow(/maxHedges/);
    expect(calls).toBe(0);
  });

  it("a chaos object changed between calls takes effect", async () => {
    const chaos = { fault: { rate: 1, error: () => new Error("injected") }, enabled: true };
    const options = { maxRetries: 0, backoff: backoff.none(), chaos };
    for (let i = 0; i <= HELD_EVERY; i++) await expect(retry(() => 1, options)).rejects.toThrow("injected");
    chaos.enabled = false;
    await expect(retry(() => 1, options)).resolves.toBe(1);
  });

  it("a retryOn list changed between calls takes effect, and a bad entry fails at once", async () => {
    const retryOn: unknown[] = [RangeError];
    const options = { maxRetries: 1, backoff: backoff.none(), retryOn, onRetry: log } as RetryOptions<number>;
    const failsOnce = () => {
      let attempts = 0;
      return () => {
        attempts += 1;
        if (attempts === 1) throw new TypeError("once");
        return attempts;
      };
    };
    for (let i = 0; i <= HELD_EVERY; i++) await expect(retry(failsOnce(), options)).rejects.toThrow("once");
    retryOn.push(TypeError);
    await expect(retry(failsOnce(), options)).resolves.toBe(2);
    retryOn.push(42);
    await expect(retry(failsOnce(), options)).rejects.toThrow(OptionError);
  });
});
