/**
 * Durations as people write them: "1.5s", "200ms", "2m", "1h", or a bare number of ms. One parser for
 * config files and every command-line flag alike; the library itself takes numbers of ms.
 */

/** Milliseconds per unit. */
export const DURATION_UNITS: Readonly<Record<string, number>> = Object.freeze({
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
});

/** What a duration may look like, for error messages. */
export const DURATION_FORMS =
  'a number of ms or a duration with a unit, such as "1.5s", "200ms", "2m" or "1h"';

/**
 * The milliseconds `text` stands for, or undefined when it is not a duration. A bare number is in ms.
 * Negative values keep their sign ("no limit" where an option allows it).
 */
export function parseDuration(text: string): number | undefined {
  const match = /^\s*(-?(?:\d+(?:\.\d*)?|\.\d+)(?:e[+-]?\d+)?)\s*(ms|s|m|h)?\s*$/i.exec(text);
  if (match === null) return undefined;
  const unit = (match[2] ?? "ms").toLowerCase();
  const value = Number(match[1]) * (DURATION_UNITS[unit] as number);
  return Number.isNaN(value) ? undefined : value;
}
