import fc from "fast-check";
import { jitter, OptionError, ResponsiveBackoff, retry, throttle } from "robustly";
import { seededRandom, VirtualClock } from "robustly/testing";
import { describe, expect, it } from "vitest";

/** Seed 003's graph configuration, randomization off. */
const graph = {
  base: 1,
  max: 900_000,
  upMultiplier: 1.5,
  downMultiplier: 0.6,
  spread: 0,
  downThreshold: 5,
};

describe("ResponsiveBackoff (seed 003's AutoSleeper)", () => {
  it("uses seed 003's defaults", () => {
    const r = new ResponsiveBackoff({ spread: 0 });
    expect([r.failure(), r.failure(), r.failure()]).toEqual([500, 750, 1125]);
    expect(r.max).toBe(900_000);
    const capped = new ResponsiveBackoff({ spread: 0, base: 600_000 });
    expect([capped.failure(), capped.failure()]).toEqual([600_000, 900_000]);
    // Ten successes to shrink once, by 0.9.
    const down = new ResponsiveBackoff({ spread: 0 });
    down.failure();
    down.failure(); // 750
    const waits = Array.from({ length: 10 }, () => down.success());
    expect(waits).toEqual([...Array(9).fill(750), 675]);
  });

  it("follows the seed exactly with randomization off: delays, totals and metrics", () => {
    const r = new ResponsiveBackoff(graph);
    // A success at 0 waits nothing and is not a sleep.
    expect(r.success()).toBe(0);
    const ups = [r.failure(), r.failure(), r.failure(), r.failure()];
    expect(ups).toEqual([1, 1.5, 2.25, 3.375]);
    const downs = Array.from({ length: 5 }, () => r.success());
    expect(downs).toEqual([3.375, 3.375, 3.375, 3.375, 2.025]);
    expect(r.metrics()).toEqual({
      invocations: 10,
      wentUp: 4,
      wentDown: 1,
      slept: 9,
      totalSleep: 1 + 1.5 + 2.25 + 3.375 + 4 * 3.375 + 2.025,
      current: 2.025,
    });
    // Shrinking below the initial interval drops to 0; that step still counts as a sleep of 0.
    const drop = new ResponsiveBackoff({ ...graph, downThreshold: 1 });
    drop.failure();
    drop.failure(); // 1.5
    expect(drop.success()).toBe(0); // 1.5 × 0.6 = 0.9 < 1
    expect(drop.metrics()).toMatchObject({ current: 0, slept: 3, wentDown: 1, totalSleep: 2.5 });
    expect(drop.success()).toBe(0);
    expect(drop.metrics().slept).toBe(3);
  });

  it("randomizes each new delay uniformly in [i − δ, i + δ], δ = min(factor × i, maxSpread), capped at max", () => {
    fc.assert(
      fc.property(
        fc.integer(),
        fc.double({ min: 0, max: 1, noNaN: true }),
        fc.double({ min: 0, max: 10_000, noNaN: true }),
        fc.array(fc.boolean(), { maxLength: 60 }),
        (seed, factor, maxSpread, outcomes) => {
          const r = new ResponsiveBackoff({
            base: 100,
            max: 60_000,
            spread: factor,
            maxSpread,
            downThreshold: 2,
            random: seededRandom(seed),
          });
          for (const failed of outcomes) {
            const before = r.metrics().current;
            const wentDown = r.metrics().wentDown;
            const delay = failed ? r.failure() : r.success();
            expect(delay).toBe(r.metrics().current);
            expect(delay).toBeGreaterThanOrEqual(0);
            expect(delay).toBeLessThanOrEqual(60_000);
            if (failed && before > 0 && delay < 60_000) {
              const i = before * 1.5;
              const d = Math.min(factor * i, maxSpread);
              expect(delay).toBeGreaterThanOrEqual(i - d - 1e-9);
              expect(delay).toBeLessThanOrEqual(i + d + 1e-9);
            }
            if (!failed && r.metrics().wentDown > wentDown && delay > 0) {
              const i = before * 0.9;
              const d = Math.min(factor * i, maxSpread);
              expect(delay).toBeGreaterThanOrEqual(Math.max(i - d, 100) - 1e-9);
              expect(delay).toBeLessThanOrEqual(i + d + 1e-9);
            }
          }
        },
      ),
    );
  });

  it("its state is one plain object: read it, restore it elsewhere, and both go on alike", () => {
    const a = new ResponsiveBackoff({ random: seededRandom(3) });
    for (let i = 0; i < 5; i++) a.failure();
    a.success();
    const saved = a.snapshot();
    expect(JSON.parse(JSON.stringify(saved))).toEqual(saved);
    const b = new ResponsiveBackoff({ random: seededRandom(99) });
    b.restore(saved);
    expect(b.metrics()).toEqual(a.metrics());
    const c = new ResponsiveBackoff({ spread: 0 });
    c.restore({ ...saved });
    expect(c.failure()).toBe(saved.current * 1.5 > 900_000 ? 900_000 : saved.current * 1.5);
    expect(() => b.restore({ ...saved, current: -1 })).toThrow(
      "ResponsiveBackoff.restore: current must be a finite number >= 0; got -1",
    );
    expect(() => b.restore({ ...saved, slept: 1.5 })).toThrow(OptionError);
  });

  it("is shared safely by many concurrent workers: every call is counted once", async () => {
    const clock = new VirtualClock();
    const shared = new ResponsiveBackoff({ clock, random: seededRandom(1), base: 10 });
    const workers = Array.from({ length: 50 }, async (_, w) => {
      for (let i = 0; i < 20; i++) {
        if ((w + i) % 3 === 0) await shared.sleepOnFailure();
        else await shared.sleepOnSuccess();
      }
    });
    await clock.runAll();
    await Promise.all(workers);
    const m = shared.metrics();
    expect(m.invocations).toBe(1000);
    expect(m.wentUp).toBe(
      Array.from({ length: 50 }, (_, w) => Array.from({ length: 20 }, (_, i) => (w + i) % 3 === 0))
        .flat()
        .filter(Boolean).length,
    );
    expect(clock.pending).toBe(0);
  });

  it("sleeps on the clock, abortably", async () => {
    const clock = new VirtualClock();
    const r = new ResponsiveBackoff({ clock, spread: 0 });
    const controller = new AbortController();
    const sleeping = r.sleepOnFailure(controller.signal);
    await clock.advance(499);
    const reason = new Error("stop");
    controller.abort(reason);
    await expect(sleeping).rejects.toBe(reason);
    expect(clock.pending).toBe(0);
  });

  it("works as retry's backoff: its state lasts across calls, failures grow it and successes shrink it", async () => {
    const clock = new VirtualClock();
    const shared = new ResponsiveBackoff({
      clock,
      spread: 0,
      base: 100,
      downThreshold: 1,
      downMultiplier: 0.5,
    });
    const failTwice = () => {
      let n = 0;
      return () => {
        n += 1;
        if (n <= 2) throw new Error("throttled");
        return n;
      };
    };
    const first = retry(failTwice(), { clock, backoff: shared, jitter: jitter.none(), maxRetries: 5 });
    await clock.runAll();
    expect(await first).toBe(3);
    expect(clock.now()).toBe(100 + 150);
    // The success shrank it once: 150 × 0.5 = 75 < 100, so 0; the next call starts from there.
    expect(shared.metrics()).toMatchObject({ wentUp: 2, wentDown: 1, current: 0 });
    const second = retry(failTwice(), { clock, backoff: shared, jitter: jitter.none() });
    await clock.runAll();
    await second;
    expect(clock.now()).toBe(250 + 250);
  });

  it("throttle paces every call: the failure delay after a throw, the success delay after a value", async () => {
    const clock = new VirtualClock();
    const pace = new ResponsiveBackoff({ clock, spread: 0, base: 100, downThreshold: 2 });
    let calls = 0;
    const write = throttle(async (ok: boolean) => {
      calls += 1;
      if (!ok) throw new Error("throttled");
      return "written";
    }, pace);
    const run = (async () => {
      await expect(write(false)).rejects.toThrow("throttled");
      const t1 = clock.now();
      expect(await write(true)).toBe("written");
      return [t1, clock.now()];
    })();
    await clock.runAll();
    expect(await run).toEqual([100, 200]);
    expect(calls).toBe(2);
  });

  it("coalesce (not in the seed): the failures of one burst raise the delay once", async () => {
    const clock = new VirtualClock();
    const seedExactly = new ResponsiveBackoff({ clock, spread: 0, base: 100 });
    const coalesced = new ResponsiveBackoff({ clock, spread: 0, base: 100, coalesce: true });
    // Five workers fail at the same instant: the seed raises five times, coalesce once.
    for (let i = 0; i < 5; i++) {
      seedExactly.failure();
      coalesced.failure();
    }
    expect(seedExactly.metrics().current).toBeCloseTo(100 * 1.5 ** 4, 9);
    expect(coalesced.metrics()).toMatchObject({
      current: 100,
      wentUp: 1,
      invocations: 5,
      slept: 5,
      totalSleep: 500,
    });
    // A failure once the current delay has passed since the raise is a new burst.
    await clock.advance(99);
    expect(coalesced.failure()).toBe(100);
    await clock.advance(1);
    expect(coalesced.failure()).toBe(150);
    expect(coalesced.metrics().wentUp).toBe(2);
    expect(() => new ResponsiveBackoff({ coalesce: "yes" as never })).toThrow(
      "ResponsiveBackoff: coalesce must be true or false",
    );
  });

  it("emits a change each time the delay goes up or down", () => {
    const r = new ResponsiveBackoff({ spread: 0, base: 10, downThreshold: 2 });
    const changes: unknown[] = [];
    const subscription = r.on("change", (c) => changes.push(c));
    r.failure();
    r.failure();
    r.success();
    r.success();
    subscription.dispose();
    r.failure();
    expect(changes).toEqual([
      { direction: "up", from: 0, to: 10 },
      { direction: "up", from: 10, to: 15 },
      { direction: "down", from: 15, to: 13.5 },
    ]);
  });

  it("a bad option fails at once, naming it", () => {
    const cases: [object, string][] = [
      [{ base: 0 }, "ResponsiveBackoff: base must be a finite number > 0; got 0"],
      [{ base: 10, max: 5 }, "ResponsiveBackoff: max must be >= base (10); got 5"],
      [{ upMultiplier: 0.5 }, "ResponsiveBackoff: upMultiplier must be a finite number >= 1; got 0.5"],
      [{ downMultiplier: 1.5 }, "ResponsiveBackoff: downMultiplier must be a finite number in"],
      [{ downThreshold: 0 }, "ResponsiveBackoff: downThreshold must be an integer >= 1; got 0"],
      [{ spread: 2 }, "ResponsiveBackoff: spread must be a finite number in [0, 1]; got 2"],
      [{ maxSpread: Number.NaN }, "ResponsiveBackoff: maxSpread must be a finite number >= 0; got NaN"],
      [{ upMultiplyer: 2 }, "ResponsiveBackoff.upMultiplyer must be one of the known options"],
    ];
    for (const [options, message] of cases) {
      expect(() => new ResponsiveBackoff(options as never)).toThrow(message);
    }
  });
});
