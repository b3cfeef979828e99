/**
 * What `bulkhead(options)`'s options take, checked when they are given. Their descriptions (docs, `--help`) are in
 * `schema.ts`; a test holds the two to the same options and kinds, so that the texts reach only the
 * bundles that print them.
 */
import type { Checks } from "../core/schema.js";

export const BULKHEAD_CHECKS: Checks = {
  name: "bulkhead",
  where: "bulkhead",
  label: (key) => `bulkhead: ${key}`,
  fields: {
    limit: { kind: { type: "integer", min: 1, max: 1000000000 }, required: true },
    queue: { kind: { type: "integer", min: 0, max: 1000000000 } },
    onCallbackError: { kind: { type: "function" } },
  },
};
