/**
 * `robustly simulate --report DIR`: SVG charts of a simulation (rendered by Vega-Lite and Vega, in Node,
 * without a browser) and an HTML page that shows them with a table of the runs.
 *
 * vega and vega-lite are optional peer dependencies: they are loaded here, on demand, so the library
 * itself never needs them.
 */
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { TopLevelSpec } from "vega-lite";
import type { RunResult, SimulationResult } from "../sim/simulate.js";

type Vega = typeof import("vega");
type VegaLite = typeof import("vega-lite");

const MISSING = "--report needs the optional packages vega and vega-lite: npm install vega vega-lite";

/** Loads the charting packages, or fails with a message saying how to install them. */
export async function load(): Promise<{ vega: Vega; vegaLite: VegaLite }> {
  try {
    const [vega, vegaLite] = await Promise.all([import("vega"), import("vega-lite")]);
    return { vega, vegaLite };
  } catch (cause) {
    throw new Error(MISSING, { cause });
  }
}

/** One point of one line. */
interface Point {
  readonly x: number;
  readonly y: number | null;
  readonly series: string;
}

/** A chart of one line per series, as the report draws them all. */
interface LineChart {
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

/**
 * A log scale that keeps zeros (log(1 + y), Vega's symlog with constant 1), ticked at powers of ten, for
 * values up to `maxY` (at least 1): zeros sit on the axis instead of vanishing, and 10 and 10^5 both stay
 * readable. The `scale` and `axis` of a Vega-Lite channel.
 */
export function symlogScale(maxY: number) {
  const decades = Math.ceil(Math.log10(Math.max(1, maxY)));
  const top = 10 ** decades;
  const powers = [0, ...Array.from({ length: decades + 1 }, (_, i) => 10 ** i)];
  return {
    scale: { type: "symlog" as const, constant: 1, domain: [0, top] },
    axis: { values: powers },
  };
}

/** The fonts and sizes of every chart. */
export const CHART_CONFIG = {
  font: "sans-serif",
  title: { fontSize: 16, subtitleFontSize: 12, subtitleColor: "#555", offset: 12 },
  axis: { labelFontSize: 11, titleFontSize: 12, titlePadding: 8 },
  legend: { labelFontSize: 11, titleFontSize: 12 },
} as const;

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

/** Renders a Vega-Lite spec to SVG text, in Node (no browser, no canvas). */
export async function renderSpec(vega: Vega, vegaLite: VegaLite, spec: TopLevelSpec): Promise<string> {
  const compiled = vegaLite.compile(spec).spec;
  const view = new vega.View(vega.parse(compiled), { renderer: "none", logLevel: vega.Error });
  try {
    return await view.toSVG();
  } finally {
    view.finalize();
  }
}

async function render(vega: Vega, vegaLite: VegaLite, chart: LineChart): Promise<string> {
  return renderSpec(vega, vegaLite, lineSpec(chart));
}

/** The series label of a run: its strategy, with its client count when runs differ in client count. */
function labeller(runs: readonly RunResult[], xIsClients: boolean): (run: RunResult) => string {
  const clientsVary = new Set(runs.map((r) => r.clients)).size > 1;
  return (run) => (clientsVary && !xIsClients ? `${run.strategy} (${run.clients} clients)` : run.strategy);
}

const unique = (values: readonly string[]) => [...new Set(values)];

const secondsText = (ms: number) => `${Number((ms / 1000).toFixed(3))}`;

/** The charts of a result, by scenario. */
function charts(result: SimulationResult): LineChart[] {
  const runs = result.runs;
  const p = result.parameters as {
    duration?: number;
    outage?: { start: number; length: number } | null;
    server?: string;
  };
  const context = [`${result.scenario} scenario`, `seed ${result.seed}`];
  if (p.server !== undefined) context.push(`server ${p.server}`);
  switch (result.scenario) {
    case "outage":
    case "metastable": {
      const prefix = result.scenario;
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
      return [
        {
          file: `${prefix}-concurrency.svg`,
          title: "Server concurrency",
          subtitle,
          x: time,
          y: { title: "requests in the server (log scale)", log: true },
          points: over((s) => s.concurrency),
          series,
          shade,
        },
        {
          file: `${prefix}-goodput.svg`,
          title: "Goodput",
          subtitle,
          x: time,
          y: { title: "successes per second" },
          points: over((s) => s.successes),
          series,
          shade,
        },
        {
          file: `${prefix}-timeouts.svg`,
          title: "Timeouts",
          subtitle,
          x: time,
          y: { title: "timeouts per second" },
          points: over((s) => s.timeouts),
          series,
          shade,
        },
      ];
    }
    case "contention": {
      const label = labeller(runs, true);
      const series = unique(runs.map(label));
      const subtitle = [...context, "each client makes one read-then-write request"].join(" · ");
      const by = (value: (r: RunResult) => number | null) =>
        runs.map((r) => ({ x: r.clients, y: value(r), series: label(r) }));
      return [
        {
          file: "contention-work.svg",
          title: "Writes to the store",
          subtitle,
          x: { title: "clients" },
          y: { title: "writes" },
          points: by((r) => r.work),
          series,
          dots: true,
        },
        {
          file: "contention-completion.svg",
          title: "Completion time",
          subtitle,
          x: { title: "clients" },
          y: { title: "mean completion time (ms)" },
          points: by((r) => r.completionTime),
          series,
          dots: true,
        },
      ];
    }
    case "amplification": {
      const label = labeller(runs, false);
      const series = unique(runs.map(label));
      const subtitle = context.join(" · ");
      const by = (value: (r: RunResult) => number | null) =>
        runs.map((r) => ({ x: r.failureProbability ?? 0, y: value(r), series: label(r) }));
      const x = { title: "failure probability", domain: [0, 1] as [number, number] };
      return [
        {
          file: "amplification-attempts.svg",
          title: "Amplification",
          subtitle,
          x,
          y: { title: "attempts per request" },
          points: by((r) => r.amplification),
          series,
          dots: true,
        },
        {
          file: "amplification-work.svg",
          title: "Server work",
          subtitle,
          x,
          y: { title: "requests handled by the server" },
          points: by((r) => r.work),
          series,
          dots: true,
        },
      ];
    }
    case "throttled-store": {
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
    default: {
      const never: never = result.scenario;
      throw new Error(`no report for the scenario ${String(never)}`);
    }
  }
}

const ESCAPES: Record<string, string> = {
  "&": "&amp;",
  "<": "&lt;",
  ">": "&gt;",
  '"': "&quot;",
  "'": "&#39;",
};

/** Escapes text for HTML content and attribute values. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c] as string);
}

const dash = "—";
const fixed = (n: number, digits: number) => Number(n.toFixed(digits)).toString();

/** The run table: header cells and rows of text cells (not escaped yet). */
function runTable(result: SimulationResult): { header: string[]; rows: string[][] } {
  const amplification = result.scenario === "amplification";
  // The contention scenario records no server concurrency (the text table leaves the column out too).
  const contention = result.scenario === "contention";
  const recovery = result.runs.some((r) => r.recovered !== null);
  const header = [
    "strategy",
    "clients",
    ...(amplification ? ["failure probability"] : []),
    ...(recovery ? ["recovered", "recovery time (s)"] : []),
    ...(contention ? [] : ["peak concurrency"]),
    "attempts per request",
    "success rate",
    contention ? "writes" : "server work (requests)",
    "completion time (ms)",
  ];
  const rows = result.runs.map((r) => [
    r.strategy,
    String(r.clients),
    ...(amplification ? [r.failureProbability === null ? dash : String(r.failureProbability)] : []),
    ...(recovery
      ? [
          r.recovered === null ? dash : r.recovered ? "yes" : "no",
          r.recoveryTime === null ? dash : (r.recoveryTime / 1000).toFixed(1),
        ]
      : []),
    ...(contention ? [] : [fixed(r.peakConcurrency, 1)]),
    r.amplification.toFixed(2),
    `${(r.successRate * 100).toFixed(1)}%`,
    fixed(r.work, 1),
    r.completionTime === null ? dash : String(Math.round(r.completionTime)),
  ]);
  return { header, rows };
}

/** The style sheet of the report pages. */
export const STYLE = `
body { font-family: system-ui, sans-serif; margin: 2rem auto; max-width: 1000px; padding: 0 1rem; color: #222; }
h1 { font-size: 1.5rem; }
figure { margin: 1.5rem 0; }
figure img { max-width: 100%; height: auto; border: 1px solid #ddd; }
table { border-collapse: collapse; font-variant-numeric: tabular-nums; }
th, td { padding: 0.3rem 0.6rem; border-bottom: 1px solid #ddd; }
th { text-align: left; background: #f4f4f4; }
td { text-align: right; }
td:first-child { text-align: left; }
td.no { color: #b00020; font-weight: bold; }
pre { background: #f6f6f6; padding: 0.75rem; overflow: auto; }
`;

function page(result: SimulationResult, written: readonly LineChart[]): string {
  const e = escapeHtml;
  const { header, rows } = runTable(result);
  const recoveredColumn = header.indexOf("recovered");
  const tableHtml = [
    "<table>",
    `<thead><tr>${header.map((h) => `<th scope="col">${e(h)}</th>`).join("")}</tr></thead>`,
    "<tbody>",
    ...rows.map((row) => {
      const cells = row.map((cell, i) => {
        const open = i === recoveredColumn && cell === "no" ? '<td class="no">' : "<td>";
        return `${open}${e(cell)}</td>`;
      });
      return `<tr>${cells.join("")}</tr>`;
    }),
    "</tbody>",
    "</table>",
  ].join("\n");
  const figures = written
    .map(
      (c) =>
        `<figure><img src="${e(c.file)}" alt="${e(`${c.title}: ${c.y.title} against ${c.x.title}`)}"></figure>`,
    )
    .join("\n");
  const strategies = new Map(result.runs.map((r) => [r.strategy, r]));
  const strategyList = [...strategies.values()]
    .map(
      (r) =>
        `<dt>${e(r.strategy)}</dt><dd>${e(r.description)}${r.source === "" ? "" : ` <small>(${e(r.source)})</small>`}</dd>`,
    )
    .join("\n");
  const title = `robustly simulate: ${result.scenario}`;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${e(title)}</title>
<style>${STYLE}</style>
</head>
<body>
<h1>${e(title)}</h1>
<p>Scenario ${e(result.scenario)}, seed ${e(String(result.seed))}, ${e(String(result.runs.length))} runs.</p>
<h2>Charts</h2>
${figures}
<h2>Results</h2>
${tableHtml}
<h2>Strategies</h2>
<dl>
${strategyList}
</dl>
<h2>Parameters</h2>
<pre>${e(JSON.stringify(result.parameters, null, 2))}</pre>
</body>
</html>
`;
}

/**
 * Writes the charts of `result` (SVG) and an `index.html` showing them with a table of the runs into
 * `dir`, created if missing. Returns the paths written, the page last.
 */
export async function writeReport(result: SimulationResult, dir: string): Promise<string[]> {
  const { vega, vegaLite } = await load();
  const list = charts(result);
  await mkdir(dir, { recursive: true });
  const paths: string[] = [];
  for (const chart of list) {
    const svg = await render(vega, vegaLite, chart);
    const path = join(dir, chart.file);
    await writeFile(path, svg);
    paths.push(path);
  }
  const index = join(dir, "index.html");
  await writeFile(index, page(result, list));
  paths.push(index);
  return paths;
}
