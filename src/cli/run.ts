/**
 * `robustly run -- COMMAND [ARGS...]`: runs a command and retries it by a policy when it fails.
 *
 * The command runs in a process group of its own (as coreutils' `timeout` runs it), so that a timeout
 * or a signal reaches every process it started: SIGTERM to the group, then SIGKILL after a grace period.
 * An attempt starts only once the previous one's processes are gone.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { constants } from "node:os";
import { TimeoutError } from "../core/errors.js";
import type { GiveUpReason } from "../core/report.js";
import { DEFAULTS, type RetryOptions } from "../policy/options.js";
import { retry } from "../retry/retry.js";
import { duration, integer, list, parseCommand, UsageError } from "./args.js";
import { POLICY_FLAGS, POLICY_HELP, policyOptions } from "./policy-flags.js";
import { human } from "./schedule.js";

export const RUN_HELP = `robustly run: run a command, and retry it when it fails

Usage: robustly run [policy flags | --config FILE] [options] -- COMMAND [ARGS...]

  --retry-on-exit CODES  exit codes to retry, e.g. 1,75 (default: any non-zero)
  --grace T              after a timeout or a signal, SIGKILL this long after SIGTERM (default 5s)
  --shell                run COMMAND through /bin/sh -c (default: no shell)
  --quiet                no status lines on stderr
  -h, --help             this help

The command's stdin, stdout and stderr pass through; robustly adds one status line per failed attempt
on stderr. The exit code is the last attempt's: its own code, 128 + N if signal N ended it, 124 if its
timeout ended it, 127 if the command could not be started. Ctrl-C (SIGINT) or SIGTERM stops retrying
and is passed on to the command. The command runs in a process group of its own, so a timeout ends
every process it started; from a terminal it cannot read the keyboard (as with timeout(1)).

${POLICY_HELP}`;

/** What `run` says when the policy stops retrying, by the reason it gives. */
const GIVE_UP: Record<GiveUpReason, string> = {
  retries: "no retries left (--max-retries)",
  elapsed: "the next attempt would start past --max-elapsed",
  "not-retryable": "not retryable (--retry-on, --retry-on-exit)",
  permanent: "a permanent failure",
  budget: "the retry budget is spent",
  aborted: "stopped",
  breaker: "the circuit is open",
};

/** A command attempt that exited unsuccessfully. */
export class ExitError extends Error {
  override readonly name = "ExitError";
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  constructor(code: number | null, signal: NodeJS.Signals | null) {
    super(signal === null ? `exit ${code}` : `killed by ${signal}`);
    this.code = code;
    this.signal = signal;
  }
  /** The exit status a shell would report. */
  get status(): number {
    if (this.signal !== null) return 128 + (constants.signals[this.signal] ?? 0);
    return this.code ?? 1;
  }
}

/** The command could not be started (not found, not executable). Never retried. */
export class SpawnError extends Error {
  override readonly name = "SpawnError";
}

interface Running {
  child: ChildProcess;
  exited: Promise<void>;
}

/** Sends `signal` to the process group of `child`; false when the group is gone. */
function signalGroup(child: ChildProcess, signal: NodeJS.Signals | 0): boolean {
  if (child.pid === undefined) return false;
  try {
    // The group outlives its leader when the command left background processes behind.
    process.kill(-child.pid, signal);
    return true;
  } catch {
    return false;
  }
}

/**
 * Sends `signal` (SIGTERM by default) to the command's process group, then SIGKILL after `grace` ms to
 * whatever is left of the group, even after the command itself has exited.
 */
function stop(running: Running, grace: number, signal: NodeJS.Signals = "SIGTERM"): void {
  signalGroup(running.child, signal);
  const timer = setTimeout(() => signalGroup(running.child, "SIGKILL"), grace);
  running.exited.then(() => {
    // Nothing left in the group: no need to wait out the grace period.
    if (!signalGroup(running.child, 0)) clearTimeout(timer);
  });
}

/** The attempts of one `robustly run`: one command, never two attempts' processes at once. */
class Attempts {
  readonly controller = new AbortController();
  /** The attempt running now. */
  current: Running | undefined;
  /** Resolves once the last attempt's processes are gone. */
  previous: Promise<void> = Promise.resolve();
  /** The first signal robustly received. */
  received: NodeJS.Signals | undefined;

  constructor(
    readonly file: string,
    readonly args: readonly string[],
    readonly grace: number,
  ) {}

  /** Stops retrying on a signal robustly received, and passes it on to the command. */
  signal(signal: NodeJS.Signals): void {
    this.received ??= signal;
    // The command gets the signal itself (then SIGKILL after the grace period), before the abort below
    // ends the attempt, whose own abort handling would send SIGTERM instead.
    if (this.current !== undefined) stop(this.current, this.grace, signal);
    this.controller.abort(new Error(`received ${signal}`));
  }

  /** One attempt: runs the command; resolves when it exits with 0, rejects otherwise. */
  async run(signal: AbortSignal): Promise<void> {
    // Never two attempts at once: wait until the previous attempt's processes are gone. This
    // attempt's timeout may run out meanwhile; then it must not start anything.
    await this.previous;
    if (this.controller.signal.aborted) throw this.controller.signal.reason;
    if (signal.aborted) throw signal.reason;
    let child: ChildProcess;
    try {
      child = spawn(this.file, this.args, { stdio: "inherit", detached: true });
    } catch (error) {
      throw new SpawnError((error as Error).message);
    }
    const outcome = new Promise<void>((resolve, reject) => {
      child.once("error", (error) => reject(new SpawnError(`cannot run ${this.file}: ${error.message}`)));
      child.once("exit", (code, killedBy) => {
        if (code === 0) resolve();
        else reject(new ExitError(code, killedBy));
      });
    });
    const exited = new Promise<void>((resolve) => {
      child.once("exit", () => resolve());
      child.once("error", () => resolve());
    });
    const running: Running = { child, exited };
    this.current = running;
    this.previous = exited;
    // A timeout ends the attempt with SIGTERM; a signal robustly received was passed on already.
    const onAbort = () => {
      if (this.received === undefined) stop(running, this.grace);
    };
    signal.addEventListener("abort", onAbort, { once: true });
    try {
      await outcome;
    } finally {
      signal.removeEventListener("abort", onAbort);
      if (this.current === running) this.current = undefined;
    }
  }
}

/**
 * The exit status of `robustly run` once the policy gave up on `failure` (`last`: the last attempt's
 * error): the last attempt's own after a signal robustly received, else by what ended it.
 */
function exitStatus(failure: unknown, last: unknown, received: NodeJS.Signals | undefined): number {
  if (received !== undefined) {
    return last instanceof ExitError ? last.status : 128 + (constants.signals[received] ?? 0);
  }
  if (failure instanceof ExitError) return failure.status;
  if (failure instanceof TimeoutError) return 124;
  if (failure instanceof SpawnError) return 127;
  throw failure;
}

/** Whether a failed attempt is retried: not when the command could not start; by exit code with `codes`. */
function retryableBy(codes: readonly number[] | undefined): (error: unknown) => boolean {
  return (error) => {
    if (error instanceof SpawnError) return false;
    if (error instanceof ExitError && codes !== undefined) {
      return error.code !== null && codes.includes(error.code);
    }
    return true;
  };
}

/**
 * The status lines of a run, said with `say`: one per failed attempt. The library decides whether to
 * retry; these only say what it decided. `most` is the retries the top-level policy allows at most.
 */
function statusLines(
  most: number,
  say: (line: string) => void,
): Pick<RetryOptions<void>, "onRetry" | "onGiveUp"> {
  // "attempt 2/4" when retries are counted; just "attempt 2" when they are not.
  const of = most < 0 || most === Number.POSITIVE_INFINITY ? "" : `/${most + 1}`;
  const describe = (error: unknown) =>
    error instanceof TimeoutError
      ? `timed out after ${human(error.timeout)}`
      : error instanceof ExitError
        ? error.message
        : String((error as Error).message ?? error);
  return {
    onRetry: ({ error, attempt, delay }) => {
      say(`attempt ${attempt}${of} failed (${describe(error)}); retrying in ${human(delay)}`);
    },
    onGiveUp: ({ reason, outcome, attempts }) => {
      if (reason === "aborted") return;
      say(`attempt ${attempts}${of} failed (${describe(outcome)}); giving up: ${GIVE_UP[reason]}`);
    },
  };
}

/** Runs `robustly run` with `argv`; resolves with the exit status. */
export async function runRun(
  argv: readonly string[],
  stderr: NodeJS.WritableStream = process.stderr,
): Promise<number> {
  const parsed = parse(argv);
  const v = parsed.values;
  if (v.help === true) {
    process.stdout.write(RUN_HELP);
    return 0;
  }
  const command = parsed.positionals;
  if (command.length === 0)
    throw new UsageError("robustly run needs a command after --, e.g. robustly run -- curl -f URL");
  const options = policyOptions(v);
  const grace = v.grace === undefined ? 5000 : duration("grace", v.grace);
  const retryCodes =
    v["retry-on-exit"] === undefined
      ? undefined
      : list("retry-on-exit", v["retry-on-exit"], (c) => integer("retry-on-exit", c, 1));
  const quiet = v.quiet === true;
  const [file, ...args] = v.shell === true ? ["/bin/sh", "-c", command.join(" ")] : command;

  const attempts = new Attempts(file as string, args, grace);
  const onInt = () => attempts.signal("SIGINT");
  const onTerm = () => attempts.signal("SIGTERM");
  process.on("SIGINT", onInt);
  process.on("SIGTERM", onTerm);

  let last: unknown;
  try {
    await retry((ctx) => attempts.run(ctx.signal), {
      ...options,
      signal: attempts.controller.signal,
      retryOn: retryableBy(retryCodes),
      onError: (error) => {
        last = error;
      },
      ...statusLines(options.maxRetries ?? DEFAULTS.maxRetries, (line) => {
        if (!quiet) stderr.write(`robustly: ${line}\n`);
      }),
    });
    return 0;
  } catch (error) {
    const failure = attempts.received !== undefined ? last : error;
    await attempts.previous;
    const status = exitStatus(failure, last, attempts.received);
    // A command that could not start: the status line said so already, unless --quiet silenced it.
    if (quiet && failure instanceof SpawnError && attempts.received === undefined) {
      stderr.write(`robustly: ${failure.message}\n`);
    }
    return status;
  } finally {
    process.off("SIGINT", onInt);
    process.off("SIGTERM", onTerm);
  }
}

function parse(argv: readonly string[]) {
  return parseCommand("run", {
    args: [...argv],
    strict: true,
    allowPositionals: true,
    options: {
      ...POLICY_FLAGS,
      "retry-on-exit": { type: "string" },
      grace: { type: "string" },
      shell: { type: "boolean" },
      quiet: { type: "boolean" },
      help: { type: "boolean", short: "h" },
    },
  });
}
