import { OptionError } from "../core/errors.js";
import { uniformInt } from "../core/random.js";
import { boolean, finiteAtLeast, integerAtLeast, knownKeys } from "../core/validate.js";
import type { Backoff } from "./types.js";

export interface SlottedOptions {
  /** The slot time in ms. Default 10 (seed 004). */
  slot?: number;
  /** The highest slot number s reaches, an integer in [1, 1000]. Default 10 (seed 004). */
  ceiling?: number;
  /** After reaching the ceiling, stay there (true) or start again from slot 1 (false). Default false (seed 004). */
  stayAtCeiling?: boolean;
}

/**
 * Truncated binary exponential backoff, seed 004 (as in Ethernet's CSMA/CD): wait slot × (2^k − 1) with k
 * uniform in the integers [0, s]. s is 1 before the first retry and grows by one per retry up to the
 * ceiling; there it stays (`stayAtCeiling`) or starts again from 1, so s = min(x + 1, ceiling) or
 * s = (x mod ceiling) + 1.
 *
 * @example
 * backoff.slotted({ slot: 10, ceiling: 5, stayAtCeiling: true }); // at most 310 ms
 */
export function slotted(options?: SlottedOptions): Backoff {
  knownKeys("backoff.slotted", options, ["slot", "ceiling", "stayAtCeiling"]);
  const slot = finiteAtLeast("backoff.slotted: slot", options?.slot ?? 10, 0);
  const ceiling = integerAtLeast("backoff.slotted: ceiling", options?.ceiling ?? 10, 1);
  if (ceiling > 1000) throw new OptionError("backoff.slotted: ceiling", ceiling, "an integer in [1, 1000]");
  const stay = boolean("backoff.slotted: stayAtCeiling", options?.stayAtCeiling ?? false);
  return {
    name: "slotted",
    base: 0,
    max: slot * (2 ** ceiling - 1),
    delay(x, random) {
      const s = slotNumber(x, ceiling, stay);
      return slot * (2 ** uniformInt(random, s) - 1);
    },
  };
}

/** The slot number s used before retry x (see `slotted`). */
export function slotNumber(x: number, ceiling: number, stayAtCeiling: boolean): number {
  return stayAtCeiling ? Math.min(x + 1, ceiling) : (x % ceiling) + 1;
}
