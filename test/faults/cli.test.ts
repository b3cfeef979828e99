// The command line against what a real system does to it: signals of every kind, commands that leave
// processes behind, servers that redirect or do not answer, and files that are not what they seem. Real
// processes, short real timeouts, generous bounds.
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { killLeftovers, leftovers, runCli, script, startCli } from "../support/commands.js";

let dir: string;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "robustly-faults-"));
});
afterEach(() => {
  killLeftovers(dir);
  rmSync(dir, { recursive: true, force: true });
});

// Records its pid and its background sleep's, says it is ready, and waits. Like any script run without
// job control, its background sleep ignores SIGINT and SIGQUIT: only the kill after the grace ends it.
const WAITING = "echo $$ >> pids; echo ready; sleep 30 & echo $! >> pids; wait";

describe("robustly run and signals", () => {
  it.each([
    ["SIGHUP", 129],
    ["SIGQUIT", 131],
  ] as const)(
    "%s to robustly reaches the command's whole process group, and robustly exits with %i",
    async (signal, status) => {
      const waiting = script(dir, "waiting", WAITING);
      const run = startCli(dir, "run", ["--grace", "500ms", "--backoff", "none", "--", waiting]);
      try {
        await run.waitFor("ready");
        run.child.kill(signal);
        expect(await run.exited).toEqual({ code: status, signal: null });
        expect(await leftovers(dir)).toEqual([]);
      } finally {
        run.child.kill("SIGKILL");
      }
    },
  );

  it("SIGTERM during the sleep between attempts exits 143, not the last attempt's code", async () => {
    const failing = script(dir, "failing", "exit 1");
    const run = startCli(dir, "run", [
      "--backoff",
      "constant",
      "--base",
      "30s",
      "--jitter",
      "none",
      "--",
      failing,
    ]);
    try {
      await run.waitFor("retrying in 30 s");
      run.child.kill("SIGTERM");
      expect(await run.exited).toEqual({ code: 143, signal: null });
    } finally {
      run.child.kill("SIGKILL");
    }
  });

  it("--timeout: once the command's process group is gone, robustly exits without waiting out the grace", async () => {
    const hang = script(dir, "hang", "echo $$ >> pids; sleep 30 & echo $! >> pids; wait");
    const started = performance.now();
    const run = runCli(dir, "run", [
      "--timeout",
      "300ms",
      "--grace",
      "20s",
      "--max-retries",
      "0",
      "--",
      hang,
    ]);
    const elapsed = performance.now() - started;
    expect(run.status).toBe(124);
    // Both processes die of the SIGTERM at once; the 20 s grace is for a command that ignores it.
    expect(elapsed).toBeLessThan(12_000);
    expect(await leftovers(dir)).toEqual([]);
  });

  it("a failed attempt's background processes are ended before the next attempt starts", async () => {
    const leaves = script(
      dir,
      "leaves",
      [
        "c=$(cat count 2>/dev/null || echo 0); c=$((c+1)); echo $c > count",
        "if [ $c -eq 1 ]; then sleep 30 >/dev/null 2>&1 & echo $! > background; echo $! >> pids; exit 1; fi",
        // Still there and not a zombie (which init may take a while to reap): it runs beside this attempt.
        's=$(cut -d" " -f3 "/proc/$(cat background)/stat" 2>/dev/null)',
        '[ -n "$s" ] && [ "$s" != Z ] && echo overlap > overlap',
        "exit 0",
      ].join("\n"),
    );
    const run = runCli(dir, "run", ["--backoff", "none", "--max-retries", "1", "--", leaves]);
    expect(run.status).toBe(0);
    expect(readFileSync(join(dir, "count"), "utf8").trim()).toBe("2");
    expect(existsSync(join(dir, "overlap"))).toBe(false);
    expect(await leftovers(dir)).toEqual([]);
  });
});
