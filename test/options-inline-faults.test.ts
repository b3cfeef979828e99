import v8 from "node:v8";
import vm from "node:vm";
import fc from "fast-check";
import {
  backoff,
  jitter,
  OptionError,
  type RetryBudget,
  type RetryOptions,
  retry,
  retryPipeline,
  steps,
  wrap,
} from "robustly";
import { VirtualClock } from "robustly/testing";
import { describe, expect, it } from "vitest";

// Options easy to mistake for others: objects changed between calls, objects whose options are not all
// enumerable own data (getters, class instances, prototypes), values that are no options object at all,
// and objects whose insides a resolution reads (hedge, chaos, a retryOn list).

/** Calls of one shape made in a row, enough for any state kept between calls to show. */
const REPEATS = 64;

/** What the attempt saw of its options: retries left (maxRetries) and the timeout. */
const sees = (ctx: { retriesLeft: number; timeout: number }) => [ctx.retriesLeft, ctx.timeout];
const log = () => {};

v8.setFlagsFromString("--expose-gc");
const gc = vm.runInNewContext("gc") as () => void;
const none = Number.POSITIVE_INFINITY;

/** Calls `retry(op, options)` `REPEATS` times and once more. */
async function keep(options: RetryOptions<unknown>): Promise<void> {
  for (let i = 0; i <= REPEATS; i++) await retry(sees, options);
}

describe("options easy to mistake for others", () => {
  it("a polluted prototype (an enumerable property on Object.prototype) is no option, and breaks no call", async () => {
    Object.defineProperty(Object.prototype, "polluted", {
      value: 1,
      enumerable: true,
      configurable: true,
      writable: true,
    });
    try {
      for (let i = 0; i <= REPEATS; i++) {
        await expect(retry(sees, { maxRetries: 2, onRetry: () => {} })).resolves.toEqual([2, none]);
        await expect(retry(sees, { maxRetries: 1, timeout: 50 })).resolves.toEqual([1, 50]);
      }
      await expect(retryPipeline({ maxRetries: 4 }).execute(sees)).resolves.toEqual([4, none]);
      // An unknown key of the options' own still fails, naming it.
      await expect(retry(sees, { maxRetriez: 1 } as RetryOptions<unknown>)).rejects.toThrow(
        "options.maxRetriez must be one of the known options",
      );
    } finally {
      delete (Object.prototype as Record<string, unknown>).polluted;
    }
  });

  it("an options object called with and changed since runs on its new values, and a bad one fails", async () => {
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

  it("options made by Object.create are read by name, their prototype's too, as a class instance's are", async () => {
    const proto = Object.defineProperty({ maxRetries: 1 }, "timeout", { value: 50 });
    await expect(retry(sees, Object.create(proto) as RetryOptions)).resolves.toEqual([1, 50]);
    await expect(wrap(sees, Object.create(proto) as RetryOptions<unknown>)()).resolves.toEqual([1, 50]);
    const nothing = Object.create(null) as Record<string, unknown>;
    nothing.maxRetries = 4;
    await expect(retry(sees, nothing as RetryOptions)).resolves.toEqual([4, none]);
  });

  it("rules with a hole (a rule left out by mistake) fail at once, naming it, where they threw a TypeError", async () => {
    // biome-ignore lint/suspicious/noSparseArray: the hole is the input under test
    const holed = [, { when: "TypeError" }] as unknown as RetryOptions["rules"];
    await expect(retry(sees, { rules: holed })).rejects.toThrow(
      expect.objectContaining({ name: "OptionError", option: "rules[0].when" }),
    );
    expect(() => steps.retry({ rules: holed })).toThrow(
      expect.objectContaining({ name: "OptionError", option: "rules[0].when" }),
    );
  });

  it("attempts() runs on the options it checked: a getter that answers otherwise at its next read is not asked again", async () => {
    const { attempts } = await import("robustly");
    const signal = new AbortController().signal;
    let reads = 0;
    const options = {
      get signal() {
        reads += 1;
        return (reads === 1 ? signal : 5) as AbortSignal;
      },
    };
    const seen: number[] = [];
    for await (const attempt of attempts(options)) {
      seen.push(attempt.attempt);
      break;
    }
    expect({ seen, reads }).toEqual({ seen: [1], reads: 1 });
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
    for (let maxRetries = 0; maxRetries < 2 * REPEATS; maxRetries++) {
      await expect(retry(sees, { maxRetries })).resolves.toEqual([maxRetries, none]);
    }
    // The same with a function among the values.
    const fns = Array.from({ length: 4 * REPEATS }, () => () => true);
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

  it("a hedge or chaos step given in reused options runs as given at every call", async () => {
    let calls = 0;
    const op = () => {
      calls += 1;
      return calls;
    };
    const chaos = steps.chaos({ fault: { rate: 1, error: () => new Error("injected") }, enabled: () => on });
    let on = true;
    const options = { maxRetries: 0, backoff: backoff.none(), chaos };
    for (let i = 0; i <= REPEATS; i++) await expect(retry(op, options)).rejects.toThrow("injected");
    on = false;
    await expect(retry(op, options)).resolves.toBe(1);
    const hedged = {
      maxRetries: 0,
      clock: new VirtualClock(),
      hedge: steps.hedge({ delay: 100, maxHedges: 1 }),
    };
    for (let i = 0; i <= REPEATS; i++) await retry(op, hedged);
    expect(calls).toBe(REPEATS + 2);
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
    for (let i = 0; i <= REPEATS; i++) await expect(retry(failsOnce(), options)).rejects.toThrow("once");
    retryOn.push(TypeError);
    await expect(retry(failsOnce(), options)).resolves.toBe(2);
    retryOn.push(42);
    await expect(retry(failsOnce(), options)).rejects.toThrow(OptionError);
  });
});

describe("what a call keeps", () => {
  it("nothing a call passed (operation, signal, clock, options built once and reused, their callbacks) outlives it", async () => {
    const refs: [string, WeakRef<object>][] = [];
    const log = () => {};
    // Each call site in a function of its own, so that no frame of the test holds what it passed.
    const site = async (i: number) => {
      const controller = new AbortController();
      const clock = new VirtualClock();
      let attempts = 0;
      const op = () => {
        attempts += 1;
        if (attempts === 1) throw new Error("once");
        return attempts;
      };
      const kinds: RetryOptions<number>[] = [
        { maxRetries: 3, signal: controller.signal, clock },
        { maxRetries: 3, signal: controller.signal, clock, onRetry: () => i },
        { maxRetries: 3, clock, onRetry: log },
        { maxRetries: 3, timeout: 50, signal: controller.signal, clock, onError: () => i },
      ];
      const options = kinds[i % kinds.length] as RetryOptions<number>;
      refs.push(["operation", new WeakRef(op)], ["signal", new WeakRef(controller.signal)]);
      refs.push(["clock", new WeakRef(clock)], ["options", new WeakRef(options)]);
      // The same options object again and again.
      for (let k = 0; k <= REPEATS; k++) {
        attempts = 0;
        const call = retry(op, options);
        await clock.runAll();
        await expect(call).resolves.toBe(2);
      }
    };
    for (let i = 0; i < 8; i++) await site(i);
    // A turn of the event loop first: a new WeakRef keeps its target until the current job is over.
    await new Promise<void>((resolve) => setImmediate(resolve));
    gc();
    expect(refs.filter(([, ref]) => ref.deref() !== undefined).map(([what]) => what)).toEqual([]);
  });
});

/** One call's options, drawn as picks from small pools of values shared by every call and made for it. */
const pick = fc.record({
  maxRetries: fc.constantFrom(-2, 0, 1, 2),
  backoff: fc.constantFrom(-2, -1, 0, 1),
  jitter: fc.constantFrom(-2, 0, 1),
  random: fc.constantFrom(-1, 0, 1),
  retryOn: fc.constantFrom(-2, -1, 0, 1),
  retryOnResult: fc.constantFrom(-2, -1, 0),
  delayFrom: fc.constantFrom(-2, -1, 0),
  timeout: fc.constantFrom(-2, 50),
  onRetry: fc.constantFrom(-3, -2, -1, 0, 1),
  onGiveUp: fc.constantFrom(-3, -2, -1, 0),
  onSuccess: fc.constantFrom(-3, -2, -1, 0),
  onError: fc.constantFrom(-2, -1, 0),
  /** The attempts' outcomes, in turn; the last repeats. */
  outcomes: fc.array(fc.constantFrom("fail", "stop", "negative", "ok"), { minLength: 1, maxLength: 4 }),
  /** A permutation of the keys, as indices to sort them by. */
  order: fc.array(fc.nat(), { minLength: 12, maxLength: 12 }),
  /** Reuse the options object of an earlier call (-1: a new one), after changing its maxRetries or not. */
  reuse: fc.integer({ min: -3, max: 2 }),
  /** Calls made with the options before the one compared: now and then, many. */
  repeat: fc.constantFrom(0, 0, 0, REPEATS),
  collect: fc.integer({ min: 0, max: 39 }),
});

describe("retry(op, options) against retryPipeline(options)", () => {
  it("every call runs as retryPipeline(options) would, over sequences of shared, fresh and reused values", async () => {
    const clock = new VirtualClock();
    await fc.assert(
      fc.asyncProperty(fc.array(pick, { minLength: 1, maxLength: 30 }), async (calls) => {
        const trace: string[] = [];
        const tell = (tag: string) => (event: unknown, more?: unknown) => {
          const e = event as Record<string, unknown>;
          trace.push(`${tag} ${e?.delay ?? e?.reason ?? String(event)} ${String(more ?? "")}`);
        };
        // -2: the key left out; -3: the key given as undefined; -1: a value made for this call; 0, 1: shared.
        const shared = {
          backoff: [backoff.constant({ base: 10 }), backoff.linear({ base: 20 })],
          jitter: [jitter.none(), jitter.full()],
          random: [() => 0.5, () => 0.75],
          retryOn: [(e: unknown) => (e as Error).message === "fail", ["Error"]],
          retryOnResult: [(v: number) => v < 0],
          delayFrom: [() => 5],
          onRetry: [tell("retry 0"), tell("retry 1")],
          onGiveUp: [tell("give up 0")],
          onSuccess: [tell("success 0")],
          onError: [tell("error 0")],
        } as Record<string, unknown[]>;
        const fresh: Record<string, (i: number) => unknown> = {
          maxRetries: () => 3,
          backoff: (i) => backoff.constant({ base: 30 + i }),
          random: (i) => () => (i % 10) / 10,
          retryOn: (i) =>
            i % 2 === 0 ? (e: unknown) => (e as Error).message !== "stop" : [TypeError, "Error"],
          retryOnResult: (i) => (v: number) => v < -i,
          delayFrom: (i) => () => ({ exactly: i }),
          onRetry: (i) => tell(`retry own ${i}`),
          onGiveUp: (i) => tell(`give up own ${i}`),
          onSuccess: (i) => tell(`success own ${i}`),
          onError: (i) => tell(`error own ${i}`),
        };
        const made: RetryOptions<number>[] = [];
        for (const [i, call] of calls.entries()) {
          let options: RetryOptions<number>;
          const earlier = made[made.length - 1 - Math.max(call.reuse, 0)];
          if (call.reuse >= 0 && earlier !== undefined) {
            options = earlier;
            if (call.reuse === 1)
              (options as Record<string, unknown>).maxRetries = call.maxRetries === 2 ? 1 : 2;
          } else {
            const keys = Object.keys(call).filter(
              (k) => !["outcomes", "order", "reuse", "repeat", "collect"].includes(k),
            );
            const sorted = keys
              .map((key, n) => ({ key, rank: call.order[n] ?? 0 }))
              .sort((a, b) => a.rank - b.rank)
              .map((k) => k.key);
            const record: Record<string, unknown> = {};
            for (const key of sorted) {
              const choice = (call as unknown as Record<string, number>)[key] as number;
              if (choice === -2) continue;
              if (key === "maxRetries" || key === "timeout") record[key] = choice;
              else if (choice === -3) record[key] = undefined;
              else if (choice === -1) record[key] = (fresh[key] as (i: number) => unknown)(i);
              else record[key] = (shared[key] as unknown[])[choice];
            }
            if (record.random === undefined) record.random = shared.random?.[0];
            record.clock = clock;
            // The default budget belongs to a target (`retry`'s calls share one per clock, each pipeline has
            // its own), and these calls fail hundreds of times in one virtual instant: compared without it.
            record.budget = false;
            options = record as RetryOptions<number>;
          }
          made.push(options);
          const run = async (go: (op: () => number) => Promise<number>) => {
            let attempts = 0;
            const op = () => {
              const outcome = call.outcomes[Math.min(attempts, call.outcomes.length - 1)];
              attempts += 1;
              if (outcome === "ok") return attempts;
              if (outcome === "negative") return -attempts;
              throw new Error(outcome);
            };
            const start = clock.now();
            const settled = go(op).then(
              (value) => `value ${value}`,
              (error: Error) => `error ${error.message}`,
            );
            await clock.runAll();
            return `${await settled} after ${attempts} attempts, ${Math.round(clock.now() - start)} ms`;
          };
          for (let k = 0; k < call.repeat; k++) await run((op) => retry(op, options));
          trace.splice(0);
          const short = await run((op) => retry(op, options));
          const seen = trace.splice(0);
          const { clock: _clock, random, ...rest } = options;
          const reference = await run((op) => retryPipeline(rest).execute(op, { clock, random }));
          expect([short, seen]).toEqual([reference, trace.splice(0)]);
          if (call.collect === 0) {
            await new Promise<void>((resolve) => setImmediate(resolve));
            gc();
          }
        }
      }),
      { numRuns: 100 },
    );
  });
});

describe("a budget that lacks one of a retry budget's methods", () => {
  it("fails at once, naming the option, where it was taken and failed inside the call with a TypeError", async () => {
    const partial = { tryRetry: () => true } as unknown as RetryOptions["budget"];
    const op = () => Promise.reject(new Error("down"));
    await expect(retry(op, { budget: partial, backoff: backoff.none() })).rejects.toThrow(
      expect.objectContaining({ name: "OptionError", option: "budget" }),
    );
    expect(() => steps.retry({ budget: partial })).toThrow(expect.objectContaining({ option: "budget" }));
    expect(() => steps.hedge({ delay: 10, budget: partial as RetryBudget })).toThrow(
      expect.objectContaining({ name: "OptionError", option: "hedge: budget" }),
    );
  });
});
