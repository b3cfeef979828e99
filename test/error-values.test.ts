/**
 * How robustly's own errors read: the value an OptionError shows (as JSON writes an object, a list as
 * `[a, b]`, every long value cut at 80 characters with "..."), and the messages and fields of
 * TimeoutError, PermanentError and RetryableResultError.
 */
import fc from "fast-check";
import { OptionError, PermanentError, RetryableResultError, TimeoutError } from "robustly";
import { expect, describe as group, it } from "vitest";
import { describe, withoutStack } from "../src/core/errors.js";

/** `text` as a message shows it: cut at 80 characters, the last three of them "...". */
const cut = (text: string) => (text.length > 80 ? `${text.slice(0, 77)}...` : text);

group("the value an OptionError shows", () => {
  it.each<[string, () => unknown, string]>([
    ["a string, quoted", () => 'ab"c', '"ab\\"c"'],
    ["a number", () => 1.5, "1.5"],
    ["-0", () => -0, "-0"],
    ["NaN", () => Number.NaN, "NaN"],
    ["Infinity", () => Number.POSITIVE_INFINITY, "Infinity"],
    ["a bigint", () => 12n, "12"],
    ["a boolean", () => false, "false"],
    ["undefined", () => undefined, "undefined"],
    ["null", () => null, "null"],
    ["a symbol", () => Symbol("s"), "Symbol(s)"],
    ["a named function", () => function retryNow() {}, "function retryNow"],
    ["an anonymous function", () => [() => 1][0], "function (anonymous)"],
    ["an empty object", () => ({}), "{}"],
    [
      "an object, as JSON",
      () => ({ a: 1, b: "x", c: [1, { d: null }] }),
      '{"a":1,"b":"x","c":[1,{"d":null}]}',
    ],
    [
      "an object's undefined, functions and symbols left out, as JSON leaves them",
      () => ({ a: undefined, b: () => 1, c: Symbol("s"), d: 2 }),
      '{"d":2}',
    ],
    [
      "in an object, a list's undefined and functions as null",
      () => ({ l: [undefined, () => 1, 3] }),
      '{"l":[null,null,3]}',
    ],
    [
      "an object's own keys only",
      () => Object.assign(Object.create({ inherited: 1 }), { own: 2 }),
      '{"own":2}',
    ],
    ["a bigint in an object", () => ({ n: 5n }), '{"n":5}'],
    [
      "a boxed number, string and boolean, unboxed",
      () => ({ a: new Number(1), b: new String("s"), c: new Boolean(true) }),
      '{"a":1,"b":"s","c":true}',
    ],
    ["a Date, by its toJSON", () => new Date(0), '"1970-01-01T00:00:00.000Z"'],
    ["a toJSON told its key", () => ({ k: { toJSON: (key: string) => `key ${key}` } }), '{"k":"key k"}'],
    [
      "a bigint's own toJSON",
      () => ({ n: Object.assign(Object(7n), { toJSON: () => "seven" }) }),
      '{"n":"seven"}',
    ],
    [
      "a list, as describe shows each element",
      () => [1, "a", null, undefined, -0, 2n],
      '[1, "a", null, undefined, -0, 2]',
    ],
    ["a list in a list, the same way", () => [[1, "a"], []], '[[1, "a"], []]'],
    ["an object in a list, as JSON", () => [{ a: [1, 2], b: undefined }], '[{"a":[1,2]}]'],
    ["an empty list", () => [], "[]"],
    [
      "an object inside itself",
      () => {
        const o: Record<string, unknown> = { a: 1 };
        o.self = o;
        return o;
      },
      '{"a":1,"self":[Circular]}',
    ],
    [
      "a list inside itself",
      () => {
        const l: unknown[] = [1];
        l.push(l);
        return l;
      },
      "[1, [Circular]]",
    ],
    [
      "one object met twice, not inside itself",
      () => {
        const o = { x: 1 };
        return [o, o];
      },
      '[{"x":1}, {"x":1}]',
    ],
    [
      "a getter that throws: the kind of value",
      () => ({
        get boom() {
          throw new Error("no");
        },
      }),
      "[object Object]",
    ],
    [
      "a toJSON that throws: the kind of value",
      () => [
        {
          toJSON() {
            throw new Error("no");
          },
        },
      ],
      "[object Array]",
    ],
  ])("%s", (_, make, shown) => {
    const value = make();
    expect(describe(value)).toBe(shown);
    expect(new OptionError("maxRetries", value, "an integer >= 0").message).toBe(
      `maxRetries must be an integer >= 0; got ${shown}`,
    );
  });

  it("shows an object as JSON.stringify writes it, cut at 80 characters", () => {
    fc.assert(
      fc.property(fc.object({ maxDepth: 3 }), (value) => {
        expect(describe(value)).toBe(cut(JSON.stringify(value)));
      }),
    );
  });

  it("shows a list of strings and integers as [a, b], cut at 80 characters", () => {
    fc.assert(
      fc.property(fc.array(fc.oneof(fc.string(), fc.integer())), (list) => {
        const shown = `[${list.map((item) => JSON.stringify(item)).join(", ")}]`;
        expect(describe(list)).toBe(cut(shown));
      }),
    );
  });

  it("cuts a string, a function's name and a long number at 80 characters, the last three '...'", () => {
    expect(describe("x".repeat(78))).toBe(`"${"x".repeat(78)}"`);
    expect(describe("x".repeat(79))).toBe(`"${"x".repeat(76)}...`);
    const named = { [`f${"n".repeat(100)}`]: () => 1 }[`f${"n".repeat(100)}`];
    expect(describe(named)).toBe(cut(`function f${"n".repeat(100)}`));
    expect(describe(10n ** 100n)).toBe(cut(String(10n ** 100n)));
    expect(describe(10n ** 100n)).toHaveLength(80);
    // Exactly 80 characters are shown whole.
    expect(describe({ k: "v".repeat(72) })).toBe(`{"k":"${"v".repeat(72)}"}`);
    expect(describe({ k: "v".repeat(73) })).toHaveLength(80);
    expect(describe({ k: "v".repeat(73) }).endsWith("...")).toBe(true);
  });

  it("reads no more of a huge list or object than the 80 characters it shows", () => {
    // An option given a million-element list, or an object of 100,000 keys, fails at once: its message is
    // written from the start of the value, not from the whole of it.
    let reads = 0;
    const counted = <T extends object>(target: T): T =>
      new Proxy(target, {
        get(inner, key, receiver) {
          reads += 1;
          return Reflect.get(inner, key, receiver);
        },
      });
    const list = counted(new Array<number>(1_000_000).fill(7));
    expect(describe(list)).toBe(cut(`[${new Array(30).fill(7).join(", ")}]`));
    expect(reads).toBeLessThan(100);
    reads = 0;
    const keys = Object.fromEntries(Array.from({ length: 100_000 }, (_, i) => [`k${i}`, i]));
    expect(describe(counted(keys))).toBe(
      cut(JSON.stringify(Object.fromEntries(Object.entries(keys).slice(0, 20)))),
    );
    expect(reads).toBeLessThan(100);
    // One element or one property longer than the text shown is read, and cut, once.
    expect(describe([["y".repeat(1000)]])).toBe(cut(`[["${"y".repeat(100)}`));
    expect(describe({ k: { j: "z".repeat(1000) } })).toBe(cut(`{"k":{"j":"${"z".repeat(100)}`));
  });

  it("names a hint after the value when one is given", () => {
    const error = new OptionError("maxRetrys", 3, "a known option", "did you mean maxRetries?");
    expect(error.message).toBe("maxRetrys must be a known option; got 3. did you mean maxRetries?");
    expect(error).toMatchObject({
      name: "OptionError",
      option: "maxRetrys",
      value: 3,
      hint: "did you mean maxRetries?",
    });
    expect(error).toBeInstanceOf(TypeError);
  });
});

group("robustly's own errors", () => {
  it("a TimeoutError names the timeout, in its message and its field", () => {
    const error = new TimeoutError(250);
    expect(error).toMatchObject({
      name: "TimeoutError",
      timeout: 250,
      message: "The attempt timed out after 250 ms",
    });
    expect(new TimeoutError(5, "custom").message).toBe("custom");
  });

  it.each<[string, unknown, string, boolean]>([
    ["an Error: its message, and it is the cause", new Error("404"), "404", true],
    [
      "an object that is no Error: a generic message, and it is the cause",
      { status: 404 },
      "Permanent failure",
      true,
    ],
    ["nothing: a generic message, no cause", undefined, "Permanent failure", false],
    ["a string: the message, no cause", "no token", "no token", false],
    ["a number: the message, no cause", 404, "404", false],
    ["null: the message, no cause", null, "null", false],
  ])("a PermanentError given %s", (_, given, message, isCause) => {
    const error = new PermanentError(given);
    expect(error.name).toBe("PermanentError");
    expect(error.message).toBe(message);
    if (isCause) expect(error.cause).toBe(given);
    else expect("cause" in error).toBe(false);
  });

  it("a PermanentError given a message says it, and keeps its cause", () => {
    const cause = new Error("404");
    const error = new PermanentError(cause, "gone");
    expect(error.message).toBe("gone");
    expect(error.cause).toBe(cause);
  });

  it("a RetryableResultError carries the value retryOnResult refused", () => {
    const error = new RetryableResultError({ status: 503 });
    expect(error).toMatchObject({ name: "RetryableResultError", value: { status: 503 } });
    expect(error.message).toBe("retryOnResult asked for a retry");
  });

  it("an error made without a stack trace leaves the stack trace limit as it was, even when making it throws", () => {
    const limit = Error.stackTraceLimit;
    try {
      Error.stackTraceLimit = 7;
      const made = withoutStack(() => new Error("quiet"));
      expect(made.message).toBe("quiet");
      // No frame captured: the stack is the first line alone.
      expect(made.stack).toBe("Error: quiet");
      expect(Error.stackTraceLimit).toBe(7);
      expect(() =>
        withoutStack(() => {
          throw new Error("while making it");
        }),
      ).toThrow("while making it");
      expect(Error.stackTraceLimit).toBe(7);
    } finally {
      Error.stackTraceLimit = limit;
    }
  });
});
