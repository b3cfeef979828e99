/**
 * What `robustly plot` and `robustly simulate --report` draw with: Vega-Lite specs rendered to SVG by Vega,
 * in Node, without a browser, and the HTML page that shows them.
 *
 * vega and vega-lite are optional peer dependencies: they are loaded here, on demand, so the library
 * itself never needs them.
 */
import type { TopLevelSpec } from "vega-lite";
import { loadOptional } from "../core/optional.js";

export type Vega = typeof import("vega");
export type VegaLite = typeof import("vega-lite");

/**
 * Loads the charting packages for `neededBy` ("robustly plot", "--report"), or fails with a
 * MissingPackageError saying in one line how to install them.
 */
export async function load(neededBy = "--report"): Promise<{ vega: Vega; vegaLite: VegaLite }> {
  const [vega, vegaLite] = await loadOptional(["vega", "vega-lite"], neededBy, () =>
    Promise.all([import("vega"), import("vega-lite")]),
  );
  return { vega, vegaLite };
}

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

/** The widest chart drawn, in px: a laptop's screen. */
export const MAX_CHART_WIDTH = 1280;

async function toSvg(vega: Vega, vegaLite: VegaLite, spec: TopLevelSpec): Promise<string> {
  const compiled = vegaLite.compile(spec).spec;
  const view = new vega.View(vega.parse(compiled), { renderer: "none", logLevel: vega.Error });
  try {
    return await view.toSVG();
  } finally {
    view.finalize();
  }
}

/** The width and height on an SVG's root element. */
const ROOT_SIZE = /^(<svg[^>]*?\swidth=")([\d.]+)("\s+height=")([\d.]+)"/;
export const svgWidth = (svg: string): number => Number(ROOT_SIZE.exec(svg)?.[2] ?? Number.NaN);

/** A spec of several views (facets, concatenations, repeats): Vega-Lite cannot fit these to a width. */
const composite = (spec: TopLevelSpec) =>
  ["facet", "concat", "hconcat", "vconcat", "repeat"].some((key) => key in spec);

/**
 * Renders a Vega-Lite spec to SVG text, in Node (no browser, no canvas), at most `MAX_CHART_WIDTH` wide:
 * a wider single or layered view is laid out again to fit (its plot narrows, its text keeps its size),
 * and anything still wider is scaled down whole.
 */
export async function renderSpec(vega: Vega, vegaLite: VegaLite, spec: TopLevelSpec): Promise<string> {
  const svg = await toSvg(vega, vegaLite, spec);
  if (svgWidth(svg) <= MAX_CHART_WIDTH) return svg;
  if (!composite(spec)) {
    const fit = { width: MAX_CHART_WIDTH, autosize: { type: "fit-x", contains: "padding" } };
    const fitted = await toSvg(vega, vegaLite, { ...spec, ...fit } as TopLevelSpec);
    if (svgWidth(fitted) <= MAX_CHART_WIDTH) return fitted;
  }
  // The viewBox keeps the drawing's coordinates: a smaller width and height scale all of it.
  return svg.replace(ROOT_SIZE, (_, start: string, width: string, middle: string, height: string) => {
    const scale = MAX_CHART_WIDTH / Number(width);
    return `${start}${MAX_CHART_WIDTH}${middle}${Math.round(Number(height) * scale)}"`;
  });
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

/** An HTML page titled `title`, with `body` under the heading. */
export function htmlPage(title: string, body: string): string {
  const e = escapeHtml;
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
${body}
</body>
</html>
`;
}
