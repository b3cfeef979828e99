// The package as a user installs it: the exports map, the type declarations, and no runtime dependencies.
import { execFileSync } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("..", import.meta.url));
const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
let outside: string;

beforeAll(() => {
  // `npm test` may run before `npm run build`; the exports map points into dist/.
  const built = ["index.js", "testing.d.ts", "sim/index.js"].every((file) =>
    existsSync(join(root, "dist", file)),
  );
  if (!built) {
    execFileSync(
      process.execPath,
      [join(root, "node_modules", "typescript", "bin", "tsc"), "-p", "tsconfig.build.json"],
      { cwd: root },
    );
  }
  outside = mkdtempSync(join(tmpdir(), "robustly-consumer-"));
  mkdirSync(join(outside, "node_modules"));
  symlinkSync(root, join(outside, "node_modules", "robustly"), "dir");
}, 120_000);

afterAll(() => rmSync(outside, { recursive: true, force: true }));

describe("the published package", () => {
  it("has no runtime dependencies and requires Node 20 or later", () => {
    expect(pkg.dependencies ?? {}).toEqual({});
    expect(pkg.engines.node).toBe(">=20");
    expect(pkg.type).toBe("module");
  });

  it("resolves `robustly`, `robustly/testing` and `robustly/sim` through the exports map, from another project", () => {
    const script = join(outside, "consumer.mjs");
    writeFileSync(
      script,
      [
        'import { retry, wrap, delays, backoff, jitter, TimeoutError, PermanentError } from "robustly";',
        'import { VirtualClock, seededRandom } from "robustly/testing";',
        'import { simulate } from "robustly/sim";',
        'const sim = simulate({ strategies: ["fixed"], clients: [10], duration: 5000, outage: null });',
        "const d = delays({ backoff: backoff.exponential({ base: 1000 }), jitter: jitter.none() }, 3);",
        "const clock = new VirtualClock();",
        "let n = 0;",
        "const p = retry(() => { n += 1; if (n < 3) throw new Error('x'); return n; }, { clock, random: seededRandom(1) });",
        "await clock.runAll();",
        "console.log(JSON.stringify({ d, v: await p, t: typeof wrap, e: [TimeoutError.name, PermanentError.name], s: sim.runs[0].strategy }));",
      ].join("\n"),
    );
    const out = execFileSync(process.execPath, [script], { cwd: outside, encoding: "utf8" });
    expect(JSON.parse(out)).toEqual({
      d: [1000, 2000, 4000],
      v: 3,
      t: "function",
      e: ["TimeoutError", "PermanentError"],
      s: "fixed",
    });
  });

  it("refuses deep imports that the exports map does not list", () => {
    const script = join(outside, "deep.mjs");
    writeFileSync(script, 'await import("robustly/dist/core/clock.js");');
    expect(() => execFileSync(process.execPath, [script], { cwd: outside, stdio: "pipe" })).toThrow(
      /ERR_PACKAGE_PATH_NOT_EXPORTED/,
    );
  });

  it("ships type declarations for both entry points", () => {
    for (const entry of [".", "./testing", "./sim"]) {
      const types = pkg.exports[entry].types as string;
      expect(existsSync(join(root, types))).toBe(true);
    }
    const declarations = readFileSync(join(root, "dist", "index.d.ts"), "utf8");
    expect(declarations).toContain("retry");
    expect(declarations).toContain("RetryOptions");
  });
});
