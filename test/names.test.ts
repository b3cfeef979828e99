// One vocabulary: renamed options and flags fail at once naming the new name, a slip names the nearest
// known one, and durations are read by one parser in config files and on the command line.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { duration, parseCommand, UsageError } from "../src/cli/args.js";
import { POLICY_FLAGS } from "../src/cli/policy-flags.js";
import { parseTime } from "../src/config/from-config.js";
import { parseDuration } from "../src/core/duration.js";
import { editDistance, nearest } from "../src/core/validate.js";

function usage(args: string[]): string {
  try {
    parseCommand("run", { args, options: POLICY_FLAGS, allowPositionals: true });
  } catch (error) {
    expect(error).toBeInstanceOf(UsageError);
    return (error as Error).message;
  }
  throw new Error("no UsageError");
}

describe("flags", () => {
  it.each([
    [["--max-delay", "1s"], "unknown option --max-delay: `--max-delay` was renamed `--max-elapsed`."],
    [["--factor", "0.3"], "unknown option --factor: `--factor` was renamed `--spread`."],
    [["--max-delta", "1s"], "unknown option --max-delta: `--max-delta` was renamed `--max-spread`."],
    [["--max-retry", "3"], "unknown option --max-retry: did you mean `--max-retries`?"],
    [["--timout", "3"], "unknown option --timout: did you mean `--timeout`?"],
    [["--jiter", "full"], "unknown option --jiter: did you mean `--jitter`?"],
  ])("%j fails naming the flag meant", (args, said) => {
    expect(usage(args)).toBe(`${said}\n\nRun robustly run --help for the options.`);
  });

  it("a flag like no other gets no guess, and a word on how to pass it as an argument", () => {
    expect(usage(["--xylophone"])).toMatch(/^unknown option --xylophone \(to pass an argument/);
  });
});

describe("the nearest name", () => {
  it("edit distance is a metric on names: zero only for the same name (any case), symmetric", () => {
    const name = fc.stringMatching(/^[a-zA-Z]{0,12}$/);
    fc.assert(
      fc.property(name, name, (a, b) => {
        expect(editDistance(a, b)).toBe(editDistance(b, a));
        expect(editDistance(a, b) === 0).toBe(a.toLowerCase() === b.toLowerCase());
        expect(editDistance(a, b)).toBeLessThanOrEqual(Math.max(a.length, b.length));
      }),
    );
  });

  it("a known name with one letter dropped, doubled or swapped is found again", () => {
    const known = ["maxRetries", "maxElapsed", "timeout", "backoff", "jitter", "scale", "retryOn"];
    fc.assert(
      fc.property(
        fc.constantFrom(...known),
        fc.nat(),
        fc.constantFrom("drop", "double", "swap"),
        (k, at, how) => {
          const i = at % (k.length - 1);
          const slip =
            how === "drop"
              ? k.slice(0, i) + k.slice(i + 1)
              : how === "double"
                ? k.slice(0, i) + k.charAt(i) + k.slice(i)
                : k.slice(0, i) + k.charAt(i + 1) + k.charAt(i) + k.slice(i + 2);
          if (slip !== k) expect(nearest(slip, known)).toBe(k);
        },
      ),
    );
  });
});

describe("durations", () => {
  it.each([
    ["1.5s", 1500],
    ["200ms", 200],
    ["2m", 120_000],
    ["1h", 3_600_000],
    ["250", 250],
    [" 3 s ", 3000],
    ["-1", -1],
    ["1e3ms", 1000],
  ])("%j is %d ms in config files and on the command line alike", (text, ms) => {
    expect(parseDuration(text)).toBe(ms);
    expect(parseTime("timeout", text)).toBe(ms);
    expect(duration("timeout", text)).toBe(ms);
  });

  it.each(["", "s", "2 seconds", "1.5.5s", "abc", "1d", "NaN"])("%j is refused by both", (text) => {
    expect(parseDuration(text)).toBeUndefined();
    expect(() => parseTime("timeout", text)).toThrow(/timeout must be a number of ms or a duration/);
    expect(() => duration("timeout", text)).toThrow(/--timeout must be a duration/);
  });

  it('"Infinity" is no duration, but stands for one in JSON, where there is no Infinity (an uncapped max)', () => {
    expect(parseDuration("Infinity")).toBeUndefined();
    expect(parseTime("max", "Infinity")).toBe(Number.POSITIVE_INFINITY);
    expect(() => duration("timeout", "Infinity")).toThrow(/--timeout must be a duration/);
  });

  it("any number of ms written with any unit reads back as that many ms", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 10_000_000 }),
        fc.constantFrom("ms", "s", "m", "h"),
        (n, unit) => {
          const per = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[unit];
          expect(parseDuration(`${n}${unit}`)).toBe(n * per);
        },
      ),
    );
  });
});
