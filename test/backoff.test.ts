/**
 * Every backoff formula of seed 000 (and seed 004's slotted backoff), checked as properties over wide
 * parameter ranges, plus examples and custom backoffs run through `delays`.
 */
import fc from "fast-check";
import { type Backoff, backoff, delays, fib, jitter, MAX_TIMER_DELAY } from "robustly";
import { seededRandom } from "robustly/testing";
import { describe, expect, it } from "vitest";

/** Fixed fast-check seed: the generated cases are the same on every run. */
const runs = { seed: 0x0ba5e, numRuns: 300 } as const;

const never = () => {
  throw new Error("this strategy must not draw random numbers");
};

/** x: small, moderate, and far along (up to 1e6). */
const retriesArb = fc.oneof(fc.integer({ min: 0, max: 64 }), fc.integer({ min: 0, max: 1_000_000 }));
/** base: 0, ordinary and extreme finite values. */
const baseArb = fc.oneof(
  fc.constantFrom(0, 1, 1000, Number.MAX_VALUE),
  fc.double({ min: 0, max: 1e6, noNaN: true }),
  fc.double({ min: 0, max: Number.MAX_VALUE, noNaN: true }),
);
/** A max >= base: Infinity, base itself, or above it. */
const maxFor = (base: number) =>
  fc.oneof(
    fc.constant(Number.POSITIVE_INFINITY),
    fc.constant(base),
    fc.double({ min: base, max: Number.MAX_VALUE, noNaN: true }),
  );
/** A non-negative finite weight (interval, step). */
const weightArb = fc.oneof(
  fc.constantFrom(0, 1000),
  fc.double({ min: 0, max: 1e4, noNaN: true }),
  fc.double({ min: 0, max: Number.MAX_VALUE, noNaN: true }),
);
const multiplierArb = fc.oneof(
  fc.constantFrom(1, 2, 3),
  fc.double({ min: 1, max: 10, noNaN: true }),
  fc.double({ min: 1, max: Number.MAX_VALUE, noNaN: true }),
);
const exponentsArb = fc.array(
  fc.oneof(
    fc.constantFrom(2, 3),
    fc.double({ min: 1, max: 400, noNaN: true }).filter((p) => p > 1),
  ),
  { minLength: 1, maxLength: 4 },
);

/** The invariants every strategy keeps for every x. */
function expectSane(strategy: Backoff, value: number) {
  expect(Number.isNaN(value)).toBe(false);
  expect(value).toBeGreaterThanOrEqual(0);
  expect(value).toBeLessThanOrEqual(strategy.max);
  if (Number.isFinite(strategy.max)) expect(Number.isFinite(value)).toBe(true);
}

// Every delay is also at most the longest timer, 2^31 − 1 ms.
const capAt = (max: number, value: number) => Math.min(max, value, MAX_TIMER_DELAY);

describe("exponential: v_x = min(v_max, v_base × m^x)", () => {
  const arb = baseArb.chain((base) =>
    fc.record({ base: fc.constant(base), max: maxFor(base), multiplier: multiplierArb, x: retriesArb }),
  );

  it("equals the formula, stays in [0, max] and is never NaN", () => {
    fc.assert(
      fc.property(arb, ({ base, max, multiplier, x }) => {
        const strategy = backoff.exponential({ base, max, multiplier });
        const value = strategy.delay(x, never);
        const formula = base === 0 ? 0 : capAt(max, base * multiplier ** x);
        expect(value).toBe(formula);
        expectSane(strategy, value);
        expect([strategy.name, strategy.base, strategy.max]).toEqual(["exponential", base, max]);
      }),
      runs,
    );
  });

  it("is non-decreasing in x", () => {
    fc.assert(
      fc.property(arb, ({ base, max, multiplier, x }) => {
        const strategy = backoff.exponential({ base, max, multiplier });
        expect(strategy.delay(x + 1, never)).toBeGreaterThanOrEqual(strategy.delay(x, never));
      }),
      runs,
    );
  });

  it("gives max (or the longest timer, if less) at x = 1e6 for any base > 0 and multiplier > 1, even a huge one", () => {
    fc.assert(
      fc.property(
        fc.double({ min: Number.MIN_VALUE, max: 1e9, noNaN: true }),
        fc.double({ min: 1.001, max: Number.MAX_VALUE, noNaN: true }),
        fc.double({ min: 1e9, max: Number.MAX_VALUE, noNaN: true }),
        (base, multiplier, max) => {
          expect(backoff.exponential({ base, max, multiplier }).delay(1_000_000, never)).toBe(
            capAt(max, max),
          );
        },
      ),
      runs,
    );
    expect(backoff.exponential({ base: 1000, max: 30_000 }).delay(1_000_000, never)).toBe(30_000);
  });

  it("uses base 1000 ms, multiplier 2 and no cap by default", () => {
    const strategy = backoff.exponential();
    expect([strategy.base, strategy.max]).toEqual([1000, Number.POSITIVE_INFINITY]);
    expect([0, 1, 2, 3, 10].map((x) => strategy.delay(x, never))).toEqual([1000, 2000, 4000, 8000, 1024000]);
  });

  it("stays 0 with base 0 even when m^x overflows", () => {
    const strategy = backoff.exponential({ base: 0, multiplier: 10 });
    expect(strategy.delay(1_000_000, never)).toBe(0);
  });
});

describe("linear: v_x = min(v_max, v_base + L × x)", () => {
  const arb = baseArb.chain((base) =>
    fc.record({ base: fc.constant(base), max: maxFor(base), interval: weightArb, x: retriesArb }),
  );

  it("equals the formula, stays in [0, max] and is never NaN", () => {
    fc.assert(
      fc.property(arb, ({ base, max, interval, x }) => {
        const strategy = backoff.linear({ base, max, interval });
        const value = strategy.delay(x, never);
        expect(value).toBe(capAt(max, base + interval * x));
        expectSane(strategy, value);
      }),
      runs,
    );
  });

  it("is non-decreasing in x", () => {
    fc.assert(
      fc.property(arb, ({ base, max, interval, x }) => {
        const strategy = backoff.linear({ base, max, interval });
        expect(strategy.delay(x + 1, never)).toBeGreaterThanOrEqual(strategy.delay(x, never));
      }),
      runs,
    );
  });

  it("uses base 1000 ms and interval 1000 ms by default", () => {
    const strategy = backoff.linear();
    expect([0, 1, 2, 9].map((x) => strategy.delay(x, never))).toEqual([1000, 2000, 3000, 10000]);
    expect(strategy.max).toBe(Number.POSITIVE_INFINITY);
  });
});

describe("fibonacci: v_x = min(v_max, v_base + Fib(x) × step)", () => {
  const arb = baseArb.chain((base) =>
    fc.record({ base: fc.constant(base), max: maxFor(base), step: weightArb, x: retriesArb }),
  );

  it("fib is the Fibonacci sequence with Fib(0) = 0, Fib(1) = 1, and Infinity past what a double holds", () => {
    expect(Array.from({ length: 13 }, (_, i) => fib(i))).toEqual([
      0, 1, 1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 144,
    ]);
    expect(fib(78)).toBe(8944394323791464);
    fc.assert(
      fc.property(fc.integer({ min: 2, max: 1400 }), (i) => {
        expect(fib(i)).toBe(fib(i - 1) + fib(i - 2));
      }),
      runs,
    );
    expect(Number.isFinite(fib(1476))).toBe(true);
    expect(fib(1477)).toBe(Number.POSITIVE_INFINITY);
    expect(fib(1_000_000)).toBe(Number.POSITIVE_INFINITY);
  });

  it("equals the formula, stays in [0, max] and is never NaN", () => {
    fc.assert(
      fc.property(arb, ({ base, max, step, x }) => {
        const strategy = backoff.fibonacci({ base, max, step });
        const value = strategy.delay(x, never);
        const formula = step === 0 ? capAt(max, base) : capAt(max, base + fib(x) * step);
        expect(value).toBe(formula);
        expectSane(strategy, value);
      }),
      runs,
    );
  });

  it("is non-decreasing in x", () => {
    fc.assert(
      fc.property(arb, ({ base, max, step, x }) => {
        const strategy = backoff.fibonacci({ base, max, step });
        expect(strategy.delay(x + 1, never)).toBeGreaterThanOrEqual(strategy.delay(x, never));
      }),
      runs,
    );
  });

  it("gives max far along, even with step 0 and x = 1e6", () => {
    expect(backoff.fibonacci({ base: 5, max: 60_000 }).delay(1_000_000, never)).toBe(60_000);
    expect(backoff.fibonacci({ base: 5, max: 60_000, step: 0 }).delay(1_000_000, never)).toBe(5);
  });
});

describe("polynomial: v_x = min(v_max, v_base + (x^p1 + … + x^pn) × step)", () => {
  const arb = baseArb.chain((base) =>
    fc.record({
      base: fc.constant(base),
      max: maxFor(base),
      exponents: exponentsArb,
      step: weightArb,
      x: retriesArb,
    }),
  );

  it("equals the formula, stays in [0, max] and is never NaN", () => {
    fc.assert(
      fc.property(arb, ({ base, max, exponents, step, x }) => {
        const strategy = backoff.polynomial({ base, max, exponents, step });
        const value = strategy.delay(x, never);
        const powers = exponents.reduce((total, p) => total + x ** p, 0);
        expect(value).toBe(step === 0 ? capAt(max, base) : capAt(max, base + powers * step));
        expectSane(strategy, value);
      }),
      runs,
    );
  });

  it("is non-decreasing in x", () => {
    fc.assert(
      fc.property(arb, ({ base, max, exponents, step, x }) => {
        const strategy = backoff.polynomial({ base, max, exponents, step });
        expect(strategy.delay(x + 1, never)).toBeGreaterThanOrEqual(strategy.delay(x, never));
      }),
      runs,
    );
  });

  it("is quadratic with step 1000 ms by default, and copies its exponents", () => {
    const exponents = [2];
    const strategy = backoff.polynomial({ base: 0, exponents });
    exponents[0] = 5;
    expect([0, 1, 2, 3, 4].map((x) => strategy.delay(x, never))).toEqual([0, 1000, 4000, 9000, 16000]);
    expect(backoff.polynomial().delay(3, never)).toBe(10000);
  });
});

describe("constant and none", () => {
  it("constant is v_base (at most the longest timer) for every x", () => {
    fc.assert(
      fc.property(fc.oneof(baseArb), retriesArb, (base, x) => {
        const strategy = backoff.constant({ base });
        expect(strategy.delay(x, never)).toBe(capAt(base, base));
        expect([strategy.name, strategy.base, strategy.max]).toEqual(["constant", base, base]);
      }),
      runs,
    );
    expect(backoff.constant().delay(4, never)).toBe(1000);
  });

  it("none is 0 for every x", () => {
    fc.assert(
      fc.property(retriesArb, (x) => {
        expect(backoff.none().delay(x, never)).toBe(0);
      }),
      runs,
    );
    expect([backoff.none().name, backoff.none().base, backoff.none().max]).toEqual(["none", 0, 0]);
  });
});

describe("random: v_x = random(v_base, v_max)", () => {
  const arb = fc.double({ min: 0, max: 1e12, noNaN: true }).chain((base) =>
    fc.record({
      base: fc.constant(base),
      max: fc.oneof(fc.constant(base), fc.double({ min: base, max: 1e15, noNaN: true })),
      seed: fc.integer(),
      x: retriesArb,
    }),
  );

  it("is within [base, max] (and at most the longest timer) whatever x is", () => {
    fc.assert(
      fc.property(arb, ({ base, max, seed, x }) => {
        const strategy = backoff.random({ base, max });
        const random = seededRandom(seed);
        for (let i = 0; i < 20; i++) {
          const value = strategy.delay(x + i, random);
          expect(value).toBeGreaterThanOrEqual(capAt(base, base));
          expect(value).toBeLessThanOrEqual(capAt(max, max));
        }
      }),
      runs,
    );
  });

  it("maps the draw r linearly onto [base, max): base + (max − base) × r", () => {
    const strategy = backoff.random({ base: 100, max: 1100 });
    expect([0, 0.25, 0.5, 0.75].map((r) => strategy.delay(3, () => r))).toEqual([100, 350, 600, 850]);
  });

  it("uses base 0 by default and is uniform: mean ≈ (base + max) / 2, each tenth of the range ≈ 10%", () => {
    const strategy = backoff.random({ max: 1000 });
    expect(strategy.base).toBe(0);
    const random = seededRandom(2024);
    const n = 20_000;
    const buckets = new Array<number>(10).fill(0);
    let total = 0;
    for (let i = 0; i < n; i++) {
      const value = strategy.delay(i, random);
      total += value;
      buckets[Math.floor(value / 100)] = (buckets[Math.floor(value / 100)] ?? 0) + 1;
    }
    // sd of uniform(0, 1000) = 288.7; standard error of the mean over 20k draws = 2.04; allow 6 SE.
    expect(Math.abs(total / n - 500)).toBeLessThan(12.3);
    // standard error of a 10% share over 20k draws = 0.21%; allow 6 SE.
    for (const count of buckets) expect(Math.abs(count / n - 0.1)).toBeLessThan(0.0128);
  });

  it("gives the same values for the same seed, and different ones for another seed", () => {
    const strategy = backoff.random({ base: 0, max: 1e6 });
    const draw = (seed: number) => {
      const random = seededRandom(seed);
      return Array.from({ length: 10 }, (_, x) => strategy.delay(x, random));
    };
    expect(draw(7)).toEqual(draw(7));
    expect(draw(7)).not.toEqual(draw(8));
  });
});

describe("slotted (seed 004): slot × (2^k − 1), k uniform in [0, s]", () => {
  // Seed 004's nextBackOff: s = 1, 2, … ; on reaching the ceiling it stays, or the step is a reset (s = 0: no wait).
  const sOf = (x: number, ceiling: number, stay: boolean) =>
    stay ? Math.min(x + 1, ceiling) : (x % ceiling) + 1 === ceiling ? 0 : (x % ceiling) + 1;

  const arb = fc.record({
    slot: fc.oneof(fc.constantFrom(0, 1, 10), fc.double({ min: 0, max: 1e6, noNaN: true })),
    ceiling: fc.oneof(fc.integer({ min: 1, max: 16 }), fc.integer({ min: 1, max: 1000 })),
    stayAtCeiling: fc.boolean(),
    seed: fc.integer(),
    x: fc.oneof(fc.integer({ min: 0, max: 40 }), fc.integer({ min: 0, max: 1_000_000 })),
  });

  it("every value is slot × (2^k − 1) for some integer k <= s (or the longest timer, when that is less), and within [0, max]", () => {
    fc.assert(
      fc.property(arb, ({ slot, ceiling, stayAtCeiling, seed, x }) => {
        const strategy = backoff.slotted({ slot, ceiling, stayAtCeiling });
        expect(strategy.max).toBe(slot * (2 ** (stayAtCeiling ? ceiling : ceiling - 1) - 1));
        const s = sOf(x, ceiling, stayAtCeiling);
        const allowed = new Set(
          Array.from({ length: s + 1 }, (_, k) => capAt(slot * (2 ** k - 1), slot * (2 ** k - 1))),
        );
        const random = seededRandom(seed);
        for (let i = 0; i < 5; i++) {
          const value = strategy.delay(x, random);
          expect(allowed.has(value)).toBe(true);
          expectSane(strategy, value);
        }
      }),
      runs,
    );
  });

  it("s grows by one per retry up to the ceiling, then stays (stayAtCeiling) or resets with no wait", () => {
    // The largest draw (random just below 1) reveals k = s.
    const top = () => 0.999999;
    const stay = backoff.slotted({ slot: 10, ceiling: 3, stayAtCeiling: true });
    const cycle = backoff.slotted({ slot: 10, ceiling: 3, stayAtCeiling: false });
    const xs = [0, 1, 2, 3, 4, 5, 6];
    expect(xs.map((x) => stay.delay(x, top))).toEqual([10, 30, 70, 70, 70, 70, 70]);
    expect(xs.map((x) => cycle.delay(x, top))).toEqual([10, 30, 0, 10, 30, 0, 10]);
    // The smallest draw is k = 0: no wait.
    expect(xs.map((x) => stay.delay(x, () => 0))).toEqual([0, 0, 0, 0, 0, 0, 0]);
  });

  it("draws k uniformly from 0 … s: each of the s + 1 values about equally often", () => {
    const strategy = backoff.slotted({ slot: 10, ceiling: 10, stayAtCeiling: true });
    const random = seededRandom(404);
    const n = 20_000;
    const counts = new Map<number, number>();
    for (let i = 0; i < n; i++) {
      const value = strategy.delay(3, random); // s = 4: k in 0 … 4
      counts.set(value, (counts.get(value) ?? 0) + 1);
    }
    expect([...counts.keys()].sort((a, b) => a - b)).toEqual([0, 10, 30, 70, 150]);
    // standard error of a 20% share over 20k draws = 0.28%; allow 6 SE.
    for (const count of counts.values()) expect(Math.abs(count / n - 0.2)).toBeLessThan(0.017);
  });

  it("uses slot 10 ms, ceiling 10 and resets at the ceiling by default", () => {
    const strategy = backoff.slotted();
    expect(strategy.max).toBe(5110);
    const top = () => 0.999999;
    expect([0, 8, 9, 10].map((x) => strategy.delay(x, top))).toEqual([10, 5110, 0, 10]);
  });

  it("gives the same values for the same seed", () => {
    fc.assert(
      fc.property(arb, ({ slot, ceiling, stayAtCeiling, seed }) => {
        const strategy = backoff.slotted({ slot, ceiling, stayAtCeiling });
        const draw = () => {
          const random = seededRandom(seed);
          return Array.from({ length: 12 }, (_, x) => strategy.delay(x, random));
        };
        expect(draw()).toEqual(draw());
      }),
      runs,
    );
  });
});

describe("every strategy through delays: final delays are finite, in [0, MAX_TIMER_DELAY]", () => {
  const strategies: Backoff[] = [
    backoff.exponential({ base: 1 }),
    backoff.exponential({ base: Number.MAX_VALUE, multiplier: Number.MAX_VALUE }),
    backoff.linear({ base: 0, interval: Number.MAX_VALUE }),
    backoff.fibonacci({ base: 1, step: Number.MAX_VALUE }),
    backoff.polynomial({ base: 1, exponents: [300] }),
    backoff.random({ base: 0, max: Number.MAX_VALUE }),
    backoff.constant({ base: Number.MAX_VALUE }),
    backoff.none(),
    backoff.slotted({ slot: 1e9, ceiling: 1000, stayAtCeiling: true }),
  ];

  it("holds for the first 60 retries and, shifted, for x up to 1e6 (uncapped strategies included)", () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...strategies),
        fc.integer({ min: 0, max: 1_000_000 }),
        fc.integer(),
        (strategy, offset, seed) => {
          const far: Backoff = { ...strategy, delay: (x, random) => strategy.delay(x + offset, random) };
          for (const b of [strategy, far]) {
            for (const value of delays(
              { backoff: b, jitter: jitter.none(), random: seededRandom(seed) },
              60,
            )) {
              expect(Number.isFinite(value)).toBe(true);
              expect(value).toBeGreaterThanOrEqual(0);
              expect(value).toBeLessThanOrEqual(MAX_TIMER_DELAY);
            }
          }
        },
      ),
      { ...runs, numRuns: 100 },
    );
  });

  it("an uncapped exponential grows until MAX_TIMER_DELAY and stays there", () => {
    const values = delays({ backoff: backoff.exponential({ base: 1000 }), jitter: jitter.none() }, 40);
    expect(values.slice(0, 3)).toEqual([1000, 2000, 4000]);
    expect(values[21]).toBe(1000 * 2 ** 21);
    expect(values.slice(22)).toEqual(new Array(18).fill(MAX_TIMER_DELAY));
  });
});

describe("custom backoffs", () => {
  it("an object with delay(retries, random) is used as is", () => {
    const halfSecondSteps: Backoff = {
      name: "steps",
      base: 500,
      max: 2000,
      delay: (x) => Math.min(2000, 500 * (x + 1)),
    };
    expect(delays({ backoff: halfSecondSteps, jitter: jitter.none() }, 6)).toEqual([
      500, 1000, 1500, 2000, 2000, 2000,
    ]);
  });

  it("a bare function of x is a backoff, receiving x = 0, 1, 2, … and the configured random", () => {
    const seen: number[] = [];
    const draws: number[] = [];
    const fn = (x: number, random: () => number) => {
      seen.push(x);
      draws.push(random());
      return 100 * x * x;
    };
    expect(delays({ backoff: fn, jitter: jitter.none(), random: () => 0.25 }, 5)).toEqual([
      0, 100, 400, 900, 1600,
    ]);
    expect(seen).toEqual([0, 1, 2, 3, 4]);
    expect(draws).toEqual([0.25, 0.25, 0.25, 0.25, 0.25]);
  });

  it("a custom backoff is jittered and scaled like a built-in one", () => {
    const fn = (x: number) => 1000 * (x + 1);
    const values = delays(
      { backoff: fn, jitter: jitter.equal({ mode: "choice" }), scale: 2, random: () => 0.9 },
      3,
    );
    // equal-choice with a draw >= 0.5 keeps the full backoff: 1000, 2000, 3000, then × 2.
    expect(values).toEqual([2000, 4000, 6000]);
  });

  it("a negative custom delay becomes 0, an infinite one MAX_TIMER_DELAY, and NaN fails loudly", () => {
    expect(delays({ backoff: () => -5, jitter: jitter.none() }, 2)).toEqual([0, 0]);
    expect(delays({ backoff: () => Number.POSITIVE_INFINITY, jitter: jitter.none() }, 1)).toEqual([
      MAX_TIMER_DELAY,
    ]);
    expect(() => delays({ backoff: () => Number.NaN, jitter: jitter.none() }, 1)).toThrow(/NaN/);
  });

  it("the built-in strategies are one namespace of factories", () => {
    for (const factory of Object.values(backoff)) expect(typeof factory).toBe("function");
    expect(Object.keys(backoff).sort()).toEqual(
      [
        "constant",
        "exponential",
        "fibonacci",
        "linear",
        "none",
        "polynomial",
        "random",
        "slotted",
        "chain",
        "plus",
        "capped",
        "scaled",
      ].sort(),
    );
  });
});
