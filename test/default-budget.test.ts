/**
 * The retry budget on by default: what a user relies on. A script's few retries are never refused; a
 * process retrying under 10 times a second never has one refused; a storm of failing calls is cut to 20 %
 * of the calls plus 10 a second over 10 s; each target (the process's `retry` calls, a wrapped function, a
 * pipeline's retry step, a fetch origin) and each clock has its own; `budget: false` turns it off.
 */
import fc from "fast-check";
import {
  backoff,
  type Clock,
  DEFAULT_BUDGET_MIN_PER_SECOND,
  DEFAULT_BUDGET_RATIO,
  DEFAULT_BUDGET_WINDOW,
  defaultBudget,
  type GiveUpEvent,
  OptionError,
  pipeline,
  type RetryOptions,
  retry,
  retryBudget,
  retryReport,
  steps,
  wrap,
} from "robustly";
import { withRetry } from "robustly/fetch";
import { VirtualClock } from "robustly/testing";
import { describe, expect, it } from "vitest";
import { captureWarnings } from "./support/drive.js";

const down = new Error("down");
const failing = () => Promise.reject(down);

/** Starts `calls` calls of an operation that always fails, at once, with `options`; the attempts made and the give-ups. */
async function storm(
  clock: VirtualClock,
  calls: number,
  options: RetryOptions<unknown> = {},
  run: (op: () => Promise<never>, options: RetryOptions<unknown>) => Promise<unknown> = retry,
) {
  let attempts = 0;
  const reasons: string[] = [];
  const op = () => {
    attempts += 1;
    return Promise.reject(down);
  };
  const all = Array.from({ length: calls }, () =>
    run(op, {
      clock,
      maxRetries: 3,
      backoff: backoff.none(),
      onGiveUp: (e: GiveUpEvent) => reasons.push(e.reason),
      ...options,
    }).then(
      () => "resolved",
      (error: unknown) => error,
    ),
  );
  await clock.runAll();
  const outcomes = await Promise.all(all);
  return { attempts, retries: attempts - calls, reasons, outcomes };
}

/** A clock whose readings cycle through `readings`, and whose timers run at the next microtask. */
function stuckAt(readings: readonly number[]): Clock {
  let i = 0;
  return {
    now: () => readings[i++ % readings.length] as number,
    setTimer: (_ms, callback) => {
      queueMicrotask(callback);
      return () => {};
    },
  };
}

/** Runs `calls` failing calls at once on `clock` (3 retries each, no backoff); the retries they made. */
async function stormOn(clock: Clock, calls: number): Promise<number> {
  let attempts = 0;
  const all = Array.from({ length: calls }, () =>
    retry(
      () => {
        attempts += 1;
        return Promise.reject(down);
      },
      { clock, maxRetries: 3, backoff: backoff.none() },
    ).catch((e: unknown) => e),
  );
  await Promise.all(all);
  return attempts - calls;
}

describe("the defaults a user relies on", () => {
  it("is Finagle's: 20 % of the calls of the last 10 s, plus 10 retries a second", () => {
    expect([DEFAULT_BUDGET_RATIO, DEFAULT_BUDGET_MIN_PER_SECOND, DEFAULT_BUDGET_WINDOW]).toEqual([
      0.2, 10, 10_000,
    ]);
  });

  it("gives a script's one call with maxRetries: 5 its five retries, on the real clock and on a virtual one", async () => {
    let attempts = 0;
    const op = () => {
      attempts += 1;
      return Promise.reject(down);
    };
    await expect(retry(op, { maxRetries: 5, backoff: backoff.none() })).rejects.toBe(down);
    expect(attempts).toBe(6);
    const clock = new VirtualClock();
    attempts = 0;
    const call = retry(op, { maxRetries: 5, clock }).catch((e: unknown) => e);
    await clock.runAll();
    expect(await call).toBe(down);
    expect(attempts).toBe(6);
    expect(retryReport(down)?.reason).toBe("retries");
  });

  it("never refuses a retry to a process that retries fewer than 10 times a second", async () => {
    await fc.assert(
      fc.asyncProperty(
        // Gaps of at least 1000/9 ms between retries: at most 9 in any second, however they bunch.
        fc.array(fc.integer({ min: 112, max: 5000 }), { minLength: 1, maxLength: 300 }),
        // Calls that succeed at once, between those that fail once: traffic that only adds to the budget.
        fc.array(fc.integer({ min: 0, max: 3 }), { minLength: 1, maxLength: 300 }),
        async (gaps, quiet) => {
          const clock = new VirtualClock();
          let refused = 0;
          const listening = defaultBudget(clock).on("refused", () => {
            refused += 1;
          });
          const reasons: string[] = [];
          const options = {
            clock,
            maxRetries: 3,
            backoff: backoff.none(),
            onGiveUp: (e: GiveUpEvent) => reasons.push(e.reason),
          };
          for (const [i, gap] of gaps.entries()) {
            await clock.advance(gap);
            for (let k = 0; k < (quiet[i % quiet.length] as number); k++) await retry(() => 1, options);
            let failures = 0;
            const call = retry(() => (failures++ === 0 ? Promise.reject(down) : Promise.resolve(1)), options);
            await clock.runAll();
            await expect(call).resolves.toBe(1);
          }
          listening.dispose();
          expect(refused).toBe(0);
          expect(reasons).toEqual([]);
        },
      ),
      { numRuns: 40 },
    );
  });
});

describe("a storm of failing calls", () => {
  it("is cut to 20 % of its calls plus 100 retries within the window, each refused call ending with its last error, reason budget", async () => {
    const clock = new VirtualClock();
    const refusals: unknown[] = [];
    const listening = defaultBudget(clock).on("refused", ({ state }) => refusals.push(state));
    const { retries, reasons, outcomes } = await storm(clock, 200);
    listening.dispose();
    // Every retry the window allows, and no more: 0.2 × 200 + 10 × 10.
    expect(retries).toBe(140);
    expect(outcomes.every((o) => o === down)).toBe(true);
    expect(reasons.filter((r) => r === "budget").length).toBe(refusals.length);
    expect(reasons.filter((r) => r === "retries").length + refusals.length).toBe(200);
    expect(retryReport(down)).toBeDefined();
    expect(refusals[0]).toMatchObject({ kind: "ratio" });
    // With no listener, a refusal costs no event.
    const state = defaultBudget(clock).snapshot();
    expect(state.retries.reduce((a, b) => a + b, 0)).toBe(140);
    expect(state.requests.reduce((a, b) => a + b, 0)).toBe(200);
  });

  it("gets its retries back as the window slides on", async () => {
    const clock = new VirtualClock();
    await storm(clock, 200);
    expect(defaultBudget(clock).available).toBe(false);
    await clock.advance(DEFAULT_BUDGET_WINDOW);
    expect(defaultBudget(clock).available).toBe(true);
    const { retries } = await storm(clock, 10);
    expect(retries).toBe(30);
  });

  it("is left alone with budget: false", async () => {
    const { retries, reasons } = await storm(new VirtualClock(), 200, { budget: false });
    expect(retries).toBe(600);
    expect(reasons.every((r) => r === "retries")).toBe(true);
  });

  it("draws on a budget the options name instead of the default", async () => {
    const clock = new VirtualClock();
    const budget = retryBudget({ ratio: 0, minPerSecond: 1, window: 10_000, clock });
    const { retries } = await storm(clock, 50, { budget });
    expect(retries).toBe(10);
    expect(
      defaultBudget(clock)
        .snapshot()
        .retries.every((n) => n === 0),
    ).toBe(true);
  });
});

describe("one default budget per target and per clock", () => {
  it("gives a VirtualClock its own, never the process's", async () => {
    const before = defaultBudget().snapshot();
    await storm(new VirtualClock(), 200);
    const after = defaultBudget().snapshot();
    const sum = (xs: readonly number[]) => xs.reduce((a, b) => a + b, 0);
    expect(sum(after.retries)).toBeLessThanOrEqual(sum(before.retries));
    // A second virtual clock starts with a full budget.
    const { retries } = await storm(new VirtualClock(), 10);
    expect(retries).toBe(30);
  });

  it("gives each wrapped function its own", async () => {
    const clock = new VirtualClock();
    const counted = () => {
      const f = Object.assign(
        wrap(
          () => {
            f.attempts += 1;
            return Promise.reject(down);
          },
          { clock, maxRetries: 3, backoff: backoff.none() },
        ),
        { attempts: 0 },
      );
      return f;
    };
    const calls = async (f: ReturnType<typeof counted>, n: number) => {
      const all = Array.from({ length: n }, () => f().catch((e: unknown) => e));
      await clock.runAll();
      expect(await Promise.all(all)).toEqual(Array(n).fill(down));
    };
    const a = counted();
    await calls(a, 200);
    expect(a.attempts - 200).toBe(140);
    // Neither the process's budget on that clock nor another wrapped function's was touched.
    expect(defaultBudget(clock).available).toBe(true);
    const b = counted();
    await calls(b, 1);
    expect(b.attempts).toBe(4);
    // The same function, called again, is still out of retries.
    await calls(a, 1);
    expect(a.attempts - 201).toBe(140);
  });

  it("gives each pipeline's retry step its own", async () => {
    const clock = new VirtualClock();
    let attempts = 0;
    const failing = () => {
      attempts += 1;
      return Promise.reject(down);
    };
    /** Runs `n` failing executions of `p` at once; the retries they made. */
    const execute = async (p: ReturnType<typeof pipeline>, n: number) => {
      attempts = 0;
      const calls = Array.from({ length: n }, () => p.execute(failing, { clock }).catch((e: unknown) => e));
      await clock.runAll();
      await Promise.all(calls);
      return attempts - n;
    };
    const p = pipeline(steps.retry({ maxRetries: 3, backoff: backoff.none() }));
    expect(await execute(p, 200)).toBe(140);
    expect(defaultBudget(clock).available).toBe(true);
    expect(await execute(pipeline(steps.retry({ maxRetries: 3, backoff: backoff.none() })), 1)).toBe(3);
    expect(await execute(p, 1)).toBe(0);
  });

  it("gives each fetch origin (scheme, host and port) its own, and keeps at most 1,000 origins", async () => {
    const clock = new VirtualClock();
    const fetches = new Map<string, number>();
    const fetchImpl = async (input: RequestInfo | URL) => {
      const origin = new URL(String(input)).origin;
      fetches.set(origin, (fetches.get(origin) ?? 0) + 1);
      return new Response("busy", { status: 503 });
    };
    const api = withRetry(fetchImpl, { clock, maxRetries: 3, backoff: backoff.none(), totalTimeout: -1 });
    const get = async (url: string, n: number) => {
      const calls = Array.from({ length: n }, () => api(url).then((r) => r.status));
      await clock.runAll();
      return Promise.all(calls);
    };
    await get("https://a.example/x", 200);
    expect(fetches.get("https://a.example")).toBe(340);
    await get("https://a.example:8443/x", 1);
    expect(fetches.get("https://a.example:8443")).toBe(4);
    await get("http://a.example/x", 1);
    expect(fetches.get("http://a.example")).toBe(4);
    // A's budget is spent; after 1,000 other origins it is let go, and A starts again with a full one.
    await get("https://a.example/y", 1);
    expect(fetches.get("https://a.example")).toBe(341);
    for (let i = 0; i < 1000; i++) {
      const call = api(`https://h${i}.example/`, undefined, { maxRetries: 0 });
      await clock.runAll();
      await call;
    }
    await get("https://a.example/z", 1);
    expect(fetches.get("https://a.example")).toBe(345);
  });
});

describe("bad input", () => {
  it.each([true, 0, "budget", null, {}, { tryRetry: () => true }])(
    "refuses budget: %p, naming the option and what it takes",
    (budget) => {
      expect(() => wrap(failing, { budget } as unknown as RetryOptions<unknown>)).toThrow(OptionError);
      expect(() => wrap(failing, { budget } as unknown as RetryOptions<unknown>)).toThrow(
        /budget.*a retry budget \(from retryBudget\(\)\), or false for none/,
      );
    },
  );

  it("is found for a clock only: anything else fails with an OptionError naming it", () => {
    for (const clock of [null, "clock", 42, {}, { now: 1 }]) {
      expect(() => defaultBudget(clock as unknown as Clock)).toThrow(
        expect.objectContaining({ name: "OptionError", option: "defaultBudget: clock" }),
      );
    }
    expect(defaultBudget()).toBe(defaultBudget());
  });

  it("reports a refused listener that throws as a warning, each time, and the call still ends with its last error", async () => {
    const clock = new VirtualClock();
    const captured = captureWarnings();
    const throwing = defaultBudget(clock).on("refused", () => {
      throw new Error("listener broke");
    });
    try {
      const { outcomes, reasons } = await storm(clock, 150);
      expect(outcomes.every((o) => o === down)).toBe(true);
      const refused = reasons.filter((r) => r === "budget").length;
      expect(refused).toBeGreaterThan(0);
      expect(captured.warnings).toHaveLength(refused);
      expect(captured.warnings[0]).toEqual({
        message: 'a "refused" listener threw (robustly went on): listener broke',
        type: "RobustlyCallbackWarning",
      });
    } finally {
      throwing.dispose();
      captured.restore();
    }
    expect(() => defaultBudget(clock).on("nope" as "refused", () => {})).toThrow(TypeError);
  });

  it("keeps counting on a clock stuck at NaN, Infinity, 1e308 or a negative time, within the window's bounds", async () => {
    for (const reading of [Number.NaN, Number.POSITIVE_INFINITY, 1e308, -5e3]) {
      const clock = stuckAt([reading]);
      const budget = defaultBudget(clock);
      const retries = await stormOn(clock, 200);
      // Never more retries than the window allows for the calls it counted.
      expect(retries, `at ${reading}`).toBeLessThanOrEqual(140);
      expect(retries).toBeGreaterThanOrEqual(100);
      const state = budget.snapshot();
      expect(state.requests).toHaveLength(10);
      expect(state.retries.every((n) => Number.isFinite(n) && n >= 0)).toBe(true);
    }
  });

  it("starts its window again at a reading a whole window before its latest: a clock that swings back and forth is never stuck", async () => {
    const clock = stuckAt([50_000, 1000, 20_000, 5]);
    const budget = defaultBudget(clock);
    // Every swing back by 10 s or more starts the window again: retries are not held back.
    expect(await stormOn(clock, 200)).toBe(600);
    const state = budget.snapshot();
    expect(state.retries.every((n) => Number.isFinite(n) && n >= 0)).toBe(true);
  });
});

describe("defects found by a fault hunt", () => {
  it("a clock that read far ahead once does not freeze the window: a process under 10 retries a second still gets every retry", async () => {
    for (const glitch of [1e308, 3_600_000, 1_795_813_557_602]) {
      // A virtual clock that answers one reading far ahead (fake timers advanced by an hour, then
      // restored; a wall clock stepped back), then its own time again.
      const clock = new VirtualClock();
      let odd = true;
      const now = clock.now.bind(clock);
      clock.now = () => {
        if (odd) {
          odd = false;
          return glitch;
        }
        return now();
      };
      const reasons: string[] = [];
      for (let second = 0; second < 30; second++) {
        for (let k = 0; k < 5; k++) {
          let failures = 0;
          const call = retry(() => (failures++ === 0 ? Promise.reject(down) : Promise.resolve(1)), {
            clock,
            backoff: backoff.none(),
            onGiveUp: (e) => reasons.push(e.reason),
          });
          await clock.runAll();
          await call;
          await clock.advance(200);
        }
      }
      expect(reasons, `after a reading of ${glitch}`).toEqual([]);
    }
  });

  it("the default budget given to a hedge step inside counts each call once, as the same budget named on both does", async () => {
    const sum = (xs: readonly number[]) => xs.reduce((a, b) => a + b, 0);
    for (const attempts of [1, 2, 4]) {
      const clock = new VirtualClock();
      const budget = defaultBudget(clock);
      const hedge = steps.hedge({ delay: 50, budget, maxHedges: 0 });
      let n = 0;
      const call = retry(
        () => {
          n += 1;
          return n < attempts ? Promise.reject(down) : Promise.resolve(1);
        },
        { clock, hedge, maxRetries: 5, backoff: backoff.none() },
      );
      await clock.runAll();
      await call;
      expect(sum(budget.snapshot().requests), `${attempts} attempts`).toBe(1);
      expect(sum(budget.snapshot().retries)).toBe(attempts - 1);
    }
  });

  it("robustFetch refuses budget: null given per call, as every other way of giving options does", async () => {
    const fetchImpl = async () => new Response("busy", { status: 503 });
    const api = withRetry(fetchImpl, { clock: new VirtualClock(), maxRetries: 0 });
    await expect(api("https://a.example/", undefined, { budget: null as never })).rejects.toThrow(
      expect.objectContaining({ name: "OptionError", option: "budget" }),
    );
  });

  it("defaultBudget() refuses a clock without setTimer, as its message says", () => {
    for (const clock of [{ now: () => 0 }, { now: () => 0, setTimer: 1 }]) {
      expect(() => defaultBudget(clock as unknown as Clock)).toThrow(
        expect.objectContaining({ name: "OptionError", option: "defaultBudget: clock" }),
      );
    }
  });
});
