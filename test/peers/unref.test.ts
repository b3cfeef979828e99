// p-retry's unref: a program with nothing else to do exits during a retry's wait instead of waiting it out.
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { OptionError, wrap } from "robustly";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("../..", import.meta.url));
const tsx = pathToFileURL(join(root, "node_modules", "tsx", "dist", "loader.mjs")).href;
const entry = pathToFileURL(join(root, "src", "index.ts")).href;
let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "robustly-unref-"));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Runs a program that starts a call failing once, then waiting `wait` ms before its retry. */
function program(options: string, limit: number): { status: number | null; ms: number } {
  const file = join(dir, `p${Math.random().toString(36).slice(2)}.mts`);
  writeFileSync(
    file,
    `import { backoff, retry } from ${JSON.stringify(entry)};\n` +
      `void retry(() => { throw new Error("down"); }, { backoff: backoff.constant({ base: 60_000 }), ${options} }).catch((e) => {\n` +
      `  if (e.name === "OptionError") process.exit(3);\n` +
      `});\n`,
  );
  const started = performance.now();
  const run = spawnSync(process.execPath, ["--import", tsx, file], { timeout: limit });
  return { status: run.status, ms: performance.now() - started };
}

describe("unref", () => {
  it("with unref: true, the process exits during the minute-long backoff sleep", { timeout: 40_000 }, () => {
    const { status, ms } = program("unref: true", 30_000);
    expect(status).toBe(0);
    // Generous: starting Node with tsx takes a second or two on a busy machine; the sleep is 60 s.
    expect(ms).toBeLessThan(20_000);
  });

  it("without it, the sleep keeps the process alive (it is killed by the test's limit)", () => {
    const { status, ms } = program("unref: false", 8000);
    expect(status).toBeNull();
    expect(ms).toBeGreaterThanOrEqual(8000);
  }, 20_000);

  it("is true or false", () => {
    expect(() => wrap(async () => 1, { unref: "yes" as never })).toThrow(OptionError);
  });
});
