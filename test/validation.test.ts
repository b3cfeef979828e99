/**
 * Every bad option fails at once, with an `OptionError` (a `TypeError`) whose message names the option,
 * the value and the allowed range; valid options never throw.
 */
import fc from "fast-check";
import {
  adaptiveLimit,
  backoff,
  circuitBreaker,
  delays,
  jitter,
  MAX_TIMER_DELAY,
  memoryStore,
  OptionError,
  ResponsiveBackoff,
  type RetryOptions,
  rateLimiter,
  retry,
  retryBudget,
  wrap,
} from "robustly";
import { inProcessWorker, supervise } from "robustly/supervisor";
import { seededRandom, VirtualClock } from "robustly/testing";
import { describe, expect, it } from "vitest";
import { keysOf } from "../src/core/schema.js";
import { resolveHedge } from "../src/hedge/hedge.js";
import { RETRY_SCHEMA, RULE_SCHEMA } from "../src/policy/schema.js";

const runs = { seed: 0xbad0, numRuns: 150 } as const;

/** How an OptionError shows a number it got. */
const shown = (value: unknown) =>
  typeof value === "number" ? (Object.is(value, -0) ? "-0" : String(value)) : JSON.stringify(value);

function caught(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  throw new Error("expected a throw, got none");
}

/** `fn` throws an OptionError for `option`, whose message reads "<option> must be <allowed…>; got <value>". */
function expectOptionError(fn: () => unknown, option: string, allowed: string, value?: string) {
  const error = caught(fn);
  expect(error).toBeInstanceOf(OptionError);
  expect(error).toBeInstanceOf(TypeError);
  const e = error as OptionError;
  expect(e.name).toBe("OptionError");
  expect(e.option).toBe(option);
  expect(e.message.startsWith(`${option} must be `)).toBe(true);
  expect(e.message).toContain(allowed);
  // A hint ("Did you mean `maxRetries`?") may follow the value, after ". ".
  const body = e.hint === undefined ? e.message : e.message.slice(0, -(e.hint.length + 2));
  if (e.hint !== undefined) expect(e.message.endsWith(`. ${e.hint}`)).toBe(true);
  if (value !== undefined) expect(body.endsWith(`; got ${value}`)).toBe(true);
}

// ----- generators of bad values ------------------------------------------------------------------------

const notFinite = fc.constantFrom(Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY);
const negative = fc.double({ max: -Number.MIN_VALUE, noNaN: true, noDefaultInfinity: true });
const notANumber = fc.oneof(
  fc.string().map((s) => `${s}1`),
  fc.boolean(),
  fc.constant([1]),
  fc.constant({ ms: 1 }),
);
/** Not a finite number >= 0. */
const badNonNegative = fc.oneof(notFinite, negative);
/** Not a number >= 0 or Infinity: NaN or negative. */
const badCap = fc.oneof(fc.constant(Number.NaN), negative, fc.constant(Number.NEGATIVE_INFINITY));
/** A number key that is no option of `known`. */
const unknownKey = (known: readonly string[]) =>
  fc.string({ minLength: 1, maxLength: 12 }).filter((k) => !known.includes(k) && k !== "__proto__");

// ----- the backoff factories ---------------------------------------------------------------------------

type Factory = (options: Record<string, unknown>) => unknown;
const factory = (f: unknown) => f as Factory;

const withBase: [string, Factory][] = [
  ["exponential", factory(backoff.exponential)],
  ["linear", factory(backoff.linear)],
  ["fibonacci", factory(backoff.fibonacci)],
  ["polynomial", factory(backoff.polynomial)],
  ["constant", factory(backoff.constant)],
];

describe("backoff base and max", () => {
  it.each(withBase)("%s: base must be a finite number >= 0", (name, make) => {
    fc.assert(
      fc.property(badNonNegative, (base) => {
        expectOptionError(() => make({ base }), `backoff.${name}: base`, "a finite number >= 0", shown(base));
      }),
      runs,
    );
    fc.assert(
      fc.property(notANumber, (base) => {
        expectOptionError(() => make({ base }), `backoff.${name}: base`, "a finite number >= 0");
      }),
      runs,
    );
    expectOptionError(() => make({ base: -1 }), `backoff.${name}: base`, "a finite number >= 0", "-1");
  });

  it("random: base must be a finite number >= 0", () => {
    fc.assert(
      fc.property(badNonNegative, (base) => {
        expectOptionError(
          () => backoff.random({ base, max: 10 }),
          "backoff.random: base",
          "a finite number >= 0",
          shown(base),
        );
      }),
      runs,
    );
  });

  it.each(withBase.filter(([name]) => name !== "constant"))(
    "%s: max must be >= 0 and not NaN",
    (name, make) => {
      fc.assert(
        fc.property(badCap, (max) => {
          expectOptionError(
            () => make({ base: 0, max }),
            `backoff.${name}: max`,
            "a number >= 0 (Infinity allowed)",
            shown(max),
          );
        }),
        runs,
      );
    },
  );

  it.each(withBase.filter(([name]) => name !== "constant"))("%s: max must be >= base", (name, make) => {
    fc.assert(
      fc.property(
        fc.double({ min: 1, max: 1e12, noNaN: true }),
        fc.double({ min: 0, max: 1, noNaN: true, maxExcluded: true }),
        (base, fraction) => {
          const max = base * fraction;
          fc.pre(max < base);
          expectOptionError(
            () => make({ base, max }),
            `backoff.${name}: max`,
            `>= base, here ${base}`,
            shown(max),
          );
        },
      ),
      runs,
    );
    expectOptionError(
      () => make({ base: 1000, max: 500 }),
      `backoff.${name}: max`,
      ">= base, here 1000",
      "500",
    );
  });

  it("random: max is required and must be finite", () => {
    expectOptionError(
      () => backoff.random({} as never),
      "backoff.random: max",
      "a finite number >= base (required)",
      "undefined",
    );
    expectOptionError(
      () => backoff.random({ max: Number.POSITIVE_INFINITY }),
      "backoff.random: max",
      "a finite number >= base (required)",
      "Infinity",
    );
    expectOptionError(
      () => backoff.random({ base: 10, max: 5 }),
      "backoff.random: max",
      ">= base, here 10",
      "5",
    );
    expectOptionError(() => backoff.random(undefined as never), "backoff.random: max", "(required)");
  });
});

describe("backoff parameters", () => {
  it("exponential: multiplier must be a finite number >= 1", () => {
    const below1 = fc.double({ min: -1e300, max: 1, noNaN: true, maxExcluded: true });
    fc.assert(
      fc.property(fc.oneof(below1, notFinite), (multiplier) => {
        expectOptionError(
          () => backoff.exponential({ multiplier }),
          "backoff.exponential: multiplier",
          "a finite number >= 1",
          shown(multiplier),
        );
      }),
      runs,
    );
    expectOptionError(
      () => backoff.exponential({ multiplier: 0.5 }),
      "backoff.exponential: multiplier",
      "a finite number >= 1",
      "0.5",
    );
  });

  it("linear: interval must be a finite number >= 0", () => {
    fc.assert(
      fc.property(fc.oneof(badNonNegative, notANumber), (interval) => {
        expectOptionError(
          () => backoff.linear({ interval: interval as number }),
          "backoff.linear: interval",
          "a finite number >= 0",
        );
      }),
      runs,
    );
    expectOptionError(
      () => backoff.linear({ interval: -1 }),
      "backoff.linear: interval",
      "a finite number >= 0",
      "-1",
    );
  });

  it.each([
    ["fibonacci", factory(backoff.fibonacci)],
    ["polynomial", factory(backoff.polynomial)],
  ] as const)("%s: step must be a finite number >= 0", (name, make) => {
    fc.assert(
      fc.property(badNonNegative, (step) => {
        expectOptionError(() => make({ step }), `backoff.${name}: step`, "a finite number >= 0", shown(step));
      }),
      runs,
    );
  });

  it("polynomial: exponents must be a non-empty array of finite numbers > 1", () => {
    const allowed = "a non-empty array of finite numbers > 1";
    expectOptionError(
      () => backoff.polynomial({ exponents: [] }),
      "backoff.polynomial: exponents",
      allowed,
      "[]",
    );
    expectOptionError(
      () => backoff.polynomial({ exponents: 2 as never }),
      "backoff.polynomial: exponents",
      allowed,
      "2",
    );
    const badExponent = fc.oneof(
      notFinite,
      fc.double({ min: -1e300, max: 1, noNaN: true }),
      fc.constant(1),
      fc.constant("3"),
    );
    fc.assert(
      fc.property(
        fc.array(fc.double({ min: 1.01, max: 10, noNaN: true }), { maxLength: 3 }),
        badExponent,
        (good, bad) => {
          const exponents = [...good, bad] as number[];
          expectOptionError(
            () => backoff.polynomial({ exponents }),
            `backoff.polynomial: exponents[${good.length}]`,
            "a finite number > 1",
            shown(bad),
          );
        },
      ),
      runs,
    );
  });

  it("slotted: slot must be a finite number >= 0", () => {
    fc.assert(
      fc.property(badNonNegative, (slot) => {
        expectOptionError(
          () => backoff.slotted({ slot }),
          "backoff.slotted: slot",
          "a finite number >= 0",
          shown(slot),
        );
      }),
      runs,
    );
  });

  it("slotted: ceiling must be an integer in [1, 1000]", () => {
    const notInteger = fc.double({ min: -1e6, max: 1e6, noNaN: true }).filter((c) => !Number.isInteger(c));
    fc.assert(
      fc.property(fc.oneof(notInteger, notFinite, fc.integer({ max: 0 })), (ceiling) => {
        expectOptionError(
          () => backoff.slotted({ ceiling }),
          "backoff.slotted: ceiling",
          "an integer in [1, 1000]",
          shown(ceiling),
        );
      }),
      runs,
    );
    expectOptionError(
      () => backoff.slotted({ ceiling: 2.5 }),
      "backoff.slotted: ceiling",
      "an integer",
      "2.5",
    );
    fc.assert(
      fc.property(fc.integer({ min: 1001, max: 2 ** 40 }), (ceiling) => {
        expectOptionError(
          () => backoff.slotted({ ceiling }),
          "backoff.slotted: ceiling",
          "an integer in [1, 1000]",
          shown(ceiling),
        );
      }),
      runs,
    );
  });

  it("slotted: stayAtCeiling must be a boolean", () => {
    expectOptionError(
      () => backoff.slotted({ stayAtCeiling: "yes" as never }),
      "backoff.slotted: stayAtCeiling",
      "true or false",
      '"yes"',
    );
    expectOptionError(
      () => backoff.slotted({ stayAtCeiling: 1 as never }),
      "backoff.slotted: stayAtCeiling",
      "true or false",
      "1",
    );
  });
});

/** Checks options the way `retry` does, synchronously (wrap checks them at once). */
const retryOptions = (options: Record<string, unknown>) => wrap(async () => 1, options as RetryOptions);

describe("unknown keys", () => {
  const factories: [string, Factory, readonly string[], Record<string, unknown>][] = [
    ["backoff.exponential", factory(backoff.exponential), ["base", "max", "multiplier"], {}],
    ["backoff.linear", factory(backoff.linear), ["base", "max", "interval"], {}],
    ["backoff.fibonacci", factory(backoff.fibonacci), ["base", "max", "step"], {}],
    ["backoff.polynomial", factory(backoff.polynomial), ["base", "max", "exponents", "step"], {}],
    ["backoff.random", factory(backoff.random), ["base", "max"], { max: 10 }],
    ["backoff.constant", factory(backoff.constant), ["base"], {}],
    ["backoff.slotted", factory(backoff.slotted), ["slot", "ceiling", "stayAtCeiling"], {}],
    ["jitter.full", factory(jitter.full), ["mode"], {}],
    ["jitter.equal", factory(jitter.equal), ["mode"], {}],
    ["jitter.decorrelatedAws", factory(jitter.decorrelatedAws), ["base", "max"], {}],
    ["jitter.decorrelatedPolly", factory(jitter.decorrelatedPolly), ["base", "max", "multiplier"], {}],
    ["jitter.normal", factory(jitter.normal), ["sigma", "stddev"], {}],
    ["jitter.proportional", factory(jitter.proportional), ["spread", "maxSpread"], {}],
  ];

  it.each(factories)(
    "%s rejects an unknown key, naming it and listing the known ones",
    (where, make, known, valid) => {
      fc.assert(
        fc.property(unknownKey(known), fc.integer(), (key, value) => {
          expectOptionError(
            () => make({ ...valid, [key]: value }),
            `${where}.${key}`,
            `one of the known options (${known.join(", ")}); unknown option`,
            shown(value),
          );
        }),
        runs,
      );
    },
  );

  it("a misspelt option is caught, not ignored", () => {
    expectOptionError(
      () => backoff.exponential({ base: 100, multipler: 3 } as never),
      "backoff.exponential.multipler",
      "base, max, multiplier",
      "3",
    );
    expectOptionError(() => delays({ maxRetry: 3 } as never, 1), "options.maxRetry", "maxRetries", "3");
  });

  it.each([
    ["a slip of the keyboard", () => delays({ maxRetry: 3 } as never, 1), "Did you mean `maxRetries`?"],
    ["a missing letter", () => retryOptions({ timout: 3 }), "Did you mean `timeout`?"],
    ["a swap", () => backoff.exponential({ multilpier: 3 } as never), "Did you mean `multiplier`?"],
    ["wrong case", () => backoff.exponential({ Base: 3 } as never), "Did you mean `base`?"],
    ["maxDelay, now maxElapsed", () => retryOptions({ maxDelay: 3 }), "`maxDelay` was renamed `maxElapsed`."],
    [
      "in a rule",
      () => retryOptions({ rules: [{ when: TypeError, maxDelay: 1 }] }),
      "`maxDelay` was renamed `maxElapsed`.",
    ],
    [
      "initial, now base",
      () => new ResponsiveBackoff({ initial: 3 } as never),
      "`initial` was renamed `base`.",
    ],
    ["ttl, now window", () => retryBudget({ ttl: 3 } as never), "`ttl` was renamed `window`."],
    [
      "factor, now spread",
      () => jitter.proportional({ factor: 0.1 } as never),
      "`factor` was renamed `spread`.",
    ],
    [
      "maxDelta, now maxSpread",
      () => jitter.proportional({ maxDelta: 1 } as never),
      "`maxDelta` was renamed `maxSpread`.",
    ],
    [
      "randomizationFactor, now spread",
      () => jitter.proportional({ randomizationFactor: 0.1 } as never),
      "`randomizationFactor` was renamed `spread`.",
    ],
    [
      "maxRandomization, now maxSpread",
      () => jitter.proportional({ maxRandomization: 1 } as never),
      "`maxRandomization` was renamed `maxSpread`.",
    ],
  ] as const)("an unknown option names the one meant: %s", (_what, make, hint) => {
    const error = caught(make) as OptionError;
    expect(error).toBeInstanceOf(OptionError);
    expect(error.hint).toBe(hint);
    expect(error.message.endsWith(`. ${hint}`)).toBe(true);
  });

  it("a name far from every known one gets no guess", () => {
    const error = caught(() => delays({ zebraCrossing: 1 } as never, 1)) as OptionError;
    expect(error).toBeInstanceOf(OptionError);
    expect(error.hint).toBeUndefined();
  });

  it.each([
    ["backoff.exponential", factory(backoff.exponential)],
    ["jitter.full", factory(jitter.full)],
  ] as const)("%s: options must be an object", (where, make) => {
    expectOptionError(() => make(5 as never), where, "an object", "5");
    expectOptionError(() => make([] as never), where, "an object", "[]");
  });

  // Every option of retry and wrap, as their description lists them.
  const topLevel = keysOf(RETRY_SCHEMA);

  it("top-level options reject an unknown key", () => {
    fc.assert(
      fc.property(unknownKey(topLevel), fc.integer(), (key, value) => {
        expectOptionError(
          () => delays({ [key]: value } as RetryOptions, 1),
          `options.${key}`,
          "unknown option",
          shown(value),
        );
      }),
      runs,
    );
  });

  it("rules reject an unknown key", () => {
    const ruleKeys = keysOf(RULE_SCHEMA);
    fc.assert(
      fc.property(unknownKey(ruleKeys), fc.integer({ min: 0, max: 5 }), fc.integer(), (key, index, value) => {
        const rules = [
          ...Array.from({ length: index }, () => ({ when: TypeError })),
          { when: RangeError, [key]: value },
        ];
        expectOptionError(
          () => delays({ rules } as RetryOptions, 1),
          `rules[${index}].${key}`,
          `one of the known options (${ruleKeys.join(", ")})`,
          shown(value),
        );
      }),
      runs,
    );
  });

  it("options must be an object", () => {
    expectOptionError(() => delays(42 as never, 1), "options", "an object", "42");
  });
});

describe("jitter options", () => {
  it.each([
    ["full", factory(jitter.full)],
    ["equal", factory(jitter.equal)],
  ] as const)("%s: mode must be uniform or choice", (name, make) => {
    fc.assert(
      fc.property(
        fc.string().filter((m) => m !== "uniform" && m !== "choice"),
        (mode) => {
          expectOptionError(
            () => make({ mode }),
            `jitter.${name}: mode`,
            '"uniform" or "choice"',
            shown(mode),
          );
        },
      ),
      runs,
    );
  });

  it("normal: sigma must be a finite number >= 0", () => {
    fc.assert(
      fc.property(badNonNegative, (sigma) => {
        expectOptionError(
          () => jitter.normal({ sigma }),
          "jitter.normal: sigma",
          "a finite number >= 0",
          shown(sigma),
        );
      }),
      runs,
    );
  });

  it("proportional: spread must be a finite number in [0, 1]", () => {
    const above1 = fc.double({ min: 1, max: 1e300, noNaN: true, minExcluded: true });
    fc.assert(
      fc.property(fc.oneof(badNonNegative, above1), (factor) => {
        expectOptionError(
          () => jitter.proportional({ spread: factor }),
          "jitter.proportional: spread",
          "a finite number in [0, 1]",
          shown(factor),
        );
      }),
      runs,
    );
  });

  it("proportional: maxSpread must be >= 0 (Infinity allowed)", () => {
    fc.assert(
      fc.property(badCap, (maxSpread) => {
        expectOptionError(
          () => jitter.proportional({ maxSpread }),
          "jitter.proportional: maxSpread",
          "a number >= 0 (Infinity allowed)",
          shown(maxSpread),
        );
      }),
      runs,
    );
  });

  it("decorrelatedAws: base finite >= 0, max >= 0 and >= base", () => {
    fc.assert(
      fc.property(badNonNegative, (base) => {
        expectOptionError(
          () => jitter.decorrelatedAws({ base }),
          "jitter.decorrelatedAws: base",
          "a finite number >= 0",
          shown(base),
        );
      }),
      runs,
    );
    fc.assert(
      fc.property(badCap, (max) => {
        expectOptionError(
          () => jitter.decorrelatedAws({ max }),
          "jitter.decorrelatedAws: max",
          "a number >= 0 (Infinity allowed)",
          shown(max),
        );
      }),
      runs,
    );
    expectOptionError(
      () => jitter.decorrelatedAws({ base: 100, max: 50 }),
      "jitter.decorrelatedAws: max",
      ">= base, here 100",
      "50",
    );
  });

  it("decorrelatedPolly: base finite >= 0, max >= 0 and >= base, multiplier finite >= 1", () => {
    fc.assert(
      fc.property(badNonNegative, (base) => {
        expectOptionError(
          () => jitter.decorrelatedPolly({ base }),
          "jitter.decorrelatedPolly: base",
          "a finite number >= 0",
          shown(base),
        );
      }),
      runs,
    );
    fc.assert(
      fc.property(badCap, (max) => {
        expectOptionError(
          () => jitter.decorrelatedPolly({ max }),
          "jitter.decorrelatedPolly: max",
          "a number >= 0 (Infinity allowed)",
          shown(max),
        );
      }),
      runs,
    );
    expectOptionError(
      () => jitter.decorrelatedPolly({ base: 100, max: 50 }),
      "jitter.decorrelatedPolly: max",
      ">= base, here 100",
      "50",
    );
    for (const multiplier of [0.5, Number.NaN, Number.POSITIVE_INFINITY]) {
      expectOptionError(
        () => jitter.decorrelatedPolly({ multiplier }),
        "jitter.decorrelatedPolly: multiplier",
        "a finite number >= 1",
        shown(multiplier),
      );
    }
  });
});

describe("retry options", () => {
  it("scale must be a finite number > 0", () => {
    const notPositive = fc.oneof(fc.constantFrom(0, -0), negative);
    fc.assert(
      fc.property(fc.oneof(notPositive, notFinite), (scale) => {
        expectOptionError(() => delays({ scale }, 1), "scale", "a finite number > 0", shown(scale));
      }),
      runs,
    );
  });

  it("maxRetries must be an integer (negative or Infinity = no limit), never NaN", () => {
    const fractional = fc.double({ min: -1e6, max: 1e6, noNaN: true }).filter((n) => !Number.isInteger(n));
    fc.assert(
      fc.property(fc.oneof(fractional, fc.constant(Number.NaN)), (maxRetries) => {
        expectOptionError(
          () => delays({ maxRetries }, 1),
          "maxRetries",
          "an integer (negative or Infinity = no limit)",
          shown(maxRetries),
        );
      }),
      runs,
    );
  });

  it.each(["maxElapsed", "timeout"] as const)("%s must be a number, never NaN", (option) => {
    expectOptionError(
      () => delays({ [option]: Number.NaN }, 1),
      option,
      "a number (negative or Infinity = no limit)",
      "NaN",
    );
    expectOptionError(() => delays({ [option]: "5" } as never, 1), option, "a number", '"5"');
  });

  it("backoff and jitter must be strategies, objects with the right method, or functions", () => {
    for (const bad of [42, "exponential", {}, null, { delay: 5 }]) {
      expectOptionError(() => delays({ backoff: bad as never }, 1), "backoff", "a backoff (from backoff.*)");
      expectOptionError(() => delays({ jitter: bad as never }, 1), "jitter", "a jitter (from jitter.*)");
    }
  });

  it("retryOn must be an Error class, a name or code, a list of those, or a predicate", () => {
    expectOptionError(() => delays({ retryOn: 42 as never }, 1), "retryOn", "an Error class", "42");
    expectOptionError(() => delays({ retryOn: {} as never }, 1), "retryOn", "a predicate function", "{}");
    expectOptionError(() => delays({ retryOn: "" }, 1), "retryOn", "a non-empty error name or code", '""');
    expectOptionError(() => delays({ retryOn: [] }, 1), "retryOn", "a non-empty list", "[]");
    expectOptionError(
      () => delays({ retryOn: [TypeError, 42 as never] }, 1),
      "retryOn[1]",
      "an Error class or an error name/code string",
      "42",
    );
  });

  it("a class that does not extend Error in retryOn is matched with instanceof, never called", async () => {
    class NotAnError {
      constructor(readonly reason: string) {}
    }
    let calls = 0;
    const operation = () => {
      calls += 1;
      throw new NotAnError("busy");
    };
    const wrapped = wrap(operation, {
      retryOn: NotAnError,
      maxRetries: 1,
      backoff: backoff.none(),
      jitter: jitter.none(),
    });
    // Matched, so retried once; the caller's error comes out unchanged.
    await expect(wrapped()).rejects.toBeInstanceOf(NotAnError);
    expect(calls).toBe(2);
    // And an error of another kind is not retried.
    calls = 0;
    const other = wrap(
      () => {
        calls += 1;
        throw new Error("other");
      },
      { retryOn: NotAnError, maxRetries: 3, backoff: backoff.none() },
    );
    await expect(other()).rejects.toThrow("other");
    expect(calls).toBe(1);
  });

  it("a strategy factory passed uncalled fails at once, saying to call it", () => {
    for (const name of Object.keys(backoff) as (keyof typeof backoff)[]) {
      expectOptionError(
        () => delays({ backoff: backoff[name] as never }, 1),
        "backoff",
        `call the factory, e.g. backoff.${name}(`,
      );
    }
    for (const name of Object.keys(jitter) as (keyof typeof jitter)[]) {
      expectOptionError(
        () => wrap(() => 1, { rules: [{ when: Error, jitter: jitter[name] as never }] }),
        "rules[0].jitter",
        `call the factory, e.g. jitter.${name}(`,
      );
    }
  });

  it("ResponsiveBackoff passed as the class, not made with new, fails at once, saying to make one", () => {
    expectOptionError(
      () => delays({ backoff: ResponsiveBackoff as never }, 1),
      "backoff",
      "make one with new ResponsiveBackoff(",
    );
    expectOptionError(
      () => wrap(() => 1, { rules: [{ when: Error, backoff: ResponsiveBackoff as never }] }),
      "rules[0].backoff",
      "make one with new ResponsiveBackoff(",
    );
    let calls = 0;
    expect(() =>
      wrap(
        () => {
          calls += 1;
          return 1;
        },
        { backoff: ResponsiveBackoff as never },
      ),
    ).toThrow(OptionError);
    expect(calls).toBe(0);
  });

  it("a custom strategy that returns no number ends the call with a TypeError instead of hanging", async () => {
    const clock = new VirtualClock();
    const call = retry(
      () => {
        throw new Error("down");
      },
      { clock, backoff: () => "soon" as never, jitter: jitter.none() },
    );
    const outcome = call.then(
      () => "resolved",
      (error: unknown) => error,
    );
    await clock.runAll();
    const error = await outcome;
    expect(error).toBeInstanceOf(TypeError);
    expect((error as Error).message).toContain('produced "soon" as a delay; a delay must be a number of ms');
    expect(clock.pending).toBe(0);
  });

  it("rules must be an array of rules with a valid when and valid policies", () => {
    expectOptionError(
      () => delays({ rules: {} as never }, 1),
      "rules",
      "an array of { when, …policy } rules",
    );
    expectOptionError(
      () => delays({ rules: [{} as never] }, 1),
      "rules[0].when",
      "an ErrorMatcher (required)",
    );
    expectOptionError(() => delays({ rules: [null as never] }, 1), "rules[0]", "an object", "null");
    expectOptionError(
      () => delays({ rules: [{ when: TypeError }, { when: 42 as never }] }, 1),
      "rules[1].when",
      "an Error class",
      "42",
    );
    fc.assert(
      fc.property(fc.oneof(fc.constant(0), negative, notFinite), (scale) => {
        expectOptionError(
          () => delays({ rules: [{ when: TypeError, scale }] }, 1),
          "rules[0].scale",
          "a finite number > 0",
          shown(scale),
        );
      }),
      runs,
    );
    expectOptionError(
      () => delays({ rules: [{ when: TypeError, maxRetries: 1.5 }] }, 1),
      "rules[0].maxRetries",
      "an integer",
      "1.5",
    );
    expectOptionError(
      () => delays({ rules: [{ when: TypeError, backoff: 3 as never }] }, 1),
      "rules[0].backoff",
      "a backoff",
      "3",
    );
    expectOptionError(
      () => delays({ rules: [{ when: TypeError, jitter: "full" as never }] }, 1),
      "rules[0].jitter",
      "a jitter",
      '"full"',
    );
  });

  it("clock must have now() and setTimer()", () => {
    const allowed = "a Clock with now() and setTimer(ms, callback) methods";
    expectOptionError(() => delays({ clock: {} as never }, 1), "clock", allowed, "{}");
    expectOptionError(() => delays({ clock: { now: () => 0 } as never }, 1), "clock", allowed);
    expectOptionError(() => delays({ clock: { setTimer: () => () => {} } as never }, 1), "clock", allowed);
    expectOptionError(() => delays({ clock: 5 as never }, 1), "clock", allowed, "5");
    expectOptionError(() => delays({ clock: null as never }, 1), "clock", allowed, "null");
  });

  it("random must be a function", () => {
    fc.assert(
      fc.property(fc.oneof(fc.double(), notANumber), (random) => {
        expectOptionError(() => delays({ random: random as never }, 1), "random", "a function");
      }),
      runs,
    );
    expectOptionError(() => delays({ random: 0.5 as never }, 1), "random", "a function", "0.5");
  });

  it("signal must be an AbortSignal, callbacks must be functions", () => {
    expectOptionError(() => delays({ signal: {} as never }, 1), "signal", "an AbortSignal", "{}");
    for (const name of ["retryOnResult", "onSuccess", "onError", "onRetry", "onCallbackError"] as const) {
      expectOptionError(() => delays({ [name]: "log" } as never, 1), name, "a function", '"log"');
    }
  });

  it("delays: count must be an integer >= 0", () => {
    for (const count of [-1, 1.5, Number.NaN, Number.POSITIVE_INFINITY]) {
      expectOptionError(() => delays({}, count), "count", "an integer >= 0", shown(count));
    }
  });
});

describe("retry and wrap fail at once", () => {
  it("retry rejects a non-function operation, before anything runs", async () => {
    for (const operation of [undefined, null, 42, "fetch", {}]) {
      const promise = retry(operation as never);
      await expect(promise).rejects.toBeInstanceOf(OptionError);
      await expect(promise).rejects.toThrow(/^operation must be a function; got /);
    }
  });

  it("wrap throws on a non-function operation", () => {
    for (const operation of [undefined, null, 42, "fetch", {}]) {
      expectOptionError(() => wrap(operation as never), "operation", "a function");
    }
  });

  it("retry rejects (never throws) on a bad option, and never calls the operation", async () => {
    await fc.assert(
      fc.asyncProperty(fc.oneof(fc.constant(0), negative, notFinite), async (scale) => {
        let calls = 0;
        const operation = () => {
          calls += 1;
          return "value";
        };
        const options = { scale, maxRetries: 2 };
        let promise: Promise<unknown> | undefined;
        expect(() => {
          promise = retry(operation, options);
        }).not.toThrow();
        await expect(promise).rejects.toBeInstanceOf(OptionError);
        await expect(promise).rejects.toThrow(/^scale must be a finite number > 0; got /);
        expect(calls).toBe(0);
      }),
      runs,
    );
  });

  it("wrap throws on a bad option when wrapping, before any call", () => {
    let calls = 0;
    const operation = () => {
      calls += 1;
    };
    expectOptionError(() => wrap(operation, { maxRetries: 0.5 }), "maxRetries", "an integer", "0.5");
    expectOptionError(() => wrap(operation, { clock: {} as never }), "clock", "a Clock");
    expectOptionError(
      () => wrap(operation, { unknown: 1 } as never),
      "options.unknown",
      "unknown option",
      "1",
    );
    expect(calls).toBe(0);
  });
});

describe("valid options never throw", () => {
  const base = fc.oneof(fc.constantFrom(0, 1000), fc.double({ min: 0, max: 1e9, noNaN: true }));
  const cap = (b: number) =>
    fc.oneof(fc.constant(Number.POSITIVE_INFINITY), fc.double({ min: b, max: 1e12, noNaN: true }));

  const backoffArb = fc.oneof(
    base.chain((b) =>
      fc
        .record({
          base: fc.constant(b),
          max: cap(b),
          multiplier: fc.double({ min: 1, max: 100, noNaN: true }),
        })
        .map((o) => () => backoff.exponential(o)),
    ),
    base.chain((b) =>
      fc
        .record({ base: fc.constant(b), max: cap(b), interval: fc.double({ min: 0, max: 1e6, noNaN: true }) })
        .map((o) => () => backoff.linear(o)),
    ),
    base.chain((b) =>
      fc
        .record({ base: fc.constant(b), max: cap(b), step: fc.double({ min: 0, max: 1e6, noNaN: true }) })
        .map((o) => () => backoff.fibonacci(o)),
    ),
    base.chain((b) =>
      fc
        .record({
          base: fc.constant(b),
          max: cap(b),
          exponents: fc.array(fc.double({ min: 1.0001, max: 8, noNaN: true }), {
            minLength: 1,
            maxLength: 3,
          }),
          step: fc.double({ min: 0, max: 1e6, noNaN: true }),
        })
        .map((o) => () => backoff.polynomial(o)),
    ),
    base.chain((b) =>
      fc
        .record({ base: fc.constant(b), max: fc.double({ min: b, max: 1e12, noNaN: true }) })
        .map((o) => () => backoff.random(o)),
    ),
    base.map((b) => () => backoff.constant({ base: b })),
    fc.constant(() => backoff.none()),
    fc
      .record({
        slot: fc.double({ min: 0, max: 1e4, noNaN: true }),
        ceiling: fc.integer({ min: 1, max: 1000 }),
        stayAtCeiling: fc.boolean(),
      })
      .map((o) => () => backoff.slotted(o)),
  );

  const jitterArb = fc.oneof(
    fc.constant(() => jitter.none()),
    fc.constantFrom("uniform", "choice").map((mode) => () => jitter.full({ mode })),
    fc.constantFrom("uniform", "choice").map((mode) => () => jitter.equal({ mode })),
    fc.constant(() => jitter.decorrelated()),
    fc.constant(() => jitter.decorrelatedAws()),
    fc.constant(() => jitter.decorrelatedPolly()),
    base.chain((b) =>
      cap(b).map((max) => () => jitter.decorrelatedAws({ base: b, max: Math.max(b, Math.min(max, 1e12)) })),
    ),
    fc.double({ min: 0, max: 5, noNaN: true }).map((sigma) => () => jitter.normal({ sigma })),
    fc
      .record({
        spread: fc.double({ min: 0, max: 1, noNaN: true }),
        maxSpread: fc.oneof(
          fc.constant(Number.POSITIVE_INFINITY),
          fc.double({ min: 0, max: 1e9, noNaN: true }),
        ),
      })
      .map((o) => () => jitter.proportional(o)),
  );

  it("any valid backoff, jitter and policy values give finite delays in [0, MAX_TIMER_DELAY]", () => {
    fc.assert(
      fc.property(
        backoffArb,
        jitterArb,
        fc.record(
          {
            scale: fc.double({ min: 1e-6, max: 1e6, noNaN: true, minExcluded: true }),
            maxRetries: fc.oneof(fc.integer({ min: -5, max: 100 }), fc.constant(Number.POSITIVE_INFINITY)),
            maxElapsed: fc.oneof(fc.double({ noNaN: true }), fc.constant(Number.NEGATIVE_INFINITY)),
            timeout: fc.oneof(fc.double({ noNaN: true }), fc.constant(Number.POSITIVE_INFINITY)),
          },
          { requiredKeys: [] },
        ),
        fc.integer(),
        (makeBackoff, makeJitter, policy, seed) => {
          let values: number[] = [];
          expect(() => {
            values = delays(
              {
                ...policy,
                backoff: makeBackoff(),
                jitter: makeJitter(),
                random: seededRandom(seed),
                clock: new VirtualClock(),
                retryOn: [TypeError, "ECONNRESET"],
                rules: [{ when: RangeError, maxRetries: 1, scale: 2 }],
              },
              25,
            );
          }).not.toThrow();
          expect(values).toHaveLength(25);
          for (const value of values) {
            expect(Number.isFinite(value)).toBe(true);
            expect(value).toBeGreaterThanOrEqual(0);
            expect(value).toBeLessThanOrEqual(MAX_TIMER_DELAY);
          }
        },
      ),
      runs,
    );
  });

  it("no options, undefined options and empty factory options are valid", () => {
    expect(() => delays({}, 3)).not.toThrow();
    expect(() => delays(undefined as never, 3)).not.toThrow();
    for (const make of [
      backoff.exponential,
      backoff.linear,
      backoff.fibonacci,
      backoff.polynomial,
      backoff.constant,
      backoff.slotted,
      jitter.full,
      jitter.equal,
      jitter.decorrelatedAws,
      jitter.decorrelatedPolly,
      jitter.normal,
      jitter.proportional,
    ]) {
      expect(() => make()).not.toThrow();
      expect(() => (make as Factory)({})).not.toThrow();
    }
    expect(() => wrap(async () => 1)).not.toThrow();
  });
});

describe("clock: null", () => {
  // An explicit null is a wrong value, as for every other option; only undefined means the real clock.
  const takers: [string, () => unknown][] = [
    ["circuitBreaker", () => circuitBreaker({ clock: null as never })],
    ["retryBudget", () => retryBudget({ clock: null as never })],
    ["rateLimiter", () => rateLimiter({ rate: 1, per: 1000, clock: null as never })],
    ["adaptiveLimit", () => adaptiveLimit({ clock: null as never })],
    ["memoryStore", () => memoryStore({ clock: null as never })],
    ["ResponsiveBackoff", () => new ResponsiveBackoff({ clock: null as never })],
    ["hedge", () => resolveHedge({ delay: 10, clock: null as never })],
    ["supervise", () => supervise({ worker: inProcessWorker(() => () => 1), clock: null as never })],
    ["retry", () => wrap(() => 1, { clock: null as never })],
  ];
  it.each(takers)("is refused by %s, naming the clock", (_, make) => {
    expect(make).toThrow(OptionError);
    expect(make).toThrow(/clock must be a Clock.*; got null$/);
  });
});
