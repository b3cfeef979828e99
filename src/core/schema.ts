/**
 * One description per options type. Each option is written down with what it takes (its `Check`, in the
 * folder's `checks.ts`) and, beside it in `schema.ts`, its unit, its default and what it means; the checks
 * that run when options are given read the first alone, so that an app's bundle carries no description,
 * while the JSON form (`fromConfig`), the command line's flags and `--help`, and the option tables in the
 * docs read the whole. A test holds each `schema.ts` to its `checks.ts` (the same options, in the same
 * order, taking the same kinds), so none of them can say something another does not.
 */
import { OptionError } from "./errors.js";
import { knownKeys } from "./validate.js";

/** What an option takes. The checks and the "allowed" text of errors and docs both come from here. */
export type Kind =
  /** A number >= `min` (> `min` with `exclusive`), <= `max`; `infinity` allows Infinity. */
  | {
      readonly type: "number";
      readonly min: number;
      readonly max?: number;
      readonly exclusive?: boolean;
      readonly infinity?: boolean;
    }
  /** An integer >= `min`, <= `max`. */
  | { readonly type: "integer"; readonly min: number; readonly max?: number }
  /** A limit that a negative number or Infinity switches off. */
  | { readonly type: "limit"; readonly integer: boolean }
  | { readonly type: "boolean" }
  | { readonly type: "enum"; readonly values: readonly string[] }
  | { readonly type: "function" }
  /** Anything else (an AbortSignal, a backoff, a store): checked by the code that takes it. */
  | { readonly type: "other"; readonly allowed: string };

/**
 * What a check needs of an option: what it takes, and whether it is required. The checks that run when
 * options are given read only this, so that the texts written for the docs and `--help` (`Field`) reach an
 * app's bundle only when the app imports what prints them.
 */
export interface Check {
  readonly kind: Kind;
  /** Must be given: leaving it out is an error. */
  readonly required?: boolean;
}

/** An option described in full: its check, and what the docs, `--help` and the JSON form say of it. */
export interface Field extends Check {
  /** What it means, in one sentence or two (the docs' "Meaning" column). */
  readonly doc: string;
  /** What `--help` says of it, when shorter than `doc`. */
  readonly brief?: string;
  /** The default as the docs show it; left out, "none" (or "required"). */
  readonly default?: string;
  /** A time in milliseconds: config files and flags also take a unit ("1.5s"). */
  readonly ms?: boolean;
  /** On the command line as `--kebab-name VALUE`, VALUE shown as this ("T", "N", "F"); left out, not a flag. */
  readonly flag?: string;
  /** Part of the JSON form `fromConfig` reads. */
  readonly config?: boolean;
}

/** The checks of an options type: what its options take, without their descriptions. */
export interface Checks<F extends Check = Check> {
  /** The options type, as the docs and tests call it: "retry", "breaker", … */
  readonly name: string;
  /** Where an unknown key is reported: "options", "circuitBreaker", … */
  readonly where: string;
  /** How a bad value of `key` is labelled in its error: "timeout", "circuitBreaker: window", … */
  readonly label: (key: string) => string;
  readonly fields: Readonly<Record<string, F>>;
}

/** An options type described in full: its checks with every option's texts. */
export interface Schema extends Checks<Field> {
  /** What takes these options, for the docs' heading: "`circuitBreaker(options)`". */
  readonly takenBy: string;
}

/** The option names of a schema, in the order they are described. */
export function keysOf(schema: Checks): readonly string[] {
  return Object.keys(schema.fields);
}

/** Rejects a key the schema does not describe, naming the nearest one it does. */
export function checkKeys(schema: Checks, options: unknown, where = schema.where): void {
  knownKeys(where, options, keysOf(schema));
}

/** A bound as people write it: 1e9 rather than 1000000000. */
const bound = (n: number) => {
  const short = n.toExponential().replace("e+", "e");
  return Math.abs(n) >= 1e6 && /^-?\d+e\d+$/.test(short) ? short : String(n);
};

const range = (k: { min: number; max?: number; exclusive?: boolean; infinity?: boolean }, what: string) => {
  if (k.max !== undefined) return `${what} in ${k.exclusive ? "(" : "["}${bound(k.min)}, ${bound(k.max)}]`;
  return `${what} ${k.exclusive ? ">" : ">="} ${bound(k.min)}${k.infinity ? " (Infinity allowed)" : ""}`;
};

/** What a kind of option allows, as errors and docs say it. */
export function allowed(kind: Kind): string {
  switch (kind.type) {
    case "number":
      return range(kind, kind.infinity ? "a number" : "a finite number");
    case "integer":
      return range(kind, "an integer");
    case "limit":
      return `${kind.integer ? "an integer" : "a number"} (negative or Infinity = no limit)`;
    case "boolean":
      return "true or false";
    case "enum":
      return kind.values.length === 2
        ? kind.values.map((v) => JSON.stringify(v)).join(" or ")
        : `one of ${kind.values.map((v) => JSON.stringify(v)).join(", ")}`;
    case "function":
      return "a function";
    case "other":
      return kind.allowed;
  }
}

function fits(kind: Kind, value: unknown): boolean {
  switch (kind.type) {
    // A number and an integer differ only in which numbers they take between their bounds.
    case "number":
    case "integer":
      return (
        typeof value === "number" &&
        (kind.type === "integer"
          ? Number.isInteger(value)
          : !Number.isNaN(value) && (kind.infinity === true || Number.isFinite(value))) &&
        (kind.type === "number" && kind.exclusive ? value > kind.min : value >= kind.min) &&
        (kind.max === undefined || value <= kind.max)
      );
    case "limit":
      return (
        typeof value === "number" &&
        !Number.isNaN(value) &&
        (!kind.integer || Number.isInteger(value) || !Number.isFinite(value))
      );
    case "enum":
      return typeof value === "string" && kind.values.includes(value);
    case "other":
      return true;
    default:
      // "boolean" and "function" are what typeof answers.
      return typeof value === kind.type;
  }
}

/**
 * The value of option `key` checked against its description (undefined passes, for the caller's default);
 * a limit comes back as Infinity when switched off. `label` overrides the schema's label (a rule's path).
 */
export function read<T = unknown>(schema: Checks, key: string, value: unknown, label?: string): T {
  const field = schema.fields[key];
  if (field === undefined) throw new TypeError(`${schema.name} has no option ${key}`);
  if (value === undefined) {
    if (field.required)
      throw new OptionError(label ?? schema.label(key), value, `${allowed(field.kind)} (required)`);
    return value as T;
  }
  if (!fits(field.kind, value)) {
    throw new OptionError(label ?? schema.label(key), value, allowed(field.kind));
  }
  if (field.kind.type === "limit" && (value as number) < 0) return Number.POSITIVE_INFINITY as T;
  // -0 is the number it is: 0.
  if (value === 0) return 0 as T;
  return value as T;
}

/**
 * `value` itself once it fits option `key` (else the error `read` throws): for a value the caller has
 * defaulted already, kept as it was given (-0 stays -0).
 */
export function checked<T>(schema: Checks, key: string, value: T): T {
  read(schema, key, value);
  return value;
}

/** Checks every key and every described value of `options` at once. */
export function checkAll(schema: Checks, options: unknown): void {
  checkKeys(schema, options);
  if (options === undefined) return;
  for (const [key, value] of Object.entries(options as Record<string, unknown>)) read(schema, key, value);
}

const cell = (text: string) => text.replace(/\|/g, "\\|");

/** The docs' table of a schema's options: name, what it takes, default, meaning. */
export function optionsTable(schema: Schema): string {
  const rows = Object.entries(schema.fields).map(([key, field]) => {
    const takes = `${allowed(field.kind)}${field.ms ? ", ms" : ""}`;
    const fallback = field.default ?? (field.required ? "required" : "none");
    return `| \`${key}\` | ${cell(takes)} | ${cell(fallback)} | ${cell(field.doc)} |`;
  });
  return ["| Option | Takes | Default | Meaning |", "| --- | --- | --- | --- |", ...rows].join("\n");
}

/** "max-retries" for "maxRetries". */
export const kebab = (name: string): string => name.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);

/** What `--help` says of a field: its brief, else its doc, without the final full stop, lower case first. */
export function helpText(field: Field): string {
  const text = (field.brief ?? field.doc).replace(/\.$/, "");
  return /^[A-Z][a-z]/.test(text) ? text.charAt(0).toLowerCase() + text.slice(1) : text;
}

/** `--help` lines for the options of a schema that are flags: "  --max-retries N   retries allowed … (default 3)". */
export function flagLines(schema: Schema, width = 25): string[] {
  return Object.entries(schema.fields)
    .filter(([, field]) => field.flag !== undefined)
    .map(([key, field]) => {
      const left = `  --${kebab(key)} ${field.flag}`;
      const said = `${helpText(field)} (default ${field.default ?? "none"})`;
      return `${left.padEnd(width)}${left.length >= width ? " " : ""}${said}`;
    });
}

/** A time option in ms, a flag ("T") and part of the JSON form. */
export function msField(doc: string, fallback: string, kind: Kind = { type: "number", min: 0 }): Field {
  return { kind, doc, default: fallback, ms: true, flag: "T", config: true };
}

/**
 * The checks of one strategy of a family (`backoff.exponential`, …). Each strategy's checks are a constant
 * of their own, made by this call marked pure, so that a bundler keeps only those of the strategies an app
 * calls.
 */
export function strategyCheck<F extends Check>(
  family: string,
  name: string,
  fields: Readonly<Record<string, F>>,
): Checks<F> {
  const where = `${family}.${name}`;
  return { name: where, where, label: (key) => `${where}: ${key}`, fields };
}

/** The schemas of a family of strategies (`backoff.exponential`, …), by strategy name. */
export function strategySchemas(
  family: string,
  fields: Readonly<Record<string, Readonly<Record<string, Field>>>>,
): Readonly<Record<string, Schema>> {
  const out: Record<string, Schema> = {};
  for (const [name, described] of Object.entries(fields)) {
    out[name] = { ...strategyCheck(family, name, described), takenBy: `\`${family}.${name}(options)\`` };
  }
  return out;
}
