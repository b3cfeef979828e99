/**
 * Command-line values: durations with units, comma-separated lists, and errors that name the flag, the
 * value and what is allowed.
 */

import { type ParseArgsConfig, parseArgs } from "node:util";
import { parseDuration } from "../core/duration.js";
import { suggestion } from "../core/validate.js";

/** A bad command line: the CLI prints its message and exits with status 2. */
export class UsageError extends Error {
  override readonly name = "UsageError";
}

/**
 * A duration in ms from "1.5s", "200ms", "2m", "1h", or a bare number in `bareUnit` ("ms" or "s"): the
 * parser config files use too.
 */
export function duration(flag: string, text: string, bareUnit: "ms" | "s" = "ms"): number {
  const ms = parseDuration(text, bareUnit);
  if (ms === undefined) {
    throw new UsageError(
      `--${flag} must be a duration such as 1.5s, 200ms or 2m (a bare number is in ${bareUnit}); got "${text}"`,
    );
  }
  return ms;
}

export function number(flag: string, text: string, check: (n: number) => boolean, allowed: string): number {
  const value = Number(text);
  if (text.trim() === "" || !Number.isFinite(value) || !check(value)) {
    throw new UsageError(`--${flag} must be ${allowed}; got "${text}"`);
  }
  return value;
}

/** An integer >= `min`, and <= `max` when given (every count flag has a documented maximum). */
export function integer(flag: string, text: string, min: number, max?: number): number {
  const allowed = max === undefined ? `an integer >= ${min}` : `an integer in [${min}, ${max}]`;
  return number(
    flag,
    text,
    (n) => Number.isInteger(n) && n >= min && (max === undefined || n <= max),
    allowed,
  );
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
    throw new UsageError(
      `${describeError(error, Object.keys(config.options ?? {}))}\n\nRun robustly ${command} --help for the options.`,
    );
  }
}

const camel = (flag: string) => flag.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());
const kebab = (name: string) => name.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);

/**
 * What went wrong, in one line; for an unknown flag with the flag meant: "unknown option --max-delay:
 * `--max-delay` was renamed `--max-elapsed`." or "unknown option --timout: did you mean `--timeout`?".
 */
function describeError(error: unknown, flags: readonly string[]): string {
  const message = (error as Error).message;
  if ((error as { code?: string }).code !== "ERR_PARSE_ARGS_UNKNOWN_OPTION") return message;
  const flag = /'(-{1,2}[^'=]+)/.exec(message)?.[1];
  if (flag === undefined) return message;
  // Option names are camelCase and flags kebab-case: compare them as options, show them as flags.
  const hint = suggestion(camel(flag.replace(/^-+/, "")), flags.map(camel), (name) => `\`--${kebab(name)}\``);
  const said = `unknown option ${flag}`;
  if (hint === undefined) return `${said} (to pass an argument that starts with "-", put it after "--")`;
  return `${said}: ${hint.charAt(0).toLowerCase()}${hint.slice(1)}`;
}
