/**
 * The pieces of `robustly plot`'s charts: their colours and axes, and the Vega-Lite specs of a chart of
 * lines and of a chart of a jitter's raw and final delays.
 */
import type { TopLevelSpec } from "vega-lite";
import { CHART_CONFIG } from "./render.js";

/** The colour of the points where the jitter changed the delay: red. */
export const CHANGED_COLOR = "#d62728";
const RAW_COLOR = "#9e9e9e";
const DELAY_COLOR = "#1f77b4";
export const SECOND = 1000;

/** ms → s, for the axes. */
export const seconds = (ms: number) => ms / SECOND;

/** A chart: its file, what the page says about it, and its Vega-Lite spec. */
export interface Chart {
  readonly file: string;
  readonly title: string;
  /** The paragraph under the chart on the page. */
  readonly about: string;
  /** Extra HTML under the paragraph (already escaped). */
  readonly extra?: string;
  readonly spec: TopLevelSpec;
}

const frame = (title: string, subtitle: string) => ({
  $schema: "https://vega.github.io/schema/vega-lite/v6.json",
  title: { text: title, subtitle, anchor: "start" as const },
  background: "white",
  padding: 12,
  config: CHART_CONFIG,
});

const legend = (title: string, orient: "right" | "bottom" = "right") => ({
  title,
  orient,
  labelLimit: 0,
  symbolStrokeWidth: 3,
});

/** x = 0…n retries, ticked at integers. */
export const retriesAxis = (title: string, from: number, to: number) => ({
  field: "x",
  type: "quantitative" as const,
  title,
  scale: { domain: [from, to], nice: false },
  axis: { tickMinStep: 1, format: "d" },
});

/** One line per series, with a point per value, coloured in legend order. */
export function seriesSpec(options: {
  title: string;
  subtitle: string;
  x: ReturnType<typeof retriesAxis>;
  y: { title: string; scale?: unknown; axis?: unknown };
  points: readonly { x: number; y: number; series: string }[];
  series: readonly string[];
  colors?: readonly string[];
  legendTitle: string;
}): TopLevelSpec {
  return {
    ...frame(options.title, options.subtitle),
    width: 640,
    height: 340,
    data: { values: options.points.map((p) => ({ ...p })) },
    mark: { type: "line", strokeWidth: 2, point: { size: 30 } },
    encoding: {
      x: options.x,
      y: {
        field: "y",
        type: "quantitative",
        title: options.y.title,
        scale: options.y.scale ?? { zero: true },
        ...(options.y.axis === undefined ? {} : { axis: options.y.axis }),
      },
      color: {
        field: "series",
        type: "nominal",
        scale: {
          domain: [...options.series],
          ...(options.colors === undefined ? { scheme: "tableau10" } : { range: [...options.colors] }),
        },
        legend: legend(options.legendTitle),
      },
    },
  } as TopLevelSpec;
}

/** The three layers of a jitter chart: the raw backoff, the delay, and the points the jitter changed. */
function jitterLayers(
  labels: readonly [string, string, string],
  n: number,
  yTitle: string,
  legendOrient: "right" | "bottom",
): unknown[] {
  const [rawLabel, delayLabel, changedLabel] = labels;
  const x = retriesAxis("retries so far (x)", 0, n);
  const y = (field: string) => ({ field, type: "quantitative" as const, title: yTitle });
  const color = (datum: string) => ({
    datum,
    type: "nominal" as const,
    scale: { domain: [...labels], range: [RAW_COLOR, DELAY_COLOR, CHANGED_COLOR] },
    legend: legend("lines and points", legendOrient),
  });
  return [
    {
      name: "raw",
      mark: { type: "line", strokeWidth: 1.5, strokeDash: [5, 3] },
      encoding: { x, y: y("raw"), color: color(rawLabel) },
    },
    {
      name: "delay",
      mark: { type: "line", strokeWidth: 2, point: { size: 18 } },
      encoding: { x, y: y("delay"), color: color(delayLabel) },
    },
    {
      name: "changed",
      transform: [{ filter: "datum.changed" }],
      mark: { type: "point", filled: true, size: 70, opacity: 1 },
      encoding: {
        x,
        y: y("delay"),
        color: color(changedLabel),
        description: { field: "label", type: "nominal" },
      },
    },
  ];
}

/**
 * The raw backoff (grey, dashed), the delay (blue) and red points where the jitter changed it, with a
 * legend of the three; `panel` facets by that field, three panels a row.
 */
export function jitterSpec(options: {
  title: string;
  subtitle: string;
  rows: readonly { x: number; raw: number; delay: number; changed: boolean; panel?: string }[];
  n: number;
  yTitle: string;
  labels: readonly [string, string, string];
  panels?: readonly string[];
}): TopLevelSpec {
  // Panels take the width, three a row: their legend goes under them, so that the chart fits a screen.
  const layer = jitterLayers(
    options.labels,
    options.n,
    options.yTitle,
    options.panels === undefined ? "right" : "bottom",
  );
  const values = options.rows.map((r) => ({
    ...r,
    label: `${r.panel === undefined ? "" : `${r.panel}: `}jitter changed the delay at x=${r.x}`,
  }));
  if (options.panels === undefined) {
    return {
      ...frame(options.title, options.subtitle),
      width: 640,
      height: 340,
      data: { values },
      layer,
    } as TopLevelSpec;
  }
  return {
    ...frame(options.title, options.subtitle),
    data: { values },
    columns: 3,
    facet: {
      field: "panel",
      type: "nominal",
      sort: [...options.panels],
      header: { title: null, labelFontSize: 12, labelFontWeight: "bold", labelLimit: 0 },
    },
    spec: { width: 250, height: 150, layer },
    resolve: { axis: { x: "independent", y: "independent" } },
  } as TopLevelSpec;
}
