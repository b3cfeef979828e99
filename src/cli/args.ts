/**
 * Command-line values: durations with units, comma-separated lists, and errors that name the flag, the
 * value and what is allowed.
 */

import { type ParseArgsConfig, parseArgs } from "node:util";
import { parseDuration } from "../core/duration.js";
import { MAX_SEED } from "../core/random.js";
import { suggestion } from "../core/validate.js";

/** A bad command line: the CLI prints its message and exits with status 2. */
export class UsageError extends Error {
  override readonly name = "UsageError";
}

/**
 * A duration in ms from "1.5s", "200ms", "2m", "1h", or a bare number of ms: the parser config files use
 * too, the same for every flag.
 */
export function duration(flag: string, text: string): number {
  const ms = parseDuration(text);
  if (ms === undefined) {
    throw new UsageError(
      `--${flag} must be a duration such as 1.5s, 200ms or 2m (a bare number is in ms); got "${text}"`,
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

/** A `--seed`: an integer in [0, MAX_SEED], never reduced to 32 bits behind the user's back. */
export function seed(text: string): number {
  return integer("seed", text, 0, MAX_SEED);
}

/** A comma-separated list, each item parsed by `item`. */
export function list<T>(flag: string, text: string, item: (part: string) => T): T[] {
  const parts = text.split(",").map((p) => p.trim());
  if (parts.some((p) => p === ""))
    throw new UsageError(`--${flag} must be a comma-separated list; got "${text}"`);
  return parts.map(item);
}

/** A name as the command line shows it: kebab-case ("decorrelatedAws" is "decorrelated-aws"). */
export const kebabName = (name: string): string => kebab(camel(name));

/**
 * Which of `allowed` `text` names, written in kebab-case or in camelCase; or a UsageError listing them
 * in kebab-case, with the nearest one when there is one.
 */
export function named<T extends string>(
  text: string,
  allowed: readonly T[],
  refuse: (hint: string) => string,
): T {
  const wanted = kebabName(text.trim());
  const found = allowed.find((name) => kebabName(name) === wanted);
  if (found !== undefined) return found;
  const hint = suggestion(wanted, allowed.map(kebabName));
  throw new UsageError(`${refuse(allowed.map(kebabName).join(", "))}${hint === undefined ? "" : ` ${hint}`}`);
}

/** One of `allowed` (kebab-case or camelCase), or a UsageError listing them, with "did you mean". */
export function oneOf<T extends string>(flag: string, text: string, allowed: readonly T[]): T {
  return named(text, allowed, (list) => `--${flag} must be one of ${list}; got "${text}".`);
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
    const args = joinNegatives(config.args ?? [], config.options ?? {});
    return parseArgs({ ...config, args }) as ReturnType<typeof parseArgs<T>>;
  } catch (error) {
    throw new UsageError(
      `${describeError(error, Object.keys(config.options ?? {}))}\n\nRun robustly ${command} --help for the options.`,
    );
  }
}

/** A value that starts with "-" but is a number or a duration ("-1", "-0.5", "-1s"), not a flag. */
const NEGATIVE = /^-(\d|\.\d)/;

/**
 * `--max-retries -1` as `--max-retries=-1`: parseArgs takes "-1" for a flag, so a negative value that
 * follows a flag which takes a value is joined to it.
 */
function joinNegatives(args: readonly string[], options: ParseArgsConfig["options"] & object): string[] {
  const out: string[] = [];
  for (let i = 0; i < args.length; i += 1) {
    const arg = args[i] as string;
    if (arg === "--") {
      out.push(...args.slice(i));
      break;
    }
    const next = args[i + 1];
    const option = arg.startsWith("--") && !arg.includes("=") ? options[arg.slice(2)] : undefined;
    if (option?.type === "string" && next !== undefined && NEGATIVE.test(next)) {
      out.push(`${arg}=${next}`);
      i += 1;
    } else out.push(arg);
  }
  return out;
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

/**
 * Runs `make` (which checks options), saying an option's error with the flag that set it: "backoff.base
 * must be …" becomes "--base must be …". `flagOf` maps an option's path to its flag, or to undefined when
 * no flag set it (a path in a `--config` file stays as it is). The one place the command line turns the
 * library's option paths into flags.
 */
export function withFlags<T>(make: () => T, flagOf: (option: string) => string | undefined): T {
  try {
    return make();
  } catch (error) {
    if (!(error instanceof Error) || error.name !== "OptionError") throw error;
    const option = (error as Error & { option: string }).option;
    const flag = flagOf(option);
    if (flag === undefined || !error.message.startsWith(option)) throw error;
    throw new UsageError(`--${flag}${error.message.slice(option.length)}`);
  }
}
