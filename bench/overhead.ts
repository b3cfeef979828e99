/**
 * What a call costs, the way users write it, for robustly and for p-retry, async-retry, exponential-backoff
 * and cockatiel in the same run: options written inline and reused, a pipeline, each with and without a
 * per-attempt timeout, a call retried once at no delay, and the heap a pending call holds. Then every goal
 * of the performance work, with its measured ratio and PASS or FAIL.
 *
 * Run with `npm run bench` (which builds dist/ first); options: `--rounds N` (default 9), `--round-ms MS`
 * (default 200), `--warmup-ms MS` (default 300), `--pending N` (calls held for the heap measurement,
 * default 20000), `--dist DIR` (the build of robustly to measure, default `dist`), `--chart FILE` (also
 * write a Vega-Lite SVG of ns per call per library there).
 *
 * Every call is awaited before the next starts, so the numbers are the latency of one call on an idle
 * event loop. Each case is timed on two clocks (see harness.ts): the process's CPU time, which the goals
 * about the work of a call use (steady on a machine shared with other work), and the wall clock, which the
 * goal about waiting uses (a timer's wait costs no CPU).
 */
import { setMaxListeners } from "node:events";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import { resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import asyncRetry from "async-retry";
import {
  ConstantBackoff,
  noop as cockatielNoop,
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
import { type Case, gcBetweenBatches, measure, median, type Result, verify } from "./harness.js";

const { values: args } = parseArgs({
  options: {
    rounds: { type: "string", default: "9" },
    "round-ms": { type: "string", default: "200" },
    "warmup-ms": { type: "string", default: "300" },
    pending: { type: "string", default: "20000" },
    dist: { type: "string", default: "dist" },
    chart: { type: "string" },
  },
});

function positive(name: string, text: string | undefined): number {
  const value = Number(text);
  if (!Number.isFinite(value) || value <= 0) throw new Error(`--${name} must be a positive number`);
  return value;
}

const settings = {
  rounds: positive("rounds", args.rounds),
  roundMs: positive("round-ms", args["round-ms"]),
  warmupMs: positive("warmup-ms", args["warmup-ms"]),
};
const pendingCalls = Math.round(positive("pending", args.pending));

// robustly is measured as published: the compiled dist/, which `npm run bench` builds first. Importing
// src/ through tsx would measure esbuild's output instead, whose `keepNames` helper renames every closure
// created per call. The types come from src/.
const root = fileURLToPath(new URL("..", import.meta.url));
const dist = pathToFileURL(resolve(root, args.dist, "index.js"));
if (!existsSync(dist)) throw new Error(`${fileURLToPath(dist)} is missing: run \`npm run build\` first`);
const { retry, pipeline, steps, backoff, jitter } = (await import(
  dist.href
)) as typeof import("../src/index.js");

const LIBRARIES = ["robustly", "p-retry", "async-retry", "exponential-backoff", "cockatiel"] as const;
type Library = (typeof LIBRARIES)[number];

/** One way of calling, for each library that has it. */
interface Scenario {
  readonly id: string;
  readonly title: string;
  readonly cells: Partial<Record<Library, { readonly call: string; readonly run: () => Promise<unknown> }>>;
}

// The operation every case calls: async, succeeds at once with a constant.
const VALUE = 42;
const op = async (): Promise<number> => VALUE;
// The same, but it reads the attempt's signal, as an operation that passes it to fetch would.
const opReadingSignal = async (context: AttemptContext | { signal: AbortSignal }): Promise<number> =>
  context.signal.aborted ? -1 : VALUE;
/** A callback of the kind users pass (it logs); never called here, since `op` succeeds. */
const logged: unknown[] = [];
const log = (event: unknown): void => {
  logged.push(event);
};
/** The same for exponential-backoff, whose callback also answers whether to retry. */
const logAndRetry = (event: unknown): boolean => {
  log(event);
  return true;
};
/** A new operation that fails once, then succeeds: a call retried once. */
function failingOnce(): () => Promise<number> {
  let calls = 0;
  return () => (calls++ === 0 ? Promise.reject(new Error("once")) : Promise.resolve(VALUE));
}

/**
 * The call sites that write a function in an object literal (`{ onRetry: (e) => log(e) }`), compiled by
 * Node.js as written. tsx, which runs this file, compiles with esbuild's `keepNames`, which wraps each
 * function given a name by where it is written (here, by its property) in a call that names it: about
 * 300 ns per call that an app's own build does not add. A module loaded from a `data:` URL is not
 * compiled by tsx. cockatiel's callback, passed as an argument, is given no name, so its row needs none.
 */
const INLINE_CALLBACK_SITES = `
export const sites = ({ retry, pRetry, asyncRetry, backOff, op, log, logAndRetry }) => ({
  robustly: () => retry(op, { maxRetries: 3, onRetry: (e) => log(e) }),
  pRetry: () => pRetry(op, { retries: 3, onFailedAttempt: (e) => log(e) }),
  asyncRetry: () => asyncRetry(op, { retries: 3, onRetry: (e) => log(e) }),
  backOff: () => backOff(op, { numOfAttempts: 4, retry: (e) => logAndRetry(e) }),
});
`;
type Run = () => Promise<unknown>;
const inlineCallback = (
  (await import(`data:text/javascript,${encodeURIComponent(INLINE_CALLBACK_SITES)}`)) as {
    sites: (
      libraries: Record<string, unknown>,
    ) => Record<"robustly" | "pRetry" | "asyncRetry" | "backOff", Run>;
  }
).sites({ retry, pRetry, asyncRetry, backOff, op, log, logAndRetry });

// Built once, outside the timed loops (the "reused" and "pipeline" rows).
const reused = { maxRetries: 3 };
const reusedTimeout = { maxRetries: 3, timeout: 1000 };
/** A caller's signal that never aborts, shared by every call, as a server's request signal is by its calls. */
const callerSignal = new AbortController().signal;
const reusedZero = { maxRetries: 3, backoff: backoff.none() };
const robustlyPipeline = pipeline(steps.retry({ maxRetries: 3 }));
const robustlyPipelineTimeout = pipeline(steps.retry({ maxRetries: 3 }), steps.timeout(1000));
const pRetryOptions = { retries: 3 };
const pRetryZero = { retries: 3, minTimeout: 0, maxTimeout: 0 };
const asyncRetryOptions = { retries: 3 };
const asyncRetryZero = { retries: 3, minTimeout: 0, maxTimeout: 0 };
const backOffOptions = { numOfAttempts: 4 };
const backOffZero = { numOfAttempts: 4, startingDelay: 0 };
const cockatielPolicy = cockatielRetry(handleAll, { maxAttempts: 3, backoff: new ExponentialBackoff() });
const cockatielZero = cockatielRetry(handleAll, { maxAttempts: 3, backoff: new ConstantBackoff(0) });
const cockatielWrapped = cockatielWrap(cockatielPolicy, cockatielNoop);
/** cockatiel's reused policy with a listener attached once, as its users attach one. */
const cockatielListened = cockatielRetry(handleAll, { maxAttempts: 3, backoff: new ExponentialBackoff() });
cockatielListened.onRetry((e) => log(e));
const reusedCallback = { maxRetries: 3, onRetry: log };
const cockatielTimeout = cockatielWrap(cockatielPolicy, timeout(1000, TimeoutStrategy.Aggressive));

const scenarios: Scenario[] = [
  {
    id: "inline",
    title: "options written inline, a new object each call",
    cells: {
      robustly: { call: "`retry(op, { maxRetries: 3 })`", run: () => retry(op, { maxRetries: 3 }) },
      "p-retry": { call: "`pRetry(op, { retries: 3 })`", run: () => pRetry(op, { retries: 3 }) },
      "async-retry": { call: "`retry(op, { retries: 3 })`", run: () => asyncRetry(op, { retries: 3 }) },
      "exponential-backoff": {
        call: "`backOff(op, { numOfAttempts: 4 })`",
        run: () => backOff(op, { numOfAttempts: 4 }),
      },
      cockatiel: {
        call: "`retry(handleAll, { maxAttempts: 3, backoff }).execute(op)`",
        run: () =>
          cockatielRetry(handleAll, { maxAttempts: 3, backoff: new ExponentialBackoff() }).execute(op),
      },
    },
  },
  {
    id: "readme",
    title: "as the README writes it: a timeout, a backoff and a jitter made inline",
    cells: {
      robustly: {
        call: "`retry(op, { timeout: 2000, maxRetries: 5, backoff: backoff.exponential({ base: 500, max: 10_000 }), jitter: jitter.full() })`",
        run: () =>
          retry(op, {
            timeout: 2000,
            maxRetries: 5,
            backoff: backoff.exponential({ base: 500, max: 10_000 }),
            jitter: jitter.full(),
          }),
      },
      cockatiel: {
        call: "`wrap(retry(handleAll, { maxAttempts: 5, backoff: new ExponentialBackoff({ initialDelay: 500, maxDelay: 10_000 }) }), timeout(2000, Aggressive)).execute(op)`",
        run: () =>
          cockatielWrap(
            cockatielRetry(handleAll, {
              maxAttempts: 5,
              backoff: new ExponentialBackoff({ initialDelay: 500, maxDelay: 10_000 }),
            }),
            timeout(2000, TimeoutStrategy.Aggressive),
          ).execute(op),
      },
    },
  },
  {
    id: "inline-callback",
    title: "options written inline, with a callback written inline",
    cells: {
      robustly: {
        call: "`retry(op, { maxRetries: 3, onRetry: (e) => log(e) })`",
        run: inlineCallback.robustly,
      },
      "p-retry": {
        call: "`pRetry(op, { retries: 3, onFailedAttempt: (e) => log(e) })`",
        run: inlineCallback.pRetry,
      },
      "async-retry": {
        call: "`retry(op, { retries: 3, onRetry: (e) => log(e) })`",
        run: inlineCallback.asyncRetry,
      },
      "exponential-backoff": {
        call: "`backOff(op, { numOfAttempts: 4, retry: (e) => logAndRetry(e) })`",
        run: inlineCallback.backOff,
      },
      cockatiel: {
        call: "`const p = retry(handleAll, …); p.onRetry((e) => log(e)); p.execute(op)`",
        run: () => {
          const policy = cockatielRetry(handleAll, { maxAttempts: 3, backoff: new ExponentialBackoff() });
          policy.onRetry((e) => log(e));
          return policy.execute(op);
        },
      },
    },
  },
  {
    id: "inline-shared-callback",
    title: "options written inline, with a callback defined once",
    cells: {
      robustly: {
        call: "`retry(op, { maxRetries: 3, onRetry: log })`",
        run: () => retry(op, { maxRetries: 3, onRetry: log }),
      },
      "p-retry": {
        call: "`pRetry(op, { retries: 3, onFailedAttempt: log })`",
        run: () => pRetry(op, { retries: 3, onFailedAttempt: log }),
      },
      "async-retry": {
        call: "`retry(op, { retries: 3, onRetry: log })`",
        run: () => asyncRetry(op, { retries: 3, onRetry: log }),
      },
      "exponential-backoff": {
        call: "`backOff(op, { numOfAttempts: 4, retry: logAndRetry })`",
        run: () => backOff(op, { numOfAttempts: 4, retry: logAndRetry }),
      },
      cockatiel: {
        call: "`const p = retry(handleAll, …); p.onRetry(log); p.execute(op)`",
        run: () => {
          const policy = cockatielRetry(handleAll, { maxAttempts: 3, backoff: new ExponentialBackoff() });
          policy.onRetry(log);
          return policy.execute(op);
        },
      },
    },
  },
  {
    id: "reused-listener",
    title: "options (or policy) built once, with a callback (a listener)",
    cells: {
      robustly: {
        call: "`retry(op, options)`, options holding `onRetry`",
        run: () => retry(op, reusedCallback),
      },
      cockatiel: {
        call: "`policy.execute(op)`, `policy.onRetry(listener)` once",
        run: () => cockatielListened.execute(op),
      },
    },
  },
  {
    id: "reused",
    title: "options (or policy) built once",
    cells: {
      robustly: { call: "`retry(op, options)`", run: () => retry(op, reused) },
      "p-retry": { call: "`pRetry(op, options)`", run: () => pRetry(op, pRetryOptions) },
      "async-retry": { call: "`retry(op, options)`", run: () => asyncRetry(op, asyncRetryOptions) },
      "exponential-backoff": { call: "`backOff(op, options)`", run: () => backOff(op, backOffOptions) },
      cockatiel: { call: "`policy.execute(op)`", run: () => cockatielPolicy.execute(op) },
    },
  },
  {
    id: "pipeline",
    title: "a pipeline built once",
    cells: {
      robustly: {
        call: "`pipeline(steps.retry({ maxRetries: 3 })).execute(op)`",
        run: () => robustlyPipeline.execute(op),
      },
      cockatiel: { call: "`wrap(policy, noop).execute(op)`", run: () => cockatielWrapped.execute(op) },
    },
  },
  {
    id: "inline-timeout",
    title: "inline, with a 1000 ms per-attempt timeout",
    cells: {
      robustly: {
        call: "`retry(op, { maxRetries: 3, timeout: 1000 })`",
        run: () => retry(op, { maxRetries: 3, timeout: 1000 }),
      },
      cockatiel: {
        call: "`wrap(retry(…), timeout(1000, Aggressive)).execute(op)`",
        run: () =>
          cockatielWrap(
            cockatielRetry(handleAll, { maxAttempts: 3, backoff: new ExponentialBackoff() }),
            timeout(1000, TimeoutStrategy.Aggressive),
          ).execute(op),
      },
    },
  },
  {
    id: "reused-timeout",
    title: "built once, with a 1000 ms per-attempt timeout",
    cells: {
      robustly: { call: "`retry(op, options)`", run: () => retry(op, reusedTimeout) },
      cockatiel: { call: "`wrapped.execute(op)`", run: () => cockatielTimeout.execute(op) },
    },
  },
  {
    id: "pipeline-timeout",
    title: "a pipeline with a 1000 ms per-attempt timeout",
    cells: {
      robustly: {
        call: "`pipeline(steps.retry(…), steps.timeout(1000)).execute(op)`",
        run: () => robustlyPipelineTimeout.execute(op),
      },
      cockatiel: { call: "`wrap(policy, timeout(…)).execute(op)`", run: () => cockatielTimeout.execute(op) },
    },
  },
  {
    id: "signal-timeout",
    title: "built once, with a timeout, the operation reading its signal",
    cells: {
      robustly: { call: "`retry(op, options)`", run: () => retry(opReadingSignal, reusedTimeout) },
      cockatiel: { call: "`wrapped.execute(op)`", run: () => cockatielTimeout.execute(opReadingSignal) },
    },
  },
  {
    id: "caller-signal",
    title: "options written inline, with the caller's signal (a request's, say)",
    cells: {
      robustly: {
        call: "`retry(op, { maxRetries: 3, signal })`",
        run: () => retry(op, { maxRetries: 3, signal: callerSignal }),
      },
      "p-retry": {
        call: "`pRetry(op, { retries: 3, signal })`",
        run: () => pRetry(op, { retries: 3, signal: callerSignal }),
      },
      cockatiel: {
        call: "`policy.execute(op, signal)`",
        run: () => cockatielPolicy.execute(op, callerSignal),
      },
    },
  },
  {
    id: "retried",
    title: "one failure, then success, at no delay",
    cells: {
      robustly: {
        call: "`retry(op, { maxRetries: 3, backoff: backoff.none() })`",
        run: () => retry(failingOnce(), reusedZero),
      },
      "p-retry": {
        call: "`pRetry(op, { retries: 3, minTimeout: 0 })`",
        run: () => pRetry(failingOnce(), pRetryZero),
      },
      "async-retry": {
        call: "`retry(op, { retries: 3, minTimeout: 0 })`",
        run: () => asyncRetry(failingOnce(), asyncRetryZero),
      },
      "exponential-backoff": {
        call: "`backOff(op, { numOfAttempts: 4, startingDelay: 0 })`",
        run: () => backOff(failingOnce(), backOffZero),
      },
      cockatiel: {
        call: "`retry(handleAll, { backoff: new ConstantBackoff(0) })`",
        run: () => cockatielZero.execute(failingOnce()),
      },
    },
  },
];

const REFERENCES: Case[] = [
  { id: "bare", library: "(none)", call: "`await op()`", timeout: "none", run: op },
  {
    id: "setTimeout0",
    library: "(none)",
    call: "`await new Promise((r) => setTimeout(r, 0))`",
    timeout: "none",
    run: () => new Promise<number>((done) => setTimeout(() => done(VALUE), 0)),
  },
];

const cases: Case[] = [...REFERENCES];
for (const scenario of scenarios) {
  for (const library of LIBRARIES) {
    const cell = scenario.cells[library];
    if (cell === undefined) continue;
    cases.push({ id: `${scenario.id}/${library}`, library, call: cell.call, timeout: "", run: cell.run });
  }
}

// ---- Heap per pending call ----------------------------------------------------------------------------

/** A pending call: its operation waits on `gate` (one promise shared by all), with or without a timeout. */
interface Pending {
  readonly id: string;
  readonly library: Library;
  readonly timeout: boolean;
  readonly start: (gate: Promise<number>) => Promise<unknown>;
}

const LONG = 60_000;
const pendingKinds: Pending[] = [
  {
    id: "robustly+timeout",
    library: "robustly",
    timeout: true,
    start: (gate) => retry(() => gate, { maxRetries: 3, timeout: LONG }),
  },
  { id: "robustly", library: "robustly", timeout: false, start: (gate) => retry(() => gate, reused) },
  { id: "p-retry", library: "p-retry", timeout: false, start: (gate) => pRetry(() => gate, pRetryOptions) },
  {
    id: "async-retry",
    library: "async-retry",
    timeout: false,
    start: (gate) => asyncRetry(() => gate, asyncRetryOptions),
  },
  {
    id: "exponential-backoff",
    library: "exponential-backoff",
    timeout: false,
    start: (gate) => backOff(() => gate, backOffOptions),
  },
  {
    id: "cockatiel+timeout",
    library: "cockatiel",
    timeout: true,
    start: (() => {
      const wrapped = cockatielWrap(cockatielPolicy, timeout(LONG, TimeoutStrategy.Aggressive));
      // cockatiel's timeout adds an abort listener per pending call to the signal it runs under (a shared
      // one of its own by default), and Node warns past ten: it is given a signal without that limit, so
      // that a run stays quiet. What a pending call holds is the same.
      const signal = new AbortController().signal;
      setMaxListeners(0, signal);
      return (gate: Promise<number>) => wrapped.execute(() => gate, signal);
    })(),
  },
  {
    id: "cockatiel",
    library: "cockatiel",
    timeout: false,
    start: (gate) => cockatielPolicy.execute(() => gate),
  },
];

const collect: () => void = typeof globalThis.gc === "function" ? globalThis.gc : () => {};

/** Bytes of heap per pending call: the median over `rounds` of (heap with n calls pending − before) / n. */
async function heapPerCall(kind: Pending, n: number, rounds: number): Promise<number> {
  const samples: number[] = [];
  for (let round = 0; round < rounds; round++) {
    let open!: (value: number) => void;
    const gate = new Promise<number>((done) => {
      open = done;
    });
    const held: Promise<unknown>[] = new Array(n);
    collect();
    const before = process.memoryUsage().heapUsed;
    for (let i = 0; i < n; i++) held[i] = kind.start(gate);
    collect();
    const after = process.memoryUsage().heapUsed;
    samples.push((after - before) / n);
    open(VALUE);
    await Promise.all(held);
  }
  return median(samples);
}

// ---- Output ---------------------------------------------------------------------------------------------

function version(path: string): string {
  const url = new URL(`../${path}`, import.meta.url);
  return (JSON.parse(readFileSync(url, "utf8")) as { version: string }).version;
}

const whole = (value: number) => value.toLocaleString("en-US", { maximumFractionDigits: 0 });

/** ns, or µs from 10 µs up. */
function ns(value: number): string {
  if (value >= 10_000) return `${(value / 1000).toLocaleString("en-US", { maximumFractionDigits: 0 })} µs`;
  return `${value.toLocaleString("en-US", { maximumFractionDigits: 0 })} ns`;
}

function byId(results: readonly Result[], id: string): Result {
  const found = results.find((r) => r.case.id === id);
  if (found === undefined) throw new Error(`no case ${id}`);
  return found;
}

/** The CPU time of a result, or its wall-clock time. */
type Clocked = (r: Result) => { median: number; min: number; max: number };
const onCpu: Clocked = (r) => r.cpu;
const onWall: Clocked = (r) => r;

function resultTable(results: readonly Result[], clocked: Clocked): string {
  const lines = [`| Call | ${LIBRARIES.join(" | ")} |`, `|---|${LIBRARIES.map(() => "--:").join("|")}|`];
  for (const scenario of scenarios) {
    const cells = LIBRARIES.map((library) => {
      if (scenario.cells[library] === undefined) return "—";
      const r = clocked(byId(results, `${scenario.id}/${library}`));
      return `${ns(r.median)} (${whole(r.min)}–${whole(r.max)})`;
    });
    lines.push(`| ${scenario.title} | ${cells.join(" | ")} |`);
  }
  return lines.join("\n");
}

function callsTable(): string {
  const lines = ["| Call | Library | Written as |", "|---|---|---|"];
  for (const scenario of scenarios) {
    for (const library of LIBRARIES) {
      const cell = scenario.cells[library];
      if (cell !== undefined) lines.push(`| ${scenario.title} | ${library} | ${cell.call} |`);
    }
  }
  return lines.join("\n");
}

interface Goal {
  readonly text: string;
  readonly measured: string;
  readonly ratio: number;
  readonly limit: number;
  /** "<=" (the default) or "<". */
  readonly strict?: boolean;
}

function passes(goal: Goal): boolean {
  return goal.strict ? goal.ratio < goal.limit : goal.ratio <= goal.limit;
}

async function chart(results: readonly Result[], file: string): Promise<void> {
  const { load, renderSpec, CHART_CONFIG } = await import("../src/cli/render.js");
  const { vega, vegaLite } = await load();
  const values = scenarios.flatMap((scenario) =>
    LIBRARIES.filter((library) => scenario.cells[library] !== undefined).map((library) => ({
      call: scenario.title,
      library,
      ns: Math.round(byId(results, `${scenario.id}/${library}`).cpu.median),
    })),
  );
  const bare = Math.round(byId(results, "bare").cpu.median);
  const svg = await renderSpec(vega, vegaLite, {
    $schema: "https://vega.github.io/schema/vega-lite/v6.json",
    title: {
      text: "CPU ns per call (median), lower is better",
      subtitle: `log scale; a bare \`await op()\` takes ${bare} ns; Node ${process.version}, ${os.availableParallelism()} CPUs`,
    },
    width: 560,
    data: { values },
    mark: { type: "bar", tooltip: true },
    encoding: {
      y: { field: "call", type: "nominal", sort: null, title: null, axis: { labelLimit: 320 } },
      yOffset: { field: "library", sort: [...LIBRARIES] },
      x: { field: "ns", type: "quantitative", scale: { type: "log" }, title: "ns per call" },
      color: { field: "library", type: "nominal", sort: [...LIBRARIES], title: "library" },
    },
    config: CHART_CONFIG,
  });
  writeFileSync(file, svg);
}

async function main(): Promise<void> {
  await verify(
    cases.filter((c) => c.id !== "setTimeout0"),
    VALUE,
  );
  const load0 = os.loadavg();
  const started = performance.now();
  const results = await measure(cases, settings, (message) => process.stderr.write(`${message}\n`));
  process.stderr.write("measuring the heap of pending calls\n");
  const heap = new Map<string, number>();
  for (const kind of pendingKinds) heap.set(kind.id, await heapPerCall(kind, pendingCalls, 5));
  const seconds = (performance.now() - started) / 1000;
  const load1 = os.loadavg();

  const libraries = ["p-retry", "async-retry", "exponential-backoff", "cockatiel"]
    .map((name) => `${name} ${version(`node_modules/${name}/package.json`)}`)
    .join(", ");
  // The goals about the work of a call read CPU time; the one about waiting reads the wall clock.
  const bare = byId(results, "bare").cpu.median;
  const med = (id: string) => byId(results, id).cpu.median;
  const over = (id: string) => med(id) - bare;
  const wall = (id: string) => byId(results, id).median;
  const out: string[] = [];
  out.push(
    `Node ${process.version} on ${os.platform()}-${os.arch()}, ${os.availableParallelism()} CPUs (${os.cpus()[0]?.model ?? "unknown"})`,
    `robustly ${version("package.json")} (${args.dist}/), ${libraries}`,
    `${settings.rounds} rounds × ~${settings.roundMs} ms per case after ${settings.warmupMs} ms warm-up, ` +
      `sequential awaited calls, GC before each batch: ${gcBetweenBatches ? "yes" : "no (run with --expose-gc)"}; ` +
      `measured in ${seconds.toFixed(1)} s; load average ${load0[0]?.toFixed(1)} at the start, ${load1[0]?.toFixed(1)} at the end`,
    "",
    `Median CPU time per call (min–max ns over the rounds); a bare \`await op()\` takes ${ns(bare)}:`,
    "",
    resultTable(results, onCpu),
    "",
    `Median wall-clock time per call (min–max ns over the rounds); a bare \`await op()\` takes ` +
      `${ns(wall("bare"))}, \`await\` of a \`setTimeout(0)\` ${ns(wall("setTimeout0"))}:`,
    "",
    resultTable(results, onWall),
    "",
    `Heap per pending call (bytes, median of 5 rounds of ${pendingCalls.toLocaleString("en-US")} calls pending at once, ` +
      "their promises included):",
    "",
    `| Library | with a ${LONG / 1000} s per-attempt timeout | without |`,
    "|---|--:|--:|",
    ...LIBRARIES.map((library) => {
      const cell = (timed: boolean) => {
        const kind = pendingKinds.find((k) => k.library === library && k.timeout === timed);
        return kind === undefined ? "—" : Math.round(heap.get(kind.id) as number).toLocaleString("en-US");
      };
      return `| ${library} | ${cell(true)} | ${cell(false)} |`;
    }),
    "",
  );

  const cockatielOverhead = over("reused/cockatiel");
  const cockatielTimed = med("reused-timeout/cockatiel");
  const robustlyHeap = heap.get("robustly+timeout") as number;
  const peerHeaps = pendingKinds
    .filter((k) => k.library !== "robustly" && !k.timeout)
    .map((k) => heap.get(k.id) as number);
  const goals: Goal[] = [
    {
      text: "inline `retry(op, { maxRetries: 3 })`: CPU overhead over bare / cockatiel's reused policy's overhead",
      measured: `${ns(over("inline/robustly"))} / ${ns(cockatielOverhead)}`,
      ratio: over("inline/robustly") / cockatielOverhead,
      limit: 0.5,
    },
    {
      text: "reused options: CPU overhead over bare / cockatiel's reused policy's overhead",
      measured: `${ns(over("reused/robustly"))} / ${ns(cockatielOverhead)}`,
      ratio: over("reused/robustly") / cockatielOverhead,
      limit: 0.5,
    },
    {
      text: "a callback written inline: CPU overhead over bare / cockatiel's reused policy's with a listener",
      measured: `${ns(over("inline-callback/robustly"))} / ${ns(over("reused-listener/cockatiel"))}`,
      ratio: over("inline-callback/robustly") / over("reused-listener/cockatiel"),
      limit: 1,
    },
    {
      text: "the caller's signal: CPU overhead over bare / cockatiel's `execute(op, signal)`'s",
      measured: `${ns(over("caller-signal/robustly"))} / ${ns(over("caller-signal/cockatiel"))}`,
      ratio: over("caller-signal/robustly") / over("caller-signal/cockatiel"),
      limit: 1,
    },
    {
      text: "a retry after a failure at no delay: wall-clock time per call, in µs",
      measured: `${ns(wall("retried/robustly"))}`,
      ratio: wall("retried/robustly") / 1000,
      limit: 200,
      strict: true,
    },
    {
      text: "inline options cost what reused ones cost: CPU time per call, inline / reused",
      measured: `${ns(med("inline/robustly"))} / ${ns(med("reused/robustly"))}`,
      ratio: med("inline/robustly") / med("reused/robustly"),
      limit: 1.1,
    },
    {
      text: "with a timeout, inline: CPU time per call / cockatiel's reused retry + timeout",
      measured: `${ns(med("inline-timeout/robustly"))} / ${ns(cockatielTimed)}`,
      ratio: med("inline-timeout/robustly") / cockatielTimed,
      limit: 0.05,
    },
    {
      text: "with a timeout, reused: CPU time per call / cockatiel's reused retry + timeout",
      measured: `${ns(med("reused-timeout/robustly"))} / ${ns(cockatielTimed)}`,
      ratio: med("reused-timeout/robustly") / cockatielTimed,
      limit: 0.05,
    },
    {
      text: "with a timeout / without, inline: CPU time per call",
      measured: `${ns(med("inline-timeout/robustly"))} / ${ns(med("inline/robustly"))}`,
      ratio: med("inline-timeout/robustly") / med("inline/robustly"),
      limit: 3,
    },
    {
      text: "with a timeout / without, reused: CPU time per call",
      measured: `${ns(med("reused-timeout/robustly"))} / ${ns(med("reused/robustly"))}`,
      ratio: med("reused-timeout/robustly") / med("reused/robustly"),
      limit: 3,
    },
    {
      text: "with a timeout / without, pipeline: CPU time per call",
      measured: `${ns(med("pipeline-timeout/robustly"))} / ${ns(med("pipeline/robustly"))}`,
      ratio: med("pipeline-timeout/robustly") / med("pipeline/robustly"),
      limit: 3,
    },
    {
      text: "a zero delay does not wait for the timer queue: a call retried once at no delay / `setTimeout(0)`, wall clock",
      measured: `${ns(wall("retried/robustly"))} / ${ns(wall("setTimeout0"))}`,
      ratio: wall("retried/robustly") / wall("setTimeout0"),
      limit: 0.1,
    },
    {
      text: "heap per pending call with a timeout / cockatiel's (the only peer with a per-attempt timeout)",
      measured: `${Math.round(robustlyHeap)} / ${Math.round(heap.get("cockatiel+timeout") as number)} bytes`,
      ratio: robustlyHeap / (heap.get("cockatiel+timeout") as number),
      limit: 1,
      strict: true,
    },
    {
      text: "heap per pending call without a timeout / the least of the peers' without one",
      measured: `${Math.round(heap.get("robustly") as number)} / ${Math.round(Math.min(...peerHeaps))} bytes`,
      ratio: (heap.get("robustly") as number) / Math.min(...peerHeaps),
      limit: 1,
      strict: true,
    },
  ];
  out.push("Goals:");
  for (const goal of goals) {
    out.push(
      `- ${passes(goal) ? "PASS" : "FAIL"} ${goal.text}: ${goal.measured} = ${goal.ratio.toFixed(2)} (target ${goal.strict ? "<" : "<="} ${goal.limit})`,
    );
  }
  out.push(
    `- ${goals.filter(passes).length} of ${goals.length} goals pass`,
    "",
    "The calls:",
    "",
    callsTable(),
  );
  process.stdout.write(`${out.join("\n")}\n`);
  if (args.chart !== undefined) {
    await chart(results, args.chart);
    process.stdout.write(`\nchart: ${args.chart}\n`);
  }
}

await main();
