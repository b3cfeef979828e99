/**
 * The process worker kind: `child_process.fork` of a script that calls `serveWorker`. Full isolation: a
 * process that exits, throws at top level, runs out of memory or is killed (SIGKILL included) is a crash
 * like any other. Every process it starts is reaped before its `stop()` resolves.
 */
import { fork } from "node:child_process";
import { fileURLToPath } from "node:url";
import { OptionError } from "../core/errors.js";
import { knownKeys } from "../core/validate.js";
import { WorkerExitError } from "./errors.js";
import { fromWireError, isProtocolMessage, TAG, VERSION, type WireError } from "./protocol.js";
import { graceOption, scriptOption } from "./thread.js";
import type { WorkerFactory } from "./types.js";

/** What `processWorker` accepts besides the script. */
export interface ProcessWorkerOptions {
  /** Arguments for the script (`process.argv.slice(2)`). */
  args?: string[];
  /** Node options for the process. Default: the parent's `process.execArgv`, as `fork` does. */
  execArgv?: string[];
  /** The process's environment. Default: the parent's. */
  env?: Record<string, string | undefined>;
  /** The working directory. Default: the parent's. */
  cwd?: string;
  /** The child's stdout and stderr: shared with the parent ("inherit", default) or discarded ("ignore"). Its stdin is never connected. */
  stdio?: "inherit" | "ignore";
  /** Grace, in ms, for a graceful stop (its `onStop`) before SIGKILL. Default 1000. */
  stopTimeout?: number;
}

const KEYS = ["args", "execArgv", "env", "cwd", "stdio", "stopTimeout"] as const;
const ignore = () => {};

/**
 * A child process running `file` (with `fork`, over an IPC channel with advanced serialization: messages
 * and replies are structured-cloned), which must call `serveWorker(handler)`. Each restart is a new process.
 * A crash, a sibling's crash or a timeout kills it with SIGKILL; a graceful stop closes its channel, lets
 * `serveWorker`'s `onStop` run, and kills it after `stopTimeout`.
 *
 * @example
 * const pdf = supervise({ worker: processWorker(new URL("./render.js", import.meta.url), { execArgv: ["--max-old-space-size=256"] }) });
 */
export function processWorker<M = unknown, R = unknown>(
  file: string | URL,
  options?: ProcessWorkerOptions,
): WorkerFactory<M, R> {
  const script = scriptOption("processWorker", file);
  knownKeys("processWorker", options, KEYS);
  const path = typeof script === "string" ? script : fileURLToPath(script);
  const stdio = options?.stdio ?? "inherit";
  if (stdio !== "inherit" && stdio !== "ignore") {
    throw new OptionError("processWorker: stdio", stdio, '"inherit" or "ignore"');
  }
  const grace = graceOption("processWorker", options?.stopTimeout ?? 1000);
  const factory: WorkerFactory<M, R> = {
    kind: "process",
    start(context) {
      const child = fork(path, options?.args ?? [], {
        ...(options?.execArgv === undefined ? {} : { execArgv: options.execArgv }),
        ...(options?.env === undefined ? {} : { env: options.env }),
        ...(options?.cwd === undefined ? {} : { cwd: options.cwd }),
        serialization: "advanced",
        stdio: ["ignore", stdio, stdio, "ipc"],
      });
      let exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
      let disconnected = false;
      let gone = false;
      let stopping = false;
      let cause: unknown;
      let resolveGone: () => void = ignore;
      const whenGone = new Promise<void>((resolve) => {
        resolveGone = resolve;
      });
      const onMessage = (value: unknown) => {
        if (!isProtocolMessage(value) || stopping) return;
        const m = value as { type: string; id?: number; reply?: unknown; error?: WireError };
        if (m.type === "ack") context.acknowledge(m.id as number, m.reply as R);
        else if (m.type === "ready") context.ready();
        else if (m.type === "reject") context.reject(m.id as number, fromWireError(m.error as WireError));
        // The process tells why before it exits; the exit itself reports the crash.
        else if (m.type === "crash") cause = fromWireError(m.error as WireError);
      };
      // Gone once it exited (and was reaped) and its channel closed, whichever comes last: the messages it
      // sent before exiting (its crash notice, late acknowledgements) are read before the channel closes.
      // Not 'close': it never comes after the parent disconnected the channel itself.
      const finish = () => {
        if (gone || exit === undefined || !disconnected) return;
        gone = true;
        child.off("message", onMessage);
        child.off("exit", onExit);
        child.off("disconnect", onDisconnect);
        child.off("error", onError);
        if (!stopping) context.crashed(new WorkerExitError("process", exit.code, exit.signal, cause));
        resolveGone();
      };
      const onExit = (code: number | null, signal: NodeJS.Signals | null) => {
        exit = { code, signal };
        finish();
      };
      const onDisconnect = () => {
        disconnected = true;
        if (exit === undefined && !stopping) {
          // It closed its channel but lives on: unreachable, so as good as crashed. Make sure it is dead.
          cause ??= new Error("The process closed its IPC channel");
          child.kill("SIGKILL");
        }
        finish();
      };
      const onError = (error: Error) => {
        // It could not be started at all: no exit will come.
        if (child.pid === undefined && !gone) {
          gone = true;
          if (!stopping) context.crashed(error);
          resolveGone();
        }
      };
      child.on("message", onMessage);
      child.on("exit", onExit);
      child.on("disconnect", onDisconnect);
      child.on("error", onError);
      return {
        pid: child.pid,
        deliver({ id, message, deliveries }) {
          // The callback takes a failed send (the process just died): its exit reports the crash.
          child.send(
            { [TAG]: VERSION, type: "deliver", id, deliveries, message },
            undefined,
            undefined,
            ignore,
          );
        },
        stop(graceful) {
          if (gone || stopping) return whenGone;
          stopping = true;
          if (exit !== undefined) return whenGone;
          if (graceful && grace > 0 && child.connected) {
            // serveWorker exits when its channel closes, after its onStop.
            child.disconnect();
            const cancel = context.clock.setTimer(grace, () => child.kill("SIGKILL"));
            return whenGone.then(cancel);
          }
          child.kill("SIGKILL");
          return whenGone;
        },
      };
    },
  };
  return Object.freeze(factory);
}
