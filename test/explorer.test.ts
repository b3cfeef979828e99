// The policy explorer of the docs site (docs/.vitepress/theme/explorer.ts) computes with robustly itself:
// its delays are `delays()`'s, a choice the options refuse comes back as robustly's OptionError, and its
// outage is the overload simulator's outage scenario, shortened, to the same numbers.
import { describe, expect, it } from "vitest";
import {
  type Choice,
  INITIAL,
  OUTAGE,
  policyJson,
  schedule,
  simulateOutage,
} from "../docs/.vitepress/theme/explorer.js";
import { backoff, DEFAULTS, delays, fromConfig, jitter, seededRandom } from "../src/index.js";
import { simulate } from "../src/sim/index.js";

describe("the policy explorer", () => {
  it("shows the delays of delays(), the backoff before jitter beside them, and their running total", () => {
    const choice: Choice = { ...INITIAL, backoff: "fibonacci", jitter: "equal", maxRetries: 6, seed: 3 };
    const checked = schedule(choice);
    if (!checked.ok) throw new Error(checked.error);
    const options = { backoff: backoff.fibonacci({ base: choice.base, max: choice.max }) };
    expect(checked.rows.map((r) => r.delay)).toEqual(
      delays({ ...options, jitter: jitter.equal(), random: seededRandom(3) }, 6),
    );
    expect(checked.rows.map((r) => r.backoff)).toEqual(delays({ ...options, jitter: jitter.none() }, 6));
    expect(checked.rows.at(-1)?.total).toBeCloseTo(
      checked.rows.reduce((sum, r) => sum + r.delay, 0),
      9,
    );
    expect(fromConfig(policyJson(choice)).maxRetries).toBe(6);
  });

  it("shows the first retries of a policy that retries for ever", () => {
    const checked = schedule({ ...INITIAL, maxRetries: -1 });
    expect(checked.ok && checked.rows.length).toBeGreaterThan(INITIAL.maxRetries);
  });

  it("shows the default budget's work: retrying every 100 ms for ever keeps the server down without it, not with it", () => {
    const fixed: Choice = { ...INITIAL, backoff: "constant", jitter: "none", maxRetries: -1 };
    const run = (choice: Choice) => {
      const checked = schedule(choice);
      if (!checked.ok) throw new Error(checked.error);
      return simulateOutage(checked.options, 1);
    };
    const without = run({ ...fixed, budget: false });
    const within = run(fixed);
    expect(without.recovered).toBe(false);
    expect(within.recovered).toBe(true);
    expect(within.amplification).toBeLessThan(without.amplification / 5);
  }, 30_000);

  it("shows an adaptive limit over the outage: down at the pause's timeouts, back up after it; none without one", () => {
    const checked = schedule({ ...INITIAL, limit: "aimd" });
    if (!checked.ok) throw new Error(checked.error);
    const run = simulateOutage(checked.options, 1, "aimd");
    const limits = run.limits as number[];
    expect(limits).toHaveLength(OUTAGE.duration / 1000);
    const at = (second: number) => limits[second - 1] as number;
    expect(at(45)).toBeLessThan(at(19));
    expect(at(70)).toBeGreaterThan(at(45));
    expect(run.recovered).toBe(true);
    expect(run.peakConcurrency).toBeLessThan(simulateOutage(checked.options, 1).peakConcurrency);
    expect(simulateOutage(checked.options, 1).limits).toBeUndefined();
  }, 30_000);

  it("answers a choice the options refuse with robustly's OptionError", () => {
    const checked = schedule({ ...INITIAL, backoff: "exponential", base: 1_000, max: 10 });
    expect(checked).toEqual({ ok: false, error: expect.stringMatching(/^backoff\.max must be/) });
  });

  it("simulates what simulate() does on the outage scenario of the same length", () => {
    const policy = fromConfig({
      maxRetries: DEFAULTS.maxRetries,
      backoff: { name: "exponential", base: DEFAULTS.backoffBase, max: DEFAULTS.backoffMax },
      jitter: "full",
    });
    const mine = simulateOutage(policy, 1);
    const [theirs] = simulate({
      strategies: ["robustly"],
      clients: [OUTAGE.clients],
      duration: OUTAGE.duration,
      outage: { start: OUTAGE.pause.start, length: OUTAGE.pause.end - OUTAGE.pause.start },
      think: OUTAGE.think,
      timeout: OUTAGE.timeout,
      seed: 1,
    }).runs;
    expect(mine.amplification).toBeCloseTo(theirs?.amplification ?? Number.NaN, 9);
    expect(mine.peakConcurrency).toBe(theirs?.peakConcurrency);
    expect(mine.recovered).toBe(theirs?.recovered);
    expect(mine.goodput).toHaveLength(OUTAGE.duration / 1000);
  }, 30_000);
});
