/**
 * The wire protocol between a supervisor and a thread or process worker: each message out with its id,
 * its id back once handled, with the reply attached. Every message carries the `robustly`
 * tag, so that a worker script may use the same channel for its own messages. This file imports nothing:
 * the worker side (`serve.ts`) loads it inside every worker.
 */

/** The tag's key on every protocol message. */
export const TAG = "robustly.supervisor";
/** The protocol's version, the tag's value. */
export const VERSION = 1;

/** An error as it crosses the boundary: structured clone keeps only the built-in names, so they are sent apart. */
export interface WireError {
  readonly name: string;
  readonly message: string;
  readonly stack?: string | undefined;
  readonly code?: string | number | undefined;
}

/** Supervisor → worker: handle this message. */
export interface DeliverMessage {
  readonly [TAG]: typeof VERSION;
  readonly type: "deliver";
  readonly id: number;
  readonly deliveries: number;
  readonly message: unknown;
}

/** Supervisor → worker: stop gracefully (run `onStop`, then exit). */
export interface StopMessage {
  readonly [TAG]: typeof VERSION;
  readonly type: "stop";
}

/** Worker → supervisor. */
export type WorkerMessage =
  | { readonly [TAG]: typeof VERSION; readonly type: "ready" }
  | { readonly [TAG]: typeof VERSION; readonly type: "ack"; readonly id: number; readonly reply: unknown }
  | {
      readonly [TAG]: typeof VERSION;
      readonly type: "reject";
      readonly id: number;
      readonly error: WireError;
    }
  | { readonly [TAG]: typeof VERSION; readonly type: "crash"; readonly error: WireError };

/** Whether `value` is a protocol message (of any type). */
export function isProtocolMessage(value: unknown): value is { readonly type: string } {
  return (
    typeof value === "object" &&
    value !== null &&
    (value as Record<string, unknown>)[TAG] === VERSION &&
    typeof (value as { type?: unknown }).type === "string"
  );
}

/** An error, or anything thrown, as plain data. */
export function toWireError(error: unknown): WireError {
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    return {
      name: error.name,
      message: error.message,
      stack: error.stack,
      code: typeof code === "string" || typeof code === "number" ? code : undefined,
    };
  }
  return { name: "Error", message: `a non-Error was thrown: ${String(error)}` };
}

/** An `Error` again, with the worker's name, message, stack and code. */
export function fromWireError(wire: WireError): Error {
  const error = new Error(wire.message);
  Object.defineProperty(error, "name", { value: wire.name, configurable: true, writable: true });
  if (wire.stack !== undefined) error.stack = wire.stack;
  if (wire.code !== undefined) (error as { code?: string | number }).code = wire.code;
  return error;
}
