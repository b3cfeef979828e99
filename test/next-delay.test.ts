import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { backoff } from "../src/backoff/index.js";
import { MAX_TIMER_DELAY } from "../src/core/clock.js";
import { seededRandom } from "../src/core/random.js";
import { clampDelay } from "../src/core/validate.js";
import type { Jitter } from "../src/jitter/types.js";
import { newPolicyState, nextDelay } from "../src/policy/delay.js";
import type { ResolvedPolicy } from "../src/policy/options.js";

/** A policy whose jitter answers `value`, whatever it is. */
function answering(value: unknown, scale = 1): ResolvedPolicy {
  const jitter: Jitter = { name: "fixed-answer", apply: () => value as number };
  return {
    match: () => true,
    maxRetries: Number.POSITIVE_INFINITY,
    maxElapsed: Number.POSITIVE_INFINITY,
    maxElapsedCountsWait: true,
    backoff: backoff.constant({ base: 1 }),
    jitter,
    scale,
    delayFrom: undefined,
  };
}

/** What nextDelay made of `value`: the delay and the previous delay it kept, or the error it threw. */
function outcome(run: () => number, state: { previous: number | undefined }): unknown {
  try {
    return { delay: run(), previous: state.previous };
  } catch (error) {
    return { error: `${(error as Error).name}: ${(error as Error).message}` };
  }
}

describe("nextDelay", () => {
  it("keeps, clamps or refuses every jitter answer exactly as clampDelay does", () => {
    const label = 'jitter "fixed-answer" with backoff "constant"';
    const answers = fc.oneof(
      fc.double(),
      fc.constantFrom(0, -0, MAX_TIMER_DELAY, MAX_TIMER_DELAY + 1, Number.NaN, Number.POSITIVE_INFINITY),
      fc.constantFrom("soon", null, undefined, 5n),
    );
    fc.assert(
      fc.property(answers, fc.constantFrom(0.5, 1, 3), (value, scale) => {
        const state = newPolicyState();
        const got = outcome(() => nextDelay(answering(value, scale), state, seededRandom(1)), state);
        const reference = { previous: undefined as number | undefined };
        const expected = outcome(() => {
          reference.previous = clampDelay(label, value as number, MAX_TIMER_DELAY);
          return clampDelay("scale", reference.previous * scale, MAX_TIMER_DELAY);
        }, reference);
        expect(got).toEqual(expected);
        if (typeof got === "object" && got !== null && "delay" in got) {
          expect(Object.is((got as { delay: number }).delay, (expected as { delay: number }).delay)).toBe(
            true,
          );
        }
      }),
      { numRuns: 500 },
    );
  });
});
