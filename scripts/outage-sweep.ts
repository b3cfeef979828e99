/**
 * The outage comparison of docs/defaults.md: robustly's defaults as the library ships them (with the
 * default retry budget) against the peers' defaults, robustly's defaults without the budget and with
 * guards of their own, on the default outage scenario, one run per seed, full size. Prints the table of
 * docs/defaults.md and the criterion the shipped default is held to (PASS or FAIL for each part), and,
 * with --chart FILE, draws peak concurrency and recovery per strategy as an SVG.
 *
 *   npx tsx scripts/outage-sweep.ts --seeds 1:20 --chart docs/defaults-outage.svg
 */
import { writeFile } from "node:fs/promises";
import { parseArgs } from "node:util";
import type { TopLevelSpec } from "vega-lite";
import { CHART_CONFIG, load, renderSpec } from "../src/cli/render.js";
import { type RunResult, simulate } from "../src/sim/simulate.js";

const PEERS = ["p-retry", "async-retry", "exponential-backoff", "cockatiel"];
const OURS = [
  "robustly",
  "robustly-no-budget",
  "robustly-budget",
  "robustly-breaker",
  "robustly-gradient2",
  "robustly-vegas",
  "robustly-aimd",
  "robustly-rate",
];
/** How much later than the best peer's the shipped default's goodput may come back, ms. */
const GOODPUT_MARGIN = 250;

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

const header = [
  "strategy",
  "sent/s",
  "peak conc.",
  "(min–max)",
  "recovery",
  "in flight",
  "success",
  "attempts/req",
  "peak ≤ every peer",
  "in flight < every peer",
  "recovery ≤ best + 0.25 s",
];
/** Per seed, the best (earliest) peer goodput recovery. */
const bestPeerRecovery = seeds.map((_, i) =>
  Math.min(...peers.map((p) => time((p[i] as RunResult).recoveryTime))),
);
const rows = [...OURS, ...PEERS].map((name) => {
  const runs = bySeed.get(name) as RunResult[];
  const peaks = runs.map((r) => r.peakConcurrency);
  const count = (ok: (r: RunResult, i: number) => boolean) =>
    PEERS.includes(name) ? "" : `${runs.filter(ok).length} of ${runs.length}`;
  // Attempts the server was offered per second over the last 5 s of the pause (45–50 s).
  const sent = runs.map((r) => mean(r.series.slice(45, 50).map((x) => x.offered)));
  return [
    name,
    mean(sent).toFixed(0),
    mean(peaks).toFixed(1),
    `${Math.min(...peaks)}–${Math.max(...peaks)}`,
    s(mean(runs.map((r) => time(r.recoveryTime)))),
    s(mean(runs.map((r) => time(r.inFlightRecoveryTime)))),
    `${(mean(runs.map((r) => r.successRate)) * 100).toFixed(1)}%`,
    mean(runs.map((r) => r.amplification)).toFixed(2),
    count((r, i) => peers.every((p) => r.peakConcurrency <= (p[i] as RunResult).peakConcurrency)),
    count((r, i) =>
      peers.every((p) => time(r.inFlightRecoveryTime) < time((p[i] as RunResult).inFlightRecoveryTime)),
    ),
    count((r, i) => time(r.recoveryTime) <= (bestPeerRecovery[i] as number) + GOODPUT_MARGIN),
  ];
});
const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] as string).length)));
const line = (cells: readonly string[]) =>
  cells.map((c, i) => (i === 0 ? c.padEnd(widths[i] as number) : c.padStart(widths[i] as number))).join("  ");
console.log(
  `outage scenario defaults, seeds ${from}–${to}, means over the seeds; sent/s: attempts per second in the last 5 s of the pause; the counts: seeds on which the row did so\n`,
);
console.log([line(header), widths.map((w) => "-".repeat(w)).join("  "), ...rows.map(line)].join("\n"));

// The criterion the shipped default is held to, on the means over the seeds.
const meanOf = (name: string, value: (r: RunResult) => number) =>
  mean((bySeed.get(name) as RunResult[]).map(value));
const peak = (r: RunResult) => r.peakConcurrency;
const recovery = (r: RunResult) => time(r.recoveryTime);
const inFlight = (r: RunResult) => time(r.inFlightRecoveryTime);
const best = (value: (r: RunResult) => number) =>
  PEERS.map((name) => ({ name, value: meanOf(name, value) })).reduce((a, b) => (b.value < a.value ? b : a));
const verdict = (ok: boolean) => (ok ? "PASS" : "FAIL");
const [ourPeak, ourRecovery, ourInFlight] = [peak, recovery, inFlight].map((v) => meanOf("robustly", v)) as [
  number,
  number,
  number,
];
const [lowPeak, bestRecovery, bestInFlight] = [best(peak), best(recovery), best(inFlight)];
console.log(
  [
    "",
    "the criterion, robustly as it ships against every peer's default, on the means:",
    `${verdict(ourPeak <= lowPeak.value)} peak concurrency at or below every peer's: ${ourPeak.toFixed(1)} against the lowest, ${lowPeak.value.toFixed(1)} (${lowPeak.name})`,
    `${verdict(ourInFlight < bestInFlight.value)} requests in flight back earlier than every peer's: ${s(ourInFlight)} against the earliest, ${s(bestInFlight.value)} (${bestInFlight.name})`,
    `${verdict(ourRecovery <= bestRecovery.value + GOODPUT_MARGIN)} goodput back within ${s(GOODPUT_MARGIN)} of the best peer's: ${s(ourRecovery)} against ${s(bestRecovery.value)} (${bestRecovery.name})`,
  ].join("\n"),
);

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
  // One panel above the other, each as wide as the docs' page, so that the labels stay readable there.
  const panel = (field: string, title: string) => ({
    width: 420,
    height: 190,
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
        // The spread over the seeds: one line from the least to the greatest (a mark per seed made the
        // chart three times the size).
        mark: { type: "rule", color: "#222", strokeWidth: 1.5 },
        encoding: {
          y: { field: "strategy", type: "nominal", sort: [...OURS, ...PEERS] },
          x: { aggregate: "min", field, type: "quantitative" },
          x2: { aggregate: "max", field },
        },
      },
    ],
  });
  const spec = {
    $schema: "https://vega.github.io/schema/vega-lite/v6.json",
    title: {
      text: ["The default outage:", "robustly (blue) and the peers' defaults (grey)"],
      subtitle: `bars: mean over seeds ${from}–${to}; lines: least to greatest over the seeds`,
      anchor: "start",
    },
    data: { values: points },
    background: "white",
    padding: 12,
    config: CHART_CONFIG,
    vconcat: [
      panel("peak", "peak concurrency (requests in the server)"),
      panel("recovery", "recovery: goodput back at 95% (s)"),
      panel("inFlight", "requests in flight back (s)"),
    ],
  } as TopLevelSpec;
  const { vega, vegaLite } = await load("the outage sweep's chart");
  await writeFile(values.chart, await renderSpec(vega, vegaLite, spec));
  console.error(`wrote ${values.chart}`);
}
