import { type AttemptContext, backoff, jitter, OptionError, retry, steps } from "robustly";
import { type Random, seededRandom } from "robustly/testing";
import { describe, expect, it } from "vitest";
import { type ChaosEvent, type ChaosOptions, chaos } from "../src/chaos/index.js";
import { abortListeners, drive, VirtualClock } from "./support/drive.js";

/** Six standard deviations of a binomial count: a correct rate fails this about once in 500 million runs. */
function sixSigma(n: number, p: number): number {
  return 6 * Math.sqrt(n * p * (1 - p));
}

class Injected extends Error {}

/** A Random that counts its draws. */
function counting(random: Random): Random & { draws: number } {
  const counted = Object.assign(
    () => {
      counted.draws += 1;
      return random();
    },
    { draws: 0 },
  );
  return counted;
}

describe("chaos injects at the configured rates", () => {
  it.each([0, 0.001, 0.05, 0.3, 0.5, 0.97, 1])("faults at rate %s", async (rate) => {
    const n = 20_000;
    let calls = 0;
    const error = new Injected("injected");
    const flaky = chaos(
      async () => {
        calls += 1;
        return "real";
      },
      { fault: { rate, error }, random: seededRandom(Math.round(rate * 1000)) },
    );
    const outcomes = await Promise.allSettled(Array.from({ length: n }, () => flaky()));
    const faults = outcomes.filter((o) => o.status === "rejected" && o.reason === error).length;
    expect(Math.abs(faults - n * rate)).toBeLessThanOrEqual(sixSigma(n, rate));
    expect(flaky.metrics()).toEqual({ calls: n, latencies: 0, faults, results: 0 });
    // Every call not faulted reached the operation, and only those.
    expect(calls).toBe(n - faults);
  });

  it("decides each kind independently, each at its own rate", async () => {
    const n = 20_000;
    const clock = new VirtualClock();
    const delayed = new Set<number>();
    let calling = -1;
    const flaky = chaos(async (i: number) => `real ${i}`, {
      latency: { rate: 0.2, ms: 10 },
      fault: { rate: 0.3, error: () => new Injected("f") },
      result: { rate: 0.4, value: "injected" },
      random: seededRandom(99),
      clock,
      // Latency is reported as the call is made, so `calling` names the call.
      onInject: (event) => {
        if (event.kind === "latency") delayed.add(calling);
      },
    });
    const calls = Array.from({ length: n }, (_, i) => {
      calling = i;
      return flaky(i);
    });
    const settled = Promise.allSettled(calls);
    await clock.runAll();
    const outcomes = await settled;
    const { latencies, faults, results } = flaky.metrics();
    expect(delayed.size).toBe(latencies);
    expect(Math.abs(latencies - n * 0.2)).toBeLessThanOrEqual(sixSigma(n, 0.2));
    expect(Math.abs(faults - n * 0.3)).toBeLessThanOrEqual(sixSigma(n, 0.3));
    // A fault takes precedence: results come in 0.4 of the calls not faulted.
    expect(Math.abs(results - n * 0.7 * 0.4)).toBeLessThanOrEqual(sixSigma(n, 0.28));
    expect(outcomes.filter((o) => o.status === "rejected")).toHaveLength(faults);
    expect(outcomes.filter((o) => o.status === "fulfilled" && o.value === "injected")).toHaveLength(results);
    // Independence: among the delayed calls too, faults come at their own rate.
    const delayedFaults = [...delayed].filter((i) => outcomes[i]?.status === "rejected").length;
    expect(Math.abs(delayedFaults - delayed.size * 0.3)).toBeLessThanOrEqual(sixSigma(delayed.size, 0.3));
  });
});

describe("chaos is reproducible", () => {
  const options = (seed: number): ChaosOptions<string> => ({
    fault: { rate: 0.3, error: () => new Injected("f") },
    result: { rate: 0.2, value: "injected" },
    random: seededRandom(seed),
  });
  const sequence = async (seed: number) => {
    const flaky = chaos(async () => "real", options(seed));
    const out: string[] = [];
    for (let i = 0; i < 200; i++) out.push(await flaky().catch(() => "fault"));
    return out;
  };

  it("the same seed injects the same sequence; another seed another", async () => {
    const first = await sequence(7);
    expect(await sequence(7)).toEqual(first);
    expect(await sequence(8)).not.toEqual(first);
    expect(new Set(first)).toEqual(new Set(["real", "fault", "injected"]));
  });

  it("draws once per configured kind at each call, whatever the outcome, so timing cannot shift the sequence", async () => {
    const random = counting(seededRandom(1));
    const clock = new VirtualClock();
    const flaky = chaos(async () => 1, {
      latency: { rate: 0.5, ms: 100 },
      fault: { rate: 0.5, error: new Injected("f") },
      random,
      clock,
    });
    const calls = Array.from({ length: 10 }, () => flaky().catch(() => 0));
    expect(random.draws).toBe(20);
    await drive(clock, Promise.all(calls));
    expect(random.draws).toBe(20);
  });
});

describe("chaos latency", () => {
  it("waits on the clock before calling the operation", async () => {
    const clock = new VirtualClock();
    const calledAt: number[] = [];
    const slow = chaos(
      async () => {
        calledAt.push(clock.now());
        return "late";
      },
      { latency: { rate: 1, ms: 250 }, clock },
    );
    const result = await drive(clock, slow());
    expect(result).toEqual({ ok: true, value: "late" });
    expect(calledAt).toEqual([250]);
    expect(slow.metrics()).toEqual({ calls: 1, latencies: 1, faults: 0, results: 0 });
  });

  it("draws the wait from a function of the chaos random, and reports it", async () => {
    const clock = new VirtualClock();
    const events: ChaosEvent<number>[] = [];
    const slow = chaos(async () => clock.now(), {
      latency: { rate: 1, ms: (random) => 100 + Math.floor(random() * 100) },
      random: seededRandom(3),
      clock,
      onInject: (event) => events.push(event),
    });
    const result = await drive(clock, slow());
    expect(result.ok).toBe(true);
    expect(events).toEqual([{ kind: "latency", ms: result.ok ? result.value : Number.NaN }]);
    const ms = result.ok ? result.value : 0;
    expect(ms).toBeGreaterThanOrEqual(100);
    expect(ms).toBeLessThan(200);
  });

  it("is aborted by the signal of the first argument, leaving no timer and no listener", async () => {
    const clock = new VirtualClock();
    const controller = new AbortController();
    let calls = 0;
    const slow = chaos(
      async (_context: { signal: AbortSignal }) => {
        calls += 1;
        return 1;
      },
      { latency: { rate: 1, ms: 1000 }, clock },
    );
    const call = slow({ signal: controller.signal });
    clock.setTimer(300, () => controller.abort(new Error("stop")));
    const result = await drive(clock, call);
    expect(result).toEqual({ ok: false, error: controller.signal.reason });
    expect(clock.now()).toBe(300);
    expect(clock.pending).toBe(0);
    expect(abortListeners(controller.signal)).toBe(0);
    expect(calls).toBe(0);
  });

  it("is aborted by the signal option when the call carries none", async () => {
    const clock = new VirtualClock();
    const reason = new Error("stopped");
    const slow = chaos(async () => 1, {
      latency: { rate: 1, ms: 1000 },
      clock,
      signal: AbortSignal.abort(reason),
    });
    await expect(slow()).rejects.toBe(reason);
    expect(clock.pending).toBe(0);
  });
});

describe("chaos results and faults", () => {
  it("returns the injected value instead of calling the operation", async () => {
    let calls = 0;
    let made = 0;
    const fake = chaos(
      async (id: string) => {
        calls += 1;
        return { id, real: true };
      },
      {
        result: {
          rate: 1,
          value: () => {
            made += 1;
            return { id: "fake", real: false };
          },
        },
      },
    );
    expect(await fake("1")).toEqual({ id: "fake", real: false });
    expect(await fake("2")).toEqual({ id: "fake", real: false });
    expect([calls, made]).toEqual([0, 2]);
    expect(fake.metrics()).toEqual({ calls: 2, latencies: 0, faults: 0, results: 2 });
    fake.reset();
    expect(fake.metrics()).toEqual({ calls: 0, latencies: 0, faults: 0, results: 0 });
  });

  it("throws a fresh error from a factory, or the same error object", async () => {
    const same = new Injected("same");
    const fixed = chaos(() => 1, { fault: { rate: 1, error: same } });
    await expect(fixed()).rejects.toBe(same);
    const fresh = chaos(() => 1, { fault: { rate: 1, error: () => new Injected("fresh") } });
    const a = await fresh().catch((error: unknown) => error);
    const b = await fresh().catch((error: unknown) => error);
    expect(a).toBeInstanceOf(Injected);
    expect(a).not.toBe(b);
  });

  it("passes arguments and the operation's own outcome through untouched", async () => {
    const own = new Error("own");
    const passthrough = chaos(
      (a: number, b: number) => {
        if (a < 0) throw own;
        return a + b;
      },
      { fault: { rate: 0, error: new Injected("never") } },
    );
    expect(await passthrough(2, 3)).toBe(5);
    await expect(passthrough(-1, 0)).rejects.toBe(own);
  });
});

describe("chaos when disabled", () => {
  it("does nothing, and draws nothing, when enabled is false", async () => {
    const random = counting(seededRandom(5));
    const off = chaos(async () => "real", {
      fault: { rate: 1, error: new Injected("f") },
      latency: { rate: 1, ms: 1000 },
      result: { rate: 1, value: "fake" },
      enabled: false,
      random,
    });
    for (let i = 0; i < 10; i++) expect(await off()).toBe("real");
    expect(random.draws).toBe(0);
    expect(off.metrics()).toEqual({ calls: 10, latencies: 0, faults: 0, results: 0 });
  });

  it("asks an enabled function at each call", async () => {
    let on = false;
    const toggled = chaos(async () => "real", { result: { rate: 1, value: "fake" }, enabled: () => on });
    expect(await toggled()).toBe("real");
    on = true;
    expect(await toggled()).toBe("fake");
    on = false;
    expect(await toggled()).toBe("real");
  });
});

describe("chaos with retry", () => {
  it("a 30% fault rate is absorbed by retry, which makes one attempt per injected fault, plus one", async () => {
    const clock = new VirtualClock();
    const attemptsSeen: number[] = [];
    const flaky = chaos(
      async (context: AttemptContext) => {
        attemptsSeen.push(context.attempt);
        return `ok after ${context.retries} retries`;
      },
      { fault: { rate: 0.3, error: () => new Injected("injected") }, random: seededRandom(2025) },
    );
    const policy = {
      clock,
      maxRetries: 30,
      backoff: backoff.exponential({ base: 10, max: 1000 }),
      jitter: jitter.full(),
      random: seededRandom(1),
    };
    let faultsBefore = 0;
    for (let call = 0; call < 200; call++) {
      const result = await drive(clock, retry(flaky, policy));
      expect(result.ok).toBe(true);
      const { calls, faults } = flaky.metrics();
      const faultsThisCall = faults - faultsBefore;
      faultsBefore = faults;
      // The operation ran once, on the attempt after the last injected fault.
      expect(attemptsSeen.at(-1)).toBe(faultsThisCall + 1);
      expect(result.ok && result.value).toBe(`ok after ${faultsThisCall} retries`);
      expect(calls).toBe(faults + call + 1);
    }
    const { calls, faults } = flaky.metrics();
    expect(Math.abs(faults - calls * 0.3)).toBeLessThanOrEqual(sixSigma(calls, 0.3));
    expect(attemptsSeen).toHaveLength(200);
  });
});

describe("chaos options", () => {
  const op = async () => 1;
  it.each([
    [
      { fault: { rate: 1.5, error: new Error("x") } },
      "chaos: fault.rate must be a finite number in [0, 1]; got 1.5",
    ],
    [
      { fault: { rate: -0.1, error: new Error("x") } },
      "chaos: fault.rate must be a finite number in [0, 1]; got -0.1",
    ],
    [
      { fault: { rate: Number.NaN, error: new Error("x") } },
      "chaos: fault.rate must be a finite number in [0, 1]; got NaN",
    ],
    [
      { fault: { rate: 0.5 } },
      "chaos: fault.error must be an Error or a function returning one; got undefined",
    ],
    [
      { fault: { rate: 0.5, error: "boom" } },
      'chaos: fault.error must be an Error or a function returning one; got "boom"',
    ],
    [{ fault: 0.5 }, "chaos: fault must be an object { rate, error }; got 0.5"],
    [{ latency: { rate: 0.5, ms: -1 } }, "chaos: latency.ms must be a finite number >= 0; got -1"],
    [{ latency: { rate: 0.5 } }, "chaos: latency.ms must be a finite number >= 0; got undefined"],
    [{ latency: { ms: 10 } }, "chaos: latency.rate must be a finite number in [0, 1]; got undefined"],
    [{ latency: { rate: 0.5, ms: 10, jitter: 2 } }, "chaos: latency.jitter must be one of the known options"],
    [{ result: { rate: 2, value: 1 } }, "chaos: result.rate must be a finite number in [0, 1]; got 2"],
    [{ enabled: "yes" }, 'chaos: enabled must be true, false or a function returning one; got "yes"'],
    [{ random: 0.5 }, "chaos: random must be a function; got 0.5"],
    [{ clock: {} }, "chaos: clock must be a Clock"],
    [{ signal: {} }, "chaos: signal must be an AbortSignal"],
    [{ onInject: 1 }, "chaos: onInject must be a function; got 1"],
    [{ faults: {} }, "chaos.faults must be one of the known options"],
  ])("refuses %j at once", (options, message) => {
    expect(() => chaos(op, options as unknown as ChaosOptions<number>)).toThrow(OptionError);
    expect(() => chaos(op, options as unknown as ChaosOptions<number>)).toThrow(message);
  });

  it("steps.chaos refuses a draw of its own random outside [0, 1) as chaos() does, rather than never injecting", async () => {
    const broken = () => 2;
    const wrapped = chaos(op, { fault: { rate: 0.5, error: new Error("injected") }, random: broken });
    await expect(wrapped()).rejects.toThrow(
      "chaos: random must be a function returning numbers in [0, 1); got 2",
    );
    const step = steps.chaos({ fault: { rate: 0.5, error: new Error("injected") }, random: broken });
    const clock = new VirtualClock();
    const outcome = await drive(clock, retry(op, { chaos: step, clock, maxRetries: 0 }));
    expect(outcome.ok).toBe(false);
    expect(String((outcome as { error: unknown }).error)).toContain(
      "random must be a function returning numbers in [0, 1); got 2",
    );
  });

  it("refuses an operation that is not a function", () => {
    expect(() => chaos(3 as never, {})).toThrow("chaos: operation must be a function; got 3");
  });

  it("fails a call whose latency function returns NaN, loudly", async () => {
    const bad = chaos(op, { latency: { rate: 1, ms: () => Number.NaN } });
    await expect(bad()).rejects.toThrow("chaos: latency.ms produced NaN as a delay");
  });

  it("keeps the operation's argument types", () => {
    const typed = chaos(async (a: number, b: string) => `${a}${b}`, {});
    const value: Promise<string> = typed(1, "x");
    void value.then(() => {});
    // @ts-expect-error the arguments are checked
    void typed("x", 1).catch(() => {});
  });
});
