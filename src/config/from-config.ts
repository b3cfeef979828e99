/**
 * Policies as configuration: a retry policy written as JSON (a file, an environment variable, a config
 * service) becomes `retry` options. Every strategy has a JSON form, `{ "name": "exponential", "base": 1000 }`,
 * or just its name; times are milliseconds, or strings with a unit ("1.5s", "200ms", "2m", "1h"); errors are
 * matched by name or code. Every mistake is reported with its path in the document, the value and what is
 * allowed.
 */
import { backoff } from "../backoff/index.js";
import { BACKOFF_SCHEMAS } from "../backoff/schema.js";
import type { Backoff } from "../backoff/types.js";
import { DURATION_FORMS, parseDuration } from "../core/duration.js";
import { OptionError } from "../core/errors.js";
import { keysOf, type Schema } from "../core/schema.js";
import { suggestion } from "../core/validate.js";
import { jitter } from "../jitter/index.js";
import { JITTER_SCHEMAS } from "../jitter/schema.js";
import type { Jitter } from "../jitter/types.js";
import {
  DEFAULTS,
  type RetryOptions,
  type RetryPolicy,
  type RetryRule,
  resolveOptions,
} from "../policy/options.js";
import { RETRY_SCHEMA, RULE_SCHEMA } from "../policy/schema.js";

/** The JSON form of a backoff: its name and its options (times as numbers of ms or strings with units). */
export type BackoffConfig = string | ({ name: string } & Record<string, unknown>);
/** The JSON form of a jitter. */
export type JitterConfig = string | ({ name: string } & Record<string, unknown>);

/** The JSON form of a policy (the top level, or a rule with `when`). */
export interface PolicyConfig {
  maxRetries?: number;
  maxElapsed?: number | string;
  maxElapsedCountsWait?: boolean;
  backoff?: BackoffConfig;
  jitter?: JitterConfig;
  scale?: number;
}

/** The JSON form of `retry`'s options. */
export interface RetryConfig extends PolicyConfig {
  timeout?: number | string;
  /** Error names or codes (`"ECONNRESET"`, `"TimeoutError"`) the top level retries. */
  retryOn?: string | string[];
  rules?: (PolicyConfig & { when: string | string[] })[];
  /** Wait the first delay before the first attempt too. */
  delayFirstAttempt?: boolean;
}

/**
 * A time from a number (ms) or a string with a unit: "1.5s", "200ms", "2m", "1h"; a bare number in a
 * string is ms. Negative values keep their meaning ("no limit" where the option allows it).
 */
export function parseTime(path: string, value: unknown): number {
  if (typeof value === "number" && !Number.isNaN(value)) return value;
  // JSON has no Infinity: "Infinity" stands for it (an uncapped backoff's "max"); the option's own check
  // refuses it where no infinity is allowed.
  if (typeof value === "string" && /^\s*\+?infinity\s*$/i.test(value)) return Number.POSITIVE_INFINITY;
  const ms = typeof value === "string" ? parseDuration(value) : undefined;
  if (ms === undefined) throw new OptionError(path, value, DURATION_FORMS);
  return ms;
}

// Which options of each strategy are times (converted from strings): read off the strategies' schemas.
const timesOf = (schemas: Readonly<Record<string, Schema>>) =>
  Object.fromEntries(
    Object.entries(schemas).map(([name, schema]) => [
      name,
      keysOf(schema).filter((key) => schema.fields[key]?.ms === true),
    ]),
  );
const BACKOFF_TIMES = timesOf(BACKOFF_SCHEMAS) as unknown as Record<keyof typeof backoff, readonly string[]>;
const JITTER_TIMES = timesOf(JITTER_SCHEMAS) as unknown as Record<keyof typeof jitter, readonly string[]>;

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/** Splits `{ name, ...options }` (or a bare name) and converts the time-valued options. */
function strategy<K extends string>(
  path: string,
  value: unknown,
  times: Record<K, readonly string[]>,
  what: string,
): { name: K; options: Record<string, unknown> | undefined } {
  const names = Object.keys(times) as K[];
  const named = typeof value === "string" ? { name: value } : value;
  if (!isRecord(named) || typeof named.name !== "string") {
    throw new OptionError(
      path,
      value,
      `a ${what} name (${names.join(", ")}) or an object { "name": …, …options }`,
    );
  }
  const name = named.name as K;
  if (!names.includes(name)) {
    throw new OptionError(`${path}.name`, named.name, `one of ${names.join(", ")}`, suggestion(name, names));
  }
  const { name: _, ...rest } = named;
  const timed = times[name];
  for (const key of Object.keys(rest)) {
    if (timed.includes(key)) rest[key] = parseTime(`${path}.${key}`, rest[key]);
  }
  return { name, options: Object.keys(rest).length === 0 ? undefined : rest };
}

/**
 * The cap of a backoff named in JSON or on the command line without a `max`: the default policy's cap
 * (`DEFAULTS.backoffMax`, 30 s), raised to the base when the base is larger, so naming a strategy never
 * makes it grow without bound and a given base is never refused because of a default. `"max": "Infinity"`
 * uncaps it. (The strategies built in code, `backoff.exponential()`, keep their own default: no cap.)
 */
export function defaultBackoffMax(base: unknown): number {
  return typeof base === "number" && Number.isFinite(base)
    ? Math.max(DEFAULTS.backoffMax, base)
    : DEFAULTS.backoffMax;
}

/** Builds a backoff from its JSON form; a strategy whose `max` defaults to no cap gets `defaultBackoffMax`. */
export function backoffFromConfig(value: unknown, path = "backoff"): Backoff {
  const { name, options } = strategy(path, value, BACKOFF_TIMES, "backoff");
  const fields = BACKOFF_SCHEMAS[name]?.fields;
  let capped = options;
  if (fields?.max?.default === "Infinity" && options?.max === undefined) {
    const base = options?.base ?? Number(fields.base?.default);
    capped = { ...options, max: defaultBackoffMax(base) };
  }
  return withPath(path, () => (backoff[name] as (o?: unknown) => Backoff)(capped));
}

/** Builds a jitter from its JSON form. */
export function jitterFromConfig(value: unknown, path = "jitter"): Jitter {
  const { name, options } = strategy(path, value, JITTER_TIMES, "jitter");
  return withPath(path, () => (jitter[name] as (o?: unknown) => Jitter)(options));
}

/**
 * Re-labels a strategy's own OptionError ("backoff.exponential: base must be …") with where it is in the
 * document ("rules[0].backoff.base must be …").
 */
function withPath<T>(path: string, make: () => T): T {
  try {
    return make();
  } catch (error) {
    if (error instanceof OptionError) {
      const key = error.option.replace(/^[a-z]+\.[A-Za-z]+(: |\.)/, "");
      const allowed = error.message.slice(
        error.message.indexOf(" must be ") + " must be ".length,
        error.message.lastIndexOf("; got "),
      );
      throw new OptionError(`${path}.${key}`, error.value, allowed, error.hint);
    }
    throw error;
  }
}

function names(path: string, value: unknown): string | string[] {
  if (typeof value === "string" && value !== "") return value;
  if (Array.isArray(value) && value.length > 0 && value.every((v) => typeof v === "string" && v !== "")) {
    return value as string[];
  }
  throw new OptionError(path, value, "an error name or code, or a non-empty list of them");
}

// The keys of the JSON form: the options described as part of it.
const configKeys = (schema: Schema) => keysOf(schema).filter((key) => schema.fields[key]?.config === true);
const POLICY_KEYS = configKeys(RULE_SCHEMA).filter((key) => key !== "when");
const TOP_KEYS = configKeys(RETRY_SCHEMA);

function policy(path: string, value: Record<string, unknown>, known: readonly string[]): RetryPolicy {
  const prefix = path === "" ? "" : `${path}.`;
  for (const key of Object.keys(value)) {
    if (!known.includes(key)) {
      throw new OptionError(
        `${prefix}${key}`,
        value[key],
        `one of the known keys (${known.join(", ")}); unknown key`,
        suggestion(key, known),
      );
    }
  }
  const out: RetryPolicy = {};
  if (value.maxRetries !== undefined) out.maxRetries = value.maxRetries as number;
  if (value.maxElapsed !== undefined) out.maxElapsed = parseTime(`${prefix}maxElapsed`, value.maxElapsed);
  if (value.backoff !== undefined) out.backoff = backoffFromConfig(value.backoff, `${prefix}backoff`);
  if (value.jitter !== undefined) out.jitter = jitterFromConfig(value.jitter, `${prefix}jitter`);
  if (value.scale !== undefined) out.scale = value.scale as number;
  if (value.maxElapsedCountsWait !== undefined)
    out.maxElapsedCountsWait = value.maxElapsedCountsWait as boolean;
  return out;
}

/**
 * `retry` options from a policy written as JSON (a string to parse, or the parsed value). The result is
 * checked as any options are, so a bad number fails here with its path, not at the first retry.
 *
 * @example
 * const options = fromConfig('{ "timeout": "2s", "maxRetries": 5, "backoff": { "name": "exponential", "base": "100ms", "max": "10s" }, "jitter": "full", "retryOn": ["ECONNRESET", "TimeoutError"] }');
 * await retry(op, options);
 */
export function fromConfig(config: string | RetryConfig | Record<string, unknown>): RetryOptions {
  let value: unknown = config;
  if (typeof config === "string") {
    try {
      value = JSON.parse(config);
    } catch (error) {
      throw new OptionError(
        "config",
        config.length > 60 ? `${config.slice(0, 57)}...` : config,
        `valid JSON (${(error as Error).message})`,
      );
    }
  }
  if (!isRecord(value)) throw new OptionError("config", value, "a JSON object");
  const options: RetryOptions = policy("", value, TOP_KEYS);
  if (value.timeout !== undefined) options.timeout = parseTime("timeout", value.timeout);
  if (value.retryOn !== undefined) options.retryOn = names("retryOn", value.retryOn);
  if (value.delayFirstAttempt !== undefined) options.delayFirstAttempt = value.delayFirstAttempt as boolean;
  if (value.rules !== undefined) {
    if (!Array.isArray(value.rules))
      throw new OptionError("rules", value.rules, "a list of rules { when, …policy }");
    options.rules = value.rules.map((rule: unknown, i: number): RetryRule => {
      const path = `rules[${i}]`;
      if (!isRecord(rule)) throw new OptionError(path, rule, "an object { when, …policy }");
      if (rule.when === undefined)
        throw new OptionError(
          `${path}.when`,
          undefined,
          "an error name or code, or a list of them (required)",
        );
      const { when, ...rest } = rule;
      return { when: names(`${path}.when`, when), ...policy(path, rest, POLICY_KEYS) };
    });
  }
  // Check the numbers now (maxRetries, scale, …), with the same paths, rather than at the first call.
  resolveOptions(options);
  return options;
}
