import fc from "fast-check";
import { seededRandom, VirtualClock } from "robustly/testing";
import { describe, expect, it } from "vitest";

describe("VirtualClock", () => {
  it("fires timers in time order, ties in the order they were set, and cancels cleanly", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ at: fc.integer({ min: 0, max: 50 }), cancel: fc.boolean() }), { maxLength: 40 }),
        async (timers) => {
          const clock = new VirtualClock(1000);
          const fired: [number, number][] = [];
          const cancels = timers.map((t, i) => clock.setTimer(t.at, () => fired.push([clock.now(), i])));
          timers.forEach((t, i) => {
            if (t.cancel) cancels[i]?.();
          });
          expect(clock.pending).toBe(timers.filter((t) => !t.cancel).length);
          await clock.runAll();
          const expected = timers
            .map((t, i) => ({ ...t, i }))
            .filter((t) => !t.cancel)
            .sort((a, b) => a.at - b.at || a.i - b.i)
            .map((t) => [1000 + t.at, t.i]);
          expect(fired).toEqual(expected);
          expect(clock.pending).toBe(0);
        },
      ),
    );
  });

  it("advance fires what falls due, including timers set by the code it wakes, and stops at the target", async () => {
    const clock = new VirtualClock();
    const log: number[] = [];
    const chain = async () => {
      for (let i = 0; i < 5; i++) {
        await clock.sleep(100);
        log.push(clock.now());
      }
    };
    const done = chain();
    await clock.advance(250);
    expect(log).toEqual([100, 200]);
    expect(clock.now()).toBe(250);
    expect(clock.next).toBe(300);
    await clock.advance(1000);
    await done;
    expect(log).toEqual([100, 200, 300, 400, 500]);
    expect(clock.now()).toBe(1250);
  });

  it("sleep rejects with the signal's reason and removes its timer", async () => {
    const clock = new VirtualClock();
    const controller = new AbortController();
    const slept = clock.sleep(1000, controller.signal);
    expect(clock.pending).toBe(1);
    controller.abort("enough");
    await expect(slept).rejects.toBe("enough");
    expect(clock.pending).toBe(0);
    await expect(clock.sleep(5, AbortSignal.abort("before"))).rejects.toBe("before");
  });

  it("runAll stops a loop that never ends", async () => {
    const clock = new VirtualClock();
    const forever = () => {
      clock.setTimer(1, forever);
    };
    forever();
    await expect(clock.runAll(1000)).rejects.toThrow(/more than 1000 timers/);
  });

  it("rejects a negative or NaN advance", async () => {
    const clock = new VirtualClock();
    await expect(clock.advance(-1)).rejects.toThrow(RangeError);
    await expect(clock.advance(Number.NaN)).rejects.toThrow(RangeError);
  });
});

describe("seededRandom", () => {
  it("gives the same sequence for the same seed, different ones for different seeds, all in [0, 1)", () => {
    fc.assert(
      fc.property(fc.integer(), (seed) => {
        const a = seededRandom(seed);
        const b = seededRandom(seed);
        const c = seededRandom(seed + 1);
        const xs = Array.from({ length: 64 }, () => a());
        expect(Array.from({ length: 64 }, () => b())).toEqual(xs);
        expect(Array.from({ length: 64 }, () => c())).not.toEqual(xs);
        for (const x of xs) {
          expect(x).toBeGreaterThanOrEqual(0);
          expect(x).toBeLessThan(1);
        }
      }),
    );
  });

  it("is close to uniform: each tenth of [0, 1) gets about a tenth of 100000 draws", () => {
    const random = seededRandom(7);
    const bins = new Array(10).fill(0);
    for (let i = 0; i < 100_000; i++) bins[Math.floor(random() * 10)] += 1;
    // The standard deviation of one bin's count is about 95; 600 is over six of them.
    for (const count of bins) expect(Math.abs(count - 10_000)).toBeLessThan(600);
  });

  it("refuses a seed that is not a finite number", () => {
    expect(() => seededRandom(Number.NaN)).toThrow(/seed/);
  });
});
