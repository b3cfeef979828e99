import { MAX_TIMER_DELAY } from "../core/clock.js";
import { OptionError } from "../core/errors.js";
import { type Checks, checked, checkKeys } from "../core/schema.js";
import { maxAtLeastBase } from "../core/validate.js";
import type { Backoff, BackoffFunction, BackoffLike } from "./types.js";

/** One second, the default base, interval and step. */
export const SECOND = 1000;

/** Validates the keys of a strategy's options (its `checks`), its `base` (finite, >= 0) and `max` (>= base, Infinity allowed). */
export function baseAndMax(
  checks: Checks,
  options: { base?: number; max?: number } | undefined,
  defaultBase = SECOND,
): { base: number; max: number } {
  checkKeys(checks, options);
  const base = checked(checks, "base", options?.base ?? defaultBase);
  const max = checked(checks, "max", options?.max ?? Number.POSITIVE_INFINITY);
  maxAtLeastBase(checks.label("max"), max, base, options?.base !== undefined);
  return { base, max };
}

/**
 * `min(max, value)` that also maps NaN and overflow to `max`, never goes below 0, and never above the
 * longest timer (2^31 − 1 ms), so that no jitter over it ever sees Infinity.
 */
export function capped(value: number, max: number): number {
  return Math.min(value < max ? Math.max(value, 0) : max, MAX_TIMER_DELAY);
}

// The strategy factories themselves (`backoff.exponential`, …): passed uncalled, they would pass for a
// custom backoff function and fail only at the first retry.
const factories = new WeakSet<object>();

/** Registers the built-in factories, so that passing one uncalled fails at once. */
export function markFactories(...fns: readonly object[]): void {
  for (const fn of fns) factories.add(fn);
}

/** Turns any `BackoffLike` into a `Backoff`. */
export function toBackoff(value: BackoffLike, option = "backoff"): Backoff {
  if (typeof value === "function" && factories.has(value)) {
    throw new OptionError(option, value, `a backoff: call the factory, e.g. backoff.${value.name}(…)`);
  }
  if (typeof value === "function") {
    // A class (`ResponsiveBackoff` itself) passes for a function too, and would fail only at the first
    // retry, unable to be called without new. Its prototype is read-only; a function's is writable or absent.
    if (Object.getOwnPropertyDescriptor(value, "prototype")?.writable === false) {
      throw new OptionError(option, value, `a backoff, not a class: make one with new ${value.name}(…)`);
    }
    const fn = value as BackoffFunction;
    return { name: fn.name || "custom", base: 0, max: Number.POSITIVE_INFINITY, delay: fn };
  }
  if (value === null || typeof value !== "object" || typeof (value as Backoff).delay !== "function") {
    throw new OptionError(
      option,
      value,
      "a backoff (from backoff.*), an object with a delay(retries, random) method, or a function",
    );
  }
  return value;
}
