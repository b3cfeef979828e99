// `robustly run` with real commands, short real timeouts and generous bounds. Every command writes the pids
// it starts to a file, so the tests can check that no process outlives its attempt.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { leftovers as left, runCli, startCli, script as write } from "./support/commands.js";

let dir: string;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "robustly-run-"));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

const script = (name: string, body: string) => write(dir, name, body);
const robustlyRun = (...args: string[]) => runCli(dir, "run", args);
const attempts = () => Number(readFileSync(join(dir, "count"), "utf8").trim());
/** The pids a script recorded that still run, after giving a killed process up to 3 s to go. */
const leftovers = () => left(dir);

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

  it("SIGINT stops retrying and reaches the command's whole group; robustly exits 130", async () => {
    const waiting = script(
      "waiting",
      "echo $$ >> pids; trap 'echo got INT; exit 130' INT; echo ready; sleep 30 & echo $! >> pids; wait",
    );
    const run = startCli(dir, "run", ["--max-retries=-1", "--backoff", "none", "--", waiting]);
    const { child } = run;
    try {
      await run.waitFor("ready");
      child.kill("SIGINT");
      const status = (await run.exited).code;
      const stdout = run.output.stdout;
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
