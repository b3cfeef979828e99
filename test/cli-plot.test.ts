// `robustly plot`: the default figures (and one policy's) as SVG charts and an HTML page.
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { backoff, type Jitter, jitter, seededRandom } from "robustly";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { UsageError } from "../src/cli/args.js";
import { CHANGED_COLOR, runPlot } from "../src/cli/plot.js";
import { load, MAX_CHART_WIDTH, renderSpec, svgWidth } from "../src/cli/render.js";
import { schedule } from "../src/cli/schedule.js";

const dirs: string[] = [];
const tempDir = () => {
  const dir = mkdtempSync(join(tmpdir(), "robustly-plot-"));
  dirs.push(dir);
  return dir;
};
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

async function plot(...args: string[]): Promise<string[]> {
  let text = "";
  const out = new Writable({
    write(chunk, _encoding, done) {
      text += String(chunk);
      done();
    },
  });
  expect(await runPlot(args, out)).toBe(0);
  return text.trimEnd().split("\n");
}

const read = (path: string) => readFileSync(path, "utf8");
const unescapeXml = (text: string) =>
  text.replace(/&amp;/g, "&").replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&#39;/g, "'");
/** The text of the SVG's <text> elements (titles, axis titles, legend labels, panel headers). */
const texts = (svg: string) =>
  [...svg.matchAll(/<text[^>]*>([^<]*)<\/text>/g)].map((m) => unescapeXml(m[1] as string));
const legend = (svg: string) => {
  const start = svg.indexOf('class="mark-group role-legend"');
  expect(start).toBeGreaterThan(-1);
  return texts(svg.slice(start));
};

function expectSvg(svg: string): void {
  expect(svg.startsWith("<svg")).toBe(true);
  expect(svg.trimEnd().endsWith("</svg>")).toBe(true);
}

/** The red points: the mark's symbols, with what their aria-label says and where they are drawn. */
function changedPoints(svg: string) {
  return [
    ...svg.matchAll(
      /<path aria-label="(?:([^"]*): )?jitter changed the delay at x=(\d+)" role="graphics-symbol" aria-roledescription="point" transform="translate\(([\d.-]+),([\d.-]+)\)" d="[^"]*" fill="([^"]*)"/g,
    ),
  ].map((m) => ({
    panel: unescapeXml(m[1] ?? ""),
    x: Number(m[2]),
    px: Number(m[3]),
    fill: m[5],
  }));
}

/** What the backoff figure shows, x = 0…10. */
const N = 10;
const exponential = backoff.exponential({ base: 1000, max: 60_000, multiplier: 2 });
/** The jitter of each panel, by the name its header starts with. */
const PANELS: Record<string, () => Jitter> = {
  none: () => jitter.none(),
  full: () => jitter.full(),
  "full, choice": () => jitter.full({ mode: "choice" }),
  equal: () => jitter.equal(),
  "equal, choice": () => jitter.equal({ mode: "choice" }),
  decorrelated: () => jitter.decorrelated(),
  decorrelatedAws: () => jitter.decorrelatedAws(),
  decorrelatedPolly: () => jitter.decorrelatedPolly(),
  normal: () => jitter.normal({ sigma: 0.1 }),
  proportional: () => jitter.proportional(),
};

describe("robustly plot (the default figures)", () => {
  let dir: string;
  let printed: string[];
  const files = [
    "backoff-strategies.svg",
    "jitter-strategies.svg",
    "overload-delays.svg",
    "overload-delays-log.svg",
    "total-delays.svg",
    "index.html",
  ];

  beforeAll(async () => {
    dir = join(tempDir(), "plots"); // created if missing
    printed = await plot("--out", dir);
  }, 30_000);

  it("writes every chart and the page, and prints their paths one per line", () => {
    expect(printed).toEqual(files.map((f) => join(dir, f)));
    for (const path of printed) expect(existsSync(path)).toBe(true);
    for (const path of printed.filter((p) => p.endsWith(".svg"))) expectSvg(read(path));
  });

  it("draws every backoff strategy at the figure's parameters, with titled axes and a legend", () => {
    const svg = read(join(dir, "backoff-strategies.svg"));
    const all = texts(svg);
    expect(all).toContain("Backoff strategies");
    expect(all.some((t) => t.includes("v_base = 1 s, v_max = 60 s, m = 2, L = 2 s, p1 = 2"))).toBe(true);
    expect(all).toContain("retries so far (x)");
    expect(all).toContain("backoff v_x (s)");
    const names = legend(svg);
    for (const name of ["exponential", "linear", "fibonacci", "polynomial", "random", "constant", "none"])
      expect(names.some((label) => label.startsWith(`${name}:`))).toBe(true);
    // x runs 0…10: the axis labels them all.
    for (let x = 0; x <= N; x++) expect(all).toContain(String(x));
  });

  it("draws one panel per jitter, with the jitter-changed points in red exactly where schedule() says", () => {
    const svg = read(join(dir, "jitter-strategies.svg"));
    const all = texts(svg);
    expect(all).toContain("Jitter algorithms on exponential backoff");
    expect(all).toContain("retries so far (x)");
    expect(all).toContain("delay (s)");
    expect(legend(svg)).toEqual(
      expect.arrayContaining([
        "backoff v_x before the jitter",
        "delay with the jitter",
        "the jitter changed the delay",
      ]),
    );
    const headers = all.filter((t) => /^[a-zA-Z, ]+: /.test(t) && (t.split(":")[0] as string) in PANELS);
    expect(headers.map((h) => h.split(":")[0])).toEqual(Object.keys(PANELS));

    const points = changedPoints(svg);
    expect(points.length).toBeGreaterThan(0);
    // Every red point is red, in the mark of the changed points, and drawn at its x (a panel is 250 px wide).
    for (const p of points) {
      expect(p.fill).toBe(CHANGED_COLOR);
      expect(p.px).toBeCloseTo((p.x * 250) / N, 6);
    }
    expect(svg).toContain('class="mark-symbol role-mark changed_marks"');

    for (const header of headers) {
      const name = header.split(":")[0] as string;
      const rows = schedule(
        { backoff: exponential, jitter: (PANELS[name] as () => Jitter)(), random: seededRandom(1) },
        N + 1,
      );
      // Where schedule() says the jitter changed the delay: jittered !== backoff. Decorrelated jitter
      // recomputes the backoff at an x it reset (so jittered === backoff): it changed the delay where it
      // reset x. AWS's never asks the backoff: compare with v_x.
      let held = 0;
      const expected: number[] = [];
      rows.forEach((row, x) => {
        const changed =
          row.backoff === null
            ? row.jittered !== exponential.delay(x, seededRandom(0))
            : row.x !== held || row.jittered !== row.backoff;
        if (changed) expected.push(x);
        held = row.x + 1;
      });
      const marked = points.filter((p) => p.panel === header).map((p) => p.x);
      expect(marked, header).toEqual(expected);
      if (!name.startsWith("decorrelated")) {
        expect(marked, header).toEqual(rows.flatMap((r, x) => (r.jittered !== r.backoff ? [x] : [])));
      }
    }
    const count = (name: string) => points.filter((p) => p.panel.startsWith(`${name}:`)).length;
    expect(count("none")).toBe(0);
    // Seed 000's random_choice jitters change some delays and leave others: some points red, not all.
    for (const name of ["full, choice", "equal, choice", "decorrelated"]) {
      expect(count(name), name).toBeGreaterThan(0);
      expect(count(name), name).toBeLessThan(N + 1);
    }
    expect(count("full")).toBe(N + 1);
  });

  it("draws the overload experiment's two curves by attempt number, on a linear and a log scale", () => {
    for (const file of ["overload-delays.svg", "overload-delays-log.svg"]) {
      const svg = read(join(dir, file));
      const all = texts(svg);
      expect(all).toContain("attempt number");
      expect(all).toContain(file.includes("log") ? "delay (s, log scale)" : "delay (s)");
      expect(legend(svg)).toEqual(
        expect.arrayContaining([
          "MinDelay 100 ms, Factor 2.7, Jitter 0.1, MaxDelay 10 min",
          "MinDelay 1 sec, Factor 1.5, Jitter 0.1, MaxDelay 5 min",
        ]),
      );
      expect(all).toContain("20"); // at least 20 attempts, so both curves reach their MaxDelay
    }
    // The log scale is ticked at powers of ten, 0.1 s to 1000 s.
    const log = texts(read(join(dir, "overload-delays-log.svg")));
    for (const tick of ["0.1", "1", "10", "100", "1,000"]) expect(log).toContain(tick);
  });

  it("draws the total delays of six common strategies on a log scale that keeps the zeros", () => {
    const svg = read(join(dir, "total-delays.svg"));
    const all = texts(svg);
    expect(all).toContain("maximum retries");
    expect(all).toContain("total delay (s, log scale)");
    expect(legend(svg)).toEqual(
      expect.arrayContaining(["Constant", "Linear", "Fibonacci", "Quadratic", "Exponential", "Polynomial"]),
    );
    for (const tick of ["0", "1", "1,000,000"]) expect(all).toContain(tick);
    for (const x of ["1", "3", "5", "10", "20"]) expect(all).toContain(x);
  });

  it("writes a page that shows every chart with a paragraph under it, and the Total Delays table", () => {
    const html = read(join(dir, "index.html"));
    expect(html.startsWith("<!doctype html>")).toBe(true);
    for (const file of files.slice(0, -1)) {
      const at = html.indexOf(`<img src="${file}"`);
      expect(at, file).toBeGreaterThan(-1);
      expect(html.slice(at).split("</figure>")[1]?.trimStart().startsWith("<p>"), file).toBe(true);
    }
    expect(html).toContain("The overload experiment&#39;s retry delays"); // escaped
    expect(html).toContain("<tr><td>Exponential</td><td>1 s</td><td>7 s</td><td>31 s</td><td>1,023 s</td>");
    expect(html).toContain("<td>1,048,575 s</td>");
  });
});

describe("robustly plot (a policy)", () => {
  it("plots the policy the flags give: policy.svg and the page, nothing else", async () => {
    const dir = tempDir();
    const printed = await plot(
      "--out",
      dir,
      "--backoff",
      "linear",
      "--base",
      "1s",
      "--interval",
      "2s",
      "--jitter",
      "none",
    );
    expect(printed).toEqual([join(dir, "policy.svg"), join(dir, "index.html")]);
    expect(existsSync(join(dir, "backoff-strategies.svg"))).toBe(false);
    const svg = read(join(dir, "policy.svg"));
    expectSvg(svg);
    const all = texts(svg);
    expect(all).toContain("Retry policy: linear backoff, no jitter");
    expect(all).toContain("retries so far (x)");
    expect(all).toContain("delay (s)");
    expect(legend(svg)).toEqual(
      expect.arrayContaining(["backoff v_x", "final delay", "the jitter changed the delay"]),
    );
    expect(changedPoints(svg)).toEqual([]); // no jitter, no red point
    const html = read(join(dir, "index.html"));
    expect(html).toContain('<img src="policy.svg"');
    expect(html).toContain("<tr><td>10</td><td>21000</td><td>21000</td><td>21000</td><td>no</td></tr>");
  });

  it("marks where a jitter changed the delay, as schedule() computes it, with --config and --retries", async () => {
    const dir = tempDir();
    const config = join(dir, "policy.json");
    const { writeFileSync } = await import("node:fs");
    writeFileSync(config, JSON.stringify({ backoff: { name: "constant", base: "1s" }, jitter: "full" }));
    await plot("--out", dir, "--config", config, "--jitter", "full", "--mode", "choice", "--retries", "15");
    const rows = schedule(
      {
        backoff: backoff.constant({ base: 1000 }),
        jitter: jitter.full({ mode: "choice" }),
        random: seededRandom(1),
      },
      16,
    );
    const expected = rows.flatMap((r, x) => (r.jittered !== r.backoff ? [x] : []));
    expect(expected.length).toBeGreaterThan(0);
    expect(changedPoints(read(join(dir, "policy.svg"))).map((p) => p.x)).toEqual(expected);
  });

  it("prints the help", async () => {
    const [first] = await plot("--help");
    expect(first).toContain("robustly plot");
  });

  it("rejects a bad command line with a UsageError that points to --help", async () => {
    await expect(runPlot(["--bogus"])).rejects.toThrow(UsageError);
    await expect(runPlot(["--bogus"])).rejects.toThrow(/robustly plot --help/);
    await expect(runPlot(["stray"])).rejects.toThrow(UsageError);
    await expect(runPlot(["--retries", "0"])).rejects.toThrow(UsageError);
    await expect(runPlot(["--backoff", "quadratic"])).rejects.toThrow(UsageError);
  });
});

describe("every chart fits a 1280 px screen", () => {
  const view = (width: number) => ({
    width,
    height: 200,
    data: { values: [{ x: 0, y: 1, series: "a series with a long name in the legend" }] },
    mark: "line" as const,
    encoding: {
      x: { field: "x", type: "quantitative" as const },
      y: { field: "y", type: "quantitative" as const },
      color: { field: "series", type: "nominal" as const },
    },
  });
  const viewBox = (svg: string) => /viewBox="([^"]*)"/.exec(svg)?.[1];

  it("a wide single view is laid out again to 1280 px, a wide composite scaled down whole", async () => {
    const { vega, vegaLite } = await load();
    const single = await renderSpec(vega, vegaLite, view(1500));
    expect(svgWidth(single)).toBe(MAX_CHART_WIDTH);
    expect(viewBox(single)).toBe(`0 0 ${MAX_CHART_WIDTH} ${/height="([\d.]+)"/.exec(single)?.[1]}`);
    const wide = await renderSpec(vega, vegaLite, { hconcat: [view(800), view(800)] });
    expect(svgWidth(wide)).toBe(MAX_CHART_WIDTH);
    expect(Number(viewBox(wide)?.split(" ")[2])).toBeGreaterThan(1600);
    const narrow = await renderSpec(vega, vegaLite, view(300));
    expect(svgWidth(narrow)).toBeLessThan(MAX_CHART_WIDTH);
    expect(viewBox(narrow)).toBe(`0 0 ${svgWidth(narrow)} ${/height="([\d.]+)"/.exec(narrow)?.[1]}`);
  });

  it("robustly plot's figures are all within it", async () => {
    const dir = tempDir();
    for (const path of await plot("--out", dir)) {
      if (path.endsWith(".svg")) expect(svgWidth(read(path)), path).toBeLessThanOrEqual(MAX_CHART_WIDTH);
    }
  });
});
