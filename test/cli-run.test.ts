// `robustly run` with real commands, short real timeouts and generous bounds. Every command writes the pids
// it starts to a file, so the tests can check that no process outlives its attempt.
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { afterEach, beforeEach, describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("..", import.meta.url));
// The commands run in a temporary folder, so tsx is named by its path rather than resolved from there.
const tsx = pathToFileURL(join(root, "node_modules", "tsx", "dist", "loader.mjs")).href;
const cli = ["--import", tsx, join(root, "src/cli/main.ts"), "run"];
let dir: string;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "robustly-run-"));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

function script(name: string, body: string): string {
  const path = join(dir, name);
  writeFileSync(path, `#!/bin/sh\n${body}\n`, { mode: 0o755 });
  return path;
}

function robustlyRun(...args: string[]) {
  const run = spawnSync(process.execPath, [...cli, ...args], {
    cwd: dir,
    encoding: "utf8",
    env: { ...process.env, NODE_NO_WARNINGS: "1" },
    timeout: 30_000,
  });
  return { status: run.status, stdout: run.stdout, stderr: run.stderr };
}

const attempts = () => Number(readFileSync(join(dir, "count"), "utf8").trim());

/** Whether `pid` runs: it exists and is not a zombie (a killed process whose parent has not reaped it). */
function running(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const close = stat.lastIndexOf(")");
    return stat.slice(close + 2, close + 3) !== "Z";
  } catch {
    return false;
  }
}

/** The pids a script recorded that still run, after giving a killed process up to 3 s to go. */
async function leftovers(): Promise<number[]> {
  let text = "";
  try {
    text = readFileSync(join(dir, "pids"), "utf8");
  } catch {
    return [];
  }
  const pids = text.split(/\s+/).filter(Boolean).map(Number);
  for (let waited = 0; waited < 3000; waited += 50) {
    if (!pids.some(running)) return [];
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return pids.filter(running);
}

// Counts its runs in ./count and fails until the Nth.
const failUntil = (n: number) =>
  script(
    "flaky",
    `c=$(cat count 2>/dev/null || echo 0); c=$((c+1)); echo $c > count; echo "run $c"; [ $c -ge ${n} ] && exit 0; exit 1`,
  );

describe("robustly run", () => {
  it("retries a failing command until it succeeds; stdout passes through untouched", () => {
    const run = robustlyRun(
      "--backoff",
      "constant",
      "--base",
      "50ms",
      "--jitter",
      "none",
      "--max-retries",
      "5",
      "--",
      failUntil(3),
    );
    expect(run.status).toBe(0);
    expect(attempts()).toBe(3);
    expect(run.stdout).toBe("run 1\nrun 2\nrun 3\n");
    expect(run.stderr).toBe(
      "robustly: attempt 1/6 failed (exit 1); retrying in 50 ms\nrobustly: attempt 2/6 failed (exit 1); retrying in 50 ms\n",
    );
  });

  it("exits with the last attempt's code when retries run out; --quiet adds nothing", () => {
    const always = script("three", "c=$(cat count 2>/dev/null || echo 0); echo $((c+1)) > count; exit 3");
    const run = robustlyRun("--max-retries", "2", "--backoff", "none", "--quiet", "--", always);
    expect(run.status).toBe(3);
    expect(attempts()).toBe(3);
    expect(run.stderr).toBe("");
  });

  it("--retry-on-exit retries only the codes it lists", () => {
    const run = robustlyRun("--retry-on-exit", "75", "--backoff", "none", "--", failUntil(3));
    expect(run.status).toBe(1);
    expect(attempts()).toBe(1);
    expect(run.stderr).toBe(
      "robustly: attempt 1/4 failed (exit 1); giving up: not retryable (--retry-on, --retry-on-exit)\n",
    );
  });

  it("--timeout ends a hung attempt's whole process group; exit 124; nothing survives", async () => {
    const hang = script("hang", "echo $$ >> pids; sleep 30 & echo $! >> pids; wait");
    const run = robustlyRun("--timeout", "300ms", "--max-retries", "1", "--backoff", "none", "--", hang);
    expect(run.status).toBe(124);
    expect(readFileSync(join(dir, "pids"), "utf8").trim().split(/\s+/)).toHaveLength(4);
    expect(await leftovers()).toEqual([]);
    expect(run.stderr).toContain("attempt 2/2 failed (timed out after 300 ms); giving up");
  });

  it("a command that ignores SIGTERM is killed after the grace period", async () => {
    const stubborn = script(
      "stubborn",
      "trap '' TERM; echo $$ >> pids; sleep 30 & echo $! >> pids; wait; wait",
    );
    const started = Date.now();
    const run = robustlyRun("--timeout", "200ms", "--grace", "300ms", "--max-retries", "0", "--", stubborn);
    expect(run.status).toBe(124);
    expect(await leftovers()).toEqual([]);
    expect(Date.now() - started).toBeLessThan(20_000);
  });

  it("a command that cannot start exits 127 and is not retried", () => {
    const run = robustlyRun("--", join(dir, "missing"));
    expect(run.status).toBe(127);
    expect(run.stderr).toContain("cannot run");
    expect(run.stderr).toContain("giving up");
  });

  it("--shell runs the command through sh", () => {
    const run = robustlyRun("--shell", "--", "echo", "$((6*7))");
    expect(run.status).toBe(0);
    expect(run.stdout).toBe("42\n");
  });

  it("SIGINT stops retrying and reaches the command, whose exit code comes back", async () => {
    const waiting = script(
      "waiting",
      "echo $$ >> pids; trap 'echo got INT; exit 130' INT; echo ready; sleep 30 & echo $! >> pids; wait",
    );
    const child = spawn(process.execPath, [...cli, "--max-retries=-1", "--backoff", "none", "--", waiting], {
      cwd: dir,
      env: { ...process.env, NODE_NO_WARNINGS: "1" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    try {
      let stdout = "";
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no "ready" in time: ${stdout}`)), 20_000);
        child.stdout?.on("data", (chunk) => {
          stdout += String(chunk);
          if (stdout.includes("ready")) {
            clearTimeout(timer);
            resolve();
          }
        });
      });
      child.kill("SIGINT");
      const status = await new Promise<number | null>((resolve) =>
        child.once("exit", (code) => resolve(code)),
      );
      expect(status).toBe(130);
      expect(stdout).toContain("got INT");
      // The sleep in the background got the group's SIGINT too.
      expect(await leftovers()).toEqual([]);
    } finally {
      child.kill("SIGKILL");
    }
  }, 30_000);

  it("a usage mistake is a clear error", () => {
    const none = robustlyRun("--max-retries", "2");
    expect(none.status).toBe(2);
    expect(none.stderr).toContain("robustly run needs a command after --");
    const bad = robustlyRun("--retry-on-exit", "x", "--", "true");
    expect(bad.status).toBe(2);
    expect(bad.stderr).toContain('--retry-on-exit must be an integer >= 1; got "x"');
  });
});
