/**
 * The worker side of a thread or process worker: `serveWorker(handler)` in the worker script speaks the
 * protocol to the supervisor: it answers each message, by id, once it has handled it.
 * This file imports only Node and `protocol.ts`, so that every worker loads little.
 */
import { isMainThread, parentPort } from "node:worker_threads";
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

  const post = (message: WorkerMessage, then?: () => void): void => {
    if (port !== null) {
      port.postMessage(message);
      then?.();
    } else {
      (process.send as NonNullable<typeof process.send>)(message, undefined, undefined, () => then?.());
    }
  };
  // Replies may come after a crash began (other handlers still running): they must not reach the supervisor
  // after the crash notice, whose redelivery they would race.
  let ending = false;
  const controller = new AbortController();

  const reply = (id: number, value: unknown) => {
    if (ending) return;
    try {
      post({ [TAG]: VERSION, type: "ack", id, reply: value });
    } catch (error) {
      // The reply cannot be cloned: the message was handled, but its sender can only get this error.
      post({ [TAG]: VERSION, type: "reject", id, error: toWireError(error) });
    }
  };

  const crash = (error: unknown) => {
    if (ending) return;
    ending = true;
    controller.abort(error);
    // Tell the supervisor why, then die as a crash would: process.exit ends only the thread in a worker thread.
    post({ [TAG]: VERSION, type: "crash", error: toWireError(error) }, () => process.exit(1));
  };

  const fail = (id: number, error: unknown) => {
    if (error instanceof Error && error.name === "PermanentError") {
      if (ending) return;
      const cause = (error as { cause?: unknown }).cause;
      post({ [TAG]: VERSION, type: "reject", id, error: toWireError(cause === undefined ? error : cause) });
    } else {
      crash(error);
    }
  };

  const shutdown = () => {
    if (ending) return;
    ending = true;
    controller.abort(new Error("the supervisor stopped this worker"));
    Promise.resolve()
      .then(() => onStop?.())
      .then(
        () => process.exit(0),
        () => process.exit(1),
      );
  };

  const onMessage = (value: unknown) => {
    if (!isProtocolMessage(value)) return;
    if (value.type === "stop") {
      shutdown();
      return;
    }
    if (value.type !== "deliver" || ending) return;
    const { id, deliveries, message } = value as unknown as DeliverMessage;
    const delivery: Delivery = { id, deliveries, signal: controller.signal };
    let result: R | Promise<R>;
    try {
      result = handler(message as M, delivery);
    } catch (error) {
      fail(id, error);
      return;
    }
    if (isPromiseLike(result)) {
      result.then(
        (value) => reply(id, value),
        (error: unknown) => fail(id, error),
      );
    } else {
      reply(id, result);
    }
  };

  if (port !== null) {
    port.on("message", onMessage);
  } else {
    process.on("message", onMessage);
    // The parent went away (or stopped this worker by closing the channel): no orphan is left running.
    process.on("disconnect", shutdown);
  }
  post({ [TAG]: VERSION, type: "ready" });
}

function isPromiseLike<T>(value: unknown): value is PromiseLike<T> {
  return (
    (typeof value === "object" || typeof value === "function") &&
    value !== null &&
    typeof (value as { then?: unknown }).then === "function"
  );
}
