/** `robustFetch`'s own options, described once (see `src/core/schema.ts`); it takes `retry`'s as well. */
import type { Field, Schema } from "../core/schema.js";
import { RETRY_SCHEMA } from "../policy/schema.js";

export const FETCH_SCHEMA: Schema = {
  name: "robustFetch",
  takenBy: "`robustFetch(input, init, options)` (and every option of `retry`)",
  where: "options",
  label: (key) => key,
  fields: {
    retryOnStatus: {
      kind: { type: "other", allowed: "an array of HTTP status codes (integers 100 to 599)" },
      default: "[408, 425, 429, 500, 502, 503, 504]",
      doc: "The response statuses worth another attempt; [] retries network errors and timeouts only.",
    },
    maxRetryAfter: {
      kind: { type: "number", min: 0 },
      ms: true,
      default: "60000",
      doc: "The longest Retry-After obeyed: a longer hint is cut to it.",
    },
    retryNonIdempotent: {
      kind: { type: "boolean" },
      default: "false",
      doc: "Retry POST, PATCH and the other non-idempotent methods too (otherwise only with an Idempotency-Key header).",
    },
    totalTimeout: {
      kind: { type: "limit", integer: false },
      ms: true,
      default: "120000 (2 min)",
      doc: "The whole call's limit, across every attempt and wait: when it runs out the call rejects with a TimeoutError. Negative or Infinity for none.",
    },
    bodyTimeout: {
      kind: { type: "limit", integer: false },
      ms: true,
      default: "30000 (30 s)",
      doc: "Once the call has resolved, the longest the response's body may go without a chunk; a stalled body errors with a TimeoutError as it is read (not retried). Negative or Infinity for none.",
    },
    ...RETRY_SCHEMA.fields,
    timeout: {
      ...RETRY_SCHEMA.fields.timeout,
      default: "30000 (30 s)",
    } as Field,
  },
};
