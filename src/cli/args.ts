/**
 * Command-line values: durations with units, comma-separated lists, and errors that name the flag, the
 * value and what is allowed.
 */

import { type ParseArgsConfig, parseArgs } from "node:util";

/** A bad command line: the CLI prints its message and exits with status 2. */
export class UsageError extends Error {
  override readonly name = "UsageError";
}

const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/**
 * A duration in ms from "1.5s", "200ms", "2m", "1h", or a bare number in `bareUnit` ("ms" or "s").
 */
export function duration(flag: string, text: string, bareUnit: "ms" | "s" = "ms"): number {
  const match = /^(-?\d+(?:\.\d+)?|-?\.\d+)(ms|s|m|h)?$/.exec(text.trim());
  if (match === null) {
    throw new UsageError(
      `--${flag} must be a duration such as 1.5s, 200ms or 2m (a bare number is in ${bareUnit}); got "${text}"`,
    );
  }
  return Number(match[1]) * (UNITS[match[2] ?? bareUnit] as number);
}

export function number(flag: string, text: string, check: (n: number) => boolean, allowed: string): number {
  const value = Number(text);
  if (text.trim() === "" || !Number.isFinite(value) || !check(value)) {
    throw new UsageError(`--${flag} must be ${allowed}; got "${text}"`);
  }
  return value;
}

export function integer(flag: string, text: string, min: number): number {
  return number(flag, text, (n) => Number.isInteger(n) && n >= min, `an integer >= ${min}`);
}

/** A comma-separated list, each item parsed by `item`. */
export function list<T>(flag: string, text: string, item: (part: string) => T): T[] {
  const parts = text.split(",").map((p) => p.trim());
  if (parts.some((p) => p === ""))
    throw new UsageError(`--${flag} must be a comma-separated list; got "${text}"`);
  return parts.map(item);
}

/** One of `allowed`, or a UsageError listing them. */
export function oneOf<T extends string>(flag: string, text: string, allowed: readonly T[]): T {
  if (!(allowed as readonly string[]).includes(text)) {
    throw new UsageError(`--${flag} must be one of ${allowed.join(", ")}; got "${text}"`);
  }
  return text as T;
}

/**
 * Parses a command's arguments with Node's own `util.parseArgs` (strict: an unknown flag is an error); a
 * mistake becomes a UsageError that points at the command's `--help`.
 */
export function parseCommand<T extends ParseArgsConfig>(
  command: string,
  config: T,
): ReturnType<typeof parseArgs<T>> {
  try {
    return parseArgs(config);
  } catch (error) {
    throw new UsageError(`${(error as Error).message}\n\nRun robustly ${command} --help for the options.`);
  }
}
