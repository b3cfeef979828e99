/**
 * What each backoff strategy's options take, checked when a strategy is made. Their descriptions (docs,
 * `--help`, the JSON form) are in `schema.ts`; a test holds the two to the same options and kinds, so that
 * the texts reach only the bundles that print them. Each strategy reads its own constant, so that an app's
 * bundle holds the checks of the strategies it calls and not those of the others.
 */
import { type Check, type Checks, strategyCheck } from "../core/schema.js";

const ms = { kind: { type: "number", min: 0 } } as const;
const msOrInfinity = { kind: { type: "number", min: 0, infinity: true } } as const;
const check = (name: string, fields: Readonly<Record<string, Check>>) =>
  strategyCheck("backoff", name, fields);

export const EXPONENTIAL_CHECKS = /* @__PURE__ */ check("exponential", {
  base: ms,
  max: msOrInfinity,
  multiplier: { kind: { type: "number", min: 1 } },
});
export const LINEAR_CHECKS = /* @__PURE__ */ check("linear", { base: ms, max: msOrInfinity, interval: ms });
export const FIBONACCI_CHECKS = /* @__PURE__ */ check("fibonacci", { base: ms, max: msOrInfinity, step: ms });
export const POLYNOMIAL_CHECKS = /* @__PURE__ */ check("polynomial", {
  base: ms,
  max: msOrInfinity,
  exponents: { kind: { type: "other", allowed: "a non-empty array of finite numbers > 1" } },
  step: ms,
});
export const RANDOM_CHECKS = /* @__PURE__ */ check("random", { base: ms, max: msOrInfinity });
export const CONSTANT_CHECKS = /* @__PURE__ */ check("constant", { base: ms });
export const SLOTTED_CHECKS = /* @__PURE__ */ check("slotted", {
  slot: ms,
  ceiling: { kind: { type: "integer", min: 1, max: 1000 } },
  stayAtCeiling: { kind: { type: "boolean" } },
});

/** The backoff strategies' options, by strategy name. */
export const BACKOFF_CHECKS: Readonly<Record<string, Checks>> = {
  exponential: EXPONENTIAL_CHECKS,
  linear: LINEAR_CHECKS,
  fibonacci: FIBONACCI_CHECKS,
  polynomial: POLYNOMIAL_CHECKS,
  random: RANDOM_CHECKS,
  constant: CONSTANT_CHECKS,
  none: /* @__PURE__ */ check("none", {}),
  slotted: SLOTTED_CHECKS,
};
