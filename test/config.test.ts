import fc from "fast-check";
import { backoff, delays, fromConfig, jitter, OptionError, parseTime, retry } from "robustly";
import { VirtualClock } from "robustly/testing";
import { describe, expect, it } from "vitest";

function optionError(fn: () => unknown): OptionError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(OptionError);
    return error as OptionError;
  }
  throw new Error("expected an OptionError");
}

describe("fromConfig: policies as JSON", () => {
  it("reads a whole policy, with times in units, strategies by name and rules by error name or code", () => {
    const options = fromConfig(`{
      "timeout": "2s",
      "maxRetries": 5,
      "maxElapsed": "1m",
      "backoff": { "name": "exponential", "base": "100ms", "max": "10s", "multiplier": 3 },
      "jitter": "none",
      "scale": 2,
      "retryOn": ["ECONNRESET", "TimeoutError"],
      "rules": [{ "when": "EBUSY", "maxRetries": 1, "backoff": "none" }]
    }`);
    expect(options.timeout).toBe(2000);
    expect(options.maxElapsed).toBe(60_000);
    expect(options.retryOn).toEqual(["ECONNRESET", "TimeoutError"]);
    expect(delays(options, 4)).toEqual([200, 600, 1800, 5400]);
    expect(
      delays(
        {
          backoff: backoff.exponential({ base: 100, max: 10_000, multiplier: 3 }),
          jitter: jitter.none(),
          scale: 2,
        },
        4,
      ),
    ).toEqual(delays(options, 4));
    expect(options.rules?.[0]?.when).toBe("EBUSY");
  });

  it("gives every strategy of the core a JSON form equal to the strategy built in code", () => {
    const same: [unknown, ReturnType<typeof backoff.exponential>][] = [
      [
        { name: "linear", base: "1s", interval: "500ms", max: "3s" },
        backoff.linear({ base: 1000, interval: 500, max: 3000 }),
      ],
      [
        { name: "fibonacci", base: 0, step: "1s", max: "Infinity" },
        backoff.fibonacci({ base: 0, step: 1000 }),
      ],
      [
        { name: "polynomial", base: 0, exponents: [2, 3], max: "Infinity" },
        backoff.polynomial({ base: 0, exponents: [2, 3] }),
      ],
      [{ name: "random", base: "1s", max: "2s" }, backoff.random({ base: 1000, max: 2000 })],
      [{ name: "constant", base: "250ms" }, backoff.constant({ base: 250 })],
      ["none", backoff.none()],
      [
        { name: "slotted", slot: "10ms", ceiling: 5, stayAtCeiling: true },
        backoff.slotted({ slot: 10, ceiling: 5, stayAtCeiling: true }),
      ],
    ];
    for (const [config, built] of same) {
      const seed = () => {
        let s = 0.1;
        return () => (s = ((s * 9301 + 49297) % 233280) / 233280);
      };
      expect(delays({ ...fromConfig({ backoff: config, jitter: "none" }), random: seed() }, 6)).toEqual(
        delays({ backoff: built, jitter: jitter.none(), random: seed() }, 6),
      );
    }
    const jitters: [unknown, ReturnType<typeof jitter.full>][] = [
      ["full", jitter.full()],
      [{ name: "full", mode: "choice" }, jitter.full({ mode: "choice" })],
      [{ name: "equal" }, jitter.equal()],
      ["decorrelated", jitter.decorrelated()],
      [
        { name: "decorrelatedAws", base: "100ms", max: "5s" },
        jitter.decorrelatedAws({ base: 100, max: 5000 }),
      ],
      [
        { name: "decorrelatedPolly", base: "128ms", max: "30s", multiplier: 3 },
        jitter.decorrelatedPolly({ base: 128, max: 30_000, multiplier: 3 }),
      ],
      [{ name: "normal", sigma: 0.2 }, jitter.normal({ sigma: 0.2 })],
      [{ name: "normal", stddev: "100ms" }, jitter.normal({ stddev: 100 })],
      [
        { name: "proportional", spread: 0.3, maxSpread: "2m" },
        jitter.proportional({ spread: 0.3, maxSpread: 120_000 }),
      ],
    ];
    for (const [config, built] of jitters) {
      const random = () => 0.37;
      expect(delays({ ...fromConfig({ jitter: config }), random }, 6)).toEqual(
        delays({ jitter: built, random }, 6),
      );
    }
  });

  it("retries by error name or code, as the rules say", async () => {
    const clock = new VirtualClock();
    let calls = 0;
    const options = fromConfig({ retryOn: "ECONNRESET", maxRetries: 3, backoff: "none" });
    const result = retry(
      () => {
        calls += 1;
        throw Object.assign(new Error("reset"), { code: calls < 3 ? "ECONNRESET" : "EACCES" });
      },
      { ...options, clock },
    ).catch((e: unknown) => (e as { code: string }).code);
    await clock.runAll();
    expect(await result).toBe("EACCES");
    expect(calls).toBe(3);
  });

  it("names the path, the value and what is allowed for every mistake", () => {
    const cases: [unknown, string, string][] = [
      ["{ not json", "config", "valid JSON"],
      [[], "config", "a JSON object"],
      [{ maxRetrys: 3 }, "maxRetrys", "one of the known keys"],
      [{ timeout: "2 seconds" }, "timeout", 'a duration with a unit, such as "1.5s"'],
      [{ backoff: "exponentiel" }, "backoff.name", "one of exponential, linear, fibonacci"],
      [{ backoff: { name: "exponential", base: -1 } }, "backoff.base", "a finite number >= 0"],
      [{ backoff: { name: "exponential", multiplier: 0.5 } }, "backoff.multiplier", "a finite number >= 1"],
      [{ backoff: { name: "exponential", bass: 1 } }, "backoff.bass", "one of the known options"],
      [
        { jitter: { name: "normal", sigma: 0.1, stddev: 5 } },
        "jitter.stddev",
        "left out when sigma is given",
      ],
      [{ maxRetries: 1.5 }, "maxRetries", "an integer"],
      [{ scale: 0 }, "scale", "a finite number > 0"],
      [{ retryOn: [] }, "retryOn", "an error name or code"],
      [{ rules: [{ maxRetries: 1 }] }, "rules[0].when", "required"],
      [
        { rules: [{ when: "E", backoff: { name: "linear", interval: -5 } }] },
        "rules[0].backoff.interval",
        ">= 0",
      ],
      [{ rules: [{ when: "E", scale: -1 }] }, "rules[0].scale", "> 0"],
    ];
    for (const [config, path, allowed] of cases) {
      const error = optionError(() => fromConfig(config as never));
      expect(error.option, JSON.stringify(config)).toBe(path);
      expect(error.message, JSON.stringify(config)).toContain(allowed);
      expect(error.message.startsWith(`${path} must be `)).toBe(true);
    }
  });
});

describe("parseTime", () => {
  it("reads ms, s, m and h, and bare numbers as ms", () => {
    expect([
      parseTime("t", 5),
      parseTime("t", "5"),
      parseTime("t", "1.5s"),
      parseTime("t", "200ms"),
      parseTime("t", "2m"),
      parseTime("t", "1h"),
      parseTime("t", "-1"),
    ]).toEqual([5, 5, 1500, 200, 120_000, 3_600_000, -1]);
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 10_000 }),
        fc.constantFrom(["ms", 1], ["s", 1000], ["m", 60_000], ["h", 3_600_000]),
        (n, [unit, ms]) => {
          expect(parseTime("t", `${n}${unit}`)).toBe(n * (ms as number));
        },
      ),
    );
  });
});
