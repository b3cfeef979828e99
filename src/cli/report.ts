/**
 * `robustly simulate --report DIR`: SVG charts of a simulation (rendered by Vega-Lite and Vega, in Node,
 * without a browser) and an HTML page that shows them with a table of the runs.
 */
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { AWS_BACKOFF_STUDY, type PublishedPoint } from "../sim/published.js";
import type { RunResult, SimulationResult } from "../sim/simulate.js";
import { makeDir } from "./out-files.js";
import { escapeHtml, htmlPage, load } from "./render.js";
import { charts, type LineChart, render } from "./report-charts.js";
import { ABOUT, COLUMNS } from "./report-text.js";

export { CHART_CONFIG, escapeHtml, load, renderSpec, STYLE, symlogScale } from "./render.js";

const dash = "—";
const fixed = (n: number, digits: number) => Number(n.toFixed(digits)).toString();

/** The run table: header cells and rows of text cells (not escaped yet). */
function runTable(result: SimulationResult): { header: string[]; rows: string[][] } {
  const amplification = result.scenario === "amplification";
  // The contention scenario records no server concurrency (the text table leaves the column out too).
  const contention = result.scenario === "contention";
  const recovery = result.runs.some((r) => r.recovered !== null);
  const backlog = result.runs.some((r) => r.backlog !== null);
  const header = [
    "strategy",
    "clients",
    ...(amplification ? ["failure probability"] : []),
    ...(backlog ? ["backlog"] : []),
    ...(recovery ? ["recovered", "recovery time (s)"] : []),
    ...(contention ? [] : ["peak concurrency"]),
    "attempts per request",
    "success rate",
    contention ? "writes" : "server work (requests)",
    "completion time (ms)",
    ...(contention ? ["makespan (ms)"] : []),
  ];
  const rows = result.runs.map((r) => [
    r.strategy,
    String(r.clients),
    ...(amplification ? [r.failureProbability === null ? dash : String(r.failureProbability)] : []),
    ...(backlog ? [r.backlog === null ? dash : String(r.backlog)] : []),
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
    ...(contention ? [r.makespan === null ? dash : String(Math.round(r.makespan))] : []),
  ]);
  return { header, rows };
}

/** An HTML table of header cells and rows of text cells. */
function htmlTable(header: readonly string[], rows: readonly (readonly string[])[], flagged = -1): string {
  const e = escapeHtml;
  return [
    "<table>",
    `<thead><tr>${header.map((h) => `<th scope="col">${e(h)}</th>`).join("")}</tr></thead>`,
    "<tbody>",
    ...rows.map((row) => {
      const cells = row.map((cell, i) => {
        const open = i === flagged && cell === "no" ? '<td class="no">' : "<td>";
        return `${open}${e(cell)}</td>`;
      });
      return `<tr>${cells.join("")}</tr>`;
    }),
    "</tbody>",
    "</table>",
  ].join("\n");
}

/** How many runs each row averages, and on which seeds. */
export function runsAveraged(result: SimulationResult): string {
  const runs = Number(result.parameters.runs ?? 1);
  return runs === 1
    ? `Each row is one run (seed ${result.seed}).`
    : `Each row is the mean of ${runs} runs (seeds ${result.seed} to ${result.seed + runs - 1}).`;
}

/** The published figure for a run, where the study has one at its client count. */
function publishedFor(run: RunResult): PublishedPoint | undefined {
  return AWS_BACKOFF_STUDY.strategies[run.strategy]?.find((p) => p.clients === run.clients);
}

/** The study's figures beside the simulated ones, for the contention runs the study has a figure for. */
function publishedTable(result: SimulationResult): string {
  if (result.scenario !== "contention") return "";
  const e = escapeHtml;
  const change = (simulated: number, published: number) => {
    const percent = (simulated / published - 1) * 100;
    return `${percent >= 0 ? "+" : "−"}${Math.abs(percent).toFixed(1)} %`;
  };
  const rows = result.runs.flatMap((r) => {
    const p = publishedFor(r);
    if (p === undefined || r.makespan === null) return [];
    return [
      [
        r.strategy,
        String(r.clients),
        String(p.work),
        `${Math.round(r.work)} (${change(r.work, p.work)})`,
        String(p.makespan),
        `${Math.round(r.makespan)} (${change(r.makespan, p.makespan)})`,
      ],
    ];
  });
  if (rows.length === 0) return "";
  const header = [
    "strategy",
    "clients",
    "writes, published",
    "writes, simulated",
    "makespan (ms), published",
    "makespan (ms), simulated",
  ];
  return `<h2>Against the published figures</h2>
<p>${e(AWS_BACKOFF_STUDY.title)}. The post draws its results as charts; the published figures here are
those of ${e(AWS_BACKOFF_STUDY.source)}: ${e(AWS_BACKOFF_STUDY.how)}. The charts above draw them dashed.</p>
${htmlTable(header, rows)}`;
}

function page(result: SimulationResult, written: readonly LineChart[]): string {
  const e = escapeHtml;
  const { header, rows } = runTable(result);
  const tableHtml = htmlTable(header, rows, header.indexOf("recovered"));
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
  const columns = header
    .filter((h) => COLUMNS[h] !== undefined)
    .map((h) => `<dt>${e(h)}</dt><dd>${e(COLUMNS[h] as string)}</dd>`)
    .join("\n");
  return htmlPage(
    `robustly simulate: ${result.scenario}`,
    `<p>${e(ABOUT[result.scenario])}</p>
<p>${e(runsAveraged(result))} Every run is simulated in virtual time: the same seed gives the same numbers.</p>
<h2>Charts</h2>
${figures}
<h2>Results</h2>
${tableHtml}
<h3>What the columns mean</h3>
<dl>
${columns}
</dl>
${publishedTable(result)}
<h2>Strategies</h2>
<dl>
${strategyList}
</dl>
<h2>Parameters</h2>
<pre>${e(JSON.stringify(result.parameters, null, 2))}</pre>`,
  );
}

/**
 * Writes the charts of `result` (SVG) and an `index.html` showing them with a table of the runs into
 * `dir`, created if missing. Returns the paths written, the page last.
 */
export async function writeReport(result: SimulationResult, dir: string): Promise<string[]> {
  const { vega, vegaLite } = await load();
  const list = charts(result);
  await makeDir(dir);
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
