/**
 * `robustly run -- COMMAND [ARGS...]`: runs a command and retries it by a policy when it fails.
 *
 * The command runs in a process group of its own (as coreutils' `timeout` runs it), so that a timeout
 * or a signal reaches every process it started: SIGTERM (or the signal) to the group, then SIGKILL after a
 * grace period, polling until the group is gone. A failed attempt's group is ended the same way, so an
 * attempt starts only once every process of the previous one is gone.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { constants } from "node:os";
import { TimeoutError } from "../core/errors.js";
import type { GiveUpReason } from "../core/report.js";
import { DEFAULTS } from "../policy/options.js";
import { retry } from "../retry/retry.js";
import { duration, integer, list, parseCommand, UsageError } from "./args.js";
import { POLICY_FLAGS, POLICY_HELP, policyOptions } from "./policy-flags.js";
import { end, type Running, STOP_SIGNALS } from "./process-group.js";
import { human } from "./schedule.js";

export const RUN_HELP = `robustly run: run a command, and retry it when it fails

Usage: robustly run [policy flags | --config FILE] [options] -- COMMAND [ARGS...]

  --retry-on-exit CODES  exit codes to retry, e.g. 1,75 (default: any non-zero)
  --grace T              after a timeout, a signal or a failed attempt, SIGKILL what still runs of the
                         command's processes this long after SIGTERM (default 5s)
  --shell                run COMMAND through /bin/sh -c (default: no shell)
  --quiet                no status lines on stderr
  -h, --help             this help

The command's stdin, stdout and stderr pass through; robustly adds one status line per failed attempt
on stderr. The exit code is the last attempt's: its own code, 128 + N if signal N ended it, 124 if its
timeout ended it, 127 if the command could not be started. Ctrl-C (SIGINT), SIGTERM, SIGHUP or SIGQUIT
stops retrying, is passed on to the command's process group (SIGKILL after the grace period), and
robustly exits with 128 + the signal's number. The command runs in a process group of its own, so a
timeout ends every process it started, and the processes a failed attempt leaves behind are ended
before the next attempt (SIGTERM, then SIGKILL after the grace period); from a terminal it cannot read
the keyboard (as with timeout(1)).

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

  const controller = new AbortController();
  // The last attempt, until its every process is gone.
  let current: Running | undefined;
  let previous: Promise<void> = Promise.resolve();
  let received: NodeJS.Signals | undefined;
  const onSignal = (signal: NodeJS.Signals) => {
    received ??= signal;
    // The command's group gets the signal itself (then SIGKILL after the grace period), before the abort
    // below ends the attempt, whose own abort handling would send SIGTERM instead.
    if (current !== undefined) void end(current, grace, signal);
    controller.abort(new Error(`received ${signal}`));
  };
  for (const signal of STOP_SIGNALS) process.on(signal, onSignal);

  // For the status lines only: the attempts the top-level policy allows at most (the library decides).
  const most = options.maxRetries ?? DEFAULTS.maxRetries;
  // "attempt 2/4" when retries are counted; just "attempt 2" when they are not.
  const of = most < 0 || most === Number.POSITIVE_INFINITY ? "" : `/${most + 1}`;
  const describe = (error: unknown) =>
    error instanceof TimeoutError
      ? `timed out after ${human(error.timeout)}`
      : error instanceof ExitError
        ? error.message
        : String((error as Error).message ?? error);
  const say = (line: string) => {
    if (!quiet) stderr.write(`robustly: ${line}\n`);
  };

  const retryable = (error: unknown): boolean => {
    if (error instanceof SpawnError) return false;
    if (error instanceof ExitError && retryCodes !== undefined) {
      return error.code !== null && retryCodes.includes(error.code);
    }
    return true;
  };

  try {
    await retry(
      async (ctx) => {
        // Never two attempts at once: wait until the previous attempt's processes are gone. This
        // attempt's timeout may run out meanwhile; then it must not start anything.
        await previous;
        if (controller.signal.aborted) throw controller.signal.reason;
        if (ctx.signal.aborted) throw ctx.signal.reason;
        let child: ChildProcess;
        try {
          child = spawn(file as string, args, { stdio: "inherit", detached: true });
        } catch (error) {
          throw new SpawnError((error as Error).message);
        }
        const outcome = new Promise<void>((resolve, reject) => {
          child.once("error", (error) => reject(new SpawnError(`cannot run ${file}: ${error.message}`)));
          child.once("exit", (code, signal) => {
            if (code === 0) resolve();
            else reject(new ExitError(code, signal));
          });
        });
        const exited = new Promise<void>((resolve) => {
          child.once("exit", () => resolve());
          child.once("error", () => resolve());
        });
        const running: Running = { child, exited };
        current = running;
        // The next attempt waits until this one is over: the command exited and, when it failed (a timeout
        // or a signal included), every process it left behind is gone too, ended with SIGTERM.
        previous = outcome.then(
          () => exited,
          () => end(running, grace),
        );
        void previous.then(() => {
          if (current === running) current = undefined;
        });
        // A timeout ends the attempt with SIGTERM; a signal robustly received was passed on already.
        const onAbort = () => {
          if (received === undefined) void end(running, grace);
        };
        ctx.signal.addEventListener("abort", onAbort, { once: true });
        try {
          await outcome;
        } finally {
          ctx.signal.removeEventListener("abort", onAbort);
        }
      },
      {
        ...options,
        signal: controller.signal,
        retryOn: retryable,
        // The library decides whether to retry; this only says what it decided.
        onRetry: ({ error, attempt, delay }) => {
          say(`attempt ${attempt}${of} failed (${describe(error)}); retrying in ${human(delay)}`);
        },
        onGiveUp: ({ reason, outcome, attempts }) => {
          if (reason === "aborted") return;
          say(`attempt ${attempts}${of} failed (${describe(outcome)}); giving up: ${GIVE_UP[reason]}`);
        },
      },
    );
    return 0;
  } catch (failure) {
    await previous;
    // As a shell reports a job that a signal ended, whatever the command made of the signal.
    if (received !== undefined) return 128 + (constants.signals[received] ?? 0);
    if (failure instanceof ExitError) return failure.status;
    if (failure instanceof TimeoutError) return 124;
    if (failure instanceof SpawnError) {
      // The status line said it already, unless --quiet silenced it.
      if (quiet) stderr.write(`robustly: ${failure.message}\n`);
      return 127;
    }
    throw failure;
  } finally {
    for (const signal of STOP_SIGNALS) process.off(signal, onSignal);
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
