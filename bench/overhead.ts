/**
 * Per-call overhead of a call whose operation succeeds at once, for robustly and for other retry
 * libraries, without and with a per-attempt timeout. Run with `npm run bench`; options:
 * `--rounds N` (default 7), `--round-ms MS` (default 250), `--warmup-ms MS` (default 300), `--dist DIR`
 * (the build of robustly to measure, default `dist`).
 *
 * Every call is awaited before the next starts, so the numbers are the latency of one call on an idle
 * event loop. Policies, wrappers and option objects are built once, outside the timed loop, except where
 * a row says otherwise.
 */
import { existsSync, readFileSync } from "node:fs";
import os from "node:os";
import { resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import asyncRetry from "async-retry";
import {
  retry as cockatielRetry,
  wrap as cockatielWrap,
  ExponentialBackoff,
  handleAll,
  TimeoutStrategy,
  timeout,
} from "cockatiel";
import { backOff } from "exponential-backoff";
import pRetry from "p-retry";
import type { AttemptContext } from "../src/index.js";
import { type Case, gcBetweenBatches, measure, type Result, verify } from "./harness.js";

const { values: args } = parseArgs({
  options: {
    rounds: { type: "string", default: "7" },
    "round-ms": { type: "string", default: "250" },
    "warmup-ms": { type: "string", default: "300" },
    dist: { type: "string", default: "dist" },
  },
});
const settings = {
  rounds: positive("rounds", args.rounds),
  roundMs: positive("round-ms", args["round-ms"]),
  warmupMs: positive("warmup-ms", args["warmup-ms"]),
};

function positive(name: string, text: string | undefined): number {
  const value = Number(text);
  if (!Number.isFinite(value) || value <= 0) throw new Error(`--${name} must be a positive number`);
  return value;
}

// robustly is measured as published: the compiled dist/, which `npm run bench` builds first. Importing
// src/ through tsx would measure esbuild's output instead, whose `keepNames` helper renames every closure
// created per call and roughly doubles the cost of a call with a timeout. The types come from src/.
// `--dist DIR` (relative to the repository root) measures another build, e.g. of an experimental change.
const dist = pathToFileURL(resolve(fileURLToPath(new URL("..", import.meta.url)), args.dist, "index.js"));
if (!existsSync(dist)) throw new Error(`${fileURLToPath(dist)} is missing: run \`npm run build\` first`);
const { retry, wrap, pipeline, steps } = (await import(dist.href)) as typeof import("../src/index.js");

// The operation every case calls: async, succeeds at once with a constant.
const VALUE = 42;
const op = async (): Promise<number> => VALUE;
// The same, but it reads the attempt's signal, as an operation that passes it to fetch would.
const opReadingSignal = async (context: AttemptContext): Promise<number> =>
  context.signal.aborted ? -1 : VALUE;

// Built once, outside the timed loops.
const robustlyOptions = { maxRetries: 3 };
const robustlyTimeoutOptions = { maxRetries: 3, timeout: 1000 };
const robustlyWrapped = wrap(op, robustlyOptions);
const robustlyWrappedTimeout = wrap(op, robustlyTimeoutOptions);
const robustlyPipelineTimeout = pipeline(steps.retry({ maxRetries: 3 }), steps.timeout(1000));
const pRetryOptions = { retries: 3 };
const asyncRetryOptions = { retries: 3 };
const backOffOptions = { numOfAttempts: 4 };
const cockatielPolicy = cockatielRetry(handleAll, { maxAttempts: 3, backoff: new ExponentialBackoff() });
const cockatielCooperative = cockatielWrap(cockatielPolicy, timeout(1000, TimeoutStrategy.Cooperative));
const cockatielAggressive = cockatielWrap(cockatielPolicy, timeout(1000, TimeoutStrategy.Aggressive));

const cases: Case[] = [
  { id: "bare", library: "(none)", call: "`await op()`", timeout: "none", run: op },
  {
    id: "robustly.retry",
    library: "robustly",
    call: "`retry(op)`",
    timeout: "none",
    run: () => retry(op),
  },
  {
    id: "robustly.retry.options",
    library: "robustly",
    call: "`retry(op, options)`, same `{ maxRetries: 3 }` object",
    timeout: "none",
    run: () => retry(op, robustlyOptions),
  },
  {
    id: "robustly.wrap",
    library: "robustly",
    call: "`wrap(op, { maxRetries: 3 })` built once, then `f()`",
    timeout: "none",
    run: robustlyWrapped,
  },
  {
    id: "p-retry",
    library: "p-retry",
    call: "`pRetry(op, { retries: 3 })`",
    timeout: "none (has no per-attempt timeout)",
    run: () => pRetry(op, pRetryOptions),
  },
  {
    id: "async-retry",
    library: "async-retry",
    call: "`retry(op, { retries: 3 })`",
    timeout: "none (has no per-attempt timeout)",
    run: () => asyncRetry(op, asyncRetryOptions),
  },
  {
    id: "exponential-backoff",
    library: "exponential-backoff",
    call: "`backOff(op, { numOfAttempts: 4 })`",
    timeout: "none (has no per-attempt timeout)",
    run: () => backOff(op, backOffOptions),
  },
  {
    id: "cockatiel",
    library: "cockatiel",
    call: "`retry(handleAll, { maxAttempts: 3, backoff })` built once, `.execute(op)`",
    timeout: "none",
    run: () => cockatielPolicy.execute(op),
  },
  {
    id: "robustly.retry.timeout",
    library: "robustly",
    call: "`retry(op, options)`, same `{ maxRetries: 3, timeout: 1000 }` object",
    timeout: "1000 ms",
    run: () => retry(op, robustlyTimeoutOptions),
  },
  {
    id: "robustly.wrap.timeout",
    library: "robustly",
    call: "`wrap(op, { maxRetries: 3, timeout: 1000 })` built once, then `f()`",
    timeout: "1000 ms",
    run: robustlyWrappedTimeout,
  },
  {
    id: "robustly.pipeline.timeout",
    library: "robustly",
    call: "`pipeline(steps.retry({ maxRetries: 3 }), steps.timeout(1000))` built once, `.execute(op)`",
    timeout: "1000 ms",
    run: () => robustlyPipelineTimeout.execute(op),
  },
  {
    id: "robustly.retry.timeout.signal",
    library: "robustly",
    call: "as above with `retry`, but the operation reads `context.signal`",
    timeout: "1000 ms",
    run: () => retry(opReadingSignal, robustlyTimeoutOptions),
  },
  {
    id: "cockatiel.timeout.cooperative",
    library: "cockatiel",
    call: "`wrap(retryPolicy, timeout(1000, Cooperative))` built once, `.execute(op)`",
    timeout: "1000 ms",
    run: () => cockatielCooperative.execute(op),
  },
  {
    id: "cockatiel.timeout.aggressive",
    library: "cockatiel",
    call: "`wrap(retryPolicy, timeout(1000, Aggressive))` built once, `.execute(op)`",
    timeout: "1000 ms",
    run: () => cockatielAggressive.execute(op),
  },
];

/** The version in the package.json at `path`, relative to the repository root. */
function version(path: string): string {
  const url = new URL(`../${path}`, import.meta.url);
  return (JSON.parse(readFileSync(url, "utf8")) as { version: string }).version;
}

function ns(value: number): string {
  return value.toLocaleString("en-US", { maximumFractionDigits: 0 });
}

function byId(results: readonly Result[], id: string): Result {
  const found = results.find((r) => r.case.id === id);
  if (found === undefined) throw new Error(`no case ${id}`);
  return found;
}

function table(results: readonly Result[], bare: number): string {
  const lines = [
    "| # | Library | Call | Per-attempt timeout | Median ns/call | Overhead over bare (ns) | × bare | Min–max ns/call |",
    "|--:|---|---|---|--:|--:|--:|--:|",
  ];
  results.forEach((r, i) => {
    const overhead = r.case.id === "bare" ? "—" : ns(r.median - bare);
    const cells = [
      String(i + 1),
      r.case.library,
      r.case.call,
      r.case.timeout,
      ns(r.median),
      overhead,
      (r.median / bare).toFixed(1),
      `${ns(r.min)}–${ns(r.max)}`,
    ];
    lines.push(`| ${cells.join(" | ")} |`);
  });
  return lines.join("\n");
}

function verdict(ok: boolean): string {
  return ok ? "PASS" : "MISS";
}

async function main(): Promise<void> {
  await verify(cases, VALUE);
  const started = performance.now();
  const results = await measure(cases, settings, (message) => process.stderr.write(`${message}\n`));
  const seconds = (performance.now() - started) / 1000;

  const cpus = os.cpus();
  const libraries = ["p-retry", "async-retry", "exponential-backoff", "cockatiel"]
    .map((name) => `${name} ${version(`node_modules/${name}/package.json`)}`)
    .join(", ");
  const bare = byId(results, "bare").median;
  const out: string[] = [];
  out.push(
    `Node ${process.version} on ${os.platform()}-${os.arch()}, ${os.availableParallelism()} CPUs (${cpus[0]?.model ?? "unknown"})`,
    `robustly ${version("package.json")} (${args.dist}/), ${libraries}`,
    `${settings.rounds} rounds × ~${settings.roundMs} ms per case after ${settings.warmupMs} ms warm-up, ` +
      `sequential awaited calls, GC before each batch: ${gcBetweenBatches ? "yes" : "no (run with --expose-gc)"}; ` +
      `measured in ${seconds.toFixed(1)} s`,
    "",
    table(results, bare),
    "",
    "p-retry, async-retry and exponential-backoff have no per-attempt timeout, so they have no timeout row.",
    "",
  );

  // (a) robustly's overhead over bare vs cockatiel's, target <= 1.
  const cockatielOverhead = byId(results, "cockatiel").median - bare;
  out.push("(a) Overhead over bare, robustly / cockatiel retry policy (target <= 1.00):");
  let allA = true;
  for (const id of ["robustly.retry", "robustly.retry.options", "robustly.wrap"]) {
    const r = byId(results, id);
    const ratio = (r.median - bare) / cockatielOverhead;
    allA &&= ratio <= 1;
    out.push(
      `- ${r.case.call}: ${ns(r.median - bare)} / ${ns(cockatielOverhead)} ns = ${ratio.toFixed(2)}  ${verdict(ratio <= 1)}`,
    );
  }
  out.push(`- target (a): ${verdict(allA)}`, "");

  // (b) robustly with a timeout vs cockatiel retry + timeout, call time, target <= 1/5.
  const cooperative = byId(results, "cockatiel.timeout.cooperative").median;
  const aggressive = byId(results, "cockatiel.timeout.aggressive").median;
  out.push("(b) Call time with a 1000 ms per-attempt timeout, robustly / cockatiel (target <= 0.20):");
  let allB = true;
  for (const id of ["robustly.retry.timeout", "robustly.wrap.timeout"]) {
    const r = byId(results, id);
    const ratio = r.median / cooperative;
    allB &&= ratio <= 0.2;
    out.push(
      `- ${r.case.call}: ${ns(r.median)} / ${ns(cooperative)} ns (Cooperative) = ${ratio.toFixed(2)}  ${verdict(ratio <= 0.2)}` +
        `; vs Aggressive ${(r.median / aggressive).toFixed(2)}`,
    );
  }
  const signal = byId(results, "robustly.retry.timeout.signal").median;
  out.push(
    `- (not judged) the operation reading its signal: ${ns(signal)} / ${ns(cooperative)} ns = ${(signal / cooperative).toFixed(2)}`,
    `- target (b): ${verdict(allB)}`,
    "",
  );

  // (c) the pipeline written out vs the short form that builds it, call time, target <= 1.10.
  const shortForm = byId(results, "robustly.retry.timeout").median;
  const written = byId(results, "robustly.pipeline.timeout").median;
  const ratioC = written / shortForm;
  out.push(
    "(c) Call time, a pipeline of retry + timeout / the short form `retry(op, { maxRetries: 3, timeout: 1000 })` (target <= 1.10):",
    `- ${ns(written)} / ${ns(shortForm)} ns = ${ratioC.toFixed(2)}  ${verdict(ratioC <= 1.1)}`,
  );
  process.stdout.write(`${out.join("\n")}\n`);
}

await main();
