/**
 * For tests that run `robustly` commands for real: the command line to start it with, shell scripts that
 * record the pids they start in `pids`, and the check that none of them outlives its test.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = fileURLToPath(new URL("../..", import.meta.url));
// The commands run in a temporary folder, so tsx is named by its path rather than resolved from there.
const tsx = pathToFileURL(join(root, "node_modules", "tsx", "dist", "loader.mjs")).href;

/** The node arguments that run `robustly COMMAND` from the sources. */
export const cliArgs = (command: string): string[] => [
  "--import",
  tsx,
  join(root, "src/cli/main.ts"),
  command,
];

const env = (extra: NodeJS.ProcessEnv = {}) => ({ ...process.env, NODE_NO_WARNINGS: "1", ...extra });

/** The environment that makes `packages` look uninstalled to a command (see test/fixtures/hide-packages). */
export function hiding(...packages: string[]): NodeJS.ProcessEnv {
  const hook = pathToFileURL(join(root, "test", "fixtures", "hide-packages", "register.mjs")).href;
  return { NODE_OPTIONS: `--import=${hook}`, ROBUSTLY_HIDE_PACKAGES: packages.join(",") };
}

/** Writes an executable shell script `name` in `dir`; returns its path. */
export function script(dir: string, name: string, body: string): string {
  const path = join(dir, name);
  writeFileSync(path, `#!/bin/sh\n${body}\n`, { mode: 0o755 });
  return path;
}

/** Runs `robustly COMMAND ARGS...` in `dir` to its end (30 s at most), with `extraEnv` added. */
export function runCli(dir: string, command: string, args: readonly string[], extraEnv?: NodeJS.ProcessEnv) {
  const run = spawnSync(process.execPath, [...cliArgs(command), ...args], {
    cwd: dir,
    encoding: "utf8",
    env: env(extraEnv),
    timeout: 30_000,
  });
  return { status: run.status, signal: run.signal, stdout: run.stdout, stderr: run.stderr };
}

/** `robustly COMMAND ARGS...` started in `dir`, its output collected, its exit awaited. */
export interface StartedCli {
  readonly child: ChildProcess;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  readonly output: { stdout: string; stderr: string };
  /** Resolves once stdout or stderr contains `text`; rejects after `ms`. */
  waitFor(text: string, ms?: number): Promise<void>;
}

/** Starts `robustly COMMAND ARGS...` in `dir`. The caller kills it when done. */
export function startCli(dir: string, command: string, args: readonly string[]): StartedCli {
  const child = spawn(process.execPath, [...cliArgs(command), ...args], {
    cwd: dir,
    env: env(),
    stdio: ["ignore", "pipe", "pipe"],
  });
  const output = { stdout: "", stderr: "" };
  const listeners = new Set<() => void>();
  const heard = () => {
    for (const listener of listeners) listener();
  };
  child.stdout?.setEncoding("utf8").on("data", (text: string) => {
    output.stdout += text;
    heard();
  });
  child.stderr?.setEncoding("utf8").on("data", (text: string) => {
    output.stderr += text;
    heard();
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once("exit", (code, signal) => resolve({ code, signal })),
  );
  const waitFor = (text: string, ms = 20_000) =>
    new Promise<void>((resolve, reject) => {
      const check = () => {
        if (!(output.stdout + output.stderr).includes(text)) return;
        clearTimeout(timer);
        listeners.delete(check);
        resolve();
      };
      const timer = setTimeout(() => {
        listeners.delete(check);
        reject(new Error(`no "${text}" within ${ms} ms: ${JSON.stringify(output)}`));
      }, ms);
      listeners.add(check);
      check();
    });
  return { child, exited, output, waitFor };
}

/** The state letter of /proc/<pid>/stat ("Z" for a zombie), or undefined once the process is gone. */
export function procState(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
  } catch {
    return undefined;
  }
}

/** Whether `pid` runs: it exists and is not a zombie (a killed process whose parent has not reaped it). */
export function running(pid: number): boolean {
  const state = procState(pid);
  return state !== undefined && state !== "Z";
}

/** The pids the scripts in `dir` recorded in its `pids` file. */
export function recordedPids(dir: string): number[] {
  try {
    return readFileSync(join(dir, "pids"), "utf8").split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

/** The recorded pids that still run, after giving a killed process up to 3 s to go. */
export async function leftovers(dir: string): Promise<number[]> {
  const pids = recordedPids(dir);
  for (let waited = 0; waited < 3000; waited += 50) {
    if (!pids.some(running)) return [];
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return pids.filter(running);
}

/** Kills whatever `dir`'s scripts started that still runs: a failed test leaves nothing behind. */
export function killLeftovers(dir: string): void {
  for (const pid of recordedPids(dir).filter(running)) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // Gone meanwhile.
    }
  }
}
