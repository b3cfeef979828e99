/**
 * What the sharing options of every shared policy (breaker, budget, responsive backoff) take, checked when they are given. Their descriptions (docs, `--help`) are in
 * `schema.ts`; a test holds the two to the same options and kinds, so that the texts reach only the
 * bundles that print them.
 */
import type { Check, Checks } from "../core/schema.js";

/** The sharing options every shared policy takes. */
export const SHARING_CHECKS = {
  store: { kind: { type: "other", allowed: "a Store (memoryStore() or redisStore())" } },
  key: { kind: { type: "other", allowed: "a non-empty string naming the shared state" } },
  syncEvery: { kind: { type: "number", min: 1, max: 2147483647 } },
  storeTimeout: { kind: { type: "number", min: 1, max: 2147483647 } },
  whenStoreDown: { kind: { type: "enum", values: ["local", "closed"] } },
  expire: { kind: { type: "number", min: 1, max: 1000000000000 } },
} as const satisfies Record<string, Check>;

/** The sharing options alone, for their checks (each policy labels them with its own name). */
export const SHARING_SCHEMA_CHECKS: Checks = {
  name: "sharing",
  where: "sharing",
  label: (key) => key,
  fields: SHARING_CHECKS,
};
