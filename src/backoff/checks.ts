/**
 * What each backoff strategy's options take, checked when a strategy is made. Their descriptions (docs,
 * `--help`, the JSON form) are in `schema.ts`; a test holds the two to the same options and kinds, so that
 * the texts reach only the bundles that print them.
 */
import { type Check, type Checks, strategyChecks } from "../core/schema.js";

const ms = { kind: { type: "number", min: 0 } } as const;
const msOrInfinity = { kind: { type: "number", min: 0, infinity: true } } as const;

/** The backoff strategies' options, by strategy name. */
export const BACKOFF_CHECKS: Readonly<Record<string, Checks>> = strategyChecks("backoff", {
  exponential: { base: ms, max: msOrInfinity, multiplier: { kind: { type: "number", min: 1 } } },
  linear: { base: ms, max: msOrInfinity, interval: ms },
  fibonacci: { base: ms, max: msOrInfinity, step: ms },
  polynomial: {
    base: ms,
    max: msOrInfinity,
    exponents: { kind: { type: "other", allowed: "a non-empty array of finite numbers > 1" } },
    step: ms,
  },
  random: { base: ms, max: msOrInfinity },
  constant: { base: ms },
  none: {},
  slotted: {
    slot: ms,
    ceiling: { kind: { type: "integer", min: 1, max: 1000 } },
    stayAtCeiling: { kind: { type: "boolean" } },
  },
} satisfies Record<string, Record<string, Check>>);
