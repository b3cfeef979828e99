/**
 * The sharing options every shared policy (breaker, budget, responsive backoff) takes, described once.
 */
import type { Field, Schema } from "../core/schema.js";

export const SHARING_FIELDS = {
  store: {
    kind: { type: "other", allowed: "a Store (memoryStore() or redisStore())" },
    doc: "Where the state is shared: redisStore() for a fleet, memoryStore() within one process; without one the state is this object's alone.",
  },
  key: {
    kind: { type: "other", allowed: "a non-empty string naming the shared state" },
    default: "none (required with store)",
    doc: "The name the fleet shares the state under.",
  },
  syncEvery: {
    kind: { type: "number", min: 1, max: 2147483647 },
    ms: true,
    default: "100",
    doc: "Exchange with the store every this many ms.",
  },
  storeTimeout: {
    kind: { type: "number", min: 1, max: 2147483647 },
    ms: true,
    default: "250",
    doc: "A store operation that takes longer fails, and the policy goes on alone.",
  },
  whenStoreDown: {
    kind: { type: "enum", values: ["local", "closed"] },
    default: '"local"',
    doc: "While the store is down: decide alone on the local copy (local) or refuse (closed).",
  },
  expire: {
    kind: { type: "number", min: 1, max: 1e12 },
    ms: true,
    default: "86400000 (a day)",
    doc: "The shared key expires this long after the last write.",
  },
} as const satisfies Record<string, Field>;

/** The sharing options alone, for their checks (each policy labels them with its own name). */
export const SHARING_SCHEMA: Schema = {
  name: "sharing",
  takenBy: "every shared policy",
  where: "sharing",
  label: (key) => key,
  fields: SHARING_FIELDS,
};
