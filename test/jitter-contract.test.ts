/**
 * What a user relies on from each jitter beyond its distribution (test/jitter.test.ts): the name it
 * reports (in events, `retryReport` and the CLI), the exact value at each boundary of its formula, that
 * it draws no random number when it has nothing to spread (a seeded run replays the same), that a plain
 * function is a jitter, and the errors that name a wrong one.
 */
import { type Backoff, backoff, delays, type Jitter, jitter, OptionError } from "robustly";
import { describe, expect, it } from "vitest";

/** The jittered delay of one draw, before scaling. */
function once(j: Jitter, b: Backoff, random: () => number, retries = 0, state?: unknown): number {
  const answer = j.apply({ backoff: b, retries, random, state } as Parameters<Jitter["apply"]>[0]);
  return typeof answer === "number" ? answer : answer.delay;
}

/** A random source that always answers `value`, and counts its draws. */
function fixed(value: number): (() => number) & { draws: number } {
  const random = Object.assign(
    () => {
      random.draws += 1;
      return value;
    },
    { draws: 0 },
  );
  return random;
}

const thousand = backoff.constant({ base: 1000 });

describe("each jitter's name", () => {
  it.each([
    [() => jitter.none(), "none"],
    [() => jitter.full(), "full"],
    [() => jitter.full({ mode: "choice" }), "full-choice"],
    [() => jitter.equal(), "equal"],
    [() => jitter.equal({ mode: "choice" }), "equal-choice"],
    [() => jitter.decorrelated(), "decorrelated"],
    [() => jitter.decorrelatedAws(), "decorrelated-aws"],
    [() => jitter.decorrelatedPolly(), "decorrelated-polly"],
    [() => jitter.normal(), "normal"],
    [() => jitter.proportional(), "proportional"],
  ])("is what events and reports show: %#", (make, name) => {
    // Made inside the test, so that the test is known to run the factory.
    expect(make().name).toBe(name);
  });
});

describe("the coin tosses", () => {
  it("full jitter's choice waits the whole delay from 0.5 up, and nothing below", () => {
    const j = jitter.full({ mode: "choice" });
    expect(once(j, thousand, fixed(0.5))).toBe(1000);
    expect(once(j, thousand, fixed(0.4999))).toBe(0);
    expect(once(j, thousand, fixed(0.9999))).toBe(1000);
  });

  it("equal jitter's choice waits the whole delay from 0.5 up, and half of it below", () => {
    const j = jitter.equal({ mode: "choice" });
    expect(once(j, thousand, fixed(0.5))).toBe(1000);
    expect(once(j, thousand, fixed(0.4999))).toBe(500);
  });

  it("decorrelated jitter keeps the retry count from 0.5 up, and forgets it below", () => {
    const j = jitter.decorrelated();
    const exp = backoff.exponential({ base: 100, max: 100_000 });
    const at = (value: number) =>
      j.apply({ backoff: exp, retries: 3, random: fixed(value), previous: undefined });
    expect(at(0.5)).toEqual({ delay: 800, retries: 3 });
    expect(at(0.4999)).toEqual({ delay: 100, retries: 0 });
  });
});

describe("nothing to spread, nothing drawn", () => {
  it("normal jitter with sigma 0, stddev 0 or a delay of 0 returns the delay and draws nothing", () => {
    for (const [j, b, expected] of [
      [jitter.normal({ sigma: 0 }), thousand, 1000],
      [jitter.normal({ stddev: 0 }), thousand, 1000],
      [jitter.normal({ sigma: 0.5 }), backoff.constant({ base: 0 }), 0],
    ] as const) {
      const random = fixed(0.3);
      expect(once(j, b, random)).toBe(expected);
      expect(random.draws).toBe(0);
    }
  });

  it("normal jitter with a delay of 0 but a stddev spreads it (never below 0)", () => {
    const random = fixed(0.9);
    const value = once(jitter.normal({ stddev: 100 }), backoff.constant({ base: 0 }), random);
    expect(random.draws).toBeGreaterThan(0);
    expect(value).toBeGreaterThanOrEqual(0);
  });

  it("normal jitter adds its draw: a draw above the mean lengthens the delay, one below shortens it", () => {
    // Box–Muller with both draws at 0.1: √(−2 ln (1 − 0.1)) × cos(0.2π) ≈ 0.37 standard deviations up.
    const up = once(jitter.normal({ stddev: 100 }), thousand, fixed(0.1));
    expect(up).toBeCloseTo(1000 + 100 * Math.sqrt(-2 * Math.log(0.9)) * Math.cos(2 * Math.PI * 0.1), 6);
    const down = once(jitter.normal({ stddev: 100 }), thousand, fixed(0.4));
    expect(down).toBeLessThan(1000);
  });

  it("proportional jitter with spread 0 returns the delay and draws nothing", () => {
    const random = fixed(0.9);
    expect(once(jitter.proportional({ spread: 0 }), thousand, random)).toBe(1000);
    expect(random.draws).toBe(0);
  });

  it("Polly's decorrelated jitter with a base of 0 waits 0, at every retry", () => {
    const j = jitter.decorrelatedPolly({ base: 0 });
    let state: unknown;
    for (let retries = 0; retries < 5; retries++) {
      const answer = j.apply({
        backoff: thousand,
        retries,
        random: fixed(0.7),
        previous: undefined,
        state: state as number | undefined,
      });
      expect(typeof answer === "number" ? answer : answer.delay).toBe(0);
      state = typeof answer === "number" ? undefined : answer.state;
    }
  });
});

describe("a plain function as a jitter", () => {
  it("is given the backoff's delay and the random source, and its answer is the delay", () => {
    const halve = (delay: number, random: () => number) => delay / 2 + random();
    expect(
      delays({ backoff: backoff.constant({ base: 1000 }), jitter: halve, random: () => 0.25 }, 3),
    ).toEqual([500.25, 500.25, 500.25]);
  });

  it("is named after the function, or custom, where a delay it gives is reported", () => {
    function halve(): number {
      return Number.NaN;
    }
    const anonymous = [(_delay: number) => Number.NaN][0] as (delay: number) => number;
    expect(() => delays({ jitter: halve }, 1)).toThrow(
      'jitter "halve" with backoff "exponential" produced NaN as a delay',
    );
    expect(() => delays({ jitter: anonymous }, 1)).toThrow(
      'jitter "custom" with backoff "exponential" produced NaN as a delay',
    );
  });
});

describe("a wrong jitter", () => {
  it.each([5, null, {}, "full"])("fails at once, naming the option and what is allowed: %j", (value) => {
    expect(() => delays({ jitter: value as never }, 1)).toThrow(
      /^jitter must be a jitter \(from jitter\.\*\), an object with an apply\(input\) method, or a function; got /,
    );
  });

  it("names the call a factory passed uncalled needs", () => {
    expect(() => delays({ jitter: jitter.full as never }, 1)).toThrow(
      "jitter must be a jitter: call the factory, e.g. jitter.full(); got function full",
    );
    for (const factory of [
      jitter.none,
      jitter.equal,
      jitter.decorrelated,
      jitter.decorrelatedAws,
      jitter.decorrelatedPolly,
      jitter.normal,
      jitter.proportional,
    ]) {
      expect(() => delays({ jitter: factory as never }, 1)).toThrow(OptionError);
    }
  });

  it("with its own base and max, the decorrelated jitters want max >= base, saying both were given", () => {
    expect(() => jitter.decorrelatedAws({ base: 100, max: 50 })).toThrow(
      /^jitter\.decorrelatedAws: max must be a number >= base, here 100; got 50$/,
    );
    expect(() => jitter.decorrelatedPolly({ base: 100, max: 50 })).toThrow(
      /^jitter\.decorrelatedPolly: max must be a number >= base, here 100; got 50$/,
    );
    // One of the two alone is checked against the backoff's when the jitter runs, not here.
    expect(() => jitter.decorrelatedAws({ max: 50 })).not.toThrow();
    expect(() => jitter.decorrelatedPolly({ base: 5000 })).not.toThrow();
  });
});
