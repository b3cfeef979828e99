/**
 * Option checks shared by every constructor: each failure names the option, the value and the allowed range.
 */
import { describe, OptionError } from "./errors.js";

/** A finite number >= `min` (and <= `max` when given). */
export function finiteAtLeast(
  option: string,
  value: unknown,
  min: number,
  max = Number.POSITIVE_INFINITY,
): number {
  if (typeof value !== "number" || !Number.isFinite(value) || value < min || value > max) {
    const range =
      max === Number.POSITIVE_INFINITY ? `a finite number >= ${min}` : `a finite number in [${min}, ${max}]`;
    throw new OptionError(option, value, range);
  }
  return value;
}

/** A number > `min`, finite. */
export function finiteAbove(option: string, value: unknown, min: number): number {
  if (typeof value !== "number" || !Number.isFinite(value) || value <= min) {
    throw new OptionError(option, value, `a finite number > ${min}`);
  }
  return value;
}

/** A number >= `min` or Infinity (never NaN). */
export function atLeastOrInfinity(option: string, value: unknown, min: number): number {
  if (typeof value !== "number" || Number.isNaN(value) || value < min) {
    throw new OptionError(option, value, `a number >= ${min} (Infinity allowed)`);
  }
  return value;
}

/** An integer >= `min`. */
export function integerAtLeast(option: string, value: unknown, min: number): number {
  if (typeof value !== "number" || !Number.isInteger(value) || value < min) {
    throw new OptionError(option, value, `an integer >= ${min}`);
  }
  return value;
}

/**
 * A limit where a negative number means "no limit" (seed 000's convention for timeout, max-retries and
 * max-delay): any finite number, or ±Infinity. `integer` requires whole numbers.
 */
export function limit(option: string, value: unknown, integer: boolean): number {
  const ok =
    typeof value === "number" &&
    !Number.isNaN(value) &&
    (integer
      ? Number.isInteger(value) || value === Number.POSITIVE_INFINITY || value === Number.NEGATIVE_INFINITY
      : true);
  if (!ok) {
    const what = integer ? "an integer" : "a number";
    throw new OptionError(option, value, `${what} (negative or Infinity = no limit)`);
  }
  return value < 0 ? Number.POSITIVE_INFINITY : value;
}

export function isFunction(option: string, value: unknown): void {
  if (typeof value !== "function") throw new OptionError(option, value, "a function");
}

export function optionalFunction(option: string, value: unknown): void {
  if (value !== undefined) isFunction(option, value);
}

export function boolean(option: string, value: unknown): boolean {
  if (typeof value !== "boolean") throw new OptionError(option, value, "true or false");
  return value;
}

/** Rejects keys that are not in `known`, listing the known ones. */
export function knownKeys(where: string, value: unknown, known: readonly string[]): void {
  if (value === undefined) return;
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new OptionError(where, value, "an object");
  }
  for (const key of Object.keys(value)) {
    if (!known.includes(key)) {
      throw new OptionError(
        `${where}.${key}`,
        (value as Record<string, unknown>)[key],
        `one of the known options (${known.join(", ")}); unknown option`,
      );
    }
  }
}

/** Clamps a computed delay into [0, cap]; NaN or a non-number is a bug in a strategy and fails loudly. */
export function clampDelay(source: string, value: number, cap: number): number {
  if (typeof value !== "number") {
    throw new TypeError(`${source} produced ${describe(value)} as a delay; a delay must be a number of ms`);
  }
  if (Number.isNaN(value)) throw new RangeError(`${source} produced NaN as a delay`);
  if (value <= 0) return 0;
  return Math.min(value, cap);
}
