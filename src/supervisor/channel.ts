/**
 * The supervisor's end of a thread or process worker's channel: what the worker says, handed to the
 * start context of its incarnation.
 */
import { fromWireError, isProtocolMessage, type WireError } from "./protocol.js";
import type { WorkerStartContext } from "./types.js";

/**
 * A listener for the worker's messages: acknowledgements, readiness and rejections go to `context`; a
 * crash notice (sent before the worker exits, whose exit reports the crash) gives its cause to
 * `crashCause`. Anything else, and everything once `stopping()`, is ignored.
 */
export function hearWorker<R>(
  context: WorkerStartContext<R>,
  stopping: () => boolean,
  crashCause: (cause: unknown) => void,
): (value: unknown) => void {
  return (value) => {
    if (!isProtocolMessage(value) || stopping()) return;
    const m = value as { type: string; id?: number; reply?: unknown; error?: WireError };
    if (m.type === "ack") context.acknowledge(m.id as number, m.reply as R);
    else if (m.type === "ready") context.ready();
    else if (m.type === "reject") context.reject(m.id as number, fromWireError(m.error as WireError));
    else if (m.type === "crash") crashCause(fromWireError(m.error as WireError));
  };
}
