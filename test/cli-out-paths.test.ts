// Every path a command writes to is checked before any work: a bad one is one line naming the flag, the
// path and why, with exit status 2, and nothing else happens (no simulation output, no file written).
import { existsSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { UsageError } from "../src/cli/args.js";
import { makeDir, outDirProblem, writingTo } from "../src/cli/out-files.js";
import { runCli } from "./support/commands.js";

const dir = mkdtempSync(join(tmpdir(), "robustly-out-paths-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const file = join(dir, "a-file");
writeFileSync(file, "not a directory\n");
mkdirSync(join(dir, "report-with-dir", "index.html"), { recursive: true });

/** The one line a refused path prints: the flag, the path and why; no stack trace. */
function expectRefused(run: ReturnType<typeof runCli>, flag: string, path: string, why: RegExp): void {
  expect(run.status).toBe(2);
  expect(run.stdout).toBe("");
  const lines = run.stderr.trimEnd().split("\n");
  expect(lines).toHaveLength(1);
  expect(lines[0]).toContain(`${flag} ${path}`);
  expect(lines[0]).toMatch(why);
  expect(run.stderr).not.toMatch(/\n\s+at /);
}

// A long run (the default outage scenario, 1000 clients for 300 s, twice) that would print its table first if
// the path were checked after it.
const simulate = (...args: string[]) => runCli(dir, "simulate", ["--runs", "2", ...args]);

describe("simulate --report", () => {
  it("a path under a file is refused before the simulation runs", () => {
    const path = join(file, "report");
    expectRefused(simulate("--report", path), "--report", path, /a-file is not a directory/);
  });

  it("a path that is a file is refused before the simulation runs", () => {
    expectRefused(simulate("--report", file), "--report", file, /is not a directory/);
  });

  it("a report directory whose index.html is a directory is refused before the simulation runs", () => {
    const path = join(dir, "report-with-dir");
    expectRefused(simulate("--report", path), "--report", path, /index\.html is a directory/);
  });
});

describe("plot --out", () => {
  it("a path under a file is refused, nothing written", () => {
    const path = join(file, "plots");
    expectRefused(runCli(dir, "plot", ["--out", path]), "--out", path, /a-file is not a directory/);
  });

  it("a path that is a file is refused", () => {
    expectRefused(runCli(dir, "plot", ["--out", file]), "--out", file, /is not a directory/);
  });
});

// /sys refuses new entries even to root, and /proc makes a recursive mkdir loop for ever: the check
// probes by making the directory and a file, so both are refused at once, in one line.
describe("directories the system refuses, even to root", () => {
  it("simulate --report under /sys is refused before the run", () => {
    expectRefused(
      simulate("--quiet", "--report", "/sys/robustly-x"),
      "--report",
      "/sys/robustly-x",
      /EPERM|EACCES/,
    );
  });

  it("plot --out /sys/kernel is refused", () => {
    expectRefused(
      runCli(dir, "plot", ["--out", "/sys/kernel"]),
      "--out",
      "/sys/kernel",
      /EPERM|EACCES|EROFS/,
    );
  });

  it("plot --out and simulate --report under /proc are refused, not looped on", () => {
    const started = performance.now();
    expectRefused(
      runCli(dir, "plot", ["--out", "/proc/robustly-x"]),
      "--out",
      "/proc/robustly-x",
      /cannot be made/,
    );
    expectRefused(
      simulate("--report", "/proc/robustly-x/y"),
      "--report",
      "/proc/robustly-x/y",
      /cannot be made/,
    );
    expect(performance.now() - started).toBeLessThan(20_000);
  }, 25_000);
});

describe("the check leaves nothing behind, and a later write error is one line", () => {
  it("outDirProblem makes the missing directories and a file to probe, then removes them", async () => {
    const path = join(dir, "probe", "a", "b");
    expect(await outDirProblem(path, ["index.html"])).toBeUndefined();
    expect(existsSync(join(dir, "probe"))).toBe(false);
  });

  it("makeDir makes the levels one at a time and stops at a level the system refuses", async () => {
    const path = join(dir, "made", "a", "b");
    await makeDir(path);
    expect(statSync(path).isDirectory()).toBe(true);
    await expect(makeDir("/proc/robustly-x/y")).rejects.toThrow();
  });

  it("an error writing the outputs becomes a UsageError naming the flag and the path", async () => {
    const failing = () => mkdir("/sys/robustly-x");
    await expect(writingTo("--out", "/sys/robustly-x", failing)).rejects.toThrow(UsageError);
    await expect(writingTo("--out", "/sys/robustly-x", failing)).rejects.toThrow(
      /^--out \/sys\/robustly-x: cannot write \(E[A-Z]+/,
    );
  });
});
