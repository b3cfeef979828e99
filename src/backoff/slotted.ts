import { MAX_TIMER_DELAY } from "../core/clock.js";
import { uniformInt } from "../core/random.js";
import { checkKeys, read } from "../core/schema.js";
import { SLOTTED_CHECKS } from "./checks.js";
import { markFactories } from "./common.js";
import type { Backoff } from "./types.js";

export interface SlottedOptions {
  /** The slot time in ms. Default 10. */
  slot?: number;
  /** The highest slot number s reaches, an integer in [1, 1000]. Default 10. */
  ceiling?: number;
  /** On reaching the ceiling, stay there (true) or reset: wait 0 and start again from slot 1 (false). Default false. */
  stayAtCeiling?: boolean;
}

/**
 * Truncated binary exponential backoff (as in Ethernet's CSMA/CD): wait slot × (2^k − 1) with k
 * uniform in the integers [0, s]. s is 1 before the first retry and grows by one per retry. When it reaches
 * the ceiling it stays there (`stayAtCeiling`), drawing from [0, ceiling] from then on; or, by
 * default, the step that reaches the ceiling is a reset: no wait, and s starts again
 * from 1. So s = min(x + 1, ceiling) when staying; otherwise s = (x mod ceiling) + 1, and the x with
 * s = ceiling waits 0.
 *
 * @example
 * backoff.slotted({ slot: 10, ceiling: 5, stayAtCeiling: true }); // at most 310 ms
 */
export function slotted(options?: SlottedOptions): Backoff {
  const schema = SLOTTED_CHECKS;
  checkKeys(schema, options);
  const slot = read<number | undefined>(schema, "slot", options?.slot) ?? 10;
  const ceiling = read<number | undefined>(schema, "ceiling", options?.ceiling) ?? 10;
  const stay = read<boolean | undefined>(schema, "stayAtCeiling", options?.stayAtCeiling) ?? false;
  // The largest s ever drawn from: the ceiling when staying, one below it when resetting.
  const highest = stay ? ceiling : ceiling - 1;
  return {
    name: "slotted",
    base: 0,
    max: slot === 0 ? 0 : slot * (2 ** highest - 1),
    delay(x, random) {
      const s = slotNumber(x, ceiling, stay);
      return s === 0 ? 0 : Math.min(slot * (2 ** uniformInt(random, s) - 1), MAX_TIMER_DELAY);
    },
  };
}

/** The slot number s drawn from before retry x (see `slotted`); 0 for the reset step, which waits 0. */
export function slotNumber(x: number, ceiling: number, stayAtCeiling: boolean): number {
  if (stayAtCeiling) return Math.min(x + 1, ceiling);
  const s = (x % ceiling) + 1;
  return s === ceiling ? 0 : s;
}

// Passed uncalled (`backoff: backoff.exponential`), a factory fails at once, naming the fix.
markFactories(slotted);
