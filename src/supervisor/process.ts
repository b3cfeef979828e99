/**
 * The process worker kind: `child_process.fork` of a script that calls `serveWorker`. Full isolation: a
 * process that exits, throws at top level, runs out of memory or is killed (SIGKILL included) is a crash
 * like any other. Every process it starts is reaped before its `stop()` resolves.
 */
import { type ChildProcess, fork } from "node:child_process";
import { fileURLToPath } from "node:url";
import { OptionError } from "../core/errors.js";
import { knownKeys } from "../core/validate.js";
import { hearWorker } from "./channel.js";
import { WorkerExitError } from "./errors.js";
import { TAG, VERSION } from "./protocol.js";
import { graceOption, scriptOption } from "./thread.js";
import type { Envelope, WorkerFactory, WorkerHandle, WorkerStartContext } from "./types.js";

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
  const spawn: Spawn = { path, args: options?.args ?? [], stdio, grace, options };
  const factory: WorkerFactory<M, R> = {
    kind: "process",
    start: (context) => new ProcessIncarnation<M, R>(spawn, context),
  };
  return Object.freeze(factory);
}

/** How `processWorker` forks each incarnation. */
interface Spawn {
  readonly path: string;
  readonly args: string[];
  readonly stdio: "inherit" | "ignore";
  readonly grace: number;
  readonly options: ProcessWorkerOptions | undefined;
}

/** One process of a process worker, from its fork until it is reaped. */
class ProcessIncarnation<M, R> implements WorkerHandle<M> {
  readonly pid: number | undefined;
  readonly #child: ChildProcess;
  readonly #context: WorkerStartContext<R>;
  readonly #grace: number;
  #exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  #disconnected = false;
  #gone = false;
  #stopping = false;
  #cause: unknown;
  #resolveGone: () => void = ignore;
  readonly #whenGone = new Promise<void>((resolve) => {
    this.#resolveGone = resolve;
  });
  readonly #onMessage: (value: unknown) => void;

  constructor(spawn: Spawn, context: WorkerStartContext<R>) {
    const { options, stdio } = spawn;
    this.#context = context;
    this.#grace = spawn.grace;
    const child = fork(spawn.path, spawn.args, {
      ...(options?.execArgv === undefined ? {} : { execArgv: options.execArgv }),
      ...(options?.env === undefined ? {} : { env: options.env }),
      ...(options?.cwd === undefined ? {} : { cwd: options.cwd }),
      serialization: "advanced",
      stdio: ["ignore", stdio, stdio, "ipc"],
    });
    this.#child = child;
    // The process tells why before it exits; the exit itself reports the crash.
    this.#onMessage = hearWorker(
      context,
      () => this.#stopping,
      (why) => {
        this.#cause = why;
      },
    );
    child.on("message", this.#onMessage);
    child.on("exit", this.#onExit);
    child.on("disconnect", this.#onDisconnect);
    child.on("error", this.#onError);
    this.pid = child.pid;
  }

  deliver({ id, message, deliveries }: Envelope<M>): void {
    // The callback takes a failed send (the process just died): its exit reports the crash.
    this.#child.send(
      { [TAG]: VERSION, type: "deliver", id, deliveries, message },
      undefined,
      undefined,
      ignore,
    );
  }

  stop(graceful: boolean): Promise<void> {
    if (this.#gone || this.#stopping) return this.#whenGone;
    this.#stopping = true;
    if (this.#exit !== undefined) return this.#whenGone;
    const child = this.#child;
    if (graceful && this.#grace > 0 && child.connected) {
      // serveWorker exits when its channel closes, after its onStop.
      child.disconnect();
      const cancel = this.#context.clock.setTimer(this.#grace, () => child.kill("SIGKILL"));
      return this.#whenGone.then(cancel);
    }
    child.kill("SIGKILL");
    return this.#whenGone;
  }

  /**
   * Gone once it exited (and was reaped) and its channel closed, whichever comes last: the messages it
   * sent before exiting (its crash notice, late acknowledgements) are read before the channel closes.
   * Not 'close': it never comes after the parent disconnected the channel itself.
   */
  #finish(): void {
    const exit = this.#exit;
    if (this.#gone || exit === undefined || !this.#disconnected) return;
    this.#gone = true;
    const child = this.#child;
    child.off("message", this.#onMessage);
    child.off("exit", this.#onExit);
    child.off("disconnect", this.#onDisconnect);
    child.off("error", this.#onError);
    if (!this.#stopping) {
      this.#context.crashed(new WorkerExitError("process", exit.code, exit.signal, this.#cause));
    }
    this.#resolveGone();
  }

  readonly #onExit = (code: number | null, signal: NodeJS.Signals | null): void => {
    this.#exit = { code, signal };
    this.#finish();
  };

  readonly #onDisconnect = (): void => {
    this.#disconnected = true;
    if (this.#exit === undefined && !this.#stopping) {
      // It closed its channel but lives on: unreachable, so as good as crashed. Make sure it is dead.
      this.#cause ??= new Error("The process closed its IPC channel");
      this.#child.kill("SIGKILL");
    }
    this.#finish();
  };

  readonly #onError = (error: Error): void => {
    // It could not be started at all: no exit will come.
    if (this.#child.pid === undefined && !this.#gone) {
      this.#gone = true;
      if (!this.#stopping) this.#context.crashed(error);
      this.#resolveGone();
    }
  };
}
