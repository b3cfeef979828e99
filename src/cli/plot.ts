/**
 * `robustly plot`: SVG charts (rendered by Vega-Lite and Vega, in Node): every backoff strategy and jitter
 * algorithm, the two delay curves of the overload experiment's client (linear and log scale) and the
 * total delays of six common retry strategies; or, given policy flags, the delays of that one policy. An `index.html`
 * shows the charts, each with a paragraph saying what it shows.
 */
import { join } from "node:path";
import { seededRandom } from "../core/random.js";
import { integer, parseCommand } from "./args.js";
import { checkOutDir, mayReplace, outDir, replaceFile, writingTo } from "./out-files.js";
import type { Chart } from "./plot-charts.js";
import { backoffFigure, jitterFigure, policyFigure, seed001Figure, seed002Figures } from "./plot-figures.js";
import { POLICY_FLAGS, POLICY_HELP, policyConfig, policyOptions } from "./policy-flags.js";
import { escapeHtml, htmlPage, load, renderSpec } from "./render.js";

export { CHANGED_COLOR } from "./plot-charts.js";
export { type PlotRow, plotRows } from "./plot-figures.js";

/** The most retries a chart shows. */
export const MAX_PLOTTED_RETRIES = 1000;

export const PLOT_HELP = `robustly plot: charts of backoff and jitter strategies (SVG files and an HTML page)

Usage: robustly plot [--out DIR] [--retries N] [--seed S]
       robustly plot [--out DIR] [--retries N] [policy flags | --config FILE]

Without policy flags, writes these figures:
  backoff-strategies.svg    every backoff strategy (v_base 1 s, v_max 60 s, m 2, L 2 s, p1 2)
  jitter-strategies.svg     every jitter on exponential backoff (v_base 1 s, v_max 60 s, m 2), one panel
                            each, red where the jitter changed the delay
  overload-delays.svg       the two delay curves of an overload experiment's client (exponential backoff
                            with Jitter 0.1) by attempt number;
  overload-delays-log.svg   the same on a log scale
  total-delays.svg          common strategies' total delays against max retries 1, 3, 5, 10, 20 (log scale)
With policy flags (any but --seed), writes policy.svg: that policy's raw backoff and final delay, red
where the jitter changed the delay. Either way writes index.html, and prints the paths written.

  --out DIR          where to write (default plots; created if missing; never a symbolic link)
  --force            replace files in DIR that robustly plot did not write (a symbolic link is
                     replaced, never followed); without it, only its own earlier charts are replaced
  --retries N        plot retries x = 0…N, N at most ${MAX_PLOTTED_RETRIES} (default 10; the overload curves show at least 20 attempts)
  --seed S           the randomness of jitters and random backoff (default 1): the same charts every time
  -h, --help         this help

${POLICY_HELP}`;

const DEFAULT_SEED = 1;

/**
 * What every file robustly plot writes carries near its start: a file in --out without it is not
 * replaced unless --force says so.
 */
export const PLOT_MARK = "<!-- written by robustly plot -->";

/** `svg` with the mark just inside its root element. */
const markSvg = (svg: string) => svg.replace(/^<svg[^>]*>/, (root) => `${root}${PLOT_MARK}`);
/** The page with the mark after its doctype. */
const markPage = (html: string) =>
  html.replace(/^<!doctype html>\n/i, (doctype) => `${doctype}${PLOT_MARK}\n`);

function page(title: string, intro: string, charts: readonly Chart[]): string {
  const e = escapeHtml;
  const figures = charts
    .map(
      (c) => `<section>
<h2>${e(c.title)}</h2>
<figure><img src="${e(c.file)}" alt="${e(c.title)}"></figure>
<p>${e(c.about)}</p>
${c.extra ?? ""}
</section>`,
    )
    .join("\n");
  return htmlPage(title, `<p>${e(intro)}</p>\n${figures}`);
}

type Values = ReturnType<typeof parse>["values"];

/** Any policy flag but --seed (which also seeds the default figures). */
function policyGiven(values: Values): boolean {
  return Object.keys(POLICY_FLAGS).some(
    (flag) => flag !== "seed" && (values as Record<string, unknown>)[flag] !== undefined,
  );
}

/** Runs `robustly plot` with `argv`: writes the charts and the page, prints their paths. */
export async function runPlot(
  argv: readonly string[],
  out: NodeJS.WritableStream = process.stdout,
): Promise<number> {
  const parsed = parse(argv);
  const v = parsed.values;
  if (v.help === true) {
    out.write(PLOT_HELP);
    return 0;
  }
  const n = integer("retries", v.retries ?? "10", 1, MAX_PLOTTED_RETRIES);
  const dir = v.out ?? "plots";
  await checkOutDir("--out", dir, ["index.html"]);
  const options = policyOptions(v);
  const given = v as Readonly<Record<string, unknown>>;
  const seed = given.seed === undefined ? DEFAULT_SEED : Number(given.seed);
  let charts: Chart[];
  let title: string;
  let intro: string;
  if (policyGiven(v)) {
    options.random ??= seededRandom(seed);
    charts = [policyFigure(options, n, policyConfig(v), seed)];
    title = "robustly plot: a retry policy";
    intro = "The delays a retry policy sleeps before each retry when every attempt fails.";
  } else {
    charts = [backoffFigure(n, seed), jitterFigure(n, seed), ...seed002Figures(n, seed), seed001Figure()];
    title = "robustly plot: backoff and jitter strategies";
    intro =
      "Every backoff and jitter strategy, the delay curves of an overload experiment's client and the " +
      "total delays of six common retry strategies, drawn from this library's strategies. Times are in " +
      "seconds.";
  }
  const { vega, vegaLite } = await load("robustly plot");
  const force = v.force === true;
  const paths = [...charts.map((chart) => join(dir, chart.file)), join(dir, "index.html")];
  await writingTo("--out", dir, async () => {
    await outDir(dir, "robustly plot");
    // Every file is checked before any is written: a refusal leaves the directory as it was.
    for (const path of paths) await mayReplace(path, PLOT_MARK, force, "robustly plot");
    for (const [i, chart] of charts.entries()) {
      await replaceFile(paths[i] as string, markSvg(await renderSpec(vega, vegaLite, chart.spec)));
    }
    await replaceFile(paths[charts.length] as string, markPage(page(title, intro, charts)));
  });
  out.write(`${paths.join("\n")}\n`);
  return 0;
}

function parse(argv: readonly string[]) {
  return parseCommand("plot", {
    args: [...argv],
    strict: true,
    allowPositionals: false,
    options: {
      ...POLICY_FLAGS,
      out: { type: "string" },
      force: { type: "boolean" },
      retries: { type: "string" },
      help: { type: "boolean", short: "h" },
    },
  });
}
