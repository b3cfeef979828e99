/**
 * The outage comparison of docs/defaults.md: robustly's defaults against the peers' defaults (and
 * robustly's guards) on the default outage scenario, one run per seed, full size. Prints the table of
 * docs/defaults.md and, with --chart FILE, draws peak concurrency and recovery per strategy as an SVG.
 *
 *   npx tsx scripts/outage-sweep.ts --seeds 1:20 --chart docs/defaults-outage.svg
 */
import { writeFile } from "node:fs/promises";
import { parseArgs } from "node:util";
import type { TopLevelSpec } from "vega-lite";
import { CHART_CONFIG, load, renderSpec } from "../src/cli/render.js";
import { type RunResult, simulate } from "../src/sim/simulate.js";

const PEERS = ["p-retry", "async-retry", "exponential-backoff"];
const OURS = ["robustly", "robustly-budget", "robustly-breaker"];

const { values } = parseArgs({
  options: { seeds: { type: "string", default: "1:20" }, chart: { type: "string" } },
});
const [from, to] = (values.seeds ?? "1:20").split(":").map(Number) as [number, number];
const seeds = Array.from({ length: to - from + 1 }, (_, i) => from + i);

/** Per strategy, its result on each seed. */
const bySeed = new Map<string, RunResult[]>();
for (const seed of seeds) {
  for (const run of simulate({ strategies: [...OURS, ...PEERS], seed }).runs) {
    bySeed.set(run.strategy, [...(bySeed.get(run.strategy) ?? []), run]);
  }
}

const mean = (xs: readonly number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
const s = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
/** A recovery time, or the run's length when it never came (none did here; the table says so). */
const time = (ms: number | null) => ms ?? Number.POSITIVE_INFINITY;
const peers = PEERS.map((p) => bySeed.get(p) as RunResult[]);
/** On how many seeds `runs` did better than every peer by `value` (lower is better). */
const wins = (runs: readonly RunResult[], value: (r: RunResult) => number) =>
  runs.filter((r, i) => peers.every((p) => value(r) < value(p[i] as RunResult))).length;

const header = [
  "strategy",
  "sent/s",
  "peak conc.",
  "(min–max)",
  "recovery",
  "in flight",
  "success",
  "peak below every peer",
  "recovery ≤ every peer",
];
const rows = [...OURS, ...PEERS].map((name) => {
  const runs = bySeed.get(name) as RunResult[];
  const peaks = runs.map((r) => r.peakConcurrency);
  const noLater = runs.filter((r, i) =>
    peers.every((p) => time(r.recoveryTime) <= time((p[i] as RunResult).recoveryTime)),
  ).length;
  // Attempts the server was offered per second over the last 5 s of the pause (45–50 s).
  const sent = runs.map((r) => mean(r.series.slice(45, 50).map((x) => x.offered)));
  return [
    name,
    mean(sent).toFixed(0),
    mean(peaks).toFixed(0),
    `${Math.min(...peaks)}–${Math.max(...peaks)}`,
    s(mean(runs.map((r) => time(r.recoveryTime)))),
    s(mean(runs.map((r) => time(r.inFlightRecoveryTime)))),
    `${(mean(runs.map((r) => r.successRate)) * 100).toFixed(1)}%`,
    PEERS.includes(name) ? "" : `${wins(runs, (r) => r.peakConcurrency)} of ${runs.length}`,
    PEERS.includes(name) ? "" : `${noLater} of ${runs.length}`,
  ];
});
const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] as string).length)));
const line = (cells: readonly string[]) =>
  cells.map((c, i) => (i === 0 ? c.padEnd(widths[i] as number) : c.padStart(widths[i] as number))).join("  ");
console.log(
  `outage scenario defaults, seeds ${from}–${to}, means over the seeds; sent/s: attempts per second in the last 5 s of the pause\n`,
);
console.log([line(header), widths.map((w) => "-".repeat(w)).join("  "), ...rows.map(line)].join("\n"));

if (values.chart !== undefined) {
  const points = [...OURS, ...PEERS].flatMap((name) =>
    (bySeed.get(name) as RunResult[]).map((r, i) => ({
      strategy: name,
      seed: seeds[i],
      peak: r.peakConcurrency,
      recovery: time(r.recoveryTime) / 1000,
      inFlight: time(r.inFlightRecoveryTime) / 1000,
    })),
  );
  const panel = (field: string, title: string) => ({
    width: 300,
    height: 220,
    layer: [
      {
        mark: { type: "bar", opacity: 0.75 },
        encoding: {
          y: { field: "strategy", type: "nominal", sort: [...OURS, ...PEERS], title: null },
          x: { aggregate: "mean", field, type: "quantitative", title },
          color: {
            condition: { test: `indexof(${JSON.stringify(PEERS)}, datum.strategy) >= 0`, value: "#9e9e9e" },
            value: "#1f77b4",
          },
        },
      },
      {
        mark: { type: "tick", color: "#222", thickness: 1 },
        encoding: {
          y: { field: "strategy", type: "nominal", sort: [...OURS, ...PEERS] },
          x: { field, type: "quantitative" },
        },
      },
    ],
  });
  const spec = {
    $schema: "https://vega.github.io/schema/vega-lite/v6.json",
    title: {
      text: "The default outage, robustly (blue) against its peers' defaults (grey)",
      subtitle: `bars: mean over seeds ${from}–${to}; ticks: each seed`,
      anchor: "start",
    },
    data: { values: points },
    background: "white",
    padding: 12,
    config: CHART_CONFIG,
    hconcat: [
      panel("peak", "peak concurrency (requests in the server)"),
      panel("recovery", "recovery: goodput back at 95% (s)"),
      panel("inFlight", "requests in flight back (s)"),
    ],
  } as TopLevelSpec;
  const { vega, vegaLite } = await load("the outage sweep's chart");
  await writeFile(values.chart, await renderSpec(vega, vegaLite, spec));
  console.error(`wrote ${values.chart}`);
}
