// What tenacity's users reach for: statistics on success as well as failure, and waits built from
// other waits (wait_chain, wait_combine, a cap, a factor), as pure functions over Backoff values.
import fc from "fast-check";
import {
  type AttemptEvent,
  type Backoff,
  backoff,
  delays,
  fromConfig,
  type GiveUpEvent,
  jitter,
  MAX_TIMER_DELAY,
  OptionError,
  pipeline,
  type RetryStats,
  retry,
  retryReport,
  seededRandom,
  steps,
} from "robustly";
import { VirtualClock } from "robustly/testing";
import { describe, expect, it } from "vitest";
import { drive, retried } from "../support/drive.js";

const none = jitter.none();

/** The backoff's own delays for x = 0 … count − 1, drawing from `random`. */
const raw = (b: Backoff, count: number, random = seededRandom(1)) =>
  delays({ backoff: b, jitter: none, random }, count);

/** A few pure backoffs, any parameters. */
const anyBackoff: fc.Arbitrary<Backoff> = fc.oneof(
  fc.integer({ min: 0, max: 10_000 }).map((base) => backoff.constant({ base })),
  fc
    .tuple(fc.integer({ min: 0, max: 5000 }), fc.integer({ min: 0, max: 5000 }))
    .map(([base, interval]) => backoff.linear({ base, interval })),
  fc
    .tuple(fc.integer({ min: 1, max: 5000 }), fc.integer({ min: 1, max: 4 }))
    .map(([base, multiplier]) => backoff.exponential({ base, multiplier, max: 1e9 })),
  fc.integer({ min: 1, max: 5000 }).map((max) => backoff.random({ max })),
);

describe("statistics on success and on failure", () => {
  it("onSuccess receives the attempts, the time since the first attempt and the time slept", async () => {
    const clock = new VirtualClock();
    const stats: RetryStats[] = [];
    let calls = 0;
    const result = await retried(
      async () => {
        calls += 1;
        await clock.sleep(50);
        if (calls < 3) throw new Error("again");
        return "ok";
      },
      {
        clock,
        backoff: backoff.constant({ base: 1000 }),
        jitter: none,
        onSuccess: (_value, s) => stats.push(s),
      },
    );
    expect(result).toEqual({ ok: true, value: "ok" });
    expect(stats).toEqual([{ attempts: 3, elapsed: 2150, idle: 2000 }]);
  });

  it("a call that succeeds at once has one attempt and no idle time, also on the fast path", async () => {
    const stats: RetryStats[] = [];
    const events: unknown[] = [];
    const step = steps.retry({ onSuccess: (_value, s) => stats.push(s) });
    step.on("success", (e) => events.push(e));
    const clock = new VirtualClock();
    await expect(retry(() => 1, { clock, onSuccess: (_value, s) => stats.push(s) })).resolves.toBe(1);
    expect(step.execute(() => 2, { attempt: 1, retries: 0, elapsed: 0, clock } as never)).toBe(2);
    expect(stats).toEqual([
      { attempts: 1, elapsed: 0, idle: 0 },
      { attempts: 1, elapsed: 0, idle: 0 },
    ]);
    expect(events).toEqual([{ value: 2, attempt: 1, elapsed: 0, idle: 0 }]);
  });

  it("on failure, retryReport and onGiveUp tell the idle time too", async () => {
    const clock = new VirtualClock();
    const error = new Error("down");
    const given: unknown[] = [];
    await retried(
      async () => {
        await clock.sleep(10);
        throw error;
      },
      {
        clock,
        maxRetries: 2,
        backoff: backoff.linear({ base: 100, interval: 100 }),
        jitter: none,
        onGiveUp: ({ idle, attempts, elapsed }) => given.push({ idle, attempts, elapsed }),
      },
    );
    expect(retryReport(error)).toEqual({ reason: "retries", attempts: 3, elapsed: 330, idle: 300 });
    expect(given).toEqual([{ idle: 300, attempts: 3, elapsed: 330 }]);
  });

  it("a sleep the caller's abort cut short counts as far as it went", async () => {
    const clock = new VirtualClock();
    const controller = new AbortController();
    const given: number[] = [];
    const call = retry(
      () => {
        throw new Error("down");
      },
      {
        clock,
        signal: controller.signal,
        backoff: backoff.constant({ base: 1000 }),
        jitter: none,
        onGiveUp: ({ idle }) => given.push(idle),
      },
    ).catch(() => undefined);
    await clock.advance(1300);
    controller.abort(new Error("stop"));
    await call;
    expect(given).toEqual([1300]);
  });

  it("idle is the sum of the waits onRetry announced, and never more than elapsed", async () => {
    await fc.assert(
      fc.asyncProperty(
        anyBackoff,
        fc.integer({ min: 0, max: 6 }),
        fc.integer({ min: 0, max: 100 }),
        fc.integer(),
        async (b, failures, work, seed) => {
          const clock = new VirtualClock();
          const waits: number[] = [];
          let stats: RetryStats | undefined;
          let calls = 0;
          await retried(
            async () => {
              calls += 1;
              await clock.sleep(work);
              if (calls <= failures) throw new Error("again");
            },
            {
              clock,
              random: seededRandom(seed),
              maxRetries: 10,
              backoff: b,
              onRetry: ({ delay }) => waits.push(delay),
              onSuccess: (_v, s) => {
                stats = s;
              },
            },
          );
          const slept = waits.reduce((sum, w) => sum + w, 0);
          expect(stats?.attempts).toBe(failures + 1);
          expect(stats?.idle).toBeCloseTo(slept, 6);
          expect(stats?.elapsed).toBeCloseTo(slept + work * (failures + 1), 6);
          expect(stats?.idle).toBeLessThanOrEqual((stats?.elapsed ?? 0) + 1e-9);
        },
      ),
      { numRuns: 60 },
    );
  });
});

describe("backoff.chain (tenacity's wait_chain)", () => {
  it("is a's delays for the first n retries, then b's from its own x = 0", () => {
    fc.assert(
      fc.property(anyBackoff, fc.integer({ min: 0, max: 6 }), anyBackoff, fc.integer(), (a, n, b, seed) => {
        const count = n + 6;
        const chained = raw(backoff.chain(a, n, b), count, seededRandom(seed));
        // Each strategy draws only for its own delays, in order.
        const draws = seededRandom(seed);
        const expected = [...raw(a, n, draws), ...raw(b, count - n, draws)];
        expect(chained).toEqual(expected);
      }),
    );
  });

  it("base is the first delay's strategy's, max the larger; it keeps to the timer's range", () => {
    const a = backoff.constant({ base: 100 });
    const b = backoff.exponential({ base: 1000, max: 8000 });
    const chained = backoff.chain(a, 3, b);
    expect(chained).toMatchObject({ name: "chain(constant, 3, exponential)", base: 100, max: 8000 });
    expect(backoff.chain(a, 0, b)).toMatchObject({ base: 1000, max: 8000 });
    expect(raw(chained, 6)).toEqual([100, 100, 100, 1000, 2000, 4000]);
  });

  it("refuses what is not a backoff and an n that is no count, at once", () => {
    const a = backoff.constant({ base: 100 });
    expect(() => backoff.chain(a, -1, a)).toThrow(
      /^backoff\.chain: retries must be an integer >= 0; got -1$/,
    );
    expect(() => backoff.chain(a, 1.5, a)).toThrow(OptionError);
    expect(() => backoff.chain(a, Number.POSITIVE_INFINITY, a)).toThrow(OptionError);
    expect(() => backoff.chain(42 as never, 1, a)).toThrow(/^backoff\.chain: first must be a backoff/);
    expect(() => backoff.chain(a, 1, backoff.exponential as never)).toThrow(/call the factory/);
  });
});

describe("backoff.plus (tenacity's wait_combine)", () => {
  it("adds the two delays, its base and max are the sums, within the timer's range", () => {
    fc.assert(
      fc.property(anyBackoff, anyBackoff, fc.nat({ max: 40 }), fc.integer(), (a, b, x, seed) => {
        const sum = backoff.plus(a, b);
        const draws = seededRandom(seed);
        const first = a.delay(x, draws);
        const second = b.delay(x, draws);
        expect(sum.delay(x, seededRandom(seed))).toBe(Math.min(first + second, MAX_TIMER_DELAY));
        expect(sum.base).toBe(a.base + b.base);
        expect(sum.max).toBe(a.max + b.max);
      }),
    );
  });

  it("a wait plus a random one: tenacity's wait_fixed(3) + wait_random(0, 2)", () => {
    const w = backoff.plus(backoff.constant({ base: 3000 }), backoff.random({ max: 2000 }));
    expect(delays({ backoff: w, jitter: none, random: () => 0.5 }, 3)).toEqual([4000, 4000, 4000]);
    expect(w.name).toBe("plus(constant, random)");
  });
});

describe("backoff.capped and backoff.scaled", () => {
  it("capped(b, ms) is min(b, ms), delay, base and max", () => {
    fc.assert(
      fc.property(anyBackoff, fc.integer({ min: 0, max: 100_000 }), fc.nat({ max: 40 }), (b, ms, x) => {
        const c = backoff.capped(b, ms);
        expect(c.delay(x, () => 0.5)).toBe(
          Math.min(
            b.delay(x, () => 0.5),
            ms,
          ),
        );
        expect(c.base).toBe(Math.min(b.base, ms));
        expect(c.max).toBe(Math.min(b.max, ms));
      }),
    );
  });

  it("scaled(b, k) is k × b, delay, base and max, within the timer's range", () => {
    fc.assert(
      fc.property(
        anyBackoff,
        fc.double({ min: 0.001, max: 100, noNaN: true }),
        fc.nat({ max: 40 }),
        (b, k, x) => {
          const s = backoff.scaled(b, k);
          expect(s.delay(x, () => 0.5)).toBe(Math.min(b.delay(x, () => 0.5) * k, MAX_TIMER_DELAY));
          expect(s.base).toBe(b.base * k);
          expect(s.max).toBe(b.max * k);
        },
      ),
    );
  });

  it("compose, and never change what they are built from", () => {
    const e = backoff.exponential({ base: 100 });
    const w = backoff.capped(backoff.scaled(e, 3), 1000);
    expect(raw(w, 5)).toEqual([300, 600, 1000, 1000, 1000]);
    expect(raw(e, 3)).toEqual([100, 200, 400]);
    expect(w.name).toBe("capped(scaled(exponential))");
  });

  it("refuse a bad cap or factor at once", () => {
    const e = backoff.exponential({ base: 100 });
    expect(() => backoff.capped(e, -1)).toThrow(
      /^backoff\.capped: ms must be a number >= 0 \(Infinity allowed\); got -1$/,
    );
    expect(() => backoff.scaled(e, 0)).toThrow(/^backoff\.scaled: k must be a finite number > 0; got 0$/);
    expect(() => backoff.scaled(e, Number.NaN)).toThrow(OptionError);
    expect(() => backoff.capped(undefined as never, 1)).toThrow(
      /^backoff\.capped: backoff must be a backoff/,
    );
  });

  it("a stateful part (a shared ResponsiveBackoff, say) still hears of successes, and forks for a preview", () => {
    const heard: string[] = [];
    const stateful: Backoff = {
      name: "stateful",
      base: 10,
      max: 100,
      delay: () => 10,
      success: () => heard.push("success"),
      fork: () => {
        heard.push("fork");
        return { ...stateful, success: undefined, fork: undefined };
      },
    };
    const built = backoff.capped(backoff.chain(stateful, 2, backoff.constant({ base: 50 })), 40);
    built.success?.();
    expect(heard).toEqual(["success"]);
    expect(delays({ backoff: built, jitter: none }, 3)).toEqual([10, 10, 40]);
    expect(heard).toEqual(["success", "fork"]);
    expect(backoff.plus(backoff.none(), backoff.none()).success).toBeUndefined();
  });
});

describe("stop after a delay: counting the next wait or not", () => {
  /** When each attempt starts, under `options`, for an operation that always fails. */
  async function starts(options: Record<string, unknown>): Promise<number[]> {
    const clock = new VirtualClock();
    const at: number[] = [];
    await drive(
      clock,
      retry(
        () => {
          at.push(clock.now());
          throw new Error("down");
        },
        {
          clock,
          maxRetries: -1,
          backoff: backoff.constant({ base: 400 }),
          jitter: jitter.none(),
          ...options,
        },
      ),
    );
    return at;
  }

  it("by default the next wait counts (tenacity's stop_before_delay): no attempt starts past maxElapsed", async () => {
    expect(await starts({ maxElapsed: 1000 })).toEqual([0, 400, 800]);
  });

  it("maxElapsedCountsWait: false (tenacity's stop_after_delay): retrying stops once the limit has passed", async () => {
    expect(await starts({ maxElapsed: 1000, maxElapsedCountsWait: false })).toEqual([0, 400, 800, 1200]);
  });

  it("a rule may say otherwise than the top level, and the JSON form takes it", async () => {
    const rules = [{ when: Error, maxElapsedCountsWait: false }];
    expect(await starts({ maxElapsed: 1000, rules })).toEqual([0, 400, 800, 1200]);
    expect(fromConfig({ maxElapsed: "1s", maxElapsedCountsWait: false }).maxElapsedCountsWait).toBe(false);
  });
});

describe("tenacity's before: onAttempt and the attempt event, before each attempt", () => {
  it("hears every attempt before it starts, with its number, retries, retries left and elapsed time", async () => {
    const clock = new VirtualClock();
    const log: string[] = [];
    const step = steps.retry<string>({
      maxRetries: 2,
      backoff: backoff.constant({ base: 1000 }),
      jitter: jitter.none(),
      onAttempt: ({ attempt, retries, retriesLeft, elapsed }) =>
        log.push(`before ${attempt} (${retries} retries, ${retriesLeft} left, ${elapsed} ms)`),
    });
    const heard: AttemptEvent[] = [];
    step.on("attempt", (event) => heard.push(event));
    let calls = 0;
    const result = await drive(
      clock,
      pipeline(step).execute(
        () => {
          calls += 1;
          log.push(`attempt ${calls}`);
          if (calls < 3) throw new Error("not yet");
          return "ok";
        },
        { clock },
      ),
    );
    expect(result).toEqual({ ok: true, value: "ok" });
    expect(log).toEqual([
      "before 1 (0 retries, 2 left, 0 ms)",
      "attempt 1",
      "before 2 (1 retries, 1 left, 1000 ms)",
      "attempt 2",
      "before 3 (2 retries, 0 left, 2000 ms)",
      "attempt 3",
    ]);
    expect(heard.map((e) => e.attempt)).toEqual([1, 2, 3]);
  });

  it("is called for the first attempt on the fast path too (no signal, no budget)", async () => {
    const attempts: number[] = [];
    expect(await retry(() => "ok", { onAttempt: ({ attempt }) => attempts.push(attempt) })).toBe("ok");
    expect(attempts).toEqual([1]);
  });

  it("a throw goes to onCallbackError, and the attempt runs all the same", async () => {
    const clock = new VirtualClock();
    const reported: [string, string][] = [];
    let calls = 0;
    const result = await drive(
      clock,
      retry(
        () => {
          calls += 1;
          if (calls < 2) throw new Error("not yet");
          return "ok";
        },
        {
          clock,
          onAttempt: () => {
            throw new Error("logging broke");
          },
          onCallbackError: (error, callback) => reported.push([callback, (error as Error).message]),
        },
      ),
    );
    expect(result).toEqual({ ok: true, value: "ok" });
    expect(reported).toEqual([
      ["onAttempt", "logging broke"],
      ["onAttempt", "logging broke"],
    ]);
  });

  it("an onAttempt that aborts the caller's signal stops the call before that attempt", async () => {
    const clock = new VirtualClock();
    const controller = new AbortController();
    let calls = 0;
    const result = await drive(
      clock,
      retry(
        () => {
          calls += 1;
          throw new Error("down");
        },
        {
          clock,
          signal: controller.signal,
          jitter: jitter.none(),
          onAttempt: ({ attempt }) => {
            if (attempt === 2) controller.abort(new Error("enough"));
          },
        },
      ),
    );
    expect(calls).toBe(1);
    expect((result as { error: Error }).error.message).toBe("enough");
  });

  it("the give-up after an onAttempt abort counts only the attempts that started", async () => {
    for (const stopAt of [1, 2, 3]) {
      const clock = new VirtualClock();
      const controller = new AbortController();
      let calls = 0;
      const gaveUp: GiveUpEvent[] = [];
      await drive(
        clock,
        retry(
          () => {
            calls += 1;
            throw new Error("down");
          },
          {
            clock,
            signal: controller.signal,
            maxRetries: 5,
            backoff: backoff.constant({ base: 100 }),
            jitter: jitter.none(),
            onAttempt: ({ attempt }) => {
              if (attempt === stopAt) controller.abort(new Error("enough"));
            },
            onGiveUp: (event) => gaveUp.push(event),
          },
        ),
      );
      expect(calls).toBe(stopAt - 1);
      expect(gaveUp.map(({ reason, attempts }) => ({ reason, attempts }))).toEqual([
        { reason: "aborted", attempts: stopAt - 1 },
      ]);
    }
  });
});
