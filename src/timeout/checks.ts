/**
 * What `steps.timeout(ms | options)` takes, checked when the step is made. The descriptions are in
 * `schema.ts`; a test holds the two to the same options and kinds.
 */
import type { Checks } from "../core/schema.js";

export const TIMEOUT_CHECKS: Checks = {
  name: "timeout",
  where: "steps.timeout",
  label: (key) => `steps.timeout: ${key}`,
  fields: {
    ms: { kind: { type: "limit", integer: false }, required: true },
    cooperative: { kind: { type: "boolean" } },
    abortOnReturn: { kind: { type: "boolean" } },
    onTimeout: { kind: { type: "function" } },
    onCallbackError: { kind: { type: "function" } },
  },
};
