/**
 * Durations as a config file or a flag may write them (`fromConfig`, the CLI): every form the parser
 * takes, with its value in ms, and the forms it refuses, naming the option and what is allowed.
 */
import { fromConfig, type RetryOptions } from "robustly";
import { describe, expect, it } from "vitest";

const timeoutOf = (text: string) => (fromConfig({ timeout: text }) as RetryOptions).timeout;

describe("a duration", () => {
  it.each([
    ["250", 250],
    ["1.25s", 1250],
    [".5s", 500],
    [".25s", 250],
    ["1e10", 1e10],
    ["5.", 5],
    ["1e+3", 1000],
    ["1E3ms", 1000],
    ["1e-1s", 100],
    ["2m", 120_000],
    [" 2m ", 120_000],
    ["1 s", 1000],
    ["1.5H", 5_400_000],
    ["200MS", 200],
  ])("%j is %d ms", (text, ms) => {
    expect(timeoutOf(text)).toBe(ms);
  });

  it("keeps a sign, for the options where a negative value means no limit", () => {
    expect((fromConfig({ maxRetries: 3, maxElapsed: "-1" }) as RetryOptions).maxElapsed).toBe(-1);
    expect((fromConfig({ maxElapsed: "-1.5s" }) as RetryOptions).maxElapsed).toBe(-1500);
  });

  it.each(["abc", "1.2.3s", "s", "", "1s2", "1 d", "--1", "1e", "e3"])(
    "%j is refused, naming the option and the forms allowed",
    (text) => {
      expect(() => timeoutOf(text)).toThrow(
        'timeout must be a number of ms or a duration with a unit, such as "1.5s", "200ms", "2m" or "1h"',
      );
    },
  );
});
