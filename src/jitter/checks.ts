/**
 * What each jitter strategy's options take, checked when a jitter is made. Their descriptions are in
 * `schema.ts`; a test holds the two to the same options and kinds, so that the texts reach only the
 * bundles that print them. Each strategy reads its own constant, so that an app's bundle holds the checks
 * of the jitters it calls and not those of the others.
 */
import { type Check, type Checks, strategyCheck } from "../core/schema.js";

const ms = { kind: { type: "number", min: 0 } } as const;
const msOrInfinity = { kind: { type: "number", min: 0, infinity: true } } as const;
const mode = { kind: { type: "enum", values: ["uniform", "choice"] } } as const;
const check = (name: string, fields: Readonly<Record<string, Check>>) =>
  strategyCheck("jitter", name, fields);

export const FULL_CHECKS = /* @__PURE__ */ check("full", { mode });
export const EQUAL_CHECKS = /* @__PURE__ */ check("equal", { mode });
export const DECORRELATED_AWS_CHECKS = /* @__PURE__ */ check("decorrelatedAws", {
  base: ms,
  max: msOrInfinity,
});
export const DECORRELATED_POLLY_CHECKS = /* @__PURE__ */ check("decorrelatedPolly", {
  base: ms,
  max: msOrInfinity,
  multiplier: { kind: { type: "number", min: 1 } },
});
export const NORMAL_CHECKS = /* @__PURE__ */ check("normal", {
  sigma: { kind: { type: "number", min: 0 } },
  stddev: ms,
});
export const PROPORTIONAL_CHECKS = /* @__PURE__ */ check("proportional", {
  spread: { kind: { type: "number", min: 0, max: 1 } },
  maxSpread: msOrInfinity,
});

/** The jitter strategies' options, by strategy name. */
export const JITTER_CHECKS: Readonly<Record<string, Checks>> = {
  none: /* @__PURE__ */ check("none", {}),
  full: FULL_CHECKS,
  equal: EQUAL_CHECKS,
  decorrelated: /* @__PURE__ */ check("decorrelated", {}),
  decorrelatedAws: DECORRELATED_AWS_CHECKS,
  decorrelatedPolly: DECORRELATED_POLLY_CHECKS,
  normal: NORMAL_CHECKS,
  proportional: PROPORTIONAL_CHECKS,
};
