/**
 * The supervisor's throughput: messages per second through each kind of worker (in-process, worker
 * thread, child process), one message at a time and with a window of 16, with no crashes and with a crash
 * every N messages (the worker dies on the first delivery of every N-th message; the supervisor restarts
 * it after the default slotted backoff and delivers again what it held). Also the time from a crash to the
 * new worker being ready. Run with `node --import tsx bench/supervisor.ts` (after `npm run build`);
 * options: `--every N` (default 1000), `--dist DIR` (default `dist`). Measures the compiled build.
 */
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseArgs } from "node:util";

const { values: args } = parseArgs({
  options: {
    every: { type: "string", default: "1000" },
    dist: { type: "string", default: "dist" },
  },
});
const every = Number(args.every);
if (!Number.isInteger(every) || every < 2)
  throw new Error(`--every must be an integer >= 2; got ${args.every}`);

const root = fileURLToPath(new URL("..", import.meta.url));
const dist = resolve(root, args.dist);
if (!existsSync(join(dist, "supervisor", "index.js"))) {
  throw new Error(`${dist}/supervisor is missing: run \`npm run build\` first`);
}
const lib = (await import(
  pathToFileURL(join(dist, "supervisor", "index.js")).href
)) as typeof import("../src/supervisor/index.js");

// The worker script, written next to nothing: it imports the built serveWorker by absolute URL.
const dir = mkdtempSync(join(os.tmpdir(), "robustly-bench-"));
const script = join(dir, "worker.mjs");
writeFileSync(
  script,
  [
    `import { serveWorker } from ${JSON.stringify(pathToFileURL(join(dist, "supervisor", "serve.js")).href)};`,
    "import { workerData } from 'node:worker_threads';",
    "const every = Number(process.env.BENCH_EVERY ?? workerData?.every ?? 0);",
    "serveWorker((n, { id, deliveries }) => {",
    "  if (every > 0 && id % every === 0 && deliveries === 1) process.exit(1);",
    "  return n * 2;",
    "});",
  ].join("\n"),
);

type Kind = "in-process" | "thread" | "process";
const counts: Record<Kind, number> = { "in-process": 200_000, thread: 50_000, process: 30_000 };

function factory(
  kind: Kind,
  crashEvery: number,
): import("../src/supervisor/index.js").WorkerFactory<number, number> {
  if (kind === "in-process") {
    return lib.inProcessWorker(() => (n: number, { id, deliveries }) => {
      if (crashEvery > 0 && id % crashEvery === 0 && deliveries === 1) throw new Error("crash");
      return n * 2;
    });
  }
  if (kind === "thread") return lib.threadWorker(script, { execArgv: [], workerData: { every: crashEvery } });
  return lib.processWorker(script, {
    execArgv: [],
    env: { ...process.env, BENCH_EVERY: String(crashEvery) },
  });
}

interface Row {
  kind: Kind;
  concurrency: number;
  crashEvery: number;
  messages: number;
  ms: number;
  crashes: number;
  restartMs: number;
}

async function run(kind: Kind, concurrency: number, crashEvery: number): Promise<Row> {
  const messages = counts[kind];
  const s = lib.supervise<number, number>({
    worker: factory(kind, crashEvery),
    concurrency,
    maxPending: -1,
    maxRestarts: -1,
    maxDeliveries: -1,
  });
  // Time from each crash to the new worker being ready (backoff delay + start).
  let crashedAt = 0;
  let restartTotal = 0;
  let restarts = 0;
  s.on("crash", () => {
    crashedAt = performance.now();
  });
  s.on("ready", ({ incarnation }) => {
    if (incarnation > 1) {
      restartTotal += performance.now() - crashedAt;
      restarts += 1;
    }
  });
  await new Promise<void>((ready) => {
    const listener = s.on("ready", () => {
      listener.dispose();
      ready();
    });
  });
  const start = performance.now();
  const replies = await Promise.all(Array.from({ length: messages }, (_, i) => s.send(i)));
  const ms = performance.now() - start;
  if (replies.some((r, i) => r !== i * 2)) throw new Error(`${kind}: a wrong reply`);
  const crashes = s.metrics.crashes;
  await s.stop();
  return {
    kind,
    concurrency,
    crashEvery,
    messages,
    ms,
    crashes,
    restartMs: restarts ? restartTotal / restarts : 0,
  };
}

const say = (line: string) => process.stderr.write(`${line}\n`);
const out: string[] = [];
const header = `Node ${process.version} on ${os.platform()}-${os.arch()}, ${os.availableParallelism()} CPUs (${os.cpus()[0]?.model ?? "unknown"})`;
say(header);
out.push(header);

const rows: Row[] = [];
try {
  for (const kind of ["in-process", "thread", "process"] as const) {
    for (const concurrency of [1, 16]) {
      for (const crashEvery of [0, every]) {
        const row = await run(kind, concurrency, crashEvery);
        rows.push(row);
        say(
          `${kind.padEnd(10)} concurrency ${String(concurrency).padStart(2)}, ${crashEvery ? `a crash every ${crashEvery}` : "no crashes"}: ${Math.round((row.messages / row.ms) * 1000).toLocaleString("en-US")} messages/s`,
        );
      }
    }
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}

out.push(
  "",
  "| worker | concurrency | crashes | messages | time | messages/s | mean crash → ready |",
  "| --- | ---: | --- | ---: | ---: | ---: | ---: |",
);
for (const r of rows) {
  out.push(
    `| ${r.kind} | ${r.concurrency} | ${r.crashEvery ? `every ${r.crashEvery} (${r.crashes})` : "none"} | ${r.messages.toLocaleString("en-US")} | ${(r.ms / 1000).toFixed(2)} s | ${Math.round((r.messages / r.ms) * 1000).toLocaleString("en-US")} | ${r.crashes ? `${r.restartMs.toFixed(1)} ms` : "–"} |`,
  );
}
process.stdout.write(`${out.join("\n")}\n`);
