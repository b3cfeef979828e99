/**
 * The retry policy on the command line: flags named as the options, in kebab-case, mapped onto the same
 * JSON form that `fromConfig` reads (so `--config FILE` and flags mix, flags winning).
 */
import { readFileSync } from "node:fs";
import { fromConfig, type RetryConfig } from "../config/from-config.js";
import { seededRandom } from "../core/random.js";
import type { RetryOptions } from "../policy/options.js";
import { UsageError } from "./args.js";

const text = { type: "string" } as const;

/** The policy flags, for `parseArgs`. */
export const POLICY_FLAGS = {
  config: text,
  timeout: text,
  "max-retries": text,
  "max-elapsed": text,
  backoff: text,
  base: text,
  max: text,
  multiplier: text,
  interval: text,
  step: text,
  exponents: text,
  slot: text,
  ceiling: text,
  "stay-at-ceiling": { type: "boolean" },
  jitter: text,
  mode: text,
  sigma: text,
  stddev: text,
  spread: text,
  "max-spread": text,
  scale: text,
  seed: text,
  "retry-on": text,
} as const;

/** What `--help` says about them. */
export const POLICY_HELP = `Policy (times in ms unless a unit is given: 1.5s, 200ms, 2m):
  --config FILE            a policy as JSON (the flags below override it)
  --timeout T              per-attempt timeout (default: none)
  --max-retries N          retries allowed; negative = no limit (default 3)
  --max-elapsed T            total time allowed since the first attempt (default: no limit)
  --backoff NAME           exponential (default), linear, fibonacci, polynomial, random, constant, none, slotted
  --base T --max T         v_base (default 1s) and v_max (default: none; random needs one)
  --multiplier M           exponential: m >= 1 (default 2)
  --interval T             linear: L (default 1s)
  --step T                 fibonacci and polynomial: the weight of Fib(x) and x^p (default 1s)
  --exponents P,P          polynomial: p1, p2, … each > 1 (default 2)
  --slot T --ceiling N     slotted: slot time (default 10ms) and ceiling (default 10)
  --stay-at-ceiling        slotted: stay at the ceiling instead of resetting
  --jitter NAME            full (default), equal, none, decorrelated, decorrelatedAws, normal, proportional
  --mode MODE              full and equal: uniform (default) or choice
  --sigma F --stddev T     normal: sd as a fraction of the delay (default 0.1), or in time
  --spread F --max-spread T proportional: δ as a share of the delay (default 0.3) and its cap (default 2m)
  --scale F                multiplies every delay (default 1)
  --seed S                 seeds the randomness, for repeatable jitter
  --retry-on NAMES         error names or codes to retry (default: every error)
`;

type Values = {
  [K in keyof typeof POLICY_FLAGS]?: (typeof POLICY_FLAGS)[K] extends { type: "boolean" } ? boolean : string;
};

const BACKOFF_OPTIONS: Record<string, readonly string[]> = {
  exponential: ["base", "max", "multiplier"],
  linear: ["base", "max", "interval"],
  fibonacci: ["base", "max", "step"],
  polynomial: ["base", "max", "exponents", "step"],
  random: ["base", "max"],
  constant: ["base"],
  none: [],
  slotted: ["slot", "ceiling", "stayAtCeiling"],
};
const JITTER_OPTIONS: Record<string, readonly string[]> = {
  none: [],
  full: ["mode"],
  equal: ["mode"],
  decorrelated: [],
  decorrelatedAws: ["base", "max"],
  normal: ["sigma", "stddev"],
  proportional: ["spread", "maxSpread"],
};

const kebab = (name: string) => name.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);

function numberFlag(flag: string, value: string): number {
  const n = Number(value);
  if (value.trim() === "" || Number.isNaN(n))
    throw new UsageError(`--${flag} must be a number; got "${value}"`);
  return n;
}

/**
 * The policy the flags (and `--config FILE`) describe, in the JSON form `fromConfig` reads. A strategy
 * parameter that the chosen strategy does not take is an error naming both.
 */
export function policyConfig(values: Values): RetryConfig {
  let config: Record<string, unknown> = {};
  if (values.config !== undefined) {
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
  if (values.timeout !== undefined) config.timeout = values.timeout;
  if (values["max-retries"] !== undefined)
    config.maxRetries = numberFlag("max-retries", values["max-retries"]);
  if (values["max-elapsed"] !== undefined) config.maxElapsed = values["max-elapsed"];
  if (values.scale !== undefined) config.scale = numberFlag("scale", values.scale);
  if (values["retry-on"] !== undefined) config.retryOn = values["retry-on"].split(",").map((s) => s.trim());

  const backoffFlags: Record<string, unknown> = {
    base: values.base,
    max: values.max,
    multiplier: values.multiplier === undefined ? undefined : numberFlag("multiplier", values.multiplier),
    interval: values.interval,
    step: values.step,
    exponents:
      values.exponents === undefined
        ? undefined
        : values.exponents.split(",").map((p) => numberFlag("exponents", p)),
    slot: values.slot,
    ceiling: values.ceiling === undefined ? undefined : numberFlag("ceiling", values.ceiling),
    stayAtCeiling: values["stay-at-ceiling"],
  };
  const jitterFlags: Record<string, unknown> = {
    mode: values.mode,
    sigma: values.sigma === undefined ? undefined : numberFlag("sigma", values.sigma),
    stddev: values.stddev,
    spread: values.spread === undefined ? undefined : numberFlag("spread", values.spread),
    maxSpread: values["max-spread"],
  };
  const given = (flags: Record<string, unknown>) => Object.entries(flags).filter(([, v]) => v !== undefined);
  config.backoff = merge(
    "backoff",
    config.backoff,
    values.backoff,
    given(backoffFlags),
    BACKOFF_OPTIONS,
    "exponential",
  );
  config.jitter = merge("jitter", config.jitter, values.jitter, given(jitterFlags), JITTER_OPTIONS, "full");
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
    if (!(name in known))
      throw new UsageError(`--${what} must be one of ${Object.keys(known).join(", ")}; got "${name}"`);
    if (base.name !== name) for (const key of Object.keys(base)) delete base[key];
    base.name = name;
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

/** `retry` options from the flags, validated; with `--seed`, a seeded random. */
export function policyOptions(values: Values): RetryOptions {
  const options = fromConfig(policyConfig(values) as Record<string, unknown>);
  if (values.seed !== undefined) {
    const seed = Number(values.seed);
    if (!Number.isInteger(seed)) throw new UsageError(`--seed must be an integer; got "${values.seed}"`);
    options.random = seededRandom(seed);
  }
  return options;
}
