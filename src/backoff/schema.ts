/**
 * The options of each backoff strategy, described once: the JSON form (`fromConfig`), the command line's
 * strategy flags and `--help`, and the docs' tables are read off these descriptions, and a test holds
 * each strategy's own checks to them.
 */
import { msField, type Schema, strategySchemas } from "../core/schema.js";

const base = (fallback = "1000") => msField("v_base, the first delay.", fallback);
const max = msField(
  "v_max, the cap on one delay: at least base (a max below base, given or default, is refused).",
  "Infinity",
  { type: "number", min: 0, infinity: true },
);

/** The backoff strategies' options, by strategy name. */
export const BACKOFF_SCHEMAS: Readonly<Record<string, Schema>> = strategySchemas("backoff", {
  exponential: {
    base: base(),
    max,
    multiplier: {
      kind: { type: "number", min: 1 },
      doc: "m, the growth per retry: v_x = min(v_max, v_base × m^x).",
      brief: "m >= 1, the growth per retry",
      default: "2",
      flag: "M",
      config: true,
    },
  },
  linear: {
    base: base(),
    max,
    interval: {
      ...msField("L, the growth per retry: v_x = min(v_max, v_base + L × x).", "1000"),
      brief: "L, the growth per retry",
    },
  },
  fibonacci: {
    base: base(),
    max,
    step: {
      ...msField("The weight of Fib(x): v_x = min(v_max, v_base + step × Fib(x)).", "1000"),
      brief: "the weight of Fib(x) or of each x^p",
    },
  },
  polynomial: {
    base: base(),
    max,
    exponents: {
      kind: { type: "other", allowed: "a non-empty array of finite numbers > 1" },
      doc: "p_1 … p_n: v_x = min(v_max, v_base + step × Σ x^p).",
      brief: "p_1,p_2,… each > 1",
      default: "[2]",
      flag: "P,P",
      config: true,
    },
    step: msField("The weight of each x^p.", "1000"),
  },
  random: { base: base("0"), max: { ...max, default: "none (required)" } },
  constant: { base: base() },
  none: {},
  slotted: {
    slot: {
      ...msField("The slot time: a wait is slot × (2^k − 1), k uniform in [0, s].", "10"),
      brief: "the slot time",
    },
    ceiling: {
      kind: { type: "integer", min: 1, max: 1000 },
      doc: "The highest slot number s reaches.",
      default: "10",
      flag: "N",
      config: true,
    },
    stayAtCeiling: {
      kind: { type: "boolean" },
      doc: "On reaching the ceiling, stay there instead of starting again from slot 1.",
      brief: "stay at the ceiling instead of starting again",
      default: "false",
      flag: "",
      config: true,
    },
  },
});
