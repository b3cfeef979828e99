/**
 * The simulator's speed: raw engine events per second, the default outage scenario end to end, events
 * per second through the full client/server/retry-loop model, and a run of 100,000 clients.
 * Run with `npm run bench` (after the call-overhead benchmark) or `node --import tsx bench/simulate.ts`.
 * Measures the compiled `dist/` build, as published.
 */
import { existsSync } from "node:fs";
import os from "node:os";
import { resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const url = (path: string) => pathToFileURL(resolve(root, "dist", path)).href;
if (!existsSync(resolve(root, "dist", "sim", "simulate.js"))) {
  throw new Error("dist/ is missing: run `npm run build` first");
}
const { Simulation } = (await import(url("sim/engine.js"))) as typeof import("../src/sim/engine.js");
const { simulate } = (await import(url("sim/simulate.js"))) as typeof import("../src/sim/simulate.js");

const out: string[] = [];
const say = (line: string) => {
  out.push(line);
  process.stderr.write(`${line}\n`);
};

function best<T>(times: number, run: () => T): { ms: number; value: T } {
  let bestMs = Number.POSITIVE_INFINITY;
  let value: T | undefined;
  for (let i = 0; i < times; i++) {
    const start = performance.now();
    value = run();
    bestMs = Math.min(bestMs, performance.now() - start);
  }
  return { ms: bestMs, value: value as T };
}

say(
  `Node ${process.version} on ${os.platform()}-${os.arch()}, ${os.availableParallelism()} CPUs (${os.cpus()[0]?.model ?? "unknown"})`,
);

// 1. The engine alone: 1,000 timers that each reschedule themselves at a random delay, 3 million events.
{
  const events = 3_000_000;
  const { ms } = best(3, () => {
    const sim = new Simulation(1);
    let left = events;
    const tick = () => {
      if (--left > 0) sim.after(sim.random() * 100, tick);
    };
    for (let i = 0; i < 1000; i++) sim.after(sim.random() * 100, tick);
    sim.run(Number.POSITIVE_INFINITY);
    return sim.events;
  });
  say(
    `engine alone: ${events.toLocaleString("en-US")} events in ${ms.toFixed(0)} ms = ${(((events / ms) * 1000) / 1e6).toFixed(2)} million events/s (best of 3)`,
  );
}

// 2. The default outage scenario, every strategy: what `robustly simulate` runs with no flags.
{
  const { ms, value } = best(3, () => simulate());
  const events = value.runs.reduce((sum, r) => sum + r.events, 0);
  say(
    `default outage scenario (1,000 clients, 300 s, 7 strategies): ${ms.toFixed(0)} ms, ${events.toLocaleString("en-US")} events = ${(((events / ms) * 1000) / 1e6).toFixed(2)} million events/s through the full model (best of 3)`,
  );
  for (const r of value.runs) {
    say(
      `  ${r.strategy.padEnd(20)} ${r.events.toLocaleString("en-US").padStart(9)} events, recovered: ${r.recovered}`,
    );
  }
}

// 3. 100,000 clients: the default outage with the same offered load (think time 1,000 s, ~100 requests
// per second) and with ten times the load the server can take (think time 10 s, 60 s, no outage).
for (const [label, options] of [
  [
    "100,000 clients thinking 1,000 s, default outage, the overload experiment's exponential",
    { think: 1_000_000, strategies: ["exponential"] },
  ],
  [
    "100,000 clients thinking 10 s, 60 s, robustly's defaults",
    { strategies: ["robustly"], duration: 60_000, outage: null },
  ],
] as const) {
  const before = process.memoryUsage().rss;
  const { ms, value } = best(1, () => simulate({ clients: [100_000], ...options }));
  const run = value.runs[0];
  say(
    `${label}: ${(ms / 1000).toFixed(1)} s, ${run?.events.toLocaleString("en-US")} events = ${((((run?.events ?? 0) / ms) * 1000) / 1e6).toFixed(2)} million events/s; peak concurrency ${Math.round(run?.peakConcurrency ?? 0).toLocaleString("en-US")}; RSS grew ${((process.memoryUsage().rss - before) / 2 ** 20).toFixed(0)} MiB, recovered: ${run?.recovered}`,
  );
}

process.stdout.write(`${out.join("\n")}\n`);
