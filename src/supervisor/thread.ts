/**
 * The thread worker kind: a `worker_threads` Worker running a script that calls `serveWorker`. Real
 * isolation within the process: a thread that throws at top level, calls `process.exit`, or runs out of
 * its `resourceLimits` dies alone, and the supervisor sees a crash.
 */
import { type ResourceLimits, Worker } from "node:worker_threads";
import { OptionError } from "../core/errors.js";
import { knownKeys } from "../core/validate.js";
import { hearWorker } from "./channel.js";
import { WorkerExitError } from "./errors.js";
import { TAG, VERSION } from "./protocol.js";
import type { WorkerFactory } from "./types.js";

/** What `threadWorker` accepts besides the script. */
export interface ThreadWorkerOptions {
  /** Passed to the script as `workerData` (structured-cloned). */
  workerData?: unknown;
  /** Node options for the thread. Default: the parent's `process.execArgv`, as Node does. */
  execArgv?: string[];
  /** `process.argv` additions for the thread. */
  argv?: unknown[];
  /** The thread's environment. Default: a copy of the parent's. */
  env?: Record<string, string | undefined>;
  /** Heap limits: a thread that exceeds them dies with ERR_WORKER_OUT_OF_MEMORY, which is a crash. */
  resourceLimits?: ResourceLimits;
  /** Grace, in ms, for a graceful stop (its `onStop`) before the thread is terminated. Default 1000. */
  stopTimeout?: number;
}

const ignore = () => {};

const KEYS = ["workerData", "execArgv", "argv", "env", "resourceLimits", "stopTimeout"] as const;

/** Checks a worker script's location. */
export function scriptOption(where: string, file: unknown): string | URL {
  if (!(typeof file === "string" && file.length > 0) && !(file instanceof URL)) {
    throw new OptionError(`${where}: file`, file, "a path or a file: URL of a worker script");
  }
  return file;
}

/** Checks a grace period in ms: a finite number >= 0. */
export function graceOption(where: string, value: unknown): number {
  if (typeof value !== "number" || !Number.isFinite(value) || value < 0) {
    throw new OptionError(`${where}: stopTimeout`, value, "a finite number >= 0");
  }
  return value;
}

/**
 * A worker thread running `file`, which must call `serveWorker(handler)`. Messages and replies are
 * structured-cloned. Each restart is a new thread, with fresh module state.
 *
 * @example
 * const resize = supervise({ worker: threadWorker(new URL("./resize.js", import.meta.url)), instances: 4 });
 */
export function threadWorker<M = unknown, R = unknown>(
  file: string | URL,
  options?: ThreadWorkerOptions,
): WorkerFactory<M, R> {
  scriptOption("threadWorker", file);
  knownKeys("threadWorker", options, KEYS);
  const grace = graceOption("threadWorker", options?.stopTimeout ?? 1000);
  const { stopTimeout: _, ...workerOptions } = options ?? {};
  const factory: WorkerFactory<M, R> = {
    kind: "thread",
    start(context) {
      const worker = new Worker(file, { ...workerOptions, stdout: false, stderr: false });
      let exited = false;
      let stopping = false;
      let cause: unknown;
      let resolveExit: () => void = () => {};
      const exit = new Promise<void>((resolve) => {
        resolveExit = resolve;
      });
      // The thread tells why before it exits; the exit itself reports the crash.
      const onMessage = hearWorker(
        context,
        () => stopping,
        (why) => {
          cause = why;
        },
      );
      // An uncaught error (a top-level throw, running out of memory): the exit follows.
      const onError = (error: unknown) => {
        cause ??= error;
      };
      const onExit = (code: number) => {
        exited = true;
        worker.off("message", onMessage);
        worker.off("error", onError);
        worker.off("exit", onExit);
        if (!stopping) context.crashed(new WorkerExitError("thread", code, null, cause));
        resolveExit();
      };
      worker.on("message", onMessage);
      worker.on("error", onError);
      worker.on("exit", onExit);
      return {
        threadId: worker.threadId,
        deliver({ id, message, deliveries }) {
          worker.postMessage({ [TAG]: VERSION, type: "deliver", id, deliveries, message });
        },
        stop(graceful) {
          if (exited || stopping) return exit;
          stopping = true;
          if (graceful && grace > 0) {
            worker.postMessage({ [TAG]: VERSION, type: "stop" });
            const cancel = context.clock.setTimer(grace, () => void worker.terminate().catch(ignore));
            return exit.then(cancel);
          }
          void worker.terminate().catch(ignore);
          return exit;
        },
      };
    },
  };
  return Object.freeze(factory);
}
