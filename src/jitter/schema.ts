/**
 * The options of each jitter strategy, described once (see `src/core/schema.ts`).
 */
import { msField, type Schema, strategySchemas } from "../core/schema.js";

/** The jitter strategies' options, by strategy name. */
export const JITTER_SCHEMAS: Readonly<Record<string, Schema>> = strategySchemas("jitter", {
  none: {},
  full: {
    mode: {
      kind: { type: "enum", values: ["uniform", "choice"] },
      doc: "uniform(0, b), or a coin toss between 0 and b (choice).",
      brief: "uniform or choice",
      default: '"uniform"',
      flag: "MODE",
      config: true,
    },
  },
  equal: {
    mode: {
      kind: { type: "enum", values: ["uniform", "choice"] },
      doc: "b/2 + uniform(0, b/2), or b/2 + a coin toss between 0 and b/2 (choice).",
      brief: "uniform or choice",
      default: '"uniform"',
      flag: "MODE",
      config: true,
    },
  },
  decorrelated: {},
  // No flags of its own: --base and --max are the backoff's.
  decorrelatedAws: {
    base: { ...msField("The smallest delay.", "the backoff's base"), flag: undefined },
    max: {
      ...msField("The cap: at least base when both are given.", "the backoff's max", {
        type: "number",
        min: 0,
        infinity: true,
      }),
      flag: undefined,
    },
  },
  // No flags of its own: --base and --max are the backoff's, and --multiplier the exponential's.
  decorrelatedPolly: {
    base: { ...msField("The median first delay.", "the backoff's base"), flag: undefined },
    max: {
      ...msField("The cap: at least base when both are given.", "the backoff's max", {
        type: "number",
        min: 0,
        infinity: true,
      }),
      flag: undefined,
    },
    multiplier: {
      kind: { type: "number", min: 1 },
      doc: "m, the growth of the median delay per retry (cockatiel's exponent): t = x + uniform(0, 1), f(t) = m^t × tanh(√(4t)), delay = min(max, (f(t_x) − f(t_(x−1))) × base / 1.4).",
      brief: "m >= 1, the growth of the median delay per retry",
      default: "2",
      config: true,
    },
  },
  normal: {
    sigma: {
      kind: { type: "number", min: 0 },
      doc: "The standard deviation as a share of the delay.",
      default: "0.1",
      flag: "F",
      config: true,
    },
    stddev: {
      ...msField("The standard deviation, the same for every delay (instead of sigma).", "none"),
      brief: "the standard deviation in time, instead of sigma",
    },
  },
  proportional: {
    spread: {
      kind: { type: "number", min: 0, max: 1 },
      doc: "δ as a share of the delay: uniform(d − δ, d + δ), δ = min(spread × d, maxSpread).",
      brief: "δ as a share of the delay",
      default: "0.3",
      flag: "F",
      config: true,
    },
    maxSpread: msField("The cap on δ.", "120000", { type: "number", min: 0, infinity: true }),
  },
});
