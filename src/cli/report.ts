/**
 * `robustly simulate --report DIR`: SVG charts of a simulation (rendered by Vega-Lite and Vega, in Node,
 * without a browser) and an HTML page that shows them with a table of the runs.
 */
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { SimulationResult } from "../sim/simulate.js";
import { escapeHtml, htmlPage, load } from "./render.js";
import { charts, type LineChart, render } from "./report-charts.js";

export { CHART_CONFIG, escapeHtml, load, renderSpec, STYLE, symlogScale } from "./render.js";

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
    ...(contention ? ["makespan (ms)"] : []),
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
    ...(contention ? [r.makespan === null ? dash : String(Math.round(r.makespan))] : []),
  ]);
  return { header, rows };
}

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
  return htmlPage(
    `robustly simulate: ${result.scenario}`,
    `<p>Scenario ${e(result.scenario)}, seed ${e(String(result.seed))}, ${e(String(result.runs.length))} runs.</p>
<h2>Charts</h2>
${figures}
<h2>Results</h2>
${tableHtml}
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
