// The optional peers (vega and vega-lite for charts, ioredis for redisStore({ url }), @opentelemetry/api
// for telemetry): when one is not installed, robustly says once, in one line, what to install. The
// packages are hidden by a module-resolution hook (test/fixtures/hide-packages) in a command of its own,
// or by vitest's module mocks in this process.
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { cliArgs, hiding, runCli } from "./support/commands.js";

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "robustly-optional-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const CHARTS = "needs the optional packages vega and vega-lite: npm install vega vega-lite";

describe("without vega and vega-lite", () => {
  it("robustly plot says in one line what to install, and exits 2 having written nothing", () => {
    const run = runCli(dir, "plot", ["--out", "charts"], hiding("vega", "vega-lite"));
    expect(run.stderr).toBe(`robustly: robustly plot ${CHARTS}\n`);
    expect(run.status).toBe(2);
    expect(existsSync(join(dir, "charts"))).toBe(false);
  });

  it("robustly simulate --report says so before simulating anything", () => {
    const run = runCli(dir, "simulate", ["--report", "out"], hiding("vega"));
    expect(run.stderr).toBe(`robustly: --report ${CHARTS}\n`);
    expect(run.stdout).toBe("");
    expect(run.status).toBe(2);
  });
});

describe("without ioredis", () => {
  it("redisStore({ url }) warns once, in one line, at once, and its exchanges fail naming the package", () => {
    const seen = runModule(
      [
        'import { redisStore } from "./src/store/redis.ts";',
        "const warnings = [];",
        'process.on("warning", (w) => warnings.push(w.name + ": " + w.message));',
        'const first = redisStore({ url: "redis://127.0.0.1:1" });',
        'const second = redisStore({ url: "redis://127.0.0.1:2" });',
        "await new Promise((resolve) => setTimeout(resolve, 50));",
        "const said = [...warnings];",
        'const errors = await Promise.all([first, second].map((s) => s.read("k").catch((e) => e.name + ": " + e.message)));',
        "console.log(JSON.stringify({ said, errors, warnings }));",
      ],
      hiding("ioredis"),
    );
    const message = "redisStore({ url }) needs the optional package ioredis: npm install ioredis";
    const warning = `RobustlyMissingPackageWarning: ${message}`;
    expect(seen).toEqual({
      said: [warning],
      errors: [`MissingPackageError: ${message}`, `MissingPackageError: ${message}`],
      warnings: [warning],
    });
  });
});

describe("without @opentelemetry/api", () => {
  it("robustly/telemetry loads and records: it never imports the package, the Meter is the application's", () => {
    const script = [
      'import { openTelemetry } from "./src/telemetry/index.ts";',
      "const seen = [];",
      "const counter = { add: (v, a) => seen.push(a) };",
      "const meter = { createCounter: () => counter, createHistogram: () => ({ record() {} }) };",
      "const options = openTelemetry({ meter }).instrument({});",
      "options.onSuccess(1, { attempts: 1, retries: 0, elapsed: 0 });",
      "console.log(JSON.stringify(seen));",
    ].join("\n");
    const seen = runModule([script], hiding("@opentelemetry/api"));
    expect(seen).toEqual([{ "robustly.outcome": "success" }]);
  });
});

/**
 * Runs `lines` as an ES module from the repository's root (TypeScript through tsx), with `extraEnv` and
 * Node's own printing of warnings off; returns what it printed, as JSON. It must print nothing else.
 */
function runModule(lines: readonly string[], extraEnv: NodeJS.ProcessEnv): unknown {
  const [, tsx] = cliArgs("simulate");
  const run = spawnSync(
    process.execPath,
    ["--no-warnings", "--import", tsx as string, "--input-type=module", "-e", lines.join("\n")],
    {
      cwd: fileURLToPath(new URL("..", import.meta.url)),
      encoding: "utf8",
      env: { ...process.env, ...extraEnv },
    },
  );
  expect(run.stderr).toBe("");
  return JSON.parse(run.stdout);
}
