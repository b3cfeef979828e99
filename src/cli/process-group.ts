/**
 * The process group a command of `robustly run` runs in: signals to the whole group, and its end, polled
 * for rather than waited out. A command's background processes outlive it in its group; a timeout, a
 * signal or a failed attempt ends them all, and robustly goes on as soon as none of them runs.
 */
import type { ChildProcess } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";

/** One attempt's command. */
export interface Running {
  child: ChildProcess;
  /** Resolves once the command itself has exited (and was reaped), or could not start. */
  exited: Promise<void>;
  /** Once robustly began ending the group: resolves when none of its processes runs. */
  ending?: Promise<void>;
}

/** The signals that stop robustly: each is passed on to the command's group. */
export const STOP_SIGNALS = ["SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT"] as const;

/** How often robustly looks whether a group it ends is gone: from the first, doubling up to the last, ms. */
const POLL = { first: 10, last: 100 } as const;
/** How long after SIGKILL robustly still waits for the group to go, ms. */
const AFTER_KILL = 2000;

const nap = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Sends `signal` to the process group of `child`; false when the group is gone. */
export function signalGroup(child: ChildProcess, signal: NodeJS.Signals | 0): boolean {
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
 * Whether a process of group `pgid` still runs, as /proc tells (Linux): an exited process that waits to
 * be reaped (a zombie: its parent, often init, reaps it when it gets to it) runs nothing, though a signal
 * to the group still finds it. Undefined where there is no /proc to ask.
 */
function runsInProc(pgid: number): boolean | undefined {
  let names: string[];
  try {
    names = readdirSync("/proc");
  } catch {
    return undefined;
  }
  for (const name of names) {
    const first = name.charCodeAt(0);
    if (first < 48 || first > 57) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${name}/stat`, "utf8");
    } catch {
      continue; // Gone meanwhile.
    }
    // pid (comm) state ppid pgrp …: comm may hold spaces and parentheses, so count from the last ")".
    const [state, , pgrp] = stat.slice(stat.lastIndexOf(")") + 2).split(" ", 3);
    if (Number(pgrp) === pgid && state !== "Z") return true;
  }
  return false;
}

/** Whether a process of `child`'s group still runs. */
function groupRuns(child: ChildProcess): boolean {
  if (!signalGroup(child, 0)) return false;
  return runsInProc(child.pid as number) ?? true;
}

/**
 * Polls until no process of the command's group runs, sending SIGKILL to the group once `grace` ms have
 * passed: robustly goes on as soon as the group is gone, not after the whole grace period.
 */
async function untilGone(running: Running, grace: number): Promise<void> {
  const started = performance.now();
  let killedAt: number | undefined;
  let poll: number = POLL.first;
  while (groupRuns(running.child)) {
    const now = performance.now();
    if (killedAt === undefined) {
      if (now - started >= grace) {
        signalGroup(running.child, "SIGKILL");
        killedAt = now;
      }
    } else if (now - killedAt >= AFTER_KILL) {
      // Killed, yet still found (no /proc to tell a zombie from a process that runs): give up waiting.
      return;
    }
    // Before the kill, no later than the grace ends.
    await nap(killedAt === undefined ? Math.max(1, Math.min(poll, grace - (now - started))) : poll);
    poll = Math.min(poll * 2, POLL.last);
  }
  await running.exited;
}

/**
 * Sends `signal` (SIGTERM by default) to the command's process group and ends it: SIGKILL after `grace` ms
 * to whatever is left of the group, even after the command itself has exited. Resolves once the group is
 * gone; a later call passes its signal on too, and resolves with the first.
 */
export function end(running: Running, grace: number, signal: NodeJS.Signals = "SIGTERM"): Promise<void> {
  signalGroup(running.child, signal);
  running.ending ??= untilGone(running, grace);
  return running.ending;
}
