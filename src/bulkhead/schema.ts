/** `bulkhead(options)` and `steps.bulkhead(options)`, described once (see `src/core/schema.ts`). */
import type { Schema } from "../core/schema.js";

export const BULKHEAD_SCHEMA: Schema = {
  name: "bulkhead",
  takenBy: "`bulkhead(options)` and `steps.bulkhead(options)`",
  where: "bulkhead",
  label: (key) => `bulkhead: ${key}`,
  fields: {
    limit: {
      kind: { type: "integer", min: 1, max: 1e9 },
      required: true,
      doc: "Executions at once.",
    },
    queue: {
      kind: { type: "integer", min: 0, max: 1e9 },
      default: "0",
      doc: "Executions waiting for a place, first come first served; one whose signal aborts leaves the queue. The rest are refused at once with BulkheadRejectedError.",
    },
    onCallbackError: {
      kind: { type: "function" },
      default: "one warning line",
      doc: "Receives what an event listener threw or rejected with.",
    },
  },
};
