/**
 * The charts of a simulation's report: one line per strategy, by scenario, as Vega-Lite specs.
 */
import type { TopLevelSpec } from "vega-lite";
import { AWS_BACKOFF_STUDY } from "../sim/published.js";
import type { RunResult, SimulationResult } from "../sim/simulate.js";
import { CHART_CONFIG, renderSpec, symlogScale, type Vega, type VegaLite } from "./render.js";

/** One point of one line. */
interface Point {
  readonly x: number;
  readonly y: number | null;
  readonly series: string;
  /** Where the point comes from, when a chart draws published figures (dashed) beside simulated ones. */
  readonly figures?: "simulated" | "published";
}

/** A chart of one line per series, as the report draws them all. */
export interface LineChart {
  readonly file: string;
  readonly title: string;
  readonly subtitle: string;
  readonly x: { readonly title: string; readonly domain?: readonly [number, number] };
  readonly y: { readonly title: string; readonly log?: boolean };
  readonly points: readonly Point[];
  /** The series, in legend order. */
  readonly series: readonly string[];
  /** A shaded window along x (the outage), in x units. */
  readonly shade?: { readonly start: number; readonly end: number; readonly label: string } | null;
  /** Mark each data point (for charts with few points along x). */
  readonly dots?: boolean;
}

const SHADE_COLOR = "#9e9e9e";

/** The Vega-Lite spec of a chart. */
function lineSpec(chart: LineChart): TopLevelSpec {
  const maxY = Math.max(1, ...chart.points.map((p) => p.y ?? 0));
  const y = chart.y.log ? symlogScale(maxY) : { scale: { zero: true } };
  const x = {
    type: "quantitative" as const,
    title: chart.x.title,
    ...(chart.x.domain === undefined ? {} : { scale: { domain: [...chart.x.domain], nice: false } }),
  };
  const layers: unknown[] = [];
  if (chart.shade !== undefined && chart.shade !== null) {
    const window = [{ start: chart.shade.start, end: chart.shade.end, label: chart.shade.label }];
    layers.push(
      {
        name: "outage",
        data: { values: window },
        mark: { type: "rect", color: SHADE_COLOR, opacity: 0.25 },
        encoding: { x: { ...x, field: "start" }, x2: { field: "end" } },
      },
      {
        name: "outage_label",
        data: { values: window },
        mark: { type: "text", align: "left", baseline: "top", dx: 4, dy: 4, color: "#555", fontSize: 11 },
        encoding: { x: { ...x, field: "start" }, y: { value: 0 }, text: { field: "label" } },
      },
    );
  }
  layers.push({
    name: "lines",
    data: { values: chart.points },
    mark: { type: "line", strokeWidth: 1.75, point: chart.dots === true },
    encoding: {
      x: { ...x, field: "x" },
      y: { field: "y", type: "quantitative", title: chart.y.title, ...y },
      color: {
        field: "series",
        type: "nominal",
        title: "strategy",
        scale: { domain: [...chart.series], scheme: chart.series.length > 10 ? "tableau20" : "tableau10" },
        legend: { orient: "right", labelLimit: 400, symbolStrokeWidth: 3 },
      },
      ...(chart.points.some((p) => p.figures !== undefined)
        ? {
            strokeDash: {
              field: "figures",
              type: "nominal",
              title: "figures",
              scale: {
                domain: ["simulated", "published"],
                range: [
                  [1, 0],
                  [5, 4],
                ],
              },
              legend: { orient: "right", symbolStrokeWidth: 2 },
            },
          }
        : {}),
    },
  });
  return {
    $schema: "https://vega.github.io/schema/vega-lite/v6.json",
    title: { text: chart.title, subtitle: chart.subtitle, anchor: "start" },
    width: 640,
    height: 320,
    background: "white",
    padding: 12,
    config: CHART_CONFIG,
    layer: layers,
  } as TopLevelSpec;
}

/** Renders a chart to SVG text. */
export async function render(vega: Vega, vegaLite: VegaLite, chart: LineChart): Promise<string> {
  return renderSpec(vega, vegaLite, lineSpec(chart));
}

/** The series label of a run: its strategy, with its client count when runs differ in client count. */
function labeller(runs: readonly RunResult[], xIsClients: boolean): (run: RunResult) => string {
  const clientsVary = new Set(runs.map((r) => r.clients)).size > 1;
  return (run) => (clientsVary && !xIsClients ? `${run.strategy} (${run.clients} clients)` : run.strategy);
}

const unique = (values: readonly string[]) => [...new Set(values)];

const secondsText = (ms: number) => `${Number((ms / 1000).toFixed(3))}`;

/** What the charts of every scenario say under their titles, and the parameters they read. */
interface ChartContext {
  readonly runs: readonly RunResult[];
  readonly p: {
    duration?: number;
    outage?: { start: number; length: number } | null;
    server?: string;
  };
  /** The scenario, the seed, the server: the start of every subtitle. */
  readonly context: readonly string[];
}

/** The charts of a result, by scenario. */
export function charts(result: SimulationResult): LineChart[] {
  const p = result.parameters as ChartContext["p"];
  const runs = Number(result.parameters.runs ?? 1);
  const context = [
    `${result.scenario} scenario`,
    runs === 1
      ? `seed ${result.seed}`
      : `mean of ${runs} runs (seeds ${result.seed}–${result.seed + runs - 1})`,
  ];
  if (p.server !== undefined) context.push(`server ${p.server}`);
  const c: ChartContext = { runs: result.runs, p, context };
  switch (result.scenario) {
    case "outage":
      return new Set(result.runs.map((r) => r.backlog)).size > 1
        ? backlogCharts(c)
        : timeCharts(c, result.scenario);
    case "metastable":
    case "fleet":
      return timeCharts(c, result.scenario);
    case "contention":
      return contentionCharts(c);
    case "amplification":
      return amplificationCharts(c);
    case "throttled-store":
      return throttledCharts(c);
    default: {
      const never: never = result.scenario;
      throw new Error(`no report for the scenario ${String(never)}`);
    }
  }
}

/** The outage and metastable scenarios: concurrency, goodput and timeouts over time, the outage shaded. */
function timeCharts({ runs, p, context }: ChartContext, prefix: string): LineChart[] {
  const label = labeller(runs, false);
  const series = unique(runs.map(label));
  const outage = p.outage ?? null;
  const shade =
    outage === null
      ? null
      : { start: outage.start / 1000, end: (outage.start + outage.length) / 1000, label: "outage" };
  const subtitle = [
    ...context,
    ...(outage === null
      ? ["no outage"]
      : [`grey: outage ${secondsText(outage.start)}–${secondsText(outage.start + outage.length)} s`]),
  ].join(" · ");
  const seconds = Math.max(0, ...runs.map((r) => r.series.length));
  const domain: [number, number] = [0, p.duration === undefined ? seconds : p.duration / 1000];
  const over = (value: (s: RunResult["series"][number]) => number) =>
    runs.flatMap((r) => r.series.map((s) => ({ x: s.t, y: value(s), series: label(r) })));
  const time = { title: "time (s)", domain };
  const chart = (
    name: string,
    title: string,
    y: LineChart["y"],
    value: (s: RunResult["series"][number]) => number,
  ): LineChart => ({
    file: `${prefix}-${name}.svg`,
    title,
    subtitle,
    x: time,
    y,
    points: over(value),
    series,
    shade,
  });
  return [
    chart(
      "concurrency",
      "Server concurrency",
      { title: "requests in the server (log scale)", log: true },
      (s) => s.concurrency,
    ),
    chart("goodput", "Goodput", { title: "successes per second" }, (s) => s.successes),
    chart("timeouts", "Timeouts", { title: "timeouts per second" }, (s) => s.timeouts),
  ];
}

/** One chart of one point per run against a run's parameter: its file, title, vertical axis and value. */
interface PerRunChart {
  readonly file: string;
  readonly title: string;
  readonly y: string;
  readonly value: (run: RunResult) => number | null;
}

/** Charts of one point per run against `x` (`xOf` a run), one line per `label`, each point marked. */
function perRunCharts(
  runs: readonly RunResult[],
  axis: {
    label: (run: RunResult) => string;
    subtitle: string;
    x: LineChart["x"];
    xOf: (run: RunResult) => number;
  },
  charts: readonly PerRunChart[],
): LineChart[] {
  const { label, subtitle, x, xOf } = axis;
  const series = unique(runs.map(label));
  return charts.map((c) => ({
    file: c.file,
    title: c.title,
    subtitle,
    x,
    y: { title: c.y },
    points: runs.map((r) => ({ x: xOf(r), y: c.value(r), series: label(r) })),
    series,
    dots: true,
  }));
}

/**
 * The contention scenario: writes, completion time and makespan by client count; writes and makespan
 * with the AWS study's published figures dashed beside them, for the strategies it has.
 */
function contentionCharts({ runs, context }: ChartContext): LineChart[] {
  const subtitle = [...context, "each client makes one read-then-write request"].join(" · ");
  const made = perRunCharts(
    runs,
    { label: labeller(runs, true), subtitle, x: { title: "clients" }, xOf: (r) => r.clients },
    [
      { file: "contention-work.svg", title: "Writes to the store", y: "writes", value: (r) => r.work },
      {
        file: "contention-completion.svg",
        title: "Completion time",
        y: "mean completion time (ms)",
        value: (r) => r.completionTime,
      },
      {
        file: "contention-makespan.svg",
        title: "Makespan: until the last client is done",
        y: "makespan (ms)",
        value: (r) => r.makespan,
      },
    ],
  );
  const lo = Math.min(...runs.map((r) => r.clients));
  const hi = Math.max(...runs.map((r) => r.clients));
  const strategies = unique(runs.map((r) => r.strategy));
  const published = (value: "work" | "makespan") =>
    strategies.flatMap((name) =>
      (AWS_BACKOFF_STUDY.strategies[name] ?? [])
        .filter((p) => p.clients >= lo && p.clients <= hi)
        .map((p) => ({ x: p.clients, y: p[value], series: name, figures: "published" as const })),
    );
  const withPublished = (chart: LineChart, value: "work" | "makespan"): LineChart => {
    const extra = published(value);
    if (extra.length === 0) return chart;
    return {
      ...chart,
      subtitle: `${chart.subtitle} · dashed: the study's published figures`,
      points: [...chart.points.map((p) => ({ ...p, figures: "simulated" as const })), ...extra],
    };
  };
  const [work, completion, makespan] = made as [LineChart, LineChart, LineChart];
  return [withPublished(work, "work"), completion, withPublished(makespan, "makespan")];
}

/** The outage scenario swept over the listen queue: where each strategy stops recovering. */
function backlogCharts({ runs, context }: ChartContext): LineChart[] {
  const subtitle = [
    ...context,
    "one run of each strategy per listen-queue size; no point: never recovered",
  ].join(" · ");
  const made = perRunCharts(
    runs,
    {
      label: labeller(runs, false),
      subtitle,
      x: { title: "listen queue (backlog, requests)" },
      xOf: (r) => r.backlog ?? 0,
    },
    [
      {
        file: "outage-backlog-recovery.svg",
        title: "Recovery time by listen queue",
        y: "recovery time (s)",
        value: (r) => (r.recoveryTime === null ? null : r.recoveryTime / 1000),
      },
      {
        file: "outage-backlog-concurrency.svg",
        title: "Peak concurrency by listen queue",
        y: "peak requests in the server",
        value: (r) => r.peakConcurrency,
      },
      {
        file: "outage-backlog-success.svg",
        title: "Success rate by listen queue",
        y: "requests that succeeded (%)",
        value: (r) => r.successRate * 100,
      },
    ],
  );
  // Peak concurrency spans from hundreds to a hundred thousand: on a log scale.
  return made.map((c) =>
    c.file === "outage-backlog-concurrency.svg" ? { ...c, y: { ...c.y, log: true } } : c,
  );
}

/** The amplification scenario: attempts per request and server work by failure probability. */
function amplificationCharts({ runs, context }: ChartContext): LineChart[] {
  const x = { title: "failure probability", domain: [0, 1] as [number, number] };
  const xOf = (r: RunResult) => r.failureProbability ?? 0;
  return perRunCharts(runs, { label: labeller(runs, false), subtitle: context.join(" · "), x, xOf }, [
    {
      file: "amplification-attempts.svg",
      title: "Amplification",
      y: "attempts per request",
      value: (r) => r.amplification,
    },
    {
      file: "amplification-work.svg",
      title: "Server work",
      y: "requests handled by the server",
      value: (r) => r.work,
    },
  ]);
}

/** The throttled-store scenario: writes accepted against the capacity, and writes refused, over time. */
function throttledCharts({ runs, p, context }: ChartContext): LineChart[] {
  const label = labeller(runs, false);
  // The capacity is the same in every run only until throttling differs; draw each run's own.
  const series = unique([...runs.map(label), ...runs.map((r) => `${label(r)}: capacity`)]);
  const subtitle = [...context, "dashed lines of the same colour: the store's provisioned capacity"].join(
    " · ",
  );
  const seconds = Math.max(0, ...runs.map((r) => r.series.length));
  const end = Math.max(0, ...runs.map((r) => (r.batchTime ?? p.duration ?? seconds * 1000) / 1000));
  const time = { title: "time (s)", domain: [0, Math.ceil(end)] as [number, number] };
  return [
    {
      file: "throttled-writes.svg",
      title: "Writes accepted against capacity",
      subtitle,
      x: time,
      y: { title: "writes per second" },
      points: runs.flatMap((r) => [
        ...r.series.map((s) => ({ x: s.t, y: s.successes, series: label(r) })),
        ...r.series.map((s) => ({ x: s.t, y: s.capacity ?? null, series: `${label(r)}: capacity` })),
      ]),
      series,
    },
    {
      file: "throttled-rejections.svg",
      title: "Writes refused",
      subtitle: context.join(" · "),
      x: time,
      y: { title: "throttled writes per second" },
      points: runs.flatMap((r) => r.series.map((s) => ({ x: s.t, y: s.errors, series: label(r) }))),
      series: unique(runs.map(label)),
    },
  ];
}
