import { MAX_TIMER_DELAY } from "../core/clock.js";
import { checked, checkKeys } from "../core/schema.js";
import { CONSTANT_CHECKS } from "./checks.js";
import { markFactories, SECOND } from "./common.js";
import type { Backoff } from "./types.js";

export interface ConstantOptions {
  /** v_base in ms. Default 1000. */
  base?: number;
}

/**
 * Constant backoff: v_x = v_base.
 *
 * @example
 * backoff.constant({ base: 250 });
 */
export function constant(options?: ConstantOptions): Backoff {
  checkKeys(CONSTANT_CHECKS, options);
  const base = checked(CONSTANT_CHECKS, "base", options?.base ?? SECOND);
  const delay = Math.min(base, MAX_TIMER_DELAY);
  return { name: "constant", base, max: base, delay: () => delay };
}

/**
 * No backoff: retry at once (constant backoff with v_base = 0).
 *
 * @example
 * backoff.none();
 */
export function none(): Backoff {
  return { name: "none", base: 0, max: 0, delay: () => 0 };
}

// Passed uncalled (`backoff: backoff.exponential`), a factory fails at once, naming the fix.
markFactories(constant, none);
