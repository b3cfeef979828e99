/**
 * Exact tables from the seed documents, written out literally (computed by hand from the seeds' formulas,
 * never from robustly's code), against robustly's strategies run without jitter.
 */
import { type Backoff, backoff, delays, jitter } from "robustly";
import { describe, expect, it } from "vitest";

const sum = (values: readonly number[]) => values.reduce((total, v) => total + v, 0);

/** The final delays robustly would sleep, with no jitter. */
const plain = (strategy: Backoff, count: number) =>
  delays({ backoff: strategy, jitter: jitter.none() }, count);

describe("seed 001: the Total Delays table (seconds, no jitter)", () => {
  // Seed 001's code sleeps, before retry number `counter` (0-based):
  //   constant 1, linear counter, fibonacci get_fib(counter), quadratic counter ** 2,
  //   exponential 2 ** counter, polynomial counter ** 3 (seconds).
  // robustly counts in ms, so each strategy gets the parameters that reproduce that code.
  const strategies: Record<string, Backoff> = {
    constant: backoff.constant({ base: 1000 }),
    linear: backoff.linear({ base: 0, interval: 1000 }),
    fibonacci: backoff.fibonacci({ base: 0, step: 1000 }),
    quadratic: backoff.polynomial({ base: 0, exponents: [2], step: 1000 }),
    exponential: backoff.exponential({ base: 1000, multiplier: 2 }),
    polynomial: backoff.polynomial({ base: 0, exponents: [3], step: 1000 }),
  };

  // The seed's table, as printed ("Total delay: N seconds"), for 1, 3, 5, 10 and 20 retries.
  const table: Record<string, Record<number, number>> = {
    constant: { 1: 1, 3: 3, 5: 5, 10: 10, 20: 20 },
    linear: { 1: 0, 3: 3, 5: 10, 10: 45, 20: 190 },
    fibonacci: { 1: 0, 3: 2, 5: 7, 10: 88, 20: 10945 },
    quadratic: { 1: 0, 3: 5, 5: 30, 10: 285, 20: 2470 },
    exponential: { 1: 1, 3: 7, 5: 31, 10: 1023, 20: 1048575 },
    polynomial: { 1: 0, 3: 9, 5: 100, 10: 2025, 20: 36100 },
  };

  const cells = Object.entries(table).flatMap(([name, row]) =>
    Object.entries(row).map(([retries, seconds]) => ({ name, retries: Number(retries), seconds })),
  );

  it("covers all six strategies at 1, 3, 5, 10 and 20 retries", () => {
    expect(cells).toHaveLength(30);
    expect(Object.keys(strategies).sort()).toEqual(Object.keys(table).sort());
  });

  it.each(cells)("$name backoff over $retries retries totals $seconds s", ({ name, retries, seconds }) => {
    const strategy = strategies[name] as Backoff;
    const values = plain(strategy, retries);
    expect(values).toHaveLength(retries);
    expect(sum(values) / 1000).toBe(seconds);
  });

  it("sleeps exactly what seed 001's code sleeps before each of the first 8 retries", () => {
    const ms = (seconds: number[]) => seconds.map((s) => s * 1000);
    const first8 = (name: string) => plain(strategies[name] as Backoff, 8);
    expect(first8("constant")).toEqual(ms([1, 1, 1, 1, 1, 1, 1, 1]));
    expect(first8("linear")).toEqual(ms([0, 1, 2, 3, 4, 5, 6, 7]));
    expect(first8("fibonacci")).toEqual(ms([0, 1, 1, 2, 3, 5, 8, 13]));
    expect(first8("quadratic")).toEqual(ms([0, 1, 4, 9, 16, 25, 36, 49]));
    expect(first8("exponential")).toEqual(ms([1, 2, 4, 8, 16, 32, 64, 128]));
    expect(first8("polynomial")).toEqual(ms([0, 1, 8, 27, 64, 125, 216, 343]));
  });
});

describe("seed 000: the strategies of its figure (v_base = 1 s, v_max = 60 s, m = 2, L = 2 s, p1 = 2)", () => {
  const figure = {
    exponential: backoff.exponential({ base: 1000, max: 60_000, multiplier: 2 }),
    linear: backoff.linear({ base: 1000, max: 60_000, interval: 2000 }),
    fibonacci: backoff.fibonacci({ base: 1000, max: 60_000, step: 1000 }),
    polynomial: backoff.polynomial({ base: 1000, max: 60_000, exponents: [2], step: 1000 }),
    constant: backoff.constant({ base: 1000 }),
    none: backoff.none(),
  };

  // v_x for x = 0 … 11, in ms, by hand from seed 000's formulas.
  const expected: Record<keyof typeof figure, number[]> = {
    // min(60, 1 × 2^x): 1, 2, 4, 8, 16, 32, then 64 → 60.
    exponential: [1000, 2000, 4000, 8000, 16000, 32000, 60000, 60000, 60000, 60000, 60000, 60000],
    // min(60, 1 + 2x): 1, 3, 5, … 23.
    linear: [1000, 3000, 5000, 7000, 9000, 11000, 13000, 15000, 17000, 19000, 21000, 23000],
    // min(60, 1 + Fib(x)), Fib = 0, 1, 1, 2, 3, 5, 8, 13, 21, 34, 55, 89.
    fibonacci: [1000, 2000, 2000, 3000, 4000, 6000, 9000, 14000, 22000, 35000, 56000, 60000],
    // min(60, 1 + x^2): 1, 2, 5, 10, 17, 26, 37, 50, then 65 → 60.
    polynomial: [1000, 2000, 5000, 10000, 17000, 26000, 37000, 50000, 60000, 60000, 60000, 60000],
    // v_base.
    constant: [1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000],
    // v_base = 0.
    none: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
  };

  it.each(Object.keys(figure) as (keyof typeof figure)[])("%s: the first 12 delays", (name) => {
    const strategy = figure[name];
    const random = () => 0.5;
    expect(Array.from({ length: 12 }, (_, x) => strategy.delay(x, random))).toEqual(expected[name]);
    expect(plain(strategy, 12)).toEqual(expected[name]);
  });

  it("linear reaches the cap at x = 30 (1 + 2 × 30 = 61 > 60) and stays there", () => {
    const values = plain(figure.linear, 33);
    expect(values.slice(28)).toEqual([57000, 59000, 60000, 60000, 60000]);
  });

  it("reports each strategy's v_base and v_max", () => {
    expect([figure.exponential.base, figure.exponential.max]).toEqual([1000, 60000]);
    expect([figure.linear.base, figure.linear.max]).toEqual([1000, 60000]);
    expect([figure.fibonacci.base, figure.fibonacci.max]).toEqual([1000, 60000]);
    expect([figure.polynomial.base, figure.polynomial.max]).toEqual([1000, 60000]);
    expect([figure.constant.base, figure.constant.max]).toEqual([1000, 1000]);
    expect([figure.none.base, figure.none.max]).toEqual([0, 0]);
  });

  it("random backoff draws in [v_base, v_max] = [1 s, 60 s], reaching both ends of the range", () => {
    const strategy = backoff.random({ base: 1000, max: 60_000 });
    expect(strategy.delay(0, () => 0)).toBe(1000);
    expect(strategy.delay(7, () => 0.5)).toBe(30500);
    expect(strategy.delay(3, () => 0.999999)).toBeCloseTo(59999.941, 3);
  });

  it("the quick notes: multiplier = base gives base^(x+1); interval = base gives base × (x+1)", () => {
    // (v_base)^(x+1) with v_base = 3: 3, 9, 27, 81, 243, 729.
    const power = backoff.exponential({ base: 3, multiplier: 3 });
    expect(plain(power, 6)).toEqual([3, 9, 27, 81, 243, 729]);
    // v_base × (x + 1) with v_base = 1.5 s: 1.5, 3, 4.5, 6, 7.5 s.
    const steps = backoff.linear({ base: 1500, interval: 1500 });
    expect(plain(steps, 5)).toEqual([1500, 3000, 4500, 6000, 7500]);
  });

  it("the quick note: exponential with m = 1, linear with L = 0, or v_max = v_base give constant backoff", () => {
    const constant = [2500, 2500, 2500, 2500, 2500, 2500];
    expect(plain(backoff.exponential({ base: 2500, multiplier: 1 }), 6)).toEqual(constant);
    expect(plain(backoff.linear({ base: 2500, interval: 0 }), 6)).toEqual(constant);
    expect(plain(backoff.fibonacci({ base: 2500, max: 2500 }), 6)).toEqual(constant);
    expect(plain(backoff.polynomial({ base: 2500, max: 2500, exponents: [2, 3] }), 6)).toEqual(constant);
  });

  it("polynomial with several exponents adds every x^p: 1 + x^2 + x^3 (seconds)", () => {
    // x = 0 … 5: 1, 3, 13, 37, 81, 151.
    const strategy = backoff.polynomial({ base: 1000, exponents: [2, 3] });
    expect(plain(strategy, 6)).toEqual([1000, 3000, 13000, 37000, 81000, 151000]);
  });

  it("scaling the jittered backoff by f multiplies every final delay (f = 0.5)", () => {
    const values = delays({ backoff: figure.exponential, jitter: jitter.none(), scale: 0.5 }, 8);
    expect(values).toEqual([500, 1000, 2000, 4000, 8000, 16000, 30000, 30000]);
  });
});
