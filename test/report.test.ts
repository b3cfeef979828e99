// `robustly simulate --report DIR`: the SVG charts (rendered by vega-lite and vega) and the HTML page.
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { escapeHtml, runsAveraged, writeReport } from "../src/cli/report.js";
import { AWS_BACKOFF_STUDY } from "../src/sim/published.js";
import { type SimulationResult, simulate } from "../src/sim/simulate.js";

const dirs: string[] = [];
const tempDir = () => {
  const dir = mkdtempSync(join(tmpdir(), "robustly-report-"));
  dirs.push(dir);
  return dir;
};
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

const read = (path: string) => readFileSync(path, "utf8");
/** The text of the SVG's <text> elements (axis titles, legend labels, titles). */
const texts = (svg: string) => [...svg.matchAll(/<text[^>]*>([^<]*)<\/text>/g)].map((m) => m[1]);
const legend = (svg: string) => {
  const start = svg.indexOf('class="mark-group role-legend"');
  expect(start).toBeGreaterThan(-1);
  return texts(svg.slice(start));
};
/** The shaded outage window: its rect mark's path, `M x,0 h width v height`. */
const shade = (svg: string) =>
  /<g class="mark-rect role-mark outage_marks"[^>]*><path [^>]*d="M([\d.]+),0h([\d.]+)v[\d.]+h-[\d.]+Z" fill="#9e9e9e" opacity="0.25"/.exec(
    svg,
  );

function expectSvg(svg: string): void {
  expect(svg.startsWith("<svg")).toBe(true);
  expect(svg.trimEnd().endsWith("</svg>")).toBe(true);
}

function expectPage(html: string, svgs: readonly string[], strategies: readonly string[]): void {
  expect(html.startsWith("<!doctype html>")).toBe(true);
  for (const svg of svgs) expect(html).toContain(`<img src="${basename(svg)}"`);
  expect(html).toContain("<table>");
  for (const s of strategies) expect(html).toContain(`<tr><td>${s}</td>`);
}

describe("writeReport, outage", () => {
  let result: SimulationResult;
  let dir: string;
  let paths: string[];

  beforeAll(async () => {
    result = simulate({
      scenario: "outage",
      strategies: ["fixed", "exponential"],
      clients: [200],
      duration: 60_000,
      outage: { start: 10_000, length: 10_000 },
      seed: 3,
    });
    dir = join(tempDir(), "report", "nested"); // created if missing
    paths = await writeReport(result, dir);
  }, 30_000);

  it("writes three charts and the page, and returns their paths", () => {
    expect(paths.map((p) => basename(p))).toEqual([
      "outage-concurrency.svg",
      "outage-goodput.svg",
      "outage-timeouts.svg",
      "index.html",
    ]);
    for (const path of paths) {
      expect(path.startsWith(dir)).toBe(true);
      expect(existsSync(path)).toBe(true);
    }
  });

  it("titles the charts and their axes, with a legend of the strategies", () => {
    const expected = [
      ["Server concurrency", "requests in the server (log scale)"],
      ["Goodput", "successes per second"],
      ["Timeouts", "timeouts per second"],
    ];
    paths.slice(0, 3).forEach((path, i) => {
      const svg = read(path);
      expectSvg(svg);
      const [title, yTitle] = expected[i] as [string, string];
      expect(texts(svg)).toEqual(expect.arrayContaining([title, "time (s)", yTitle]));
      expect(legend(svg)).toEqual(expect.arrayContaining(["strategy", "fixed", "exponential"]));
    });
  });

  it("shades the outage, 10–20 s of the 60 s axis", () => {
    for (const path of paths.slice(0, 3)) {
      const svg = read(path);
      const rect = shade(svg);
      expect(rect).not.toBeNull();
      const [x, width] = [Number(rect?.[1]), Number(rect?.[2])];
      // The plot is 640 px wide: the window starts at 10/60 of it and spans 10/60.
      expect(x).toBeCloseTo((640 * 10) / 60, 0);
      expect(width).toBeCloseTo((640 * 10) / 60, 0);
      expect(texts(svg)).toContain("outage");
    }
  });

  it("puts the concurrency on a log scale, ticked at powers of ten", () => {
    const svg = read(paths[0] as string);
    expect(svg).toContain("symlog scale");
    expect(texts(svg)).toEqual(expect.arrayContaining(["0", "1", "10", "100"]));
  });

  it("writes a page showing every chart and a table of the runs", () => {
    const html = read(paths[3] as string);
    expectPage(html, paths.slice(0, 3), ["fixed", "exponential"]);
    for (const column of ["recovered", "recovery time (s)", "peak concurrency", "attempts per request"]) {
      expect(html).toContain(`<th scope="col">${column}</th>`);
    }
    expect(html).not.toContain("failure probability");
    for (const run of result.runs) {
      expect(html).toContain(`<td>${run.amplification.toFixed(2)}</td>`);
      expect(html).toContain(`<td>${(run.successRate * 100).toFixed(1)}%</td>`);
    }
  });

  it("labels lines with the client count when runs share a strategy", async () => {
    const several = simulate({
      scenario: "outage",
      strategies: ["fixed", "exponential"],
      clients: [50, 100],
      duration: 20_000,
      outage: { start: 5_000, length: 5_000 },
      seed: 3,
    });
    const [concurrency] = await writeReport(several, tempDir());
    expect(legend(read(concurrency as string))).toEqual(
      expect.arrayContaining([
        "fixed (50 clients)",
        "exponential (50 clients)",
        "fixed (100 clients)",
        "exponential (100 clients)",
      ]),
    );
  });
});

describe("writeReport, other scenarios", () => {
  it("charts writes, completion time and makespan against clients for contention", async () => {
    const result = simulate({
      scenario: "contention",
      clients: [5, 10],
      strategies: ["no-backoff", "full-jitter"],
      seed: 1,
      runs: 2,
    });
    const paths = await writeReport(result, tempDir());
    expect(paths.map((p) => basename(p))).toEqual([
      "contention-work.svg",
      "contention-completion.svg",
      "contention-makespan.svg",
      "index.html",
    ]);
    const yTitles = ["writes", "mean completion time (ms)", "makespan (ms)"];
    paths.slice(0, 3).forEach((path, i) => {
      const svg = read(path);
      expectSvg(svg);
      expect(texts(svg)).toEqual(expect.arrayContaining(["clients", yTitles[i]]));
      expect(legend(svg)).toEqual(expect.arrayContaining(["no-backoff", "full-jitter"]));
      expect(shade(svg)).toBeNull();
    });
    const html = read(paths[3] as string);
    expectPage(html, paths.slice(0, 3), ["no-backoff", "full-jitter"]);
    expect(html).not.toContain("recovered");
    expect(html).not.toContain("peak concurrency");
    expect(html).toContain('<th scope="col">writes</th>');
    expect(html).toContain('<th scope="col">makespan (ms)</th>');
  });

  it("charts attempts per request and server work against failure probability for amplification", async () => {
    const result = simulate({
      scenario: "amplification",
      failureProbability: [0, 0.5, 1],
      duration: 5_000,
      seed: 1,
    });
    const paths = await writeReport(result, tempDir());
    expect(paths.map((p) => basename(p))).toEqual([
      "amplification-attempts.svg",
      "amplification-work.svg",
      "index.html",
    ]);
    const yTitles = ["attempts per request", "requests handled by the server"];
    paths.slice(0, 2).forEach((path, i) => {
      const svg = read(path);
      expectSvg(svg);
      expect(texts(svg)).toEqual(expect.arrayContaining(["failure probability", yTitles[i]]));
      expect(legend(svg)).toEqual(expect.arrayContaining(["no-retries", "3-retries"]));
    });
    const html = read(paths[2] as string);
    expectPage(html, paths.slice(0, 2), ["no-retries", "3-retries"]);
    expect(html).toContain('<th scope="col">failure probability</th>');
    expect(html).toContain("<td>0.5</td>");
  });
});

describe("writeReport, throttled-store", () => {
  it("charts writes accepted against the store's capacity, and the writes refused", async () => {
    const result = simulate({
      scenario: "throttled-store",
      batch: 2000,
      clients: [20],
      duration: 60_000,
      seed: 1,
    });
    const paths = await writeReport(result, tempDir());
    expect(paths.map((p) => basename(p))).toEqual([
      "throttled-writes.svg",
      "throttled-rejections.svg",
      "index.html",
    ]);
    const writes = read(paths[0] as string);
    expectSvg(writes);
    expect(texts(writes)).toEqual(expect.arrayContaining(["time (s)", "writes per second"]));
    expect(legend(writes)).toEqual(
      expect.arrayContaining([
        "exponential-full-jitter",
        "responsive-coalesced",
        "responsive-coalesced: capacity",
      ]),
    );
    expectPage(read(paths[2] as string), paths.slice(0, 2), ["exponential-full-jitter", "responsive"]);
  });
});

describe("escapeHtml", () => {
  it("escapes the characters that matter in content and attributes", () => {
    expect(escapeHtml(`<a href="x" title='y'>&</a>`)).toBe(
      "&lt;a href=&quot;x&quot; title=&#39;y&#39;&gt;&amp;&lt;/a&gt;",
    );
  });
});

describe("without vega", () => {
  afterEach(() => {
    vi.doUnmock("vega");
    vi.resetModules();
  });

  it("says how to install the optional packages", async () => {
    vi.resetModules();
    vi.doMock("vega", () => {
      throw new Error("Cannot find package 'vega'");
    });
    const { writeReport: write } = await import("../src/cli/report.js");
    const result = simulate({ scenario: "amplification", failureProbability: [0], duration: 1_000 });
    await expect(write(result, tempDir())).rejects.toThrow(
      "--report needs the optional packages vega and vega-lite: npm install vega vega-lite",
    );
  });
});

describe("the report page explains itself", () => {
  /** The header cells of each of the page's tables. */
  const headers = (html: string) =>
    [...html.matchAll(/<thead><tr>(.*?)<\/tr><\/thead>/g)].map((m) =>
      [...(m[1] as string).matchAll(/<th scope="col">([^<]*)<\/th>/g)].map((c) => c[1]),
    );
  const explained = (html: string) => [...html.matchAll(/<dt>([^<]*)<\/dt><dd>/g)].map((m) => m[1] as string);

  it("says how many runs each row averages: one run is one run, whatever the number of rows", async () => {
    const one = simulate({
      scenario: "metastable",
      duration: 40_000,
      outage: { start: 10_000, length: 5000 },
    });
    expect(one.runs.length).toBeGreaterThan(1);
    const html = read((await writeReport(one, tempDir())).at(-1) as string);
    expect(html).toContain("Each row is one run (seed 1).");
    expect(html).not.toMatch(/\b\d+ runs\./);
    const many = simulate({
      scenario: "contention",
      clients: [3],
      strategies: ["no-backoff"],
      seed: 4,
      runs: 7,
    });
    expect(runsAveraged(many)).toBe("Each row is the mean of 7 runs (seeds 4 to 10).");
  });

  it("says what the experiment is and where it comes from, and explains every column", async () => {
    const results = [
      simulate({
        strategies: ["fixed"],
        clients: [100],
        duration: 40_000,
        outage: { start: 10_000, length: 5000 },
      }),
      simulate({ scenario: "contention", clients: [5], runs: 2 }),
      simulate({ scenario: "amplification", failureProbability: [0.5], duration: 5000 }),
    ];
    const sources = [
      "Exponential Backoff or how not to crash a server",
      "Exponential Backoff And Jitter",
      "1 + p",
    ];
    for (const [i, result] of results.entries()) {
      const html = read((await writeReport(result, tempDir())).at(-1) as string);
      expect(html).toContain(escapeHtml(sources[i] as string));
      const [columns] = headers(html);
      expect(columns?.length).toBeGreaterThan(3);
      const dts = explained(html);
      for (const column of columns ?? []) expect(dts, `${result.scenario}: ${column}`).toContain(column);
      expect(html).not.toMatch(/seed 00\d/);
    }
  });

  it("contention: the study's figures beside the simulated ones, in a table and dashed in the charts", async () => {
    const result = simulate({ scenario: "contention", clients: [10, 20], runs: 5 });
    const paths = await writeReport(result, tempDir());
    const html = read(paths.at(-1) as string);
    expect(html).toContain("Against the published figures");
    const published = AWS_BACKOFF_STUDY.strategies["aws-full-jitter"]?.find((p) => p.clients === 20);
    expect(html).toMatch(
      new RegExp(
        `<tr><td>aws-full-jitter</td><td>20</td><td>${published?.work}</td><td>\\d+ \\([+−]\\d+\\.\\d %\\)</td><td>${published?.makespan}</td>`,
      ),
    );
    const work = read(paths[0] as string);
    expect(texts(work)).toEqual(expect.arrayContaining(["published", "simulated"]));
    expect(work).toMatch(/stroke-dasharray="5,4"/);
    // Robustly's own variants have no published figure: no row for them.
    const own = simulate({ scenario: "contention", clients: [10], strategies: ["full-jitter"], runs: 2 });
    const ownHtml = read((await writeReport(own, tempDir())).at(-1) as string);
    expect(ownHtml).not.toContain("Against the published figures");
  });

  it("outage: a --backlog sweep shows the backlog of each row and charts recovery against it", async () => {
    const result = simulate({
      strategies: ["fixed", "exponential"],
      clients: [300],
      duration: 40_000,
      outage: { start: 10_000, length: 10_000 },
      backlogs: [64, 256],
    });
    expect(result.runs.map((r) => [r.strategy, r.backlog])).toEqual([
      ["fixed", 64],
      ["exponential", 64],
      ["fixed", 256],
      ["exponential", 256],
    ]);
    const paths = await writeReport(result, tempDir());
    expect(paths.map((p) => basename(p))).toEqual([
      "outage-backlog-recovery.svg",
      "outage-backlog-concurrency.svg",
      "outage-backlog-success.svg",
      "index.html",
    ]);
    const html = read(paths.at(-1) as string);
    expect(html).toContain('<th scope="col">backlog</th>');
    expect(texts(read(paths[0] as string))).toEqual(
      expect.arrayContaining(["listen queue (backlog, requests)", "recovery time (s)"]),
    );
  });
});
