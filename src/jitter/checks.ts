/**
 * What each jitter strategy's options take, checked when a jitter is made. Their descriptions are in
 * `schema.ts`; a test holds the two to the same options and kinds, so that the texts reach only the
 * bundles that print them.
 */
import { type Check, type Checks, strategyChecks } from "../core/schema.js";

const ms = { kind: { type: "number", min: 0 } } as const;
const msOrInfinity = { kind: { type: "number", min: 0, infinity: true } } as const;
const mode = { kind: { type: "enum", values: ["uniform", "choice"] } } as const;

/** The jitter strategies' options, by strategy name. */
export const JITTER_CHECKS: Readonly<Record<string, Checks>> = strategyChecks("jitter", {
  none: {},
  full: { mode },
  equal: { mode },
  decorrelated: {},
  decorrelatedAws: { base: ms, max: msOrInfinity },
  decorrelatedPolly: { base: ms, max: msOrInfinity, multiplier: { kind: { type: "number", min: 1 } } },
  normal: { sigma: { kind: { type: "number", min: 0 } }, stddev: ms },
  proportional: { spread: { kind: { type: "number", min: 0, max: 1 } }, maxSpread: msOrInfinity },
} satisfies Record<string, Record<string, Check>>);
