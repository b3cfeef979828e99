/**
 * The worker side of a thread or process worker: `serveWorker(handler)` in the worker script speaks the
 * protocol to the supervisor: it answers each message, by id, once it has handled it.
 * This file imports only Node and `protocol.ts`, so that every worker loads little.
 */
import { isMainThread, type MessagePort, parentPort } from "node:worker_threads";
import {
  type DeliverMessage,
  isProtocolMessage,
  TAG,
  toWireError,
  VERSION,
  type WorkerMessage,
} from "./protocol.js";
import type { Delivery, Handler } from "./types.js";

/** What `serveWorker` accepts besides the handler. */
export interface ServeOptions {
  /**
   * Runs when the supervisor stops this worker gracefully (`supervisor.stop()`), or a process worker's
   * parent goes away; the worker exits when it settles (or when the supervisor's grace period ends).
   */
  onStop?: () => void | Promise<void>;
}

let serving = false;

/**
 * Serves `handler` in a worker script started by `threadWorker` or `processWorker`: each message the
 * supervisor delivers goes to the handler; its return value is the reply and the acknowledgement; a throw
 * crashes this worker (it exits with code 1, telling the supervisor why), and a `PermanentError` fails just
 * that message. Messages and replies cross by structured clone. Call it once, at the top of the script.
 *
 * @example
 * // worker.js
 * import { serveWorker } from "robustly/supervisor";
 * serveWorker(async (order, { id, deliveries }) => charge(order, { idempotencyKey: id }));
 */
export function serveWorker<M = unknown, R = unknown>(handler: Handler<M, R>, options?: ServeOptions): void {
  if (typeof handler !== "function") {
    throw new TypeError(`serveWorker: handler must be a function; got ${typeof handler}`);
  }
  const onStop = options?.onStop;
  if (onStop !== undefined && typeof onStop !== "function") {
    throw new TypeError(`serveWorker: onStop must be a function; got ${typeof onStop}`);
  }
  if (serving) throw new Error("serveWorker: this worker is already serving a handler");
  const port = isMainThread ? null : parentPort;
  const ipc = typeof process.send === "function";
  if (port === null && !ipc) {
    throw new Error(
      "serveWorker must run in a worker started by threadWorker or processWorker: there is no parent port and no IPC channel",
    );
  }
  serving = true;
  const session = new Session(handler, onStop, port);
  const onMessage = (value: unknown) => session.hear(value);
  if (port !== null) {
    port.on("message", onMessage);
  } else {
    process.on("message", onMessage);
    // The parent went away (or stopped this worker by closing the channel): no orphan is left running.
    process.on("disconnect", () => session.shutdown());
  }
  session.post({ [TAG]: VERSION, type: "ready" });
}

/** The worker's side of the channel: the handler's outcomes told to the supervisor, and the worker's end. */
class Session<M, R> {
  readonly #handler: Handler<M, R>;
  readonly #onStop: (() => unknown) | undefined;
  readonly #port: MessagePort | null;
  // Replies may come after a crash began (other handlers still running): they must not reach the supervisor
  // after the crash notice, whose redelivery they would race.
  #ending = false;
  readonly #controller = new AbortController();

  constructor(handler: Handler<M, R>, onStop: (() => unknown) | undefined, port: MessagePort | null) {
    this.#handler = handler;
    this.#onStop = onStop;
    this.#port = port;
  }

  /** Sends `message` to the supervisor, then calls `then`. */
  post(message: WorkerMessage, then?: () => void): void {
    if (this.#port !== null) {
      this.#port.postMessage(message);
      then?.();
    } else {
      (process.send as NonNullable<typeof process.send>)(message, undefined, undefined, () => then?.());
    }
  }

  /** A message from the supervisor: a message to handle, or a stop. */
  hear(value: unknown): void {
    if (!isProtocolMessage(value)) return;
    if (value.type === "stop") {
      this.shutdown();
      return;
    }
    if (value.type !== "deliver" || this.#ending) return;
    const { id, deliveries, message } = value as unknown as DeliverMessage;
    const delivery: Delivery = { id, deliveries, signal: this.#controller.signal };
    let result: R | Promise<R>;
    try {
      result = this.#handler(message as M, delivery);
    } catch (error) {
      this.#fail(id, error);
      return;
    }
    if (isPromiseLike(result)) {
      result.then(
        (value) => this.#reply(id, value),
        (error: unknown) => this.#fail(id, error),
      );
    } else {
      this.#reply(id, result);
    }
  }

  /** Ends the worker gracefully: its handlers' signals abort, `onStop` runs, and it exits. */
  shutdown(): void {
    if (this.#ending) return;
    this.#ending = true;
    this.#controller.abort(new Error("the supervisor stopped this worker"));
    Promise.resolve()
      .then(() => this.#onStop?.())
      .then(
        () => process.exit(0),
        () => process.exit(1),
      );
  }

  #reply(id: number, value: unknown): void {
    if (this.#ending) return;
    try {
      this.post({ [TAG]: VERSION, type: "ack", id, reply: value });
    } catch (error) {
      // The reply cannot be cloned: the message was handled, but its sender can only get this error.
      this.post({ [TAG]: VERSION, type: "reject", id, error: toWireError(error) });
    }
  }

  #crash(error: unknown): void {
    if (this.#ending) return;
    this.#ending = true;
    this.#controller.abort(error);
    // Tell the supervisor why, then die as a crash would: process.exit ends only the thread in a worker thread.
    this.post({ [TAG]: VERSION, type: "crash", error: toWireError(error) }, () => process.exit(1));
  }

  #fail(id: number, error: unknown): void {
    if (error instanceof Error && error.name === "PermanentError") {
      if (this.#ending) return;
      const cause = (error as { cause?: unknown }).cause;
      this.post({
        [TAG]: VERSION,
        type: "reject",
        id,
        error: toWireError(cause === undefined ? error : cause),
      });
    } else {
      this.#crash(error);
    }
  }
}

function isPromiseLike<T>(value: unknown): value is PromiseLike<T> {
  return (
    (typeof value === "object" || typeof value === "function") &&
    value !== null &&
    typeof (value as { then?: unknown }).then === "function"
  );
}
