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

/**
 * The rule every strategy with a `base` and a `max` keeps: max >= base (max caps one delay, base is the
 * first). The error names the base it compared with, and says when that base was the default.
 */
export function maxAtLeastBase(option: string, max: number, base: number, baseGiven: boolean): void {
  if (max < base) {
    throw new OptionError(
      option,
      max,
      `a number >= base, here ${base}${baseGiven ? "" : " (base's default)"}`,
    );
  }
}

/** An integer >= `min`. */
export function integerAtLeast(option: string, value: unknown, min: number): number {
  if (typeof value !== "number" || !Number.isInteger(value) || value < min) {
    throw new OptionError(option, value, `an integer >= ${min}`);
  }
  return value;
}

/**
 * A limit where a negative number means "no limit" (the convention for timeout, max-retries and
 * max-elapsed): any finite number, or ±Infinity. `integer` requires whole numbers.
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
  // -0 is the number it is: 0 (and reported as 0).
  return value < 0 ? Number.POSITIVE_INFINITY : value === 0 ? 0 : value;
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

/**
 * Options that were renamed, old name → new name. An old name fails at once with an error that names the
 * new one (wherever the new name is an option of that kind).
 */
export const RENAMED: Readonly<Record<string, string>> = Object.freeze({
  maxDelay: "maxElapsed",
  initial: "base",
  randomizationFactor: "spread",
  maxRandomization: "maxSpread",
  factor: "spread",
  maxDelta: "maxSpread",
  ttl: "window",
});

/** Edit distance (insertions, deletions, substitutions, adjacent swaps), case-insensitive. */
export function editDistance(a: string, b: string): number {
  const x = a.toLowerCase();
  const y = b.toLowerCase();
  // d[i][j]: the distance between the first i characters of x and the first j of y. Each edit costs one,
  // added once after the min: a deletion, an insertion, a substitution (free between equal characters), a swap.
  const d: number[][] = [];
  for (let i = 0; i <= x.length; i++) {
    const row: number[] = [];
    d.push(row);
    for (let j = 0; j <= y.length; j++) {
      row[j] =
        i === 0 || j === 0
          ? i + j
          : Math.min(
              (d[i - 1] as number[])[j] as number,
              row[j - 1] as number,
              ((d[i - 1] as number[])[j - 1] as number) + (x[i - 1] === y[j - 1] ? 0 : 1) - 1,
              i > 1 && j > 1 && x[i - 1] === y[j - 2] && x[i - 2] === y[j - 1]
                ? ((d[i - 2] as number[])[j - 2] as number)
                : Number.POSITIVE_INFINITY,
            ) + 1;
    }
  }
  return (d[x.length] as number[])[y.length] as number;
}

/**
 * The known name nearest to `name`: the new name of a renamed option, else the closest by edit distance
 * (or one that contains it, or that it contains), when close enough to be a likely slip; else undefined.
 */
export function nearest(name: string, known: readonly string[]): string | undefined {
  const renamed = RENAMED[name];
  if (renamed !== undefined && known.includes(renamed)) return renamed;
  let best: string | undefined;
  let bestDistance = Number.POSITIVE_INFINITY;
  for (const candidate of known) {
    const d = editDistance(name, candidate);
    if (d < bestDistance) {
      best = candidate;
      bestDistance = d;
    }
  }
  // With no known name, bestDistance stays Infinity and nothing below is found.
  if (bestDistance <= Math.max(2, Math.ceil(name.length * 0.4))) return best;
  const lower = name.toLowerCase();
  return lower.length >= 3
    ? known.find((k) => k.toLowerCase().includes(lower) || lower.includes(k.toLowerCase()))
    : undefined;
}

/** What to say of an unknown name: "`maxDelay` was renamed `maxElapsed`." or "Did you mean `maxRetries`?". */
export function suggestion(
  name: string,
  known: readonly string[],
  quote = (k: string) => `\`${k}\``,
): string | undefined {
  const near = nearest(name, known);
  // The nearest name is the new name whenever `name` was renamed to a known one.
  if (near === undefined) return undefined;
  return RENAMED[name] === near
    ? `${quote(name)} was renamed ${quote(near)}.`
    : `Did you mean ${quote(near)}?`;
}

/**
 * Rejects keys that are not in `known`: the error names the key, its value, the known keys and the
 * nearest of them (or the new name of a renamed option).
 */
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
        suggestion(key, known),
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
