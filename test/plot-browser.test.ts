// The charts of `robustly plot` and `simulate --report` drawn by a real browser: headless Chromium takes a
// screenshot of an SVG, and the PNG must show a chart (a fair share of non-white pixels, some of them
// coloured: the lines); and every chart the CLI draws is at most 1280 px wide as Chromium lays it out.
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { pathToFileURL } from "node:url";
import { inflateSync } from "node:zlib";
import { expect, it } from "vitest";
import { runPlot } from "../src/cli/plot.js";
import { writeReport } from "../src/cli/report.js";
import { SCENARIOS, type ScenarioName, type SimulateOptions, simulateAsync } from "../src/sim/simulate.js";
import { type Browser, startChromium } from "./support/chromium.js";
import { connectDevTools } from "./support/devtools.js";

const WIDTH = 900;
const HEIGHT = 500;

interface Image {
  readonly width: number;
  readonly height: number;
  /** RGB, 3 bytes a pixel, row after row. */
  readonly rgb: Uint8Array;
}

/** Decodes a PNG of 8-bit RGB or RGBA, not interlaced (what Chromium writes); alpha is dropped. */
function decodePng(file: Buffer): Image {
  const signature = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  if (!file.subarray(0, 8).equals(signature)) throw new Error("not a PNG");
  let width = 0;
  let height = 0;
  let channels = 0;
  const idat: Buffer[] = [];
  for (let at = 8; at < file.length; ) {
    const length = file.readUInt32BE(at);
    const type = file.toString("latin1", at + 4, at + 8);
    const data = file.subarray(at + 8, at + 8 + length);
    if (type === "IHDR") {
      width = data.readUInt32BE(0);
      height = data.readUInt32BE(4);
      const [depth, colour, , , interlace] = [data[8], data[9], data[10], data[11], data[12]];
      if (depth !== 8 || (colour !== 2 && colour !== 6) || interlace !== 0)
        throw new Error(`unsupported PNG: depth ${depth}, colour type ${colour}, interlace ${interlace}`);
      channels = colour === 2 ? 3 : 4;
    } else if (type === "IDAT") {
      idat.push(data);
    } else if (type === "IEND") {
      break;
    }
    at += 12 + length;
  }
  const raw = inflateSync(Buffer.concat(idat));
  const stride = width * channels;
  if (raw.length !== height * (stride + 1)) throw new Error("PNG data of the wrong length");
  const pixels = new Uint8Array(height * stride);
  for (let y = 0; y < height; y++) {
    const filter = raw[y * (stride + 1)] as number;
    const line = raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1));
    const row = y * stride;
    for (let i = 0; i < stride; i++) {
      const a = i >= channels ? (pixels[row + i - channels] as number) : 0; // left
      const b = y > 0 ? (pixels[row - stride + i] as number) : 0; // up
      const c = y > 0 && i >= channels ? (pixels[row - stride + i - channels] as number) : 0; // up-left
      let predictor: number;
      switch (filter) {
        case 0:
          predictor = 0;
          break;
        case 1:
          predictor = a;
          break;
        case 2:
          predictor = b;
          break;
        case 3:
          predictor = (a + b) >> 1;
          break;
        case 4: {
          const p = a + b - c;
          const pa = Math.abs(p - a);
          const pb = Math.abs(p - b);
          const pc = Math.abs(p - c);
          predictor = pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
          break;
        }
        default:
          throw new Error(`bad PNG filter ${filter} on row ${y}`);
      }
      pixels[row + i] = ((line[i] as number) + predictor) & 0xff;
    }
  }
  const rgb = new Uint8Array(width * height * 3);
  for (let p = 0; p < width * height; p++)
    for (let k = 0; k < 3; k++) rgb[p * 3 + k] = pixels[p * channels + k] as number;
  return { width, height, rgb };
}

it("headless Chromium draws the backoff strategies chart", { timeout: 60_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), "robustly-plot-browser-"));
  let browser: Browser | undefined;
  try {
    const quiet = new Writable({ write: (_chunk, _encoding, done) => done() });
    expect(await runPlot(["--out", dir], quiet)).toBe(0);
    const svg = join(dir, "backoff-strategies.svg");
    const png = join(dir, "screenshot.png");
    browser = startChromium(
      [`--screenshot=${png}`, `--window-size=${WIDTH},${HEIGHT}`, pathToFileURL(svg).href],
      50_000,
    );
    expect(await browser.done).toBe(0);
    expect(existsSync(png)).toBe(true);

    const image = decodePng(readFileSync(png));
    expect([image.width, image.height]).toEqual([WIDTH, HEIGHT]);
    const pixels = image.width * image.height;
    let ink = 0;
    let coloured = 0;
    for (let p = 0; p < pixels; p++) {
      const [r, g, b] = [
        image.rgb[p * 3] as number,
        image.rgb[p * 3 + 1] as number,
        image.rgb[p * 3 + 2] as number,
      ];
      if (Math.min(r, g, b) < 235) ink++;
      if (Math.max(r, g, b) - Math.min(r, g, b) > 60) coloured++;
    }
    // Text, axes and grid make a few per cent of the pixels ink; the seven strategies' lines and points
    // are coloured (the grid and text are grey or black).
    expect(ink / pixels).toBeGreaterThan(0.03);
    expect(ink / pixels).toBeLessThan(0.6);
    expect(coloured).toBeGreaterThan(2000);
  } finally {
    browser?.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

/** A laptop's screen: no chart may be wider. */
const SCREEN = 1280;
/** Where the screenshots of every chart are left, to look at. */
const SHOTS = join(tmpdir(), "robustly-chart-screenshots");

/** Small runs of each scenario: the charts' layout (titles, legends) does not depend on their length. */
const SMALL: Record<ScenarioName, SimulateOptions> = {
  outage: { scenario: "outage", clients: [200], duration: 30_000, outage: { start: 5000, length: 10_000 } },
  contention: { scenario: "contention" },
  amplification: { scenario: "amplification", failureProbability: [0, 0.5, 1], duration: 5000 },
  "throttled-store": { scenario: "throttled-store", batch: 2000 },
  metastable: {
    scenario: "metastable",
    clients: [200],
    duration: 30_000,
    outage: { start: 5000, length: 10_000 },
  },
  fleet: {
    scenario: "fleet",
    processes: 4,
    clients: [20],
    duration: 30_000,
    outage: { start: 5000, length: 10_000 },
  },
};

it("every chart the CLI draws is at most 1280 px wide in Chromium", { timeout: 120_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), "robustly-chart-widths-"));
  let browser: Browser | undefined;
  try {
    const quiet = new Writable({ write: (_chunk, _encoding, done) => done() });
    expect(await runPlot(["--out", join(dir, "plot")], quiet)).toBe(0);
    expect(Object.keys(SMALL).sort()).toEqual(Object.keys(SCENARIOS).sort());
    for (const options of Object.values(SMALL)) {
      await writeReport(await simulateAsync(options), join(dir, options.scenario as string));
    }
    const svgs = readdirSync(dir, { recursive: true, encoding: "utf8" })
      .filter((file) => file.endsWith(".svg"))
      .sort();
    // Five figures of plot, and two or three charts of each scenario.
    expect(svgs.length).toBeGreaterThanOrEqual(5 + 2 * Object.keys(SMALL).length);

    // A screen wider than the limit, so that a wider chart would show its full width.
    const viewport = { width: 2000, height: 1200 };
    browser = startChromium(
      [`--window-size=${viewport.width},${viewport.height}`, "about:blank"],
      110_000,
      true,
    );
    const page = await connectDevTools(browser).newPage();
    await page.send("Emulation.setDeviceMetricsOverride", {
      ...viewport,
      deviceScaleFactor: 1,
      mobile: false,
    });
    rmSync(SHOTS, { recursive: true, force: true });
    mkdirSync(SHOTS, { recursive: true });
    const widths: Record<string, number> = {};
    for (const file of svgs) {
      await page.navigate(pathToFileURL(join(dir, file)).href);
      const box = await page.evaluate<{ width: number; height: number }>(
        "(({ width, height }) => ({ width, height }))(document.documentElement.getBoundingClientRect())",
      );
      widths[file] = box.width;
      const { data } = (await page.send("Page.captureScreenshot", {
        format: "png",
        clip: { x: 0, y: 0, width: box.width, height: box.height, scale: 1 },
        captureBeyondViewport: true,
      })) as { data: string };
      writeFileSync(
        join(SHOTS, file.replace(/[/\\]/g, "-").replace(/\.svg$/, ".png")),
        Buffer.from(data, "base64"),
      );
    }
    expect(page.errors).toEqual([]);
    expect(Object.values(widths).every((w) => w > 400)).toBe(true);
    expect(Object.entries(widths).filter(([, width]) => width > SCREEN)).toEqual([]);
    expect(readdirSync(SHOTS)).toHaveLength(svgs.length);
  } finally {
    browser?.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
