// Every path a command writes to is checked before any work: a bad one is one line naming the flag, the
// path and why, with exit status 2, and nothing else happens (no simulation output, no file written).
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
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
