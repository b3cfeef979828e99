// Options an enemy writes: absurd counts, a random that is not one, an object or a list that contains itself.
import {
  attempts,
  backoff,
  bulkhead,
  chaos,
  circuitBreaker,
  delays,
  fromConfig,
  hedge,
  jitter,
  latencyTracker,
  OptionError,
  pipeline,
  retry,
  retryBudget,
  retryPipeline,
  robustFetch,
  steps,
  wrap,
} from "robustly";
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

/** The error `make` throws or its promise rejects with: an OptionError. */
async function optionFailure(make: () => unknown): Promise<OptionError> {
  let failure: unknown;
  try {
    await make();
  } catch (error) {
    failure = error;
  }
  expect(failure).toBeInstanceOf(OptionError);
  return failure as OptionError;
}

describe("a list that contains itself", () => {
  const loop: unknown[] = [];
  loop.push(loop);
  const bad = loop as never;
  const op = async () => 1;

  it("retryOn given a list that contains itself fails with an OptionError naming retryOn, not a stack overflow", async () => {
    const error = await optionFailure(() => retry(op, { retryOn: bad }));
    expect(error.option).toBe("retryOn[0]");
    expect(error.message).toBe(
      "retryOn[0] must be an Error class or an error name/code string; got [[Circular]]",
    );
  });

  it("maxRetries given a list that contains itself fails with an OptionError naming maxRetries, not a stack overflow", async () => {
    const error = await optionFailure(() => retry(op, { maxRetries: bad }));
    expect(error.option).toBe("maxRetries");
    expect(error.message).toBe(
      "maxRetries must be an integer (negative or Infinity = no limit); got [[Circular]]",
    );
  });

  it.each<[string, string, () => unknown]>([
    ["wrap", "retryOn[0]", () => wrap(op, { retryOn: bad })],
    ["wrap", "maxRetries", () => wrap(op, { maxRetries: bad })],
    ["steps.retry", "retryOn[0]", () => steps.retry({ retryOn: bad })],
    ["steps.retry", "maxRetries", () => steps.retry({ maxRetries: bad })],
    ["retryPipeline", "retryOn[0]", () => retryPipeline({ retryOn: bad })],
    ["retryPipeline", "maxRetries", () => retryPipeline({ maxRetries: bad })],
    ["retry", "timeout", () => retry(op, { timeout: bad })],
    ["retry", "backoff", () => retry(op, { backoff: bad })],
    ["retry", "rules[0]", () => retry(op, { rules: bad })],
    ["retry", "rules[0].when[0]", () => retry(op, { rules: [{ when: bad }] })],
    ["retry", "rules[0].maxRetries", () => retry(op, { rules: [{ when: "E", maxRetries: bad }] })],
    ["delays", "maxRetries", () => delays({ maxRetries: bad }, 3)],
    ["attempts", "maxRetries", () => attempts({ maxRetries: bad })],
    ["fromConfig", "retryOn", () => fromConfig({ retryOn: bad })],
    ["fromConfig", "maxRetries", () => fromConfig({ maxRetries: bad })],
    ["fromConfig", "timeout", () => fromConfig({ timeout: bad })],
    ["fromConfig", "rules[0]", () => fromConfig({ rules: bad })],
    ["fromConfig", "rules[0].when", () => fromConfig({ rules: [{ when: bad }] })],
    ["fromConfig", "backoff.base", () => fromConfig({ backoff: { name: "exponential", base: bad } })],
    [
      "circuitBreaker",
      "circuitBreaker: consecutiveFailures",
      () => circuitBreaker({ consecutiveFailures: bad }),
    ],
    ["retryBudget", "retryBudget: ratio", () => retryBudget({ ratio: bad })],
    ["bulkhead", "bulkhead: limit", () => bulkhead({ limit: bad })],
    ["hedge", "hedge: delay", () => hedge(op, { delay: bad })],
    ["chaos", "chaos: fault", () => chaos(op, { fault: bad })],
    ["backoff.exponential", "backoff.exponential: base", () => backoff.exponential({ base: bad })],
    ["backoff.polynomial", "backoff.polynomial: exponents[0]", () => backoff.polynomial({ exponents: bad })],
    ["jitter.equal", "jitter.equal: mode", () => jitter.equal({ mode: bad })],
    ["steps.timeout", "steps.timeout: ms", () => steps.timeout({ ms: bad })],
    ["pipeline", "pipeline: steps[0]", () => pipeline(bad)],
    ["latencyTracker", "latencyTracker: capacity", () => latencyTracker({ capacity: bad })],
    [
      "robustFetch",
      "retryOnStatus[0]",
      () => robustFetch("http://localhost/", undefined, { retryOnStatus: bad }),
    ],
    ["supervise", "supervise: worker[0]", () => supervise({ worker: bad })],
  ])(
    "%s given a list that contains itself as %s fails with an OptionError naming it, not a stack overflow",
    async (_where, option, make) => {
      const error = await optionFailure(make);
      expect(error.option).toBe(option);
      expect(error.message).toMatch(/; got \[\[Circular\]\]$/);
    },
  );

  it("an option given an object that contains itself describes the loop as [Circular]", async () => {
    const self: Record<string, unknown> = { a: 1 };
    self.self = self;
    const error = await optionFailure(() => retry(op, { maxRetries: self as never }));
    expect(error.message).toBe(
      'maxRetries must be an integer (negative or Infinity = no limit); got {"a":1,"self":[Circular]}',
    );
  });

  it("a value met twice but not inside itself is described both times, not as [Circular]", async () => {
    const shared = { a: 1 };
    const error = await optionFailure(() => retry(op, { maxRetries: [shared, [shared]] as never }));
    expect(error.message).toMatch(/; got \[\{"a":1\}, \[\{"a":1\}\]\]$/);
  });

  it("a nested list in retryOn is refused as before, naming retryOn[0]", async () => {
    const error = await optionFailure(() => retry(op, { retryOn: [[TypeError, "ECONNRESET"]] as never }));
    expect(error.message).toBe(
      'retryOn[0] must be an Error class or an error name/code string; got [function TypeError, "ECONNRESET"]',
    );
  });
});

describe("a value that cannot be looked into", () => {
  it("a revoked Proxy given as maxRetries fails with an OptionError naming maxRetries, not the Proxy's TypeError", async () => {
    for (const target of [{}, []]) {
      const { proxy, revoke } = Proxy.revocable(target, {});
      revoke();
      const error = await optionFailure(() => retry(async () => 1, { maxRetries: proxy as never }));
      expect(error.option).toBe("maxRetries");
      expect(error.message).toMatch(/^maxRetries must be an integer .*; got \S/);
    }
  });
});

describe("a huge or deeply nested value in an option", () => {
  const op = async () => 1;

  it("a 1e6-element list given as maxRetries fails with a message of bounded length", async () => {
    const error = await optionFailure(() => retry(op, { maxRetries: new Array(1e6).fill(0) as never }));
    expect(error.message.length).toBeLessThan(200);
    expect(error.message).toMatch(/; got \[0, 0, 0, .*\.\.\.$/);
  });

  it("a list nested 10,000 deep given as maxRetries fails with an OptionError, not a stack overflow", async () => {
    let deep: unknown = [];
    for (let i = 0; i < 10_000; i++) deep = [deep];
    const error = await optionFailure(() => retry(op, { maxRetries: deep as never }));
    expect(error.message.length).toBeLessThan(200);
    expect(error.message).toMatch(/; got \[\[\[\[.*\.\.\.$/);
  });

  it("an object nested 10,000 deep given as maxRetries is described by its start, in a message of bounded length", async () => {
    let deep: unknown = {};
    for (let i = 0; i < 10_000; i++) deep = { a: deep };
    const error = await optionFailure(() => retry(op, { maxRetries: deep as never }));
    expect(error.message.length).toBeLessThan(200);
    expect(error.message).toMatch(/; got \{"a":\{"a":\{"a":.*\.\.\.$/);
  });

  it("a string of a million characters, a bigint of 5,000 digits or a long symbol given as maxRetries is cut, not written out", async () => {
    for (const huge of ["x".repeat(1e6), 10n ** 5000n, Symbol("s".repeat(1e5))]) {
      const error = await optionFailure(() => retry(op, { maxRetries: huge as never }));
      expect(error.option).toBe("maxRetries");
      expect(error.message.length).toBeLessThan(200);
      expect(error.message).toMatch(/; got ("x{10}|10{10}|Symbol\(s{10}).*\.\.\.$/);
    }
  });

  it("an object of 100,000 keys in a list given as maxRetries is cut, not written out", async () => {
    const wide: Record<string, number> = {};
    for (let i = 0; i < 100_000; i++) wide[`k${i}`] = i;
    const error = await optionFailure(() => retry(op, { maxRetries: [wide] as never }));
    expect(error.message.length).toBeLessThan(200);
    expect(error.message).toMatch(/; got \[\{"k0":0,"k1":1,.*\.\.\.$/);
  });
});
