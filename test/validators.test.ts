/**
 * The option checks every constructor shares, at their boundaries: what each takes and refuses, and the
 * error it names; the nearest known name an unknown option is told of; a computed delay clamped.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  atLeastOrInfinity,
  boolean,
  clampDelay,
  editDistance,
  finiteAbove,
  finiteAtLeast,
  integerAtLeast,
  knownKeys,
  limit,
  nearest,
} from "../src/core/validate.js";

/** The message `check` throws, or "accepted: <its answer>". */
function outcome(check: () => unknown): string {
  try {
    return `accepted: ${String(check())}`;
  } catch (error) {
    return (error as Error).message;
  }
}

describe("the number checks", () => {
  it.each<[string, () => unknown, string]>([
    ["finiteAtLeast: the minimum", () => finiteAtLeast("base", 1, 1), "accepted: 1"],
    [
      "finiteAtLeast: below it",
      () => finiteAtLeast("base", 0.5, 1),
      "base must be a finite number >= 1; got 0.5",
    ],
    ["finiteAtLeast: the maximum", () => finiteAtLeast("p", 1, 0, 1), "accepted: 1"],
    [
      "finiteAtLeast: above it",
      () => finiteAtLeast("p", 1.5, 0, 1),
      "p must be a finite number in [0, 1]; got 1.5",
    ],
    [
      "finiteAtLeast: Infinity",
      () => finiteAtLeast("base", Number.POSITIVE_INFINITY, 0),
      "base must be a finite number >= 0; got Infinity",
    ],
    [
      "finiteAtLeast: NaN",
      () => finiteAtLeast("base", Number.NaN, 0),
      "base must be a finite number >= 0; got NaN",
    ],
    [
      "finiteAtLeast: a string",
      () => finiteAtLeast("base", "5", 0),
      'base must be a finite number >= 0; got "5"',
    ],
    ["finiteAbove: just above", () => finiteAbove("rate", 0.001, 0), "accepted: 0.001"],
    ["finiteAbove: the bound", () => finiteAbove("rate", 0, 0), "rate must be a finite number > 0; got 0"],
    [
      "finiteAbove: Infinity",
      () => finiteAbove("rate", Number.POSITIVE_INFINITY, 0),
      "rate must be a finite number > 0; got Infinity",
    ],
    ["finiteAbove: a string", () => finiteAbove("rate", "1", 0), 'rate must be a finite number > 0; got "1"'],
    ["atLeastOrInfinity: the minimum", () => atLeastOrInfinity("max", 0, 0), "accepted: 0"],
    [
      "atLeastOrInfinity: Infinity",
      () => atLeastOrInfinity("max", Number.POSITIVE_INFINITY, 0),
      "accepted: Infinity",
    ],
    [
      "atLeastOrInfinity: below",
      () => atLeastOrInfinity("max", -1, 0),
      "max must be a number >= 0 (Infinity allowed); got -1",
    ],
    [
      "atLeastOrInfinity: NaN",
      () => atLeastOrInfinity("max", Number.NaN, 0),
      "max must be a number >= 0 (Infinity allowed); got NaN",
    ],
    [
      "atLeastOrInfinity: a string",
      () => atLeastOrInfinity("max", "1", 0),
      'max must be a number >= 0 (Infinity allowed); got "1"',
    ],
    ["integerAtLeast: the minimum", () => integerAtLeast("n", 1, 1), "accepted: 1"],
    ["integerAtLeast: a fraction", () => integerAtLeast("n", 1.5, 1), "n must be an integer >= 1; got 1.5"],
    ["integerAtLeast: below", () => integerAtLeast("n", 0, 1), "n must be an integer >= 1; got 0"],
    ["integerAtLeast: a string", () => integerAtLeast("n", "2", 1), 'n must be an integer >= 1; got "2"'],
    ["boolean: true", () => boolean("unref", true), "accepted: true"],
    ["boolean: 1", () => boolean("unref", 1), "unref must be true or false; got 1"],
  ])("%s", (_, check, expected) => {
    expect(outcome(check)).toBe(expected);
  });
});

describe("a limit (negative or Infinity for none)", () => {
  it.each<[unknown, boolean, string]>([
    [3, true, "accepted: 3"],
    [0, true, "accepted: 0"],
    [-0, true, "accepted: 0"],
    [-1, true, "accepted: Infinity"],
    [-0.5, false, "accepted: Infinity"],
    [Number.POSITIVE_INFINITY, true, "accepted: Infinity"],
    [Number.NEGATIVE_INFINITY, true, "accepted: Infinity"],
    [2.5, false, "accepted: 2.5"],
    [2.5, true, "maxRetries must be an integer (negative or Infinity = no limit); got 2.5"],
    [Number.NaN, false, "maxRetries must be a number (negative or Infinity = no limit); got NaN"],
    ["3", true, 'maxRetries must be an integer (negative or Infinity = no limit); got "3"'],
  ])("%s (integer: %s)", (value, integer, expected) => {
    expect(outcome(() => limit("maxRetries", value, integer))).toBe(expected);
  });

  it("is 0, never -0, for either zero", () => {
    expect(Object.is(limit("timeout", -0, false), 0)).toBe(true);
  });
});

describe("the nearest known name", () => {
  it.each<[string, string, number]>([
    ["", "", 0],
    ["", "abc", 3],
    ["kitten", "sitting", 3],
    ["maxRetires", "maxRetries", 1],
    ["ab", "ba", 1],
    ["abcd", "badc", 2],
    ["ca", "abc", 3],
    ["MaxRetries", "maxretries", 0],
  ])("%j to %j is %d edits (insertions, deletions, substitutions, adjacent swaps; any case)", (a, b, d) => {
    expect(editDistance(a, b)).toBe(d);
    expect(editDistance(b, a)).toBe(d);
  });

  it("is 0 edits only from a name to itself, in any case, and never more than the longer name's length", () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 12 }), fc.string({ maxLength: 12 }), (a, b) => {
        const d = editDistance(a, b);
        expect(d).toBe(editDistance(b, a));
        expect(d === 0).toBe(a.toLowerCase() === b.toLowerCase());
        expect(d).toBeLessThanOrEqual(Math.max(a.length, b.length));
        expect(d).toBeGreaterThanOrEqual(Math.abs(a.length - b.length));
      }),
    );
  });

  it("counts one edit for one slip: a swap of two neighbours, a letter changed, added or dropped", () => {
    const word = fc.string({ minLength: 2, maxLength: 10, unit: fc.constantFrom("a", "b", "c", "d") });
    fc.assert(
      fc.property(word, fc.nat(), fc.constantFrom("x", "y"), (name, at, letter) => {
        const k = at % (name.length - 1);
        const swapped = name.slice(0, k) + name[k + 1] + name[k] + name.slice(k + 2);
        expect(editDistance(name, swapped)).toBe(name[k] === name[k + 1] ? 0 : 1);
        expect(editDistance(name, name.slice(0, k) + letter + name.slice(k + 1))).toBe(1);
        expect(editDistance(name, name.slice(0, k) + letter + name.slice(k))).toBe(1);
        expect(editDistance(name, name.slice(0, k) + name.slice(k + 1))).toBe(1);
      }),
    );
  });

  it("is the new name of a renamed option, when that is a known name", () => {
    expect(nearest("maxDelay", ["maxRetries", "maxElapsed"])).toBe("maxElapsed");
    // Renamed, but not to a name known here: the nearest by edits.
    expect(nearest("maxDelay", ["maxDelays", "other"])).toBe("maxDelays");
  });

  it("is a name within max(2, 40 % of the length) edits, the closest first", () => {
    const known = ["timeout", "maxRetries", "maxElapsed"];
    expect(nearest("maxRetrys", known)).toBe("maxRetries");
    expect(nearest("maxElapsd", known)).toBe("maxElapsed");
    // 10 letters: 4 edits are close enough, 5 are not.
    expect(nearest("abcdefghij", ["abcdevwxyz"])).toBe(undefined);
    expect(nearest("abcdefghij", ["abcdefwxyz"])).toBe("abcdefwxyz");
    // A short name: 2 edits still count.
    expect(nearest("ab", ["xy"])).toBe("xy");
    expect(nearest("abc", ["xyz"])).toBe(undefined);
  });

  it("else, for 3 letters or more, a name that contains it or that it contains, in any case", () => {
    expect(nearest("RETRIES", ["timeout", "maxRetries"])).toBe("maxRetries");
    expect(nearest("theTimeoutInMs", ["timeout", "maxRetries"])).toBe("timeout");
    expect(nearest("retr", ["timeout", "maxRetries"])).toBe("maxRetries");
    expect(nearest("tim", ["maxRetries", "timeout"])).toBe("timeout");
    expect(nearest("xy", ["axyzzzzzzz"])).toBe(undefined);
    expect(nearest("anything", [])).toBe(undefined);
  });

  it("is named in an unknown key's error, after the known keys", () => {
    expect(outcome(() => knownKeys("options", { maxRetrys: 3 }, ["maxRetries", "timeout"]))).toBe(
      "options.maxRetrys must be one of the known options (maxRetries, timeout); unknown option; got 3. Did you mean `maxRetries`?",
    );
    expect(outcome(() => knownKeys("options", { maxDelay: 3 }, ["maxElapsed"]))).toBe(
      "options.maxDelay must be one of the known options (maxElapsed); unknown option; got 3. `maxDelay` was renamed `maxElapsed`.",
    );
  });
});

describe("a computed delay, clamped", () => {
  it("is kept within [0, cap], 0 for any negative (never -0), and fails loudly for NaN or no number", () => {
    expect(clampDelay("backoff", 5, 10)).toBe(5);
    expect(clampDelay("backoff", 10, 10)).toBe(10);
    expect(clampDelay("backoff", 11, 10)).toBe(10);
    expect(clampDelay("backoff", -3, 10)).toBe(0);
    expect(clampDelay("backoff", -0, 10)).toBe(0);
    expect(outcome(() => clampDelay("backoff", Number.NaN, 10))).toBe("backoff produced NaN as a delay");
    expect(outcome(() => clampDelay("backoff", "5" as never, 10))).toBe(
      'backoff produced "5" as a delay; a delay must be a number of ms',
    );
  });
});
