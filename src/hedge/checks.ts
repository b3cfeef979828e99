/**
 * What `hedge(operation, options)`'s and `steps.hedge(options)`'s options take, checked when they are given. Their descriptions (docs, `--help`) are in
 * `schema.ts`; a test holds the two to the same options and kinds, so that the texts reach only the
 * bundles that print them.
 */
import type { Checks } from "../core/schema.js";

export const HEDGE_CHECKS: Checks = {
  name: "hedge",
  where: "hedge",
  label: (key) => `hedge: ${key}`,
  fields: {
    delay: { kind: { type: "other", allowed: "a number of ms >= 0 or { percentile, of, fallback }" } },
    maxHedges: { kind: { type: "integer", min: 0 } },
    hedgeOnFailure: { kind: { type: "boolean" } },
    budget: { kind: { type: "other", allowed: "a retry budget (from retryBudget())" } },
    signal: { kind: { type: "other", allowed: "an AbortSignal" } },
    onHedge: { kind: { type: "function" } },
    onCallbackError: { kind: { type: "function" } },
    clock: { kind: { type: "other", allowed: "a Clock" } },
    random: { kind: { type: "function" } },
  },
};
