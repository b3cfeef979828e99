/**
 * The in-process worker kind: an async handler in this thread. No isolation (a crash is a thrown error or
 * a rejection, and an infinite loop blocks everything), but no cost either, and fully testable on a
 * `VirtualClock`: it waits on nothing but promises.
 */
import { PermanentError } from "../core/errors.js";
import { isFunction } from "../core/validate.js";
import type { Handler, WorkerFactory } from "./types.js";

/** Who a new in-process worker is. */
export interface WorkerInfo {
  /** The worker's index in the group, 0-based. */
  readonly worker: number;
  /** 1 for its first start, 2 after its first restart, … */
  readonly incarnation: number;
  /** Aborts when this incarnation is stopped. */
  readonly signal: AbortSignal;
}

/**
 * An in-process worker. `create` runs on every start, the first and each restart, and returns the handler
 * for that incarnation: state made inside it is fresh after each crash, as an actor's is ("let it crash").
 * If `create` throws or rejects, the start counts as a crash.
 *
 * @example
 * const worker = inProcessWorker(() => {
 *   const seen = new Set<number>(); // fresh on every restart
 *   return async (n: number, { id }) => { seen.add(id); return n * 2; };
 * });
 * const doubler = supervise({ worker });
 */
export function inProcessWorker<M, R>(
  create: (info: WorkerInfo) => Handler<M, R> | Promise<Handler<M, R>>,
): WorkerFactory<M, R> {
  isFunction("inProcessWorker: create", create);
  const factory: WorkerFactory<M, R> = {
    kind: "in-process",
    start(context) {
      const controller = new AbortController();
      let handler: Handler<M, R> | undefined;
      const info: WorkerInfo = Object.freeze({
        worker: context.worker,
        incarnation: context.incarnation,
        signal: controller.signal,
      });
      Promise.resolve()
        .then(() => create(info))
        .then(
          (made) => {
            if (typeof made !== "function") {
              throw new TypeError(
                `inProcessWorker: create must return the handler, a function; got ${typeof made}. Did you pass the handler itself? Use inProcessWorker(() => handler).`,
              );
            }
            handler = made;
            context.ready();
          },
          // The callbacks are ignored once the supervisor stopped this incarnation.
        )
        .catch((error: unknown) => context.crashed(error));
      return {
        deliver({ id, message, deliveries }) {
          const handle = handler as Handler<M, R>;
          const delivery = { id, deliveries, signal: controller.signal };
          // A microtask away, so that a handler never runs inside `send` (which it might call again).
          Promise.resolve()
            .then(() => handle(message, delivery))
            .then(
              (reply) => context.acknowledge(id, reply),
              (error: unknown) => {
                if (error instanceof PermanentError) {
                  context.reject(id, error.cause === undefined ? error : error.cause);
                } else {
                  context.crashed(error);
                }
              },
            );
        },
        stop() {
          // Its handlers cannot be killed: they are told through the signal, and their answers are ignored.
          controller.abort(
            new Error(`worker ${context.worker} (incarnation ${context.incarnation}) was stopped`),
          );
          return Promise.resolve();
        },
      };
    },
  };
  return Object.freeze(factory);
}
