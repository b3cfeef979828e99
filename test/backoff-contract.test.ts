/**
 * What a user (or a custom jitter, which reads a backoff's `base` and `max`) relies on from each backoff
 * beyond its delays (test/backoff.test.ts): the name it reports, the base and max it declares, and how
 * the combinators pass a success and a fork (a preview) to their parts, a stateful part used twice
 * included.
 */
import { type Backoff, backoff, ResponsiveBackoff } from "robustly";
import { VirtualClock } from "robustly/testing";
import { describe, expect, it } from "vitest";

describe("each backoff's name, base and max", () => {
  it.each([
    [() => backoff.constant({ base: 300 }), "constant", 300, 300],
    [() => backoff.none(), "none", 0, 0],
    [() => backoff.exponential({ base: 100, max: 5000 }), "exponential", 100, 5000],
    [() => backoff.linear({ base: 100, interval: 50, max: 900 }), "linear", 100, 900],
    [() => backoff.fibonacci({ base: 100, max: 800 }), "fibonacci", 100, 800],
    [() => backoff.polynomial({ base: 10, max: 700 }), "polynomial", 10, 700],
    [() => backoff.random({ base: 20, max: 600 }), "random", 20, 600],
  ] as const)("%#: reports what it is", (make, name, base, max) => {
    const b = make();
    expect({ name: b.name, base: b.base, max: b.max }).toEqual({ name, base, max });
  });

  it("a plain function is a backoff named after it (or custom), from 0 with no cap", () => {
    function tenths(x: number): number {
      return 100 * x;
    }
    const anonymous = [(x: number) => x][0] as (x: number) => number;
    for (const [fn, name] of [
      [tenths, "tenths"],
      [anonymous, "custom"],
    ] as const) {
      const b = backoff.chain(fn, 0, fn);
      expect(b.name).toBe(`chain(${name}, 0, ${name})`);
      expect(b.base).toBe(0);
      expect(b.max).toBe(Number.POSITIVE_INFINITY);
    }
  });
});

describe("the combinators' base and max", () => {
  const small = () => backoff.constant({ base: 100 });
  const large = () => backoff.exponential({ base: 1000, max: 60_000 });

  it("chain: the first part's base, and the larger max, whichever part has it", () => {
    expect(backoff.chain(large(), 2, small())).toMatchObject({ base: 1000, max: 60_000 });
    expect(backoff.chain(small(), 2, large())).toMatchObject({ base: 100, max: 60_000 });
    expect(backoff.chain(small(), 2, large()).name).toBe("chain(constant, 2, exponential)");
    // No retries of the first part: it is the second alone.
    expect(backoff.chain(large(), 0, small())).toMatchObject({ base: 100, max: 100 });
    expect(backoff.chain(large(), 2, small()).delay(1, Math.random)).toBe(2000);
    expect(backoff.chain(large(), 2, small()).delay(2, Math.random)).toBe(100);
  });

  it("plus: the sums; capped: both at most the cap; scaled: both times k", () => {
    expect(backoff.plus(small(), large())).toMatchObject({
      name: "plus(constant, exponential)",
      base: 1100,
      max: 60_100,
    });
    expect(backoff.capped(large(), 5000)).toMatchObject({
      name: "capped(exponential)",
      base: 1000,
      max: 5000,
    });
    expect(backoff.capped(large(), 500)).toMatchObject({ base: 500, max: 500 });
    expect(backoff.scaled(small(), 2.5)).toMatchObject({ name: "scaled(constant)", base: 250, max: 250 });
  });
});

describe("a stateful part inside the combinators", () => {
  /** A responsive backoff that has seen `failures` failures: its delay grows with each. */
  function slowed(clock: VirtualClock, failures: number): ResponsiveBackoff {
    const r = new ResponsiveBackoff({ base: 100, max: 10_000, spread: 0, clock });
    for (let i = 0; i < failures; i++) r.failure();
    return r;
  }

  it.each([
    ["plus", (r: Backoff) => backoff.plus(r, backoff.constant({ base: 1 }))],
    ["scaled", (r: Backoff) => backoff.scaled(r, 2)],
    ["capped", (r: Backoff) => backoff.capped(r, 1e9)],
    ["chain", (r: Backoff) => backoff.chain(backoff.constant({ base: 1 }), 1, r)],
  ] as const)("%s passes a success on to its part, and a fork copies it", (_, wrap) => {
    const clock = new VirtualClock();
    const r = slowed(clock, 6);
    const whole = wrap(r);
    const now = () => r.snapshot();
    const before = now();
    // A fork (what a preview uses) is a copy: successes on it leave the live part as it was.
    const fork = whole.fork?.() as Backoff;
    expect(fork).toBeDefined();
    for (let i = 0; i < 20; i++) fork.success?.();
    expect(now()).toEqual(before);
    // A success of the whole reaches the part.
    for (let i = 0; i < 20; i++) whole.success?.();
    expect(now().successes + now().wentDown).toBeGreaterThan(before.successes + before.wentDown);
    expect(now().current).toBeLessThan(before.current);
  });

  it("used twice (plus(r, r)) hears each success once, and forks into one copy used twice", () => {
    const clock = new VirtualClock();
    const once = slowed(clock, 6);
    const twice = slowed(clock, 6);
    const whole = backoff.plus(twice, twice);
    once.success();
    whole.success?.();
    expect(twice.snapshot()).toEqual(once.snapshot());
    const fork = whole.fork?.() as Backoff;
    // The two halves of the copy are one object: asked for a delay, it hears two failures in a row, as
    // the whole's part would.
    const current = twice.snapshot().current;
    expect(fork.delay(0, () => 0.5)).toBe(current * 1.5 + current * 1.5 * 1.5);
    expect(twice.snapshot().current).toBe(current);
  });

  it("a whole of pure parts has no success or fork to call", () => {
    const whole = backoff.plus(backoff.constant({ base: 1 }), backoff.scaled(backoff.none(), 2));
    expect(whole.success).toBeUndefined();
    expect(whole.fork).toBeUndefined();
  });
});

describe("a wrong part or factor", () => {
  it.each([
    ["backoff.plus: a", () => backoff.plus(5 as never, backoff.none())],
    ["backoff.plus: b", () => backoff.plus(backoff.none(), 5 as never)],
    ["backoff.chain: first", () => backoff.chain(5 as never, 1, backoff.none())],
    ["backoff.chain: then", () => backoff.chain(backoff.none(), 1, 5 as never)],
    ["backoff.capped: backoff", () => backoff.capped(5 as never, 1)],
    ["backoff.scaled: backoff", () => backoff.scaled(5 as never, 2)],
  ])("names the part: %s", (label, make) => {
    expect(make).toThrow(
      `${label} must be a backoff (from backoff.*), an object with a delay(retries, random) method, or a function; got 5`,
    );
  });

  it.each([["2"], [0], [-1], [Number.NaN], [Number.POSITIVE_INFINITY]])("scaled refuses k = %j", (k) => {
    expect(() => backoff.scaled(backoff.none(), k as never)).toThrow(
      /^backoff\.scaled: k must be a finite number > 0; got /,
    );
  });

  it.each([[1], [Number.NaN], ["2"], [0.5]])("polynomial refuses an exponent of %j, naming which", (p) => {
    expect(() => backoff.polynomial({ exponents: [3, p as never] })).toThrow(
      /^backoff\.polynomial: exponents\[1\] must be a finite number > 1; got /,
    );
  });
});

describe("the slotted backoff", () => {
  it("is named, and with a slot of 0 waits 0 however many slots it may draw", () => {
    const none = backoff.slotted({ slot: 0 });
    expect({ name: none.name, base: none.base, max: none.max }).toEqual({ name: "slotted", base: 0, max: 0 });
    expect(none.delay(40, () => 0.99)).toBe(0);
  });

  it("waits 0 at the step that reaches the ceiling, and draws nothing there", () => {
    let draws = 0;
    const random = () => {
      draws += 1;
      return 0.7;
    };
    // Ceiling 10, resetting: x = 9 is the reset step; x = 10 starts again from one slot.
    const b = backoff.slotted();
    expect(b.delay(9, random)).toBe(0);
    expect(draws).toBe(0);
    expect(b.delay(10, random)).toBe(10);
    expect(draws).toBe(1);
  });
});
