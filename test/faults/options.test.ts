// Options an enemy writes: absurd counts, a random that is not one, an object that contains itself.
import { backoff, jitter, OptionError, retry, wrap } from "robustly";
import { inProcessWorker, supervise } from "robustly/supervisor";
import { describe, expect, it } from "vitest";
import { drive, VirtualClock } from "../support/drive.js";

const worker = inProcessWorker(() => (n: number) => n);

function optionError(make: () => unknown): OptionError {
  try {
    make();
  } catch (error) {
    expect(error).toBeInstanceOf(OptionError);
    return error as OptionError;
  }
  throw new Error("no OptionError");
}

describe("counts beyond any use", () => {
  it.each([
    ["instances", { instances: 1e308 }],
    ["instances", { instances: 1e7 }],
    ["concurrency", { concurrency: 1e12 }],
    ["poisonAfter", { poisonAfter: 1e6 }],
  ])("supervise: %s %j fails at once with an OptionError naming its maximum", (option, options) => {
    const error = optionError(() => supervise({ worker, ...options } as never));
    expect(error.option).toBe(`supervise: ${option}`);
    expect(error.message).toMatch(/an integer in \[1, /);
  });
});

describe("a random that is not one", () => {
  it.each([
    ["7", () => 7],
    ["-1", () => -1],
    ["NaN", () => Number.NaN],
    ["1", () => 1],
    ["a string", () => "0.5" as unknown as number],
  ])(
    "random returning %s: the call rejects with an OptionError naming random, not with NaN later",
    async (_what, random) => {
      const clock = new VirtualClock();
      const result = await drive(
        clock,
        retry(
          () => {
            throw new Error("down");
          },
          { clock, random, maxRetries: 2 },
        ),
      );
      expect(result.ok).toBe(false);
      const error = (result as { error: unknown }).error;
      expect(error).toBeInstanceOf(OptionError);
      expect((error as OptionError).option).toBe("random");
      expect((error as OptionError).message).toMatch(
        /random must be a function returning numbers in \[0, 1\)/,
      );
    },
  );

  it("a random returning 7 under equal jitter in choice mode is caught too", async () => {
    const clock = new VirtualClock();
    const result = await drive(
      clock,
      retry(
        () => {
          throw new Error("down");
        },
        { clock, random: () => 7, jitter: jitter.equal({ mode: "choice" }), backoff: backoff.constant() },
      ),
    );
    expect((result as { error: unknown }).error).toBeInstanceOf(OptionError);
  });
});

describe("an options object that contains itself", () => {
  it("as an unknown key: an OptionError, no stack overflow", () => {
    const options: Record<string, unknown> = { maxRetries: 3 };
    options.self = options;
    const error = optionError(() => wrap(async () => 1, options));
    expect(error.option).toBe("options.self");
  });

  it("as its own hedge, chaos, rules or backoff: an OptionError each, no stack overflow", () => {
    for (const key of ["hedge", "chaos", "backoff", "jitter", "budget", "breaker"]) {
      const options: Record<string, unknown> = { maxRetries: 3 };
      options[key] = options;
      const error = optionError(() => wrap(async () => 1, options));
      expect(
        error.option.startsWith(key) || error.option.startsWith(`${key}.`) || error.option.includes(key),
      ).toBe(true);
    }
    const ruled: Record<string, unknown> = { maxRetries: 3 };
    ruled.rules = [ruled];
    expect(() => wrap(async () => 1, ruled)).toThrow(OptionError);
  });
});
