/**
 * What each import adds to an app's bundle, robustly's and its peers', in one run: each row is a small app
 * (one import, one call) bundled as a browser app is (esbuild --bundle --minify --format=esm
 * --platform=browser) and gzipped at level 9. Prints the table, the modules each robustly row pulls in,
 * and the size of `npm pack`; `--check` fails (exit 1) when a row is over its ceiling.
 *
 * An esbuild metafile script rather than size-limit: esbuild is already here (the docs' browser test
 * bundles with it), the metafile names every module a row pulls in and its bytes, which is how a budget
 * that is exceeded gets explained, and it adds no dependency.
 *
 * Run: `npm run size` (builds dist/ first); `npm run size -- --check` as CI does; `--modules N` lists the
 * N largest modules of each robustly row (default 12, 0 for none); `--markdown` prints the table for
 * BENCHMARKS.md.
 *
 * robustly is measured as published: dist/, what an app imports. Each row has a goal, the size the
 * lean-core work aims at, and a ceiling, the size it may not exceed now: CI fails past a ceiling, so that
 * no change makes an import heavier unnoticed; a ceiling is lowered as the rows shrink, and is the goal once
 * the goal is met.
 */
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { gzipSync } from "node:zlib";
import { bundleApp } from "./bundle-app.js";

const { values: args } = parseArgs({
  options: {
    check: { type: "boolean", default: false },
    markdown: { type: "boolean", default: false },
    modules: { type: "string", default: "12" },
  },
});
const modulesShown = Number(args.modules);
if (!Number.isInteger(modulesShown) || modulesShown < 0) {
  throw new Error(`--modules must be an integer >= 0, got ${args.modules}`);
}

const root = fileURLToPath(new URL("..", import.meta.url));
const dist = resolve(root, "dist/index.js");
if (!existsSync(dist)) throw new Error("dist/index.js is missing: run `npm run build` first");

/** Each entry of the package as an app imports it ("robustly/steps"), and the built file it is. */
const ENTRIES: Record<string, string> = Object.fromEntries(
  Object.entries(
    (
      JSON.parse(readFileSync(resolve(root, "package.json"), "utf8")) as {
        exports: Record<string, { import?: string }>;
      }
    ).exports,
  )
    .filter(([, conditions]) => typeof conditions.import === "string")
    .map(([entry, conditions]) => [`robustly${entry.slice(1)}`, resolve(root, conditions.import as string)]),
);

interface Row {
  readonly id: string;
  readonly library: string;
  readonly title: string;
  /** The app: one import and one call. */
  readonly app: string;
  /** The lean-core goal, gzipped bytes; undefined: reported only. */
  readonly goal?: number;
  /** The most the row may weigh now, gzipped bytes (CI fails past it). */
  readonly ceiling?: number;
}

const kB = 1000;
const ROWS: readonly Row[] = [
  {
    id: "retry",
    library: "robustly",
    title: "`retry(op)` alone",
    app: `import { retry } from "robustly"; retry(async () => 42).then(console.log);`,
    goal: 4 * kB,
    ceiling: 13.1 * kB,
  },
  {
    id: "readme",
    library: "robustly",
    title: "the README's quick start (timeout, exponential backoff, full jitter)",
    app: `import { backoff, jitter, retry } from "robustly";
retry(async ({ signal }) => signal.aborted, { timeout: 2000, maxRetries: 5,
  backoff: backoff.exponential({ base: 500, max: 10_000 }), jitter: jitter.full() }).then(console.log);`,
    goal: 5 * kB,
    ceiling: 15.3 * kB,
  },
  {
    id: "pipeline",
    library: "robustly",
    title: "`pipeline(steps.retry(), steps.breaker(circuitBreaker()), steps.timeout(1000))`",
    app: `import { circuitBreaker, pipeline, steps } from "robustly";
pipeline(steps.retry(), steps.breaker(circuitBreaker()), steps.timeout(1000)).execute(async () => 42).then(console.log);`,
    goal: 7 * kB,
    ceiling: 30.2 * kB,
  },
  {
    id: "readme-entries",
    library: "robustly",
    title: "the README's quick start, `backoff` and `jitter` from `robustly/backoff` and `robustly/jitter`",
    app: `import { retry } from "robustly"; import * as backoff from "robustly/backoff"; import * as jitter from "robustly/jitter";
retry(async ({ signal }) => signal.aborted, { timeout: 2000, maxRetries: 5,
  backoff: backoff.exponential({ base: 500, max: 10_000 }), jitter: jitter.full() }).then(console.log);`,
    goal: 5 * kB,
    ceiling: 13.2 * kB,
  },
  {
    id: "pipeline-entries",
    library: "robustly",
    title: "the same pipeline, `steps` from `robustly/steps`",
    app: `import { circuitBreaker, pipeline } from "robustly"; import * as steps from "robustly/steps";
pipeline(steps.retry(), steps.breaker(circuitBreaker()), steps.timeout(1000)).execute(async () => 42).then(console.log);`,
    goal: 7 * kB,
    ceiling: 21 * kB,
  },
  {
    id: "entry",
    library: "robustly",
    title: "the whole `robustly` entry",
    app: `import * as robustly from "robustly"; console.log(robustly);`,
    ceiling: 46.6 * kB,
  },
  {
    id: "breaker",
    library: "robustly",
    title: "`circuitBreaker()` alone",
    app: `import { circuitBreaker } from "robustly"; console.log(circuitBreaker());`,
    ceiling: 12.5 * kB,
  },
  {
    id: "budget",
    library: "robustly",
    title: "`retryBudget()` alone",
    app: `import { retryBudget } from "robustly"; console.log(retryBudget());`,
    ceiling: 9.5 * kB,
  },
  {
    id: "bulkhead",
    library: "robustly",
    title: "`bulkhead({ limit })` alone",
    app: `import { bulkhead } from "robustly"; console.log(bulkhead({ limit: 10 }));`,
    ceiling: 5.5 * kB,
  },
  {
    id: "rate-limiter",
    library: "robustly",
    title: "`rateLimiter({ rate })` alone",
    app: `import { rateLimiter } from "robustly"; rateLimiter({ rate: 10 }).execute(async () => 42).then(console.log);`,
    ceiling: 10 * kB,
  },
  {
    id: "rate-limit-step",
    library: "robustly",
    title: "`pipeline(steps.retry(), steps.rateLimit({ rate }))`, `steps` from `robustly/steps`",
    app: `import { pipeline } from "robustly"; import * as steps from "robustly/steps"; pipeline(steps.retry(), steps.rateLimit({ rate: 10 })).execute(async () => 42).then(console.log);`,
    ceiling: 20.4 * kB,
  },
  {
    id: "adaptive-limit",
    library: "robustly",
    title: "`adaptiveLimit()` alone",
    app: `import { adaptiveLimit } from "robustly"; adaptiveLimit().execute(async () => 42).then(console.log);`,
    ceiling: 6.8 * kB,
  },
  {
    id: "hedge",
    library: "robustly",
    title: "`hedge(op, { delay })` alone",
    app: `import { hedge } from "robustly"; hedge(async () => 42, { delay: 100 }).then(console.log);`,
    ceiling: 7.5 * kB,
  },
  {
    id: "chaos",
    library: "robustly",
    title: "`chaos(op, { fault })` alone",
    app: `import { chaos } from "robustly"; console.log(chaos(async () => 42, { fault: { rate: 0.1, error: () => new Error("x") } }));`,
    ceiling: 4.5 * kB,
  },
  {
    id: "responsive",
    library: "robustly",
    title: "`new ResponsiveBackoff()` alone",
    app: `import { ResponsiveBackoff } from "robustly"; console.log(new ResponsiveBackoff());`,
    ceiling: 8.5 * kB,
  },
  {
    id: "fetch",
    library: "robustly",
    title: "`robustFetch(url)` from `robustly/fetch`",
    app: `import { robustFetch } from "robustly/fetch"; robustFetch("https://example.com").then(console.log);`,
    ceiling: 17.9 * kB,
  },
  {
    id: "p-retry",
    library: "p-retry",
    title: "`pRetry(op)`",
    app: `import pRetry from "p-retry"; pRetry(async () => 42).then(console.log);`,
  },
  {
    id: "cockatiel",
    library: "cockatiel",
    title: "`retry(handleAll, { maxAttempts: 3, backoff: new ExponentialBackoff() }).execute(op)`",
    app: `import { ExponentialBackoff, handleAll, retry } from "cockatiel";
retry(handleAll, { maxAttempts: 3, backoff: new ExponentialBackoff() }).execute(async () => 42).then(console.log);`,
  },
  {
    id: "exponential-backoff",
    library: "exponential-backoff",
    title: "`backOff(op)`",
    app: `import { backOff } from "exponential-backoff"; backOff(async () => 42).then(console.log);`,
  },
  {
    id: "async-retry",
    library: "async-retry",
    title: "`retry(op)`",
    app: `import retry from "async-retry"; retry(async () => 42).then(console.log);`,
  },
];

interface Measured {
  readonly row: Row;
  readonly minified: number;
  readonly gzipped: number;
  /** Each module's bytes in the minified output, largest first. */
  readonly modules: readonly { readonly path: string; readonly bytes: number }[];
}

async function measureRow(row: Row): Promise<Measured> {
  const { output, modules: bundled } = await bundleApp(row.app, root, ENTRIES);
  const modules = bundled
    .map((m) => ({ path: m.path.replace(/^.*?(dist|node_modules)\//, "$1/"), bytes: m.bytes }))
    .sort((a, b) => b.bytes - a.bytes);
  return {
    row,
    minified: output.length,
    gzipped: gzipSync(output, { level: 9 }).length,
    modules,
  };
}

interface Packed {
  readonly size: number;
  readonly unpackedSize: number;
  readonly entryCount: number;
}

function pack(): Packed {
  // --ignore-scripts: dist/ is built already, and `prepare` would build it again.
  const out = execFileSync("npm", ["pack", "--dry-run", "--json", "--ignore-scripts"], {
    cwd: root,
    encoding: "utf8",
    stdio: ["ignore", "pipe", "ignore"],
  });
  const [info] = JSON.parse(out) as Packed[];
  if (info === undefined) throw new Error("npm pack printed nothing");
  return info;
}

const kb = (bytes: number) => `${(bytes / kB).toFixed(1)} kB`;

/**
 * The package's goal: half of what it weighed unpacked before the lean-core work (5.56 MB: dist/ 3.7 MB with
 * a source map per module, src/ 1.4 MB, docs/ 0.46 MB), with go-to-definition into the sources kept.
 */
const UNPACKED_GOAL = 2_780 * kB;

const measured = await Promise.all(ROWS.map(measureRow));
const packed = pack();

const lines: string[] = [];
lines.push(
  "What an app's bundle weighs for one import and one call (esbuild --bundle --minify --format=esm " +
    "--platform=browser, gzip -9; robustly from dist/):",
  "",
  "| library | import | gzipped | minified | goal | ceiling |",
  "| --- | --- | --: | --: | --- | --- |",
);
const failures: string[] = [];
for (const m of measured) {
  const { row } = m;
  const goal =
    row.goal === undefined ? "reported" : `${m.gzipped <= row.goal ? "PASS" : "FAIL"} ≤ ${kb(row.goal)}`;
  const ceiling =
    row.ceiling === undefined ? "" : `${m.gzipped <= row.ceiling ? "within" : "OVER"} ${kb(row.ceiling)}`;
  if (row.ceiling !== undefined && m.gzipped > row.ceiling) {
    failures.push(`${row.library} ${row.title}: ${kb(m.gzipped)} > ceiling ${kb(row.ceiling)}`);
  }
  lines.push(
    `| ${row.library} | ${row.title} | ${kb(m.gzipped)} | ${kb(m.minified)} | ${goal} | ${ceiling} |`,
  );
}
lines.push(
  "",
  `npm pack: ${kb(packed.size)} packed, ${kb(packed.unpackedSize)} unpacked, ${packed.entryCount} files; ` +
    `unpacked ${packed.unpackedSize <= UNPACKED_GOAL ? "PASS" : "FAIL"} ≤ ${kb(UNPACKED_GOAL)} (half of 5,560 kB)`,
);
if (modulesShown > 0 && !args.markdown) {
  for (const m of measured.filter((x) => x.row.goal !== undefined)) {
    lines.push("", `${m.row.title}: ${m.modules.length} modules; the largest, minified bytes:`);
    for (const mod of m.modules.slice(0, modulesShown))
      lines.push(`  ${String(mod.bytes).padStart(6)}  ${mod.path}`);
  }
}
process.stdout.write(`${lines.join("\n")}\n`);
if (args.check && failures.length > 0) {
  process.stderr.write(`size check failed:\n${failures.map((f) => `  ${f}`).join("\n")}\n`);
  process.exitCode = 1;
}
