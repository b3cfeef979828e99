import { OptionError } from "../core/errors.js";
import { type Checks, checked, checkKeys } from "../core/schema.js";
import type { Jitter, JitterFunction, JitterLike } from "./types.js";

/** How full and equal jitter draw: uniformly, as AWS's ("Exponential Backoff And Jitter", 2015), or one of the two ends ("choice"). */
export type JitterMode = "uniform" | "choice";

/** Checks the options of a jitter that takes a `mode` (its `checks`), and reads the mode. */
export function mode(checks: Checks, options: { mode?: JitterMode } | undefined): JitterMode {
  checkKeys(checks, options);
  return checked(checks, "mode", options?.mode ?? "uniform");
}

// The strategy factories themselves (`jitter.full`, …), which must be called, not passed.
const factories = new WeakSet<object>();

/** Registers the built-in factories, so that passing one uncalled fails at once. */
export function markFactories(...fns: readonly object[]): void {
  for (const fn of fns) factories.add(fn);
}

/** Turns any `JitterLike` into a `Jitter`. */
export function toJitter(value: JitterLike, option = "jitter"): Jitter {
  if (typeof value === "function" && factories.has(value)) {
    throw new OptionError(option, value, `a jitter: call the factory, e.g. jitter.${value.name}()`);
  }
  if (typeof value === "function") {
    const fn = value as JitterFunction;
    return {
      name: fn.name || "custom",
      apply: ({ backoff, retries, random }) => fn(backoff.delay(retries, random), random),
    };
  }
  if (value === null || typeof value !== "object" || typeof (value as Jitter).apply !== "function") {
    throw new OptionError(
      option,
      value,
      "a jitter (from jitter.*), an object with an apply(input) method, or a function",
    );
  }
  return value;
}
