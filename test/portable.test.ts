// `robustly` runs wherever JavaScript runs. Its bundle for the browser imports no Node.js module, and one
// smoke script (test/fixtures/portable/smoke.ts: retry with a timeout and jitter, a circuit breaker, a
// pipeline of steps, a retrying fetch), bundled once for the browser, gives the same summary in headless
// Chromium, Deno, Bun, Node.js 22 and the machine's Node.js as it does unbundled in this process.
import { execFile, execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { builtinModules } from "node:module";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { smoke } from "./fixtures/portable/smoke.js";
import { type Browser, startChromium } from "./support/chromium.js";

const root = fileURLToPath(new URL("..", import.meta.url));
const at = (...path: string[]) => join(root, ...path);

/** Each entry that claims to run anywhere, and its source (the exports map points at its build). */
const PORTABLE: Record<string, string> = {
  robustly: "src/index.ts",
  "robustly/testing": "src/testing.ts",
  "robustly/steps": "src/pipeline/steps.ts",
  "robustly/backoff": "src/backoff/strategies.ts",
  "robustly/jitter": "src/jitter/strategies.ts",
  "robustly/fetch": "src/http/index.ts",
  "robustly/sim": "src/sim/index.ts",
  "robustly/telemetry": "src/telemetry/index.ts",
  // The Redis store runs wherever its client does; the client (ioredis, loaded from a URL) is not bundled.
  "robustly/redis": "src/store/redis.ts",
};

/** Bundles `entry` for the browser, leaving every Node.js module out, and returns what it imports. */
async function browserImports(entry: string): Promise<{ modules: string[]; packages: string[] }> {
  const result = await build({
    entryPoints: [at(entry)],
    bundle: true,
    platform: "browser",
    format: "esm",
    write: false,
    metafile: true,
    logLevel: "silent",
    external: ["node:*", ...builtinModules, "ioredis"],
  });
  const inputs = Object.entries(result.metafile.inputs);
  return {
    modules: inputs.flatMap(([, input]) => input.imports.filter((i) => i.external).map((i) => i.path)),
    packages: inputs.map(([file]) => file).filter((file) => file.includes("node_modules")),
  };
}

describe("the entry points bundle for the browser", () => {
  it.each(Object.entries(PORTABLE))("%s imports no Node.js module and no package", async (entry, source) => {
    const { modules, packages } = await browserImports(source);
    const node = modules.filter((path) => path.startsWith("node:") || builtinModules.includes(path));
    expect(node).toEqual([]);
    expect(packages).toEqual([]);
    expect(modules).toEqual(entry === "robustly/redis" ? ["ioredis"] : []);
  });

  it("while robustly/supervisor needs Node.js (threads and processes)", async () => {
    const { modules } = await browserImports("src/supervisor/index.ts");
    expect(modules).toEqual(expect.arrayContaining(["node:worker_threads", "node:child_process"]));
  });

  it("and so does robustly/sim/threads, which robustly/sim does not load", async () => {
    const { modules } = await browserImports("src/sim/threads.ts");
    expect(modules).toEqual(expect.arrayContaining(["node:worker_threads"]));
  });
});

let dir: string;
let expected: Awaited<ReturnType<typeof smoke>>;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "robustly-portable-"));
  await build({
    entryPoints: [at("test", "fixtures", "portable", "smoke.ts")],
    bundle: true,
    platform: "browser",
    format: "esm",
    outfile: join(dir, "smoke.mjs"),
    alias: { "robustly/testing": at("src", "testing.ts"), robustly: at("src", "index.ts") },
    logLevel: "silent",
  });
  writeFileSync(
    join(dir, "run.mjs"),
    'import { smoke } from "./smoke.mjs";\nconsole.log(JSON.stringify(await smoke()));\n',
  );
  expected = await smoke();
}, 60_000);

afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Runs `command`; resolves with its stdout, rejects (with its stderr) on a failure or after `ms`. */
function run(
  command: string,
  args: readonly string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv; ms?: number } = {},
): Promise<{ stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    execFile(
      command,
      args,
      { cwd: options.cwd ?? dir, env: options.env ?? process.env, timeout: options.ms ?? 30_000 },
      (error, stdout, stderr) => {
        if (error) reject(new Error(`${command} ${args.join(" ")}: ${error.message}\n${stderr}`));
        else resolve({ stdout, stderr });
      },
    );
  });
}

/** The first of `candidates` that answers `--version`. */
function working(name: string, candidates: readonly string[]): string {
  for (const candidate of candidates) {
    if (!existsSync(candidate)) continue;
    try {
      execFileSync(candidate, ["--version"], { stdio: "ignore", timeout: 30_000 });
      return candidate;
    } catch {}
  }
  throw new Error(`no working ${name} among ${candidates.join(", ")}: run npm ci`);
}

/** `file` in each folder under `parent` (the binary of each platform package installed there). */
const under = (parent: string, file: string) =>
  existsSync(parent) ? readdirSync(parent).map((name) => join(parent, name, file)) : [];

// Deno and Bun are devDependencies: their postinstall scripts put the binary behind node_modules/.bin;
// where install scripts did not run, the binary is still in the platform package.
const deno = () =>
  working("deno", [at("node_modules", ".bin", "deno"), ...under(at("node_modules", "@deno"), "deno")]);
const bun = () =>
  working("bun", [at("node_modules", ".bin", "bun"), ...under(at("node_modules", "@oven"), "bin/bun")]);

/** Node.js 22, from the npm registry into test/fixtures/node22 (see its package.json for why there). */
async function node22(): Promise<string> {
  const fixture = at("test", "fixtures", "node22");
  const binary = join(fixture, "node_modules", `node-${process.platform}-${process.arch}`, "bin", "node");
  if (!existsSync(binary)) {
    await run("npm", ["ci", "--prefer-offline", "--no-audit", "--no-fund", "--loglevel=error"], {
      cwd: fixture,
      ms: 180_000,
    });
  }
  return working("node 22", [binary]);
}

/** Runs the bundled smoke script in a runtime; its summary and its version. */
async function runtime(
  version: (out: string) => string,
  command: string,
  args: readonly string[],
  env: NodeJS.ProcessEnv = {},
) {
  const { stdout: v } = await run(command, ["--version"]);
  const { stdout, stderr } = await run(command, [...args, join(dir, "run.mjs")], {
    env: { ...process.env, NO_COLOR: "1", ...env },
  });
  expect(stderr).toBe("");
  return { version: version(v), summary: JSON.parse(stdout) as unknown };
}

/** The bundled smoke script in a page served on loopback; the page posts its summary back. */
async function chromium() {
  let report: (body: string) => void = () => {};
  const posted = new Promise<string>((resolve) => {
    report = resolve;
  });
  const page = `<!doctype html><meta charset="utf-8"><title>robustly smoke</title>
<script type="module">
const post = (body) => fetch("/result", { method: "POST", body: JSON.stringify(body) });
import("/smoke.mjs")
  .then((module) => module.smoke())
  .then(
    (summary) => post({ summary, version: navigator.userAgent, process: typeof process, Buffer: typeof Buffer }),
    (error) => post({ error: String(error && error.stack ? error.stack : error) }),
  );
</script>`;
  const server: Server = createServer((request, response) => {
    if (request.method === "POST" && request.url === "/result") {
      let body = "";
      request.on("data", (chunk) => {
        body += String(chunk);
      });
      request.on("end", () => {
        response.end();
        report(body);
      });
    } else if (request.url === "/") {
      response.writeHead(200, { "content-type": "text/html" }).end(page);
    } else if (request.url === "/smoke.mjs") {
      response
        .writeHead(200, { "content-type": "text/javascript" })
        .end(readFileSync(join(dir, "smoke.mjs")));
    } else {
      response.writeHead(404).end();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  let browser: Browser | undefined;
  try {
    browser = startChromium([`http://127.0.0.1:${(server.address() as AddressInfo).port}/`], 60_000);
    const ended = browser.done.then((code) => `chromium exited (${code}) before the page reported`);
    const body = await Promise.race([posted, ended.then((message) => Promise.reject(new Error(message)))]);
    const result = JSON.parse(body) as Record<string, unknown>;
    if (result.error !== undefined) throw new Error(`in chromium: ${String(result.error)}`);
    // The page ran without Node.js's globals.
    expect([result.process, result.Buffer]).toEqual(["undefined", "undefined"]);
    return { version: String(/Chrome\/[\d.]+/.exec(String(result.version))?.[0]), summary: result.summary };
  } finally {
    browser?.close();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
}

describe("the same smoke script, bundled for the browser", () => {
  it("does what it says unbundled, in this process", () => {
    expect(expected.retry).toMatchObject({ value: "answer", calls: 3 });
    expect(expected.retry.retries).toEqual([
      expect.stringMatching(/^1: timeout, /),
      expect.stringMatching(/^2: Error, /),
    ]);
    expect(expected.breaker).toEqual({
      outcomes: ["Error", "Error", "BrokenCircuitError", "probe answered"],
      changes: ["closed -> open", "open -> half-open", "half-open -> closed"],
      state: "closed",
    });
    expect(expected.pipeline).toMatchObject({ value: "cached", attempts: 2, breaker: "open" });
    expect(expected.pipeline.virtual).toMatchObject({ error: "TimeoutError", timeout: 10_000, tries: 4 });
    expect(expected.fetch).toMatchObject({ status: 200, body: { ok: true } });
  });

  it.each([
    ["the machine's Node.js", () => runtime((v) => `node ${v.trim()}`, process.execPath, [])],
    ["Node.js 22", async () => runtime((v) => `node ${v.trim()}`, await node22(), [])],
    [
      "Deno",
      () =>
        runtime((v) => v.split("\n")[0] ?? v, deno(), ["run", "--no-prompt"], {
          DENO_DIR: join(dir, "deno"),
          DENO_NO_UPDATE_CHECK: "1",
        }),
    ],
    ["Bun", () => runtime((v) => `bun ${v.trim()}`, bun(), [], { DO_NOT_TRACK: "1" })],
    ["headless Chromium", chromium],
  ])("gives the same summary in %s", { timeout: 240_000 }, async (_name, start) => {
    const { version, summary } = await start();
    expect(version).toMatch(/\d+\.\d+/);
    expect(summary).toEqual(expected);
  });
});
