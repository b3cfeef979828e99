/**
 * The retry policy on the command line: flags named as the options, in kebab-case, mapped onto the same
 * JSON form that `fromConfig` reads (so `--config FILE` and flags mix, flags winning).
 */
import { readFileSync } from "node:fs";
import { BACKOFF_SCHEMAS } from "../backoff/schema.js";
import { fromConfig, type RetryConfig } from "../config/from-config.js";
import { MAX_SEED, seededRandom } from "../core/random.js";
import { type Field, flagLines, helpText, kebab, keysOf, type Schema } from "../core/schema.js";
import { JITTER_SCHEMAS } from "../jitter/schema.js";
import { DEFAULTS, type RetryOptions } from "../policy/options.js";
import { RETRY_SCHEMA } from "../policy/schema.js";
import { kebabName, named, seed, UsageError, withFlags } from "./args.js";

const text = { type: "string" } as const;
const flag = { type: "boolean" } as const;

type FlagConfig = { readonly type: "string" } | { readonly type: "boolean" };

/** A flag for each option of the retry schema and of every strategy that is described as one. */
function flagsOf(schemas: readonly Schema[]): Record<string, FlagConfig> {
  const out: Record<string, FlagConfig> = {};
  for (const schema of schemas) {
    for (const [key, field] of Object.entries(schema.fields)) {
      if (field.flag !== undefined) out[kebab(key)] = field.kind.type === "boolean" ? flag : text;
    }
  }
  return out;
}

const BACKOFFS = Object.values(BACKOFF_SCHEMAS);
const JITTERS = Object.values(JITTER_SCHEMAS);

/** The policy flags, for `parseArgs`: read off the retry options' and the strategies' descriptions. */
export const POLICY_FLAGS: Readonly<Record<string, FlagConfig>> = {
  config: text,
  ...flagsOf([RETRY_SCHEMA]),
  backoff: text,
  ...flagsOf(BACKOFFS),
  jitter: text,
  ...flagsOf(JITTERS),
  seed: text,
};

const strategyName = (schema: Schema) => schema.name.slice(schema.name.indexOf(".") + 1);

/** `--help` lines for a strategy option: which strategies take it, and each one's default. */
function strategyLines(family: readonly Schema[]): string[] {
  const seen = new Map<string, { field: Field; takenBy: string[]; defaults: string[] }>();
  for (const schema of family) {
    for (const [key, field] of Object.entries(schema.fields)) {
      if (field.flag === undefined) continue;
      const entry = seen.get(key) ?? { field, takenBy: [], defaults: [] };
      entry.takenBy.push(strategyName(schema));
      const said = `${field.default ?? "none"}`;
      if (!entry.defaults.includes(said)) entry.defaults.push(said);
      seen.set(key, entry);
    }
  }
  return [...seen].map(([key, { field, takenBy, defaults }]) => {
    const left = `  --${kebab(key)}${field.flag === "" ? "" : ` ${field.flag}`}`;
    const doc =
      key === "max" && family === BACKOFFS
        ? `${takenBy.join(", ")}: ${MAX_HELP}`
        : `${takenBy.join(", ")}: ${helpText(field)} (default ${defaults.join(" or ")})`;
    return `${left.padEnd(HELP_WIDTH)}${left.length >= HELP_WIDTH ? " " : ""}${doc}`;
  });
}

/** A named backoff's cap, as `fromConfig` sets it (`defaultBackoffMax`): one rule for flags and files. */
const MAX_HELP = `the cap on one delay, at least base (default ${DEFAULTS.backoffMax / 1000} s, or the base when larger; Infinity for none; random requires it)`;

const HELP_WIDTH = 25;
const line = (left: string, doc: string) => `${`  ${left}`.padEnd(HELP_WIDTH)}${doc}`;

/** What `--help` says about them. */
export const POLICY_HELP = `Policy (times in ms unless a unit is given: 1.5s, 200ms, 2m; names in kebab-case or camelCase):
${line("--config FILE", "a policy as JSON (the flags below override it)")}
${flagLines(RETRY_SCHEMA, HELP_WIDTH).join("\n")}
${line("--backoff NAME", `${Object.keys(BACKOFF_SCHEMAS).map(kebabName).join(", ")} (default exponential)`)}
${strategyLines(BACKOFFS).join("\n")}
${line("--jitter NAME", `${Object.keys(JITTER_SCHEMAS).map(kebabName).join(", ")} (default full)`)}
${strategyLines(JITTERS).join("\n")}
${line("--seed S", `seeds the randomness, for repeatable jitter: an integer in [0, ${MAX_SEED}]`)}
`;

type Values = Readonly<Record<string, string | boolean | undefined>>;

const BACKOFF_OPTIONS = Object.fromEntries(Object.entries(BACKOFF_SCHEMAS).map(([n, s]) => [n, keysOf(s)]));
const JITTER_OPTIONS = Object.fromEntries(Object.entries(JITTER_SCHEMAS).map(([n, s]) => [n, keysOf(s)]));

function numberFlag(flag: string, value: string): number {
  const n = Number(value);
  if (value.trim() === "" || Number.isNaN(n))
    throw new UsageError(`--${flag} must be a number; got "${value}"`);
  return n;
}

/**
 * A flag's value in the JSON form: times stay text (`fromConfig` reads their units), numbers are read
 * here, lists split at commas; `fromConfig` then checks it as it checks a config file.
 */
function configValue(key: string, field: Field, value: string | boolean): unknown {
  const name = kebab(key);
  if (typeof value === "boolean" || field.ms) return value;
  switch (field.kind.type) {
    case "number":
    case "integer":
    case "limit":
      return numberFlag(name, value);
    case "other":
      // Lists: exponents (numbers) and retryOn (names).
      return key === "exponents"
        ? value.split(",").map((p) => numberFlag(name, p))
        : value.split(",").map((p) => p.trim());
    default:
      return value;
  }
}

/** The flags given for the options of `schemas`, as [option, JSON value]. */
function given(values: Values, schemas: readonly Schema[]): [string, unknown][] {
  const out = new Map<string, unknown>();
  for (const schema of schemas) {
    for (const [key, field] of Object.entries(schema.fields)) {
      const value = values[kebab(key)];
      if (field.flag !== undefined && value !== undefined && !out.has(key)) {
        out.set(key, configValue(key, field, value));
      }
    }
  }
  return [...out];
}

/**
 * The policy the flags (and `--config FILE`) describe, in the JSON form `fromConfig` reads. A strategy
 * parameter that the chosen strategy does not take is an error naming both.
 */
export function policyConfig(values: Values): RetryConfig {
  let config: Record<string, unknown> = {};
  if (typeof values.config === "string") {
    let text: string;
    try {
      text = readFileSync(values.config, "utf8");
    } catch (error) {
      throw new UsageError(`--config: cannot read "${values.config}": ${(error as Error).message}`);
    }
    try {
      config = JSON.parse(text) as Record<string, unknown>;
    } catch (error) {
      throw new UsageError(`--config: "${values.config}" is not valid JSON: ${(error as Error).message}`);
    }
  }
  for (const [key, value] of given(values, [RETRY_SCHEMA])) config[key] = value;
  const named = (flag: string) => (typeof values[flag] === "string" ? (values[flag] as string) : undefined);
  config.backoff = merge(
    "backoff",
    config.backoff,
    named("backoff"),
    given(values, BACKOFFS),
    BACKOFF_OPTIONS,
    "exponential",
  );
  config.jitter = merge(
    "jitter",
    config.jitter,
    named("jitter"),
    given(values, JITTERS),
    JITTER_OPTIONS,
    "full",
  );
  if (config.backoff === undefined) delete config.backoff;
  if (config.jitter === undefined) delete config.jitter;
  return config as RetryConfig;
}

/** Merges a strategy's flags into its JSON form from the config file (flags win). */
function merge(
  what: "backoff" | "jitter",
  fromFile: unknown,
  name: string | undefined,
  flags: [string, unknown][],
  known: Record<string, readonly string[]>,
  fallback: string,
): unknown {
  if (name === undefined && flags.length === 0) return fromFile;
  const base: Record<string, unknown> =
    typeof fromFile === "string"
      ? { name: fromFile }
      : typeof fromFile === "object" && fromFile !== null
        ? { ...fromFile }
        : {};
  if (name !== undefined) {
    const canonical = named(
      name,
      Object.keys(known),
      (all) => `--${what} must be one of ${all}; got "${name}".`,
    );
    if (base.name !== canonical) for (const key of Object.keys(base)) delete base[key];
    base.name = canonical;
  }
  base.name ??= fallback;
  const takes = known[base.name as string] ?? [];
  for (const [key, value] of flags) {
    if (!takes.includes(key)) {
      const list = takes.length === 0 ? "no options" : takes.map((k) => `--${kebab(k)}`).join(", ");
      throw new UsageError(
        `--${kebab(key)} is not an option of ${what} ${String(base.name)}, which takes ${list}`,
      );
    }
    base[key] = value;
  }
  return base;
}

/** The policy flag that set an option ("backoff.base" → "base"), or undefined when a `--config` file did. */
function policyFlag(values: Values, option: string): string | undefined {
  if (option.includes("[")) return undefined;
  const flag = kebab(option.replace(/^(backoff|jitter)\./, ""));
  return flag in POLICY_FLAGS && values[flag] !== undefined ? flag : undefined;
}

/** `retry` options from the flags, validated; with `--seed`, a seeded random. */
export function policyOptions(values: Values): RetryOptions {
  const options = withFlags(
    () => fromConfig(policyConfig(values) as Record<string, unknown>),
    (option) => policyFlag(values, option),
  );
  if (typeof values.seed === "string") {
    options.random = seededRandom(seed(values.seed));
  }
  return options;
}
