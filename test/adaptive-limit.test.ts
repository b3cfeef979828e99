/**
 * The adaptive concurrency limit (`adaptiveLimit`, `steps.adaptiveLimit`): what a user relies on. The limit
 * stays within [min, max] whatever the calls see; each algorithm moves it the way it says (grow while
 * latency stays at its floor, shrink when it rises or calls are dropped); calls over it wait in order or are
 * refused; nothing is left behind; bad options fail at once, naming the option.
 */
import fc from "fast-check";
import {
  AdaptiveLimit,
  adaptiveLimit,
  aimd,
  type Clock,
  ConcurrencyLimitError,
  gradient2,
  type LimitAlgorithm,
  pipeline,
  steps,
  TimeoutError,
  vegas,
} from "robustly";
import { VirtualClock } from "robustly/testing";
import { describe, expect, it } from "vitest";

const ALGORITHMS = { aimd, vegas, gradient2 } as const;
type Name = keyof typeof ALGORITHMS;
const names = Object.keys(ALGORITHMS) as Name[];

/** A call that takes `ms` of the clock's time, then succeeds, or fails with `error`. */
const taking = (clock: VirtualClock, ms: number, error?: unknown) => () =>
  new Promise((resolve, reject) => {
    clock.setTimer(ms, () => (error === undefined ? resolve(ms) : reject(error)));
  });

describe("the limit", () => {
  it("stays within [min, max], a whole number, whatever latencies and drops the calls see", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...names),
        fc.integer({ min: 1, max: 30 }),
        fc.integer({ min: 0, max: 40 }),
        fc.array(
          fc.record({
            latency: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 5000 })),
            dropped: fc.boolean(),
            gap: fc.integer({ min: 0, max: 50 }),
          }),
          { minLength: 1, maxLength: 150 },
        ),
        async (name, min, span, calls) => {
          const clock = new VirtualClock();
          const max = min + span;
          const limit = adaptiveLimit({ algorithm: name, min, max, queue: 1e6, clock });
          const seen: number[] = [limit.limit];
          limit.on("change", ({ from, to }) => {
            expect(from).toBe(seen.at(-1));
            seen.push(to);
          });
          const running: Promise<unknown>[] = [];
          for (const c of calls) {
            running.push(
              limit
                .execute(taking(clock, c.latency, c.dropped ? new TimeoutError(c.latency) : undefined))
                .catch(() => {}),
            );
            await clock.advance(c.gap);
          }
          await clock.runAll();
          await Promise.all(running);
          for (const value of seen) {
            expect(Number.isInteger(value)).toBe(true);
            expect(value).toBeGreaterThanOrEqual(min);
            expect(value).toBeLessThanOrEqual(max);
          }
          expect(limit.snapshot()).toMatchObject({ inFlight: 0, queued: 0 });
          expect(clock.pending).toBe(0);
        },
      ),
      { numRuns: 120 },
    );
  });

  it("never lets more calls run at once than the limit was when each started", async () => {
    const clock = new VirtualClock();
    const limit = adaptiveLimit({ algorithm: "aimd", initial: 3, max: 3, queue: 100, clock });
    let running = 0;
    let most = 0;
    const calls = Array.from({ length: 30 }, (_, i) =>
      limit.execute(async () => {
        running += 1;
        most = Math.max(most, running);
        await taking(clock, 10 + (i % 7))();
        running -= 1;
      }),
    );
    await clock.runAll();
    await Promise.all(calls);
    expect(most).toBe(3);
  });
});

describe("each algorithm moves the limit the way it says", () => {
  const sample = (latency: number, inFlight: number, dropped = false) => ({ latency, inFlight, dropped });

  it("AIMD: +1 for a call that finished with at least half the limit in flight, × 0.9 for a drop", () => {
    fc.assert(
      fc.property(
        fc.double({ min: 1, max: 1e5, noNaN: true }),
        fc.integer({ min: 0, max: 1e5 }),
        (limit, inFlight) => {
          const a = aimd();
          const grown = a.update(limit, sample(10, inFlight)).limit;
          expect(grown).toBe(inFlight * 2 >= limit ? limit + 1 : limit);
          expect(a.update(limit, sample(10, inFlight, true))).toEqual({ limit: limit * 0.9, reason: "drop" });
          expect(aimd({ backoffRatio: 0.5 }).update(limit, sample(10, inFlight, true)).limit).toBe(limit / 2);
        },
      ),
    );
  });

  it("Vegas: grows while latency stays at its floor, shrinks when it rises far above, and on a drop", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 1e5 }), fc.integer({ min: 1, max: 10_000 }), (limit, floor) => {
        const v = vegas();
        expect(v.update(limit, sample(floor, limit)).limit).toBeGreaterThan(limit);
        // Latency 10 × its floor: an estimated 90% of the limit queued, above beta × log10(limit) for limits
        // past 60 or so; below it the limit is too small to have a queue that long.
        const risen = v.update(limit, sample(floor * 10, limit));
        if (limit * 0.9 > 6 * Math.max(1, Math.log10(limit)))
          expect(risen).toMatchObject({ reason: "latency" });
        if (risen.reason === "latency") expect(risen.limit).toBeLessThan(limit);
        expect(v.update(limit, sample(floor, limit, true)).limit).toBeLessThan(limit);
      }),
    );
  });

  it("Gradient2: grows by a share of √limit at a steady latency, shrinks when latency rises past its tolerance", () => {
    fc.assert(
      fc.property(fc.integer({ min: 5, max: 1e5 }), fc.integer({ min: 1, max: 10_000 }), (limit, latency) => {
        const g = gradient2();
        const steady = g.update(limit, sample(latency, limit));
        expect(steady.limit).toBeCloseTo(limit + 0.2 * Math.sqrt(limit), 6);
        expect(steady.reason).toBe("grow");
        // Four times the long-term latency: the gradient is 1.5 / 4, held at 0.5.
        const risen = g.update(limit, sample(latency * 4, limit));
        expect(risen.limit).toBeCloseTo(limit * 0.8 + 0.2 * (limit * 0.5 + Math.sqrt(limit)), 6);
        expect(risen.reason).toBe("latency");
      }),
    );
  });

  it("none grows a limit that is not in use (under half of it in flight), AIMD and Gradient2 alike", () => {
    expect(aimd().update(100, sample(10, 10)).limit).toBe(100);
    expect(gradient2().update(100, sample(10, 10)).limit).toBe(100);
  });

  it("in a limiter: calls that keep their latency grow it; a slower server shrinks it; timeouts shrink it, with the reason", async () => {
    for (const name of names) {
      const clock = new VirtualClock();
      const limit = adaptiveLimit({ algorithm: name, initial: 10, max: 100, queue: 1000, clock });
      const reasons = new Set<string>();
      limit.on("change", ({ reason }) => reasons.add(reason));
      const wave = async (n: number, ms: number, error?: unknown) => {
        const calls = Array.from({ length: n }, () =>
          limit.execute(taking(clock, ms, error)).catch(() => {}),
        );
        await clock.runAll();
        await Promise.all(calls);
      };
      await wave(200, 20);
      const grown = limit.limit;
      expect(grown, name).toBeGreaterThan(10);
      await wave(200, 20, new TimeoutError(20));
      expect(limit.limit, name).toBeLessThan(grown);
      expect(reasons.has("drop"), name).toBe(true);
      expect(reasons.has("grow"), name).toBe(true);
    }
  });

  it("in a limiter: errors that are no drop leave the limit as it is; isDrop says which are", async () => {
    const clock = new VirtualClock();
    const limit = adaptiveLimit({ algorithm: "aimd", initial: 10, clock });
    const ignored = limit.execute(taking(clock, 5, new Error("404"))).catch(() => {});
    await clock.runAll();
    await ignored;
    expect(limit.limit).toBe(10);
    const strict = adaptiveLimit({
      algorithm: "aimd",
      initial: 10,
      clock,
      isDrop: (e) => (e as Error).message === "503",
    });
    const call = strict.execute(taking(clock, 5, new Error("503"))).catch(() => {});
    await clock.runAll();
    await call;
    expect(strict.limit).toBe(9);
  });
});

describe("calls over the limit", () => {
  it("wait their turn in order, or are refused with ConcurrencyLimitError when the queue is full", async () => {
    const clock = new VirtualClock();
    const limit = adaptiveLimit({ algorithm: "aimd", initial: 1, max: 1, queue: 2, clock });
    const order: number[] = [];
    const run = (n: number) =>
      limit.execute(async () => {
        order.push(n);
        await taking(clock, 10)();
      });
    const calls = [run(1), run(2), run(3)];
    const refused = await run(4).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ConcurrencyLimitError);
    expect(refused).toMatchObject({ limit: 1, inFlight: 1 });
    await clock.runAll();
    await Promise.all(calls);
    expect(order).toEqual([1, 2, 3]);
  });

  it("leave the queue when a thousand callers abort, with nothing left behind", async () => {
    const clock = new VirtualClock();
    const limit = adaptiveLimit({ algorithm: "vegas", initial: 1, max: 1, queue: 1000, clock });
    const first = limit.execute(taking(clock, 100));
    const controllers = Array.from({ length: 1000 }, () => new AbortController());
    const calls = controllers.map((c) => limit.execute(() => "late", c.signal).catch((e: unknown) => e));
    expect(limit.queued).toBe(1000);
    const reason = new Error("gone");
    for (const c of controllers) c.abort(reason);
    expect((await Promise.all(calls)).every((e) => e === reason)).toBe(true);
    expect(limit.queued).toBe(0);
    await clock.runAll();
    await first;
    expect(limit.snapshot()).toEqual({ algorithm: "vegas", limit: 1, inFlight: 0, queued: 0 });
    expect(clock.pending).toBe(0);
  });

  it("in a pipeline with a timeout inside: a timeout is a drop, and an aborted run frees its place", async () => {
    const clock = new VirtualClock();
    const shared = adaptiveLimit({ algorithm: "aimd", initial: 4, clock });
    const p = pipeline(steps.adaptiveLimit(shared), steps.timeout(50));
    const timedOut = p.execute(() => new Promise(() => {}), { clock }).then(undefined, (e: unknown) => e);
    await clock.runAll();
    expect(await timedOut).toBeInstanceOf(TimeoutError);
    expect(shared.limit).toBe(3);
    const controller = new AbortController();
    const hung = p
      .execute(() => new Promise(() => {}), { clock, signal: controller.signal })
      .catch((e: unknown) => e);
    expect(shared.inFlight).toBe(1);
    controller.abort(new Error("left"));
    expect(await hung).toMatchObject({ message: "left" });
    expect(shared.inFlight).toBe(0);
    expect(shared.limit).toBe(3);
    await clock.runAll();
  });
});

describe("bad input", () => {
  it.each([
    [{ min: 0 }, "min"],
    [{ min: 1.5 }, "min"],
    [{ max: 2e6 }, "max"],
    [{ min: 10, max: 5 }, "max"],
    [{ min: 5, max: 10, initial: 11 }, "initial"],
    [{ initial: Number.NaN }, "initial"],
    [{ queue: -1 }, "queue"],
    [{ algorithm: "tcp" }, "algorithm"],
    [{ algorithm: {} }, "algorithm"],
    [{ isDrop: "timeout" }, "isDrop"],
    [{ clock: { now: () => 0 } }, "clock"],
  ])("refuses %j, naming %s", (options, option) => {
    expect(() => adaptiveLimit(options as never)).toThrow(
      expect.objectContaining({ name: "OptionError", option: `adaptiveLimit: ${option}` }),
    );
    expect(() => steps.adaptiveLimit(options as never)).toThrow(
      expect.objectContaining({ name: "OptionError", option: `steps.adaptiveLimit: ${option}` }),
    );
  });

  it("names the nearest valid option for a misspelt one", () => {
    expect(() => adaptiveLimit({ initail: 5 } as never)).toThrow(/initial/);
  });

  it("takes a clock that goes back or reads NaN, and an algorithm that answers garbage, without moving out of bounds", async () => {
    let now = 1000;
    let step = 0;
    const readings = [1000, 500, Number.NaN, 2000, Number.POSITIVE_INFINITY];
    const clock: Clock = {
      now: () => {
        now = readings[step++ % readings.length] as number;
        return now;
      },
      setTimer: (_ms, callback) => {
        queueMicrotask(callback);
        return () => {};
      },
    };
    const garbage: LimitAlgorithm = {
      name: "garbage",
      update: (limit) => ({ limit: limit % 2 ? Number.NaN : 1e308, reason: "grow" }),
    };
    for (const algorithm of [...names, garbage]) {
      const limit = new AdaptiveLimit({ algorithm, min: 2, max: 50, initial: 5, queue: 100, clock });
      const calls = Array.from({ length: 60 }, (_, i) =>
        limit
          .execute(() => (i % 3 === 0 ? Promise.reject(new TimeoutError(1)) : Promise.resolve(i)))
          .catch(() => {}),
      );
      await Promise.all(calls);
      expect(limit.limit).toBeGreaterThanOrEqual(2);
      expect(limit.limit).toBeLessThanOrEqual(50);
      expect(limit.inFlight).toBe(0);
    }
  });
});

describe("defects found by a fault hunt", () => {
  it("adaptiveLimit(null) fails with an OptionError, as rateLimiter(null) does", () => {
    expect(() => adaptiveLimit(null as never)).toThrow(expect.objectContaining({ name: "OptionError" }));
    expect(() => steps.adaptiveLimit(null as never)).toThrow(
      expect.objectContaining({ name: "OptionError" }),
    );
  });

  it("an algorithm whose answer throws as it is read frees the place, settles the call and serves the queue", async () => {
    const clock = new VirtualClock();
    const hostile: LimitAlgorithm = {
      name: "hostile",
      update: () =>
        ({
          get limit(): number {
            throw new Error("limit getter");
          },
          reason: "grow",
        }) as never,
    };
    const errors: string[] = [];
    const limit = adaptiveLimit({
      algorithm: hostile,
      initial: 1,
      max: 1,
      queue: 1,
      clock,
      onCallbackError: (e) => errors.push((e as Error).message),
    });
    const first = limit.execute(taking(clock, 10));
    const second = limit.execute(() => "second");
    await clock.runAll();
    expect(await first).toBe(10);
    expect(await second).toBe("second");
    expect(errors).toContain("limit getter");
    expect(limit.snapshot()).toMatchObject({ inFlight: 0, queued: 0 });
  });

  it("a caller whose signal aborts while it joins the queue leaves at once, and its operation never runs", async () => {
    const clock = new VirtualClock();
    const limit = adaptiveLimit({ initial: 1, max: 1, queue: 5, clock });
    const first = limit.execute(taking(clock, 10));
    const controller = new AbortController();
    const listening = limit.on("queued", () => controller.abort(new Error("left while queuing")));
    let ran = false;
    await expect(
      limit.execute(() => {
        ran = true;
      }, controller.signal),
    ).rejects.toThrow("left while queuing");
    listening.dispose();
    const again = new AbortController();
    limit.on("queued", () => again.abort(new Error("left the step")));
    const viaStep = pipeline(steps.adaptiveLimit(limit)).execute(
      () => {
        ran = true;
      },
      { clock, signal: again.signal },
    );
    await expect(viaStep).rejects.toThrow("left the step");
    expect(limit.queued).toBe(0);
    await clock.runAll();
    await first;
    expect(ran).toBe(false);
  });

  it("checks the algorithms' own options: aimd, vegas and gradient2 refuse a bad one, naming it", () => {
    for (const [make, option] of [
      [() => aimd({ backoffRatio: 5 }), "aimd: backoffRatio"],
      [() => aimd({ backoffRatio: Number.NaN }), "aimd: backoffRatio"],
      [() => aimd({ backofRatio: 0.5 } as never), "aimd.backofRatio"],
      [() => vegas({ alpha: -1 }), "vegas: alpha"],
      [() => vegas({ alpha: 6, beta: 3 }), "vegas: beta"],
      [() => gradient2({ smoothing: 5 }), "gradient2: smoothing"],
      [() => gradient2({ longWindow: -1 }), "gradient2: longWindow"],
      [() => gradient2({ tolerance: 0.5 }), "gradient2: tolerance"],
      [() => aimd("x" as never), "aimd"],
    ] as const) {
      expect(make, option).toThrow(expect.objectContaining({ name: "OptionError", option }));
    }
  });

  it("Vegas and Gradient2 do not collapse after a call that took no time (a cache hit, a clock stepped back)", () => {
    for (const make of [vegas, gradient2]) {
      const algorithm = make();
      let limit = 50;
      for (let i = 0; i < 40; i++) {
        const latency = i === 5 ? 0 : 10;
        limit = algorithm.update(limit, { latency, inFlight: limit, dropped: false }).limit;
      }
      expect(limit, algorithm.name).toBeGreaterThan(50);
    }
  });
});
