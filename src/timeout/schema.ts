/** `steps.timeout(ms | options)`, described once (see `src/core/schema.ts`). */
import type { Schema } from "../core/schema.js";

export const TIMEOUT_SCHEMA: Schema = {
  name: "timeout",
  takenBy: "`steps.timeout(ms | options)`",
  where: "steps.timeout",
  label: (key) => `steps.timeout: ${key}`,
  fields: {
    ms: {
      kind: { type: "limit", integer: false },
      ms: true,
      required: true,
      doc: "The time what runs inside gets; when it runs out, its signal aborts with a TimeoutError. Negative or Infinity for none.",
    },
    cooperative: {
      kind: { type: "boolean" },
      default: "false",
      doc: "When the time runs out, only abort the signal and wait for what runs inside to end, its outcome the step's (cockatiel's cooperative timeout); by default the step rejects with the TimeoutError at once.",
    },
    abortOnReturn: {
      kind: { type: "boolean" },
      default: "false",
      doc: "Once what runs inside has answered (a value or an error), abort its signal with an AbortError, so that whatever is still tied to it is let go (cockatiel's abortOnReturn). Through the steps inside too: a retry's or a hedge's, it is the signal of the attempt that answered for the call.",
    },
    onTimeout: {
      kind: { type: "function" },
      doc: "(event) => void when the time runs out; the timeout event's short form.",
    },
    onCallbackError: {
      kind: { type: "function" },
      default: "one warning line",
      doc: "Receives what onTimeout or a listener threw or rejected with.",
    },
  },
};
