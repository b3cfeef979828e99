// hedge and chaos through retry's options (and wrap's).
import { backoff, jitter, OptionError, pipeline, retry, seededRandom, steps, wrap } from "robustly";
import { VirtualClock } from "robustly/testing";
import { describe, expect, it } from "vitest";
import { drive } from "./support/drive.js";

describe("retry's hedge option", () => {
  it("hedges each attempt: a slow attempt gets a second one after the delay, and the first is aborted", async () => {
    const clock = new VirtualClock();
    const started: number[] = [];
    const aborted: number[] = [];
    let calls = 0;
    const result = await drive(
      clock,
      retry(
        ({ signal }) => {
          const n = ++calls;
          started.push(clock.now());
          return new Promise<string>((resolve) => {
            const cancel = clock.setTimer(n === 1 ? 5000 : 100, () => resolve(`call ${n}`));
            signal.addEventListener("abort", () => {
              cancel();
              aborted.push(n);
            });
          });
        },
        { clock, hedge: steps.hedge({ delay: 200 }) },
      ),
    );
    expect(result).toEqual({ ok: true, value: "call 2" });
    expect(started).toEqual([0, 200]);
    expect(aborted).toEqual([1]);
    expect(clock.now()).toBe(300);
  });

  it("the attempt's timeout ends its hedges too, and the retry goes on", async () => {
    const clock = new VirtualClock();
    let calls = 0;
    const result = await drive(
      clock,
      retry(
        ({ signal, attempt }) => {
          calls += 1;
          if (attempt === 2) return "second attempt";
          return new Promise<string>((_, reject) =>
            signal.addEventListener("abort", () => reject(signal.reason)),
          );
        },
        {
          clock,
          timeout: 1000,
          hedge: steps.hedge({ delay: 300, maxHedges: 2 }),
          backoff: backoff.none(),
          jitter: jitter.none(),
        },
      ),
    );
    expect(result).toEqual({ ok: true, value: "second attempt" });
    // Attempt 1 and its two hedges, then attempt 2.
    expect(calls).toBe(4);
    expect(clock.now()).toBe(1000);
  });
});

describe("retry's chaos option", () => {
  it("injects seeded faults that the retries absorb; wrap shares one injector across calls", async () => {
    const clock = new VirtualClock();
    let real = 0;
    const fetchUser = wrap(
      (_ctx, id: string) => {
        real += 1;
        return `user ${id}`;
      },
      {
        clock,
        maxRetries: 20,
        backoff: backoff.none(),
        chaos: steps.chaos({ fault: { rate: 0.5, error: () => new Error("injected") } }),
        random: seededRandom(3),
      },
    );
    const users: string[] = [];
    for (const id of ["a", "b", "c", "d"]) {
      const call = fetchUser(id);
      await clock.runAll();
      users.push(await call);
    }
    expect(users).toEqual(["user a", "user b", "user c", "user d"]);
    expect(real).toBe(4);
  });
});

describe("retry's hedge and chaos options take steps", () => {
  it("plain hedge or chaos options fail at once with an OptionError naming the step to make", async () => {
    let calls = 0;
    const op = () => {
      calls += 1;
      return 1;
    };
    const hedge = retry(op, { hedge: { delay: 100 } as never });
    await expect(hedge).rejects.toThrow(OptionError);
    await expect(hedge).rejects.toThrow("hedge must be a hedge step (steps.hedge({ delay })); got {");
    const chaos = retry(op, { chaos: { fault: { rate: 1, error: () => new Error("x") } } as never });
    await expect(chaos).rejects.toThrow(
      "chaos must be a chaos step (steps.chaos({ fault: { rate, error } }))",
    );
    expect(() => wrap(op, { hedge: null as never })).toThrow("hedge must be a hedge step (steps.hedge(");
    expect(calls).toBe(0);
  });

  it("a step of another kind given as hedge or chaos fails at once with an OptionError, not run in its place", async () => {
    let calls = 0;
    const op = () => {
      calls += 1;
      return 1;
    };
    const fault = steps.chaos({ fault: { rate: 1, error: () => new Error("injected") } });
    const hedging = steps.hedge({ delay: 100 });
    const wrong: [string, object][] = [
      ["hedge", fault],
      ["hedge", steps.retry({ maxRetries: 5 })],
      ["hedge", pipeline(steps.hedge({ delay: 100 }))],
      ["hedge", { execute: (next: (c: unknown) => unknown, context: unknown) => next(context) }],
      ["chaos", hedging],
      ["chaos", steps.timeout(100)],
    ];
    for (const [option, step] of wrong) {
      const call = retry(op, { [option]: step, maxRetries: 0 });
      await expect(call).rejects.toThrow(OptionError);
      await expect(call).rejects.toThrow(`${option} must be a ${option} step (steps.${option}(`);
      expect(() => wrap(op, { [option]: step })).toThrow(OptionError);
    }
    expect(calls).toBe(0);
    // The right steps, frozen or not, are taken.
    const frozen = steps.chaos({});
    Object.freeze(frozen);
    const clock = new VirtualClock();
    await expect(drive(clock, retry(op, { hedge: hedging, chaos: frozen, clock }))).resolves.toEqual({
      ok: true,
      value: 1,
    });
  });
});
