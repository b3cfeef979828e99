/** `hedge(operation, options)` and `steps.hedge(options)`, described once (see `src/core/schema.ts`). */
import type { Schema } from "../core/schema.js";

export const HEDGE_SCHEMA: Schema = {
  name: "hedge",
  takenBy:
    "`hedge(operation, options)` and `steps.hedge(options)` (the step takes neither signal, clock nor random: the execution's)",
  where: "hedge",
  label: (key) => `hedge: ${key}`,
  fields: {
    delay: {
      kind: { type: "other", allowed: "a number of ms >= 0 or { percentile, of, fallback }" },
      default: "none (required)",
      doc: "How long an attempt may go unanswered before the next starts, or a percentile of a latencyTracker().",
    },
    maxHedges: {
      kind: { type: "integer", min: 0 },
      default: "1",
      doc: "Hedges at most, besides the first attempt.",
    },
    hedgeOnFailure: {
      kind: { type: "boolean" },
      default: "true",
      doc: "Whether an attempt's failure starts the next hedge at once rather than at the end of the delay.",
    },
    budget: {
      kind: { type: "other", allowed: "a retry budget (from retryBudget())" },
      doc: "A retry budget each hedge draws on, as a retry does.",
    },
    signal: {
      kind: { type: "other", allowed: "an AbortSignal" },
      doc: "Aborts the call: every attempt is aborted with the signal's reason.",
    },
    onHedge: { kind: { type: "function" }, doc: "(event) => void as each hedge starts." },
    onCallbackError: {
      kind: { type: "function" },
      default: "one warning line",
      doc: "Receives what onHedge or a listener threw or rejected with.",
    },
    clock: {
      kind: { type: "other", allowed: "a Clock" },
      default: "the real clock",
      doc: "Where the delays run.",
    },
    random: {
      kind: { type: "function" },
      default: "Math.random",
      doc: "Accepted like every policy's; not drawn from.",
    },
  },
};
