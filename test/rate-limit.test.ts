/**
 * The rate limiter (`rateLimiter`, `steps.rateLimit`): what a user relies on. The rate is never exceeded
 * over any span; calls wait their turn in order and leave the queue on abort, leaving no timer behind; a
 * refusal says when to come back, and the retry loop waits that long; bad options fail at once, naming
 * the option.
 */
import fc from "fast-check";
import {
  backoff,
  type Clock,
  jitter,
  OptionError,
  pipeline,
  RateLimitedError,
  RETRY_AFTER,
  rateLimiter,
  retry,
  retryReport,
  steps,
} from "robustly";
import { VirtualClock } from "robustly/testing";
import { describe, expect, it } from "vitest";

describe("the rate", () => {
  it("is never exceeded: over any span of T ms at most burst + rate × T / per calls start", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          rate: fc.oneof(fc.integer({ min: 1, max: 50 }), fc.double({ min: 0.1, max: 20, noNaN: true })),
          per: fc.integer({ min: 1, max: 5000 }),
          burst: fc.integer({ min: 1, max: 20 }),
          queue: fc.integer({ min: 0, max: 50 }),
        }),
        fc.array(fc.integer({ min: 0, max: 400 }), { minLength: 1, maxLength: 120 }),
        async ({ rate, per, burst, queue }, gaps) => {
          const clock = new VirtualClock();
          const limiter = rateLimiter({ rate, per, burst, queue, clock });
          const starts: number[] = [];
          const calls: Promise<unknown>[] = [];
          for (const gap of gaps) {
            await clock.advance(gap);
            calls.push(
              limiter
                .execute(() => {
                  starts.push(clock.now());
                })
                .catch((error: unknown) => {
                  expect(error).toBeInstanceOf(RateLimitedError);
                }),
            );
          }
          await clock.runAll();
          await Promise.all(calls);
          for (let i = 0; i < starts.length; i++) {
            for (let j = i; j < starts.length; j++) {
              const span = (starts[j] as number) - (starts[i] as number);
              expect(j - i + 1).toBeLessThanOrEqual(burst + (rate * span) / per + 1e-6);
            }
          }
          expect(clock.pending).toBe(0);
          expect(limiter.queued).toBe(0);
        },
      ),
      { numRuns: 150 },
    );
  });

  it("lets a burst through at once, then one call per interval, in the order they came", async () => {
    const clock = new VirtualClock();
    const limiter = rateLimiter({ rate: 10, burst: 3, queue: 10, clock });
    const starts: [number, number][] = [];
    const calls = Array.from({ length: 6 }, (_, i) => limiter.execute(() => starts.push([i, clock.now()])));
    await clock.runAll();
    await Promise.all(calls);
    expect(starts).toEqual([
      [0, 0],
      [1, 0],
      [2, 0],
      [3, 100],
      [4, 200],
      [5, 300],
    ]);
  });
});

describe("a refusal", () => {
  it("is a RateLimitedError that says when a token will be there, the queue's calls first", async () => {
    const clock = new VirtualClock();
    const limiter = rateLimiter({ rate: 10, burst: 1, queue: 2, clock });
    const rejected: unknown[] = [];
    limiter.on("rejected", (e) => rejected.push(e));
    await limiter.execute(() => 1);
    const waiting = [limiter.execute(() => 2), limiter.execute(() => 3)];
    const error = await limiter.execute(() => 4).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RateLimitedError);
    expect(error).toMatchObject({ name: "RateLimitedError", retryAfter: 300, rate: 10, per: 1000 });
    expect((error as RateLimitedError)[RETRY_AFTER]).toBe(300);
    expect(rejected).toEqual([{ retryAfter: 300, queued: 2 }]);
    await clock.runAll();
    expect(await Promise.all(waiting)).toEqual([2, 3]);
  });

  it("comes at once when the turn would be past maxWait", async () => {
    const clock = new VirtualClock();
    const limiter = rateLimiter({ rate: 1, burst: 1, queue: 100, maxWait: 1500, clock });
    await limiter.execute(() => 1);
    const second = limiter.execute(() => 2);
    await expect(limiter.execute(() => 3)).rejects.toMatchObject({ retryAfter: 2000 });
    await clock.runAll();
    expect(await second).toBe(2);
  });

  it("is waited out by the retry loop, as a server's Retry-After, with the jittered delay on top", async () => {
    const clock = new VirtualClock();
    const p = pipeline(
      steps.retry({ maxRetries: 3, backoff: backoff.constant({ base: 10 }), jitter: jitter.none() }),
      steps.rateLimit({ rate: 1, per: 1000, burst: 1, clock }),
    );
    const starts: number[] = [];
    const op = () => {
      starts.push(clock.now());
      return "ok";
    };
    const calls = [p.execute(op, { clock }), p.execute(op, { clock })];
    await clock.runAll();
    expect(await Promise.all(calls)).toEqual(["ok", "ok"]);
    // The second was refused at 0 with retryAfter 1000, and retried after 1000 + 10 ms.
    expect(starts).toEqual([0, 1010]);
  });

  it("of a limiter shared by retry calls is retried after retryAfter, and given up with the reason the policy has", async () => {
    const clock = new VirtualClock();
    const limiter = rateLimiter({ rate: 2, burst: 1, clock });
    const op = () => limiter.execute(() => "done");
    await retry(op, { clock });
    const refused = retry(op, { clock, maxRetries: 0 }).catch((e: unknown) => e);
    await clock.runAll();
    const error = await refused;
    expect(error).toBeInstanceOf(RateLimitedError);
    expect(retryReport(error)?.reason).toBe("retries");
  });
});

describe("the queue", () => {
  it("lets a thousand callers that abort while waiting leave, with no timer or listener behind", async () => {
    const clock = new VirtualClock();
    const limiter = rateLimiter({ rate: 1, per: 60_000, burst: 1, queue: 1000, clock });
    await limiter.execute(() => 0);
    const controllers = Array.from({ length: 1000 }, () => new AbortController());
    const calls = controllers.map((c) => limiter.execute(() => "late", c.signal).catch((e: unknown) => e));
    expect(limiter.queued).toBe(1000);
    expect(clock.pending).toBe(1);
    const reason = new Error("caller left");
    for (const c of controllers) c.abort(reason);
    expect((await Promise.all(calls)).every((e) => e === reason)).toBe(true);
    expect(limiter.queued).toBe(0);
    expect(clock.pending).toBe(0);
    // The token that was due is still there for the next caller, when it is due.
    const next = limiter.execute(() => "next");
    await clock.runAll();
    expect(await next).toBe("next");
    expect(clock.now()).toBe(60_000);
  });

  it("in a pipeline: an execution whose signal aborts while it waits leaves and fails with the reason", async () => {
    const clock = new VirtualClock();
    const p = pipeline(steps.rateLimit({ rate: 1, burst: 1, queue: 5, clock }));
    await p.execute(() => 1, { clock });
    const controller = new AbortController();
    const waiting = p.execute(() => 2, { clock, signal: controller.signal }).catch((e: unknown) => e);
    const behind = p.execute(() => 3, { clock });
    controller.abort(new Error("gone"));
    expect(await waiting).toMatchObject({ message: "gone" });
    await clock.runAll();
    expect(await behind).toBe(3);
    expect(clock.now()).toBe(1000);
  });

  it("keeps a newcomer behind the waiters even when a token came before the waiters' timer fired", async () => {
    let now = 0;
    const timers: (() => void)[] = [];
    const clock: Clock = {
      now: () => now,
      setTimer: (_ms, callback) => {
        timers.push(callback);
        return () => {};
      },
    };
    const limiter = rateLimiter({ rate: 1, burst: 1, queue: 5, clock });
    const order: string[] = [];
    await limiter.execute(() => order.push("a"));
    const b = limiter.execute(() => order.push("b"));
    now = 1000;
    const c = limiter.execute(() => order.push("c"));
    expect(order).toEqual(["a"]);
    (timers.shift() as () => void)();
    await b;
    expect(order).toEqual(["a", "b"]);
    expect(limiter.queued).toBe(1);
    now = 2000;
    (timers.shift() as () => void)();
    await c;
    expect(order).toEqual(["a", "b", "c"]);
  });

  it("tells who waits, where, and for how long; and who got a token after how long", async () => {
    const clock = new VirtualClock();
    const limiter = rateLimiter({ rate: 4, burst: 1, queue: 3, clock });
    const heard: unknown[] = [];
    limiter.on("queued", (e) => heard.push(["queued", e]));
    limiter.on("acquired", (e) => heard.push(["acquired", e]));
    const calls = [1, 2, 3].map((n) => limiter.execute(() => n));
    expect(limiter.snapshot()).toEqual({ tokens: 0, queued: 2 });
    await clock.runAll();
    await Promise.all(calls);
    expect(heard).toEqual([
      ["acquired", { waited: 0 }],
      ["queued", { position: 1, wait: 250 }],
      ["queued", { position: 2, wait: 500 }],
      ["acquired", { waited: 250 }],
      ["acquired", { waited: 500 }],
    ]);
  });
});

describe("bad input", () => {
  it.each([
    [{ rate: 0 }, "rate"],
    [{ rate: Number.NaN }, "rate"],
    [{ rate: Number.POSITIVE_INFINITY }, "rate"],
    [{ rate: 1e308 }, "rate"],
    [{ rate: -1 }, "rate"],
    [{ rate: 1, burst: 2 ** 53 }, "burst"],
    [{ rate: 1, burst: 1.5 }, "burst"],
    [{ rate: 1, per: 0 }, "per"],
    [{ rate: 1, per: 1e308 }, "per"],
    [{ rate: 1, queue: -1 }, "queue"],
    [{ rate: 1, maxWait: Number.NaN }, "maxWait"],
    [{ rate: 1, clock: {} }, "clock"],
    [{}, "rate"],
  ])("refuses %j, naming %s", (options, option) => {
    expect(() => rateLimiter(options as never)).toThrow(
      expect.objectContaining({ name: "OptionError", option: `rateLimiter: ${option}` }),
    );
    expect(() => steps.rateLimit(options as never)).toThrow(
      expect.objectContaining({ name: "OptionError", option: `steps.rateLimit: ${option}` }),
    );
  });

  it("names the nearest valid option for a misspelt one, and refuses no options at all", () => {
    expect(() => rateLimiter({ rat: 5 } as never)).toThrow(/rate/);
    expect(() => rateLimiter(undefined as never)).toThrow(OptionError);
  });

  it("makes no tokens of a clock that goes back a little or reads NaN: they come again once it passes its last reading", async () => {
    let now = 10_000;
    const clock: Clock = { now: () => now, setTimer: () => () => {} };
    const limiter = rateLimiter({ rate: 1, burst: 1, clock });
    await limiter.execute(() => 1);
    now = 9_500;
    await expect(limiter.execute(() => 2)).rejects.toBeInstanceOf(RateLimitedError);
    now = Number.NaN;
    await expect(limiter.execute(() => 3)).rejects.toBeInstanceOf(RateLimitedError);
    now = 10_999;
    await expect(limiter.execute(() => 4)).rejects.toBeInstanceOf(RateLimitedError);
    now = 11_000;
    expect(await limiter.execute(() => 5)).toBe(5);
  });

  it("is not stuck after a clock read far ahead once (fake timers advanced, then uninstalled): it goes on from the clock's time", async () => {
    let now = 0;
    const clock: Clock = { now: () => now, setTimer: () => () => {} };
    const limiter = rateLimiter({ rate: 1, burst: 1, clock });
    await limiter.execute(() => 1);
    now = 3_600_000;
    expect(await limiter.execute(() => 2)).toBe(2);
    now = 1000;
    await expect(limiter.execute(() => 3)).rejects.toBeInstanceOf(RateLimitedError);
    now = 2000;
    expect(await limiter.execute(() => 4)).toBe(4);
  });
});

describe("defects found by a fault hunt", () => {
  it("a clock that read NaN when the limiter was made gives tokens again once it reads a number", async () => {
    const readings = [Number.NaN];
    let now = 0;
    const clock: Clock = {
      now: () => (readings.length > 0 ? (readings.shift() as number) : now),
      setTimer: () => () => {},
    };
    const limiter = rateLimiter({ rate: 1, burst: 1, clock });
    expect(await limiter.execute(() => 1)).toBe(1);
    now = 5000;
    expect(await limiter.execute(() => 2)).toBe(2);
  });

  it("with a bucket of one, waiters start when their token is due, and a caller back at retryAfter finds its token", async () => {
    const clock = new VirtualClock();
    const limiter = rateLimiter({ rate: 3, per: 10_000, burst: 1, queue: 300, maxWait: 10_000, clock });
    const starts: number[] = [];
    await limiter.execute(() => 0);
    const waits: number[] = [];
    limiter.on("queued", ({ wait }) => waits.push(wait));
    const waiting = [1, 2, 3].map(() => limiter.execute(() => starts.push(clock.now())));
    const refused = (await limiter.execute(() => 0).catch((e: unknown) => e)) as RateLimitedError;
    await clock.runAll();
    await Promise.all(waiting);
    // Each starts at its token's time, as its queued event said, to the fraction of a ms.
    expect(waits.map((w) => w * 3)).toEqual([10_000, 20_000, 30_000].map((w) => expect.closeTo(w, 6)));
    starts.forEach((start, i) => {
      expect(start).toBeCloseTo(waits[i] as number, 6);
    });
    expect(refused.retryAfter).toBe(13_334); // the fourth token, rounded up to a whole ms
    await clock.advance(refused.retryAfter - clock.now());
    expect(await limiter.execute(() => "in")).toBe("in");
  });

  it("a start that throws at once gives its token back", () => {
    const limiter = rateLimiter({ rate: 1, burst: 1, clock: new VirtualClock() });
    expect(() =>
      limiter.acquire(() => {
        throw new Error("start broke");
      }),
    ).toThrow("start broke");
    expect(limiter.tokens).toBe(1);
  });

  it("a caller whose signal aborts while it joins the queue (a queued listener aborts it) leaves at once, and its operation never runs", async () => {
    const clock = new VirtualClock();
    const limiter = rateLimiter({ rate: 1, burst: 1, queue: 5, clock });
    await limiter.execute(() => 0);
    const controller = new AbortController();
    const listening = limiter.on("queued", () => controller.abort(new Error("left while queuing")));
    let ran = false;
    const call = limiter.execute(() => {
      ran = true;
    }, controller.signal);
    await expect(call).rejects.toThrow("left while queuing");
    listening.dispose();
    expect(limiter.queued).toBe(0);
    await clock.runAll();
    expect(ran).toBe(false);
    const step = pipeline(steps.rateLimit(limiter));
    const again = new AbortController();
    const stepListening = limiter.on("queued", () => again.abort(new Error("left the step")));
    let stepRan = false;
    const stepCall = step.execute(
      () => {
        stepRan = true;
      },
      { clock, signal: again.signal },
    );
    await expect(stepCall).rejects.toThrow("left the step");
    stepListening.dispose();
    expect(limiter.queued).toBe(0);
    await clock.runAll();
    expect(stepRan).toBe(false);
  });

  it("the retry loop waits an error's RETRY_AFTER only when it is a number of ms, at most 2^31 - 1; other values and a getter that throws are ignored", async () => {
    for (const [hint, expected] of [
      [Number.POSITIVE_INFINITY, [0, 100]],
      [{ exactly: 0 }, [0, 100]],
      ["5000", [0, 100]],
      [Number.NaN, [0, 100]],
      [-1, [0, 100]],
      [250, [0, 350]],
    ] as const) {
      const clock = new VirtualClock();
      const starts: number[] = [];
      const error = Object.assign(new Error("limited"), { [RETRY_AFTER]: hint });
      const call = retry(
        () => {
          starts.push(clock.now());
          if (starts.length === 1) throw error;
          return "ok";
        },
        { clock, maxRetries: 1, backoff: backoff.constant({ base: 100 }), jitter: jitter.none() },
      );
      await clock.runAll();
      expect(await call, String(hint)).toBe("ok");
      expect(starts, String(hint)).toEqual(expected);
    }
    const clock = new VirtualClock();
    const hostile = new Error("hostile");
    Object.defineProperty(hostile, RETRY_AFTER, {
      get() {
        throw new Error("getter boom");
      },
    });
    let n = 0;
    const call = retry(
      () => {
        n += 1;
        if (n === 1) throw hostile;
        return "ok";
      },
      { clock, maxRetries: 1, backoff: backoff.constant({ base: 100 }), jitter: jitter.none() },
    );
    await clock.runAll();
    expect(await call).toBe("ok");
  });
});
