/**
 * What each special path of `retry` earns: the first attempt chained to the caller's promise (`#direct` in
 * src/retry/call.ts), and a pipeline of a retry step run at its edge as `retry` runs (`planFirst` in
 * src/retry/step.ts). Each is switched off in a copy of the build (dist/), and the call shapes users write
 * are timed on each copy, in turns, in child processes of their own. A special path stays while it saves
 * at least 10 % of the CPU time of some shape.
 *
 * Run with `npm run bench` (which builds dist/ first), or alone after `npm run build`:
 * `node --import tsx bench/paths.ts [--rounds N] [--calls N]`.
 */
import { execFileSync } from "node:child_process";
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseArgs } from "node:util";

const { values: args } = parseArgs({
  options: { rounds: { type: "string", default: "3" }, calls: { type: "string", default: "150000" } },
});
const rounds = Number(args.rounds);
const calls = Number(args.calls);
if (!Number.isInteger(rounds) || rounds < 1)
  throw new Error(`--rounds must be an integer >= 1, got ${args.rounds}`);
if (!Number.isInteger(calls) || calls < 1000)
  throw new Error(`--calls must be an integer >= 1000, got ${args.calls}`);

const root = fileURLToPath(new URL("..", import.meta.url));
const dist = resolve(root, "dist");

/** A change to one file of a copy of dist/: `from` must be found there, or the bench stops. */
interface Patch {
  readonly file: string;
  readonly from: string;
  readonly to: string;
}

interface Variant {
  readonly id: string;
  readonly title: string;
  /** The special path this variant switches off. */
  readonly path: string;
  readonly patches: readonly Patch[];
}

const VARIANTS: readonly Variant[] = [
  { id: "as-built", title: "as built", path: "", patches: [] },
  {
    id: "no-direct",
    title: "without the first attempt chained to the caller's promise",
    path: "the first attempt chained to the caller's promise (`#direct` in src/retry/call.ts)",
    patches: [
      {
        file: "retry/call.js",
        from: "if (signal === void 0 && this.limit === void 0 && this.#plainFirst()) {",
        to: "if (false) {",
      },
      {
        file: "retry/call.js",
        from: "if ((outer === void 0 || !outer.canAbort) && this.limit === void 0 && this.#plainFirst()) {",
        to: "if (false) {",
      },
    ],
  },
  {
    id: "no-edge-run",
    title: "without a pipeline's retry step running the loop at the edge",
    path: "a pipeline of a retry step (and a timeout) run at its edge as `retry` runs (`planFirst`)",
    patches: [
      {
        file: "pipeline/pipeline.js",
        from: 'typeof planner?.planFirst === "function" ? planner.planFirst(this.steps.slice(1)) : void 0',
        to: "undefined",
      },
    ],
  },
];

/** The shapes, as the child process runs them (it prints one JSON line: ns of CPU per call, by shape). */
const CHILD = `
const [dist, calls] = [process.argv[2], Number(process.argv[3])];
const { retry, pipeline, steps } = await import(dist);
const op = async () => 42;
const log = () => {};
const signal = new AbortController().signal;
const reused = { maxRetries: 3 };
const reusedTimeout = { maxRetries: 3, timeout: 1000 };
const built = pipeline(steps.retry({ maxRetries: 3 }));
const shapes = {
  "retry(op, { maxRetries: 3 })": () => retry(op, { maxRetries: 3 }),
  "retry(op, options) reused": () => retry(op, reused),
  "a callback written inline": () => retry(op, { maxRetries: 3, onRetry: (e) => log(e) }),
  "a callback defined once": () => retry(op, { maxRetries: 3, onRetry: log }),
  "inline, with a timeout": () => retry(op, { maxRetries: 3, timeout: 1000 }),
  "reused, with a timeout": () => retry(op, reusedTimeout),
  "the caller's signal": () => retry(op, { maxRetries: 3, signal }),
  "a pipeline built once": () => built.execute(op),
};
const out = {};
for (const [name, call] of Object.entries(shapes)) {
  for (let i = 0; i < calls / 2; i++) await call();
  globalThis.gc?.();
  const start = process.cpuUsage();
  for (let i = 0; i < calls; i++) await call();
  const used = process.cpuUsage(start);
  out[name] = ((used.user + used.system) * 1000) / calls;
}
console.log(JSON.stringify(out));
`;

const work = mkdtempSync(join(os.tmpdir(), "robustly-paths-"));
try {
  const entries = new Map<string, string>();
  for (const variant of VARIANTS) {
    const copy = join(work, variant.id);
    cpSync(dist, copy, { recursive: true });
    for (const patch of variant.patches) {
      const path = join(copy, patch.file);
      const text = readFileSync(path, "utf8");
      if (!text.includes(patch.from)) {
        throw new Error(
          `${variant.id}: ${patch.file} no longer holds ${JSON.stringify(patch.from)}: update bench/paths.ts`,
        );
      }
      writeFileSync(path, text.replace(patch.from, patch.to));
    }
    entries.set(variant.id, pathToFileURL(join(copy, "index.js")).href);
  }
  const child = join(work, "child.mjs");
  writeFileSync(child, CHILD);
  // ns per call, by variant, by shape: every round of every variant, in turns.
  const samples = new Map<string, Map<string, number[]>>();
  for (let round = 0; round < rounds; round++) {
    for (const variant of VARIANTS) {
      const line = execFileSync(
        process.execPath,
        ["--expose-gc", child, entries.get(variant.id) as string, String(calls)],
        {
          encoding: "utf8",
        },
      );
      const byShape = samples.get(variant.id) ?? new Map<string, number[]>();
      for (const [shape, ns] of Object.entries(JSON.parse(line) as Record<string, number>)) {
        byShape.set(shape, [...(byShape.get(shape) ?? []), ns]);
      }
      samples.set(variant.id, byShape);
      process.stderr.write(`round ${round + 1}/${rounds}: ${variant.id}\n`);
    }
  }
  const median = (xs: readonly number[]) =>
    [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
  const builtAs = samples.get("as-built") as Map<string, number[]>;
  const shapes = [...builtAs.keys()];
  const lines = [
    `Node ${process.version}, ${os.availableParallelism()} CPUs, ${rounds} rounds of ${calls.toLocaleString("en-US")} awaited calls per shape and build; median CPU ns per call:`,
    "",
    `| Shape | ${VARIANTS.map((v) => v.title).join(" | ")} |`,
    `|---|${VARIANTS.map(() => "--:").join("|")}|`,
  ];
  for (const shape of shapes) {
    const base = median(builtAs.get(shape) as number[]);
    const cells = VARIANTS.map((v) => {
      const ns = median(samples.get(v.id)?.get(shape) as number[]);
      return v.id === "as-built" ? `${ns.toFixed(0)}` : `${ns.toFixed(0)} (×${(ns / base).toFixed(2)})`;
    });
    lines.push(`| ${shape} | ${cells.join(" | ")} |`);
  }
  lines.push("");
  for (const variant of VARIANTS.slice(1)) {
    const saved = shapes.map((shape) => {
      const without = median(samples.get(variant.id)?.get(shape) as number[]);
      return { shape, saved: 1 - median(builtAs.get(shape) as number[]) / without };
    });
    const best = saved.reduce((a, b) => (b.saved > a.saved ? b : a));
    const verdict = best.saved >= 0.1 ? "PASS" : "FAIL";
    lines.push(
      `- ${verdict} ${variant.path} saves ${(best.saved * 100).toFixed(0)} % on "${best.shape}" (goal: >= 10 % on some shape)`,
    );
  }
  process.stdout.write(`${lines.join("\n")}\n`);
} finally {
  rmSync(work, { recursive: true, force: true });
}
