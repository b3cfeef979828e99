/**
 * Every jitter mode's range and distribution, over 20,000 draws from 20 fixed seeds; seed 000's
 * decorrelated jitter through `delays`; scaling; determinism.
 *
 * Tolerances are 6 standard errors of the statistic at the sample size used. The seeds are fixed, so the
 * outcome never changes from run to run; 6 SE only says how far an honest implementation may land.
 */
import fc from "fast-check";
import { type Backoff, backoff, delays, type Jitter, jitter, type RetryOptions } from "robustly";
import { type Random, seededRandom } from "robustly/testing";
import { describe, expect, it } from "vitest";

const runs = { seed: 0x717e, numRuns: 200 } as const;

const SEEDS = Array.from({ length: 20 }, (_, i) => 1000 + i);
const PER_SEED = 1000;
const N = SEEDS.length * PER_SEED;

/** The jittered delay of one draw, before scaling. */
function once(j: Jitter, b: Backoff, random: Random, retries = 0, previous?: number): number {
  const answer = j.apply({ backoff: b, retries, random, previous });
  return typeof answer === "number" ? answer : answer.delay;
}

/** N jittered values of a constant backoff `d`, 1000 from each of 20 seeds. */
function sample(
  j: Jitter,
  d: number,
  previous?: number,
  b: Backoff = backoff.constant({ base: d }),
): number[] {
  const out: number[] = [];
  for (const seed of SEEDS) {
    const random = seededRandom(seed);
    for (let i = 0; i < PER_SEED; i++) out.push(once(j, b, random, 0, previous));
  }
  return out;
}

const mean = (xs: readonly number[]) => xs.reduce((t, x) => t + x, 0) / xs.length;
const sd = (xs: readonly number[]) => {
  const m = mean(xs);
  return Math.sqrt(xs.reduce((t, x) => t + (x - m) ** 2, 0) / (xs.length - 1));
};
const share = (xs: readonly number[], test: (x: number) => boolean) => xs.filter(test).length / xs.length;

/** 6 standard errors of a proportion p over N draws. */
const shareTolerance = (p: number) => 6 * Math.sqrt((p * (1 - p)) / N);
/** 6 standard errors of a mean of draws with standard deviation `sigma`. */
const meanTolerance = (sigma: number) => (6 * sigma) / Math.sqrt(N);

/** Each tenth of [low, high) holds about 10% of the values. */
function expectUniform(xs: readonly number[], low: number, high: number) {
  const buckets = new Array<number>(10).fill(0);
  for (const x of xs) {
    const i = Math.min(9, Math.floor(((x - low) / (high - low)) * 10));
    buckets[i] = (buckets[i] ?? 0) + 1;
  }
  for (const count of buckets) expect(Math.abs(count / xs.length - 0.1)).toBeLessThan(shareTolerance(0.1));
}

const B = 1000;
const UNIFORM_SD = B / Math.sqrt(12);

describe("jitter.none: jittered_backoff = backoff", () => {
  it("returns v_x unchanged and draws nothing", () => {
    const b = backoff.exponential({ base: 100, max: 5000 });
    const noDraw = () => {
      throw new Error("no draw expected");
    };
    expect([0, 1, 2, 10].map((x) => once(jitter.none(), b, noDraw, x))).toEqual([100, 200, 400, 5000]);
  });
});

describe("jitter.full", () => {
  it("uniform (default): in [0, b), mean ≈ b/2, spread evenly", () => {
    const xs = sample(jitter.full(), B);
    expect(Math.min(...xs)).toBeGreaterThanOrEqual(0);
    expect(Math.max(...xs)).toBeLessThan(B);
    expect(Math.abs(mean(xs) - B / 2)).toBeLessThan(meanTolerance(UNIFORM_SD));
    expect(Math.abs(sd(xs) - UNIFORM_SD)).toBeLessThan(0.02 * UNIFORM_SD);
    expectUniform(xs, 0, B);
  });

  it("choice (seed 000's random_choice(0, b)): only 0 and b, each about half the time", () => {
    const xs = sample(jitter.full({ mode: "choice" }), B);
    expect(new Set(xs)).toEqual(new Set([0, B]));
    expect(Math.abs(share(xs, (x) => x === 0) - 0.5)).toBeLessThan(shareTolerance(0.5));
  });

  it("through delays: the i-th delay of an exponential is in [0, base × 2^i)", () => {
    for (const seed of SEEDS) {
      const values = delays({ backoff: backoff.exponential({ base: 100 }), random: seededRandom(seed) }, 12);
      values.forEach((value, i) => {
        expect(value).toBeGreaterThanOrEqual(0);
        expect(value).toBeLessThan(100 * 2 ** i);
      });
    }
  });

  it("is the default jitter", () => {
    const options: RetryOptions = { backoff: backoff.exponential({ base: 100 }), random: seededRandom(5) };
    expect(delays(options, 8)).toEqual(
      delays({ ...options, random: seededRandom(5), jitter: jitter.full() }, 8),
    );
  });
});

describe("jitter.equal", () => {
  it("uniform (default): b/2 + uniform(0, b/2), in [b/2, b), mean ≈ 3b/4", () => {
    const xs = sample(jitter.equal(), B);
    expect(Math.min(...xs)).toBeGreaterThanOrEqual(B / 2);
    expect(Math.max(...xs)).toBeLessThan(B);
    expect(Math.abs(mean(xs) - (3 * B) / 4)).toBeLessThan(meanTolerance(UNIFORM_SD / 2));
    expectUniform(xs, B / 2, B);
  });

  it("choice (seed 000's b/2 + random_choice(0, b/2)): only b/2 and b, each about half the time", () => {
    const xs = sample(jitter.equal({ mode: "choice" }), B);
    expect(new Set(xs)).toEqual(new Set([B / 2, B]));
    expect(Math.abs(share(xs, (x) => x === B / 2) - 0.5)).toBeLessThan(shareTolerance(0.5));
  });
});

describe("jitter.normal (seed 002): max(0, d + N(0, sigma × d))", () => {
  it("mean ≈ d and sd ≈ sigma × d, with about 68% within one sd and 95% within two", () => {
    const sigma = 0.1;
    const xs = sample(jitter.normal({ sigma }), B);
    const s = sigma * B;
    expect(Math.abs(mean(xs) - B)).toBeLessThan(meanTolerance(s));
    // The standard error of a sample sd is about s / sqrt(2N).
    expect(Math.abs(sd(xs) - s)).toBeLessThan((6 * s) / Math.sqrt(2 * N));
    expect(Math.abs(share(xs, (x) => Math.abs(x - B) < s) - 0.6827)).toBeLessThan(shareTolerance(0.6827));
    expect(Math.abs(share(xs, (x) => Math.abs(x - B) < 2 * s) - 0.9545)).toBeLessThan(shareTolerance(0.9545));
    // Symmetric around d.
    expect(Math.abs(share(xs, (x) => x < B) - 0.5)).toBeLessThan(shareTolerance(0.5));
  });

  it("uses sigma 0.1 by default", () => {
    const xs = sample(jitter.normal(), B);
    expect(Math.abs(sd(xs) - 100)).toBeLessThan((6 * 100) / Math.sqrt(2 * N));
  });

  it("is never below 0: with sigma 2, d + 2d × Z < 0 whenever Z < −0.5, and those become 0 (P ≈ 30.85%)", () => {
    const xs = sample(jitter.normal({ sigma: 2 }), B);
    expect(Math.min(...xs)).toBe(0);
    expect(xs.every((x) => x >= 0 && Number.isFinite(x))).toBe(true);
    expect(Math.abs(share(xs, (x) => x === 0) - 0.3085)).toBeLessThan(shareTolerance(0.3085));
  });

  it("leaves d unchanged with sigma 0 or d = 0", () => {
    expect(new Set(sample(jitter.normal({ sigma: 0 }), B))).toEqual(new Set([B]));
    expect(new Set(sample(jitter.normal({ sigma: 0.5 }), 0))).toEqual(new Set([0]));
  });
});

describe("jitter.normal with stddev (seed 002's reference client): max(0, d + N(0, stddev))", () => {
  it("adds the same spread whatever the delay: sd ≈ stddev at d = 1000 and at d = 100000", () => {
    for (const d of [B, 100 * B]) {
      const xs = sample(jitter.normal({ stddev: 100 }), d);
      expect(Math.abs(mean(xs) - d)).toBeLessThan(meanTolerance(100));
      expect(Math.abs(sd(xs) - 100)).toBeLessThan((6 * 100) / Math.sqrt(2 * N));
    }
  });

  it("is never below 0, leaves d unchanged with stddev 0, and refuses sigma and stddev together", () => {
    const xs = sample(jitter.normal({ stddev: 5000 }), 100);
    expect(Math.min(...xs)).toBe(0);
    expect(new Set(sample(jitter.normal({ stddev: 0 }), B))).toEqual(new Set([B]));
    expect(() => jitter.normal({ sigma: 0.1, stddev: 100 })).toThrow(
      "jitter.normal: stddev must be left out when sigma is given (one or the other); got 100",
    );
    expect(() => jitter.normal({ stddev: -1 })).toThrow(
      "jitter.normal: stddev must be a finite number >= 0; got -1",
    );
  });
});

describe("jitter.proportional (seed 003): uniform in [d − δ, d + δ], δ = min(factor × d, maxSpread)", () => {
  it("δ = factor × d below the cap: 1000 with factor 0.3 is uniform in [700, 1300], mean ≈ 1000", () => {
    const xs = sample(jitter.proportional({ spread: 0.3 }), B);
    expect(Math.min(...xs)).toBeGreaterThanOrEqual(700);
    expect(Math.max(...xs)).toBeLessThanOrEqual(1300);
    expect(Math.abs(mean(xs) - B)).toBeLessThan(meanTolerance(600 / Math.sqrt(12)));
    expectUniform(xs, 700, 1300);
  });

  it("δ is capped by maxSpread (default 2 minutes): 1e6 ms with factor 0.3 varies by ±120000, not ±300000", () => {
    const d = 1_000_000;
    const xs = sample(jitter.proportional({ spread: 0.3 }), d);
    expect(Math.min(...xs)).toBeGreaterThanOrEqual(d - 120_000);
    expect(Math.max(...xs)).toBeLessThanOrEqual(d + 120_000);
    // Both ends of the capped range are reached (each tenth of it holds ~10%).
    expectUniform(xs, d - 120_000, d + 120_000);
  });

  it("an explicit maxSpread caps δ", () => {
    const xs = sample(jitter.proportional({ spread: 1, maxSpread: 50 }), B);
    expect(Math.min(...xs)).toBeGreaterThanOrEqual(950);
    expect(Math.max(...xs)).toBeLessThanOrEqual(1050);
    expectUniform(xs, 950, 1050);
  });

  it("holds for any d, factor and maxSpread (property)", () => {
    fc.assert(
      fc.property(
        fc.double({ min: 0, max: 1e9, noNaN: true }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        fc.oneof(fc.constant(Number.POSITIVE_INFINITY), fc.double({ min: 0, max: 1e9, noNaN: true })),
        fc.integer(),
        (d, factor, maxSpread, seed) => {
          const delta = Math.min(factor * d, maxSpread);
          const random = seededRandom(seed);
          const j = jitter.proportional({ spread: factor, maxSpread });
          for (let i = 0; i < 10; i++) {
            const value = once(j, backoff.constant({ base: d }), random);
            expect(value).toBeGreaterThanOrEqual(d - delta - 1e-9 * d);
            expect(value).toBeLessThanOrEqual(d + delta + 1e-9 * d);
            expect(value).toBeGreaterThanOrEqual(0);
          }
        },
      ),
      runs,
    );
  });

  it("uses factor 0.3 by default", () => {
    const xs = sample(jitter.proportional(), B);
    expect(Math.min(...xs)).toBeGreaterThanOrEqual(700);
    expect(Math.min(...xs)).toBeLessThan(710);
    expect(Math.max(...xs)).toBeGreaterThan(1290);
  });
});

describe("jitter.decorrelatedAws: first base, then min(max, uniform(base, 3 × previous))", () => {
  it("given a previous sleep p: uniform in [base, 3p), mean ≈ (base + 3p) / 2", () => {
    const j = jitter.decorrelatedAws({ base: 100 });
    const xs = sample(j, 0, 1000, backoff.exponential({ base: 100 }));
    expect(Math.min(...xs)).toBeGreaterThanOrEqual(100);
    expect(Math.max(...xs)).toBeLessThan(3000);
    expect(Math.abs(mean(xs) - 1550)).toBeLessThan(meanTolerance(2900 / Math.sqrt(12)));
    expectUniform(xs, 100, 3000);
  });

  it("the cap takes every draw above it: max 2000 from uniform(100, 3000) is hit ≈ 1000/2900 of the time", () => {
    const j = jitter.decorrelatedAws({ base: 100, max: 2000 });
    const xs = sample(j, 0, 1000, backoff.exponential({ base: 100 }));
    expect(Math.max(...xs)).toBe(2000);
    expect(Math.abs(share(xs, (x) => x === 2000) - 1000 / 2900)).toBeLessThan(shareTolerance(1000 / 2900));
  });

  it("through delays: starts at the backoff's base, then each is in [base, min(max, 3 × previous)]", () => {
    for (const seed of SEEDS) {
      const b = backoff.exponential({ base: 100, max: 20_000 });
      const values = delays({ backoff: b, jitter: jitter.decorrelatedAws(), random: seededRandom(seed) }, 30);
      expect(values[0]).toBe(100);
      for (let i = 1; i < values.length; i++) {
        const value = values[i] as number;
        expect(value).toBeGreaterThanOrEqual(100);
        expect(value).toBeLessThanOrEqual(Math.min(20_000, 3 * (values[i - 1] as number)));
      }
    }
  });

  it("its own base and max override the backoff's", () => {
    fc.assert(
      fc.property(
        fc.double({ min: 0, max: 1e6, noNaN: true }),
        fc.double({ min: 0, max: 1e7, noNaN: true }),
        fc.integer(),
        (base, extra, seed) => {
          const max = base + extra;
          const options: RetryOptions = {
            backoff: backoff.constant({ base: 5 }),
            jitter: jitter.decorrelatedAws({ base, max }),
            random: seededRandom(seed),
          };
          const values = delays(options, 20);
          expect(values[0]).toBe(base);
          for (let i = 1; i < values.length; i++) {
            const value = values[i] as number;
            expect(value).toBeGreaterThanOrEqual(base);
            expect(value).toBeLessThanOrEqual(Math.min(max, Math.max(base, 3 * (values[i - 1] as number))));
          }
        },
      ),
      runs,
    );
  });
});

describe("jitter.decorrelatedPolly: Polly's decorrelated jitter V2, cockatiel's default", () => {
  const b = backoff.exponential({ base: 100, max: 20_000 });
  /** A random source that answers `draws` in turn. */
  const scripted = (draws: readonly number[]): Random => {
    let i = 0;
    return () => draws[i++] ?? 0.5;
  };

  // The tables below come from the formula evaluated apart from robustly: t = x + u,
  // f(t) = 2^t × tanh(√(4t)), delay = min(max, (f(t_x) − f(t_(x−1))) × base / 1.4).
  it("at u = 0.5 every time: the table of the formula", () => {
    const values = delays(
      {
        backoff: backoff.exponential({ base: 100 }),
        jitter: jitter.decorrelatedPolly(),
        random: scripted([0.5, 0.5, 0.5, 0.5]),
      },
      4,
    );
    const expected = [89.74049355792, 109.3003547381679, 203.57479626216332, 404.59794227837557];
    expect(values).toEqual(expected.map((v) => expect.closeTo(v, 9)));
  });

  it("seed 42, base 100, max 20000: the exact table", () => {
    const values = delays({ backoff: b, jitter: jitter.decorrelatedPolly(), random: seededRandom(42) }, 8);
    const expected = [
      99.018167, 92.760544, 322.902714, 393.481328, 381.187978, 2002.7301, 2232.038503, 8573.148414,
    ];
    expect(values).toEqual(expected.map((v) => expect.closeTo(v, 5)));
  });

  it("the draws at the ends: u = 0 at x = 0 waits 0, and a late draw followed by an early one waits little", () => {
    const values = delays(
      {
        backoff: backoff.exponential({ base: 1000 }),
        jitter: jitter.decorrelatedPolly(),
        random: scripted([0, 0.999, 0, 0.999, 0]),
      },
      5,
    );
    const expected = [0, 2835.255569000785, 1.9939893016987909, 8575.735436838686, 7.921287591024903];
    expect(values).toEqual(expected.map((v) => expect.closeTo(v, 9)));
  });

  it("its own base, max and multiplier override the backoff's", () => {
    const own = delays(
      {
        backoff: backoff.constant({ base: 5 }),
        jitter: jitter.decorrelatedPolly({ base: 100, max: 150 }),
        random: scripted([0.5, 0.5, 0.5, 0.5]),
      },
      4,
    );
    expect(own[0]).toBeCloseTo(89.74049355792, 9);
    expect(own.slice(1)).toEqual([109.3003547381679, 150, 150].map((v) => expect.closeTo(v, 9)));
    // multiplier 1: f(t) = tanh(√(4t)), which flattens, so the waits shrink towards 0.
    const flat = delays(
      { backoff: b, jitter: jitter.decorrelatedPolly({ multiplier: 1 }), random: scripted([0.5, 0.5, 0.5]) },
      3,
    );
    expect(flat[0]).toBeCloseTo((Math.tanh(Math.sqrt(2)) * 100) / 1.4, 9);
    expect(flat[2] as number).toBeLessThan(flat[1] as number);
  });

  it("every delay is finite, >= 0 and <= max, for any seed, base, max and multiplier, however many retries", () => {
    fc.assert(
      fc.property(
        fc.integer(),
        fc.double({ min: 0, max: 1e6, noNaN: true }),
        fc.double({ min: 0, max: 1e7, noNaN: true }),
        fc.double({ min: 1, max: 10, noNaN: true }),
        (seed, base, extra, multiplier) => {
          const max = base + extra;
          const values = delays(
            {
              backoff: b,
              jitter: jitter.decorrelatedPolly({ base, max, multiplier }),
              random: seededRandom(seed),
            },
            1100,
          );
          for (const value of values) {
            expect(Number.isFinite(value)).toBe(true);
            expect(value).toBeGreaterThanOrEqual(0);
            expect(value).toBeLessThanOrEqual(max);
          }
        },
      ),
      { ...runs, numRuns: 50 },
    );
  });

  it("the median delay doubles with each retry, as Polly's V2 promises (over 2000 seeds)", () => {
    const uncapped = backoff.exponential({ base: 100 });
    const columns: number[][] = Array.from({ length: 10 }, () => []);
    for (let seed = 0; seed < 2000; seed++) {
      const values = delays(
        { backoff: uncapped, jitter: jitter.decorrelatedPolly(), random: seededRandom(seed) },
        10,
      );
      values.forEach((value, x) => {
        columns[x]?.push(value);
      });
    }
    const medians = columns.map((column) => column.sort((p, q) => p - q)[column.length >> 1] as number);
    // The first median is near base (Polly calls base the "median first retry delay").
    expect(medians[0]).toBeGreaterThan(80);
    expect(medians[0]).toBeLessThan(120);
    for (let x = 4; x < 10; x++) {
      const ratio = (medians[x] as number) / (medians[x - 1] as number);
      expect(ratio, `median ${x} / median ${x - 1}`).toBeGreaterThan(1.7);
      expect(ratio, `median ${x} / median ${x - 1}`).toBeLessThan(2.3);
    }
  });
});

describe("jitter.decorrelated (seed 000): x := random_choice(0, x), recompute the backoff, x carries on", () => {
  const base = 100;
  const exponential = backoff.exponential({ base });
  const run = (seed: number, count = 16) =>
    delays({ backoff: exponential, jitter: jitter.decorrelated(), random: seededRandom(seed) }, count);

  it("every delay is base × 2^k with k <= the retry index; the first is base", () => {
    for (const seed of SEEDS) {
      const values = run(seed);
      expect(values[0]).toBe(base);
      values.forEach((value, i) => {
        const k = Math.log2(value / base);
        expect(Number.isInteger(k)).toBe(true);
        expect(k).toBeGreaterThanOrEqual(0);
        expect(k).toBeLessThanOrEqual(i);
      });
    }
  });

  it("each delay either resets to base or doubles the previous one (x carries on from a reset)", () => {
    for (const seed of SEEDS) {
      const values = run(seed);
      for (let i = 1; i < values.length; i++) {
        expect([base, 2 * (values[i - 1] as number)]).toContain(values[i]);
      }
    }
  });

  it("resets about half the time, over many seeds", () => {
    let resets = 0;
    let chances = 0;
    for (let seed = 0; seed < 2000; seed++) {
      const values = run(seed, 11);
      for (let i = 1; i < values.length; i++) {
        chances += 1;
        if (values[i] === base) resets += 1;
      }
    }
    expect(chances).toBe(N);
    expect(Math.abs(resets / chances - 0.5)).toBeLessThan(shareTolerance(0.5));
  });

  it("follows a scripted sequence of choices exactly: after a reset the next is base × 2", () => {
    // One draw per retry: < 0.5 resets x to 0, otherwise x is kept.
    const draws = [0.9, 0.9, 0.9, 0.1, 0.9, 0.9, 0.1, 0.1, 0.9];
    let i = 0;
    const random = () => draws[i++] ?? 0.9;
    const values = delays({ backoff: exponential, jitter: jitter.decorrelated(), random }, 9);
    // x: 0, 1, 2, reset 0, 1, 2, reset 0, reset 0, 1.
    expect(values).toEqual([100, 200, 400, 100, 200, 400, 100, 100, 200]);
    expect(i).toBe(9);
  });

  it("without resets it is the plain backoff", () => {
    const values = delays({ backoff: exponential, jitter: jitter.decorrelated(), random: () => 0.75 }, 6);
    expect(values).toEqual(delays({ backoff: exponential, jitter: jitter.none() }, 6));
  });
});

describe("scale: final_backoff = jittered_backoff × f", () => {
  const jitters: Record<string, () => Jitter> = {
    none: () => jitter.none(),
    full: () => jitter.full(),
    fullChoice: () => jitter.full({ mode: "choice" }),
    equal: () => jitter.equal(),
    decorrelated: () => jitter.decorrelated(),
    decorrelatedAws: () => jitter.decorrelatedAws(),
    decorrelatedPolly: () => jitter.decorrelatedPolly(),
    normal: () => jitter.normal({ sigma: 0.3 }),
    proportional: () => jitter.proportional(),
  };

  it("multiplies every final delay of every jitter, for the same draws", () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...Object.keys(jitters)),
        fc.double({ min: 1e-3, max: 100, noNaN: true }),
        fc.integer(),
        (name, scale, seed) => {
          const make = jitters[name] as () => Jitter;
          const b = backoff.exponential({ base: 50, max: 60_000 });
          const plain = delays({ backoff: b, jitter: make(), random: seededRandom(seed) }, 12);
          const scaled = delays({ backoff: b, jitter: make(), random: seededRandom(seed), scale }, 12);
          expect(scaled).toEqual(plain.map((d) => d * scale));
        },
      ),
      runs,
    );
  });

  it("does not change what decorrelatedAws multiplies by 3 (the jittered, unscaled previous delay)", () => {
    const draws = [0.5, 0.5, 0.5];
    const draw = () => {
      let i = 0;
      return () => draws[i++] ?? 0.5;
    };
    const b = backoff.exponential({ base: 100 });
    // 100, then 100 + (300 − 100)/2 = 200, then 100 + (600 − 100)/2 = 350; × 10.
    expect(delays({ backoff: b, jitter: jitter.decorrelatedAws(), random: draw(), scale: 10 }, 3)).toEqual([
      1000, 2000, 3500,
    ]);
  });
});

describe("determinism", () => {
  const every: Record<string, Jitter> = {
    full: jitter.full(),
    equal: jitter.equal(),
    decorrelated: jitter.decorrelated(),
    decorrelatedAws: jitter.decorrelatedAws(),
    decorrelatedPolly: jitter.decorrelatedPolly(),
    normal: jitter.normal(),
    proportional: jitter.proportional(),
  };

  it("the same seed gives the same delays, for every jitter and a random backoff", () => {
    fc.assert(
      fc.property(fc.constantFrom(...Object.keys(every)), fc.integer(), (name, seed) => {
        const options = (random: Random): RetryOptions => ({
          backoff: backoff.random({ base: 10, max: 10_000 }),
          jitter: every[name] as Jitter,
          random,
        });
        expect(delays(options(seededRandom(seed)), 10)).toEqual(delays(options(seededRandom(seed)), 10));
      }),
      runs,
    );
  });

  it("different seeds give different delays", () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...Object.keys(every)),
        fc.integer({ min: 0, max: 2 ** 32 - 1 }),
        fc.integer({ min: 0, max: 2 ** 32 - 1 }),
        (name, a, b) => {
          fc.pre(a !== b);
          const options = (random: Random): RetryOptions => ({
            backoff: backoff.exponential({ base: 1000, max: 60_000 }),
            jitter: every[name] as Jitter,
            random,
          });
          expect(delays(options(seededRandom(a)), 10)).not.toEqual(delays(options(seededRandom(b)), 10));
        },
      ),
      runs,
    );
  });

  it("jitter never mutates shared state: one instance gives the same answers interleaved or not", () => {
    const j = jitter.decorrelated();
    const b = backoff.exponential({ base: 100 });
    const alone = delays({ backoff: b, jitter: j, random: seededRandom(1) }, 8);
    const interleavedA: number[] = [];
    const ra = seededRandom(1);
    const rb = seededRandom(2);
    let xa = 0;
    let xb = 0;
    for (let i = 0; i < 8; i++) {
      const a = j.apply({ backoff: b, retries: xa, random: ra, previous: undefined });
      const c = j.apply({ backoff: b, retries: xb, random: rb, previous: undefined });
      if (typeof a === "number" || typeof c === "number") throw new Error("decorrelated returns x");
      interleavedA.push(a.delay);
      xa = a.retries + 1;
      xb = c.retries + 1;
    }
    expect(interleavedA).toEqual(alone);
  });

  it("the built-in jitters are one namespace of factories", () => {
    for (const factory of Object.values(jitter)) expect(typeof factory).toBe("function");
    expect(Object.keys(jitter).sort()).toEqual(
      [
        "decorrelated",
        "decorrelatedAws",
        "decorrelatedPolly",
        "equal",
        "full",
        "none",
        "normal",
        "proportional",
      ].sort(),
    );
  });
});
