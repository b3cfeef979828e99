// The docs site as a reader meets it: `vitepress build` makes it from docs/, a static server serves it on
// loopback, and headless Chromium (driven through the DevTools protocol) loads every page, checks that it
// renders without a script error and that every link to the site reaches a page and, when it names one, a
// heading there. Then it drives the policy explorer: robustly running in the page must redraw the delays
// and rerun the outage when a field changes, and show a bad choice's OptionError. A screenshot of the
// explorer at 1280 px is left in the system's temporary folder (robustly-explorer.png).
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { extname, join, normalize } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { INITIAL } from "../docs/.vitepress/theme/explorer.js";
import { root } from "./support/blocks.js";
import { type Browser, startChromium } from "./support/chromium.js";
import { connectDevTools, type Page } from "./support/devtools.js";

const WIDTH = 1280;
const SCREENSHOT = join(tmpdir(), "robustly-explorer.png");

const TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript",
  ".css": "text/css",
  ".json": "application/json",
  ".svg": "image/svg+xml",
  ".woff2": "font/woff2",
};

let site = "";
let server: Server | undefined;
let origin = "";
let browser: Browser | undefined;
let page: Page | undefined;

/** The file of the built site a path names, as a static host serves it; undefined when there is none. */
function fileFor(pathname: string): string | undefined {
  const path = normalize(decodeURIComponent(pathname)).replace(/^(\.\.[/\\])+/, "");
  for (const candidate of [path, `${path}.html`, join(path, "index.html")]) {
    const file = join(site, candidate);
    if (file.startsWith(site) && existsSync(file) && statSync(file).isFile()) return file;
  }
  return undefined;
}

beforeAll(async () => {
  site = mkdtempSync(join(tmpdir(), "robustly-docs-site-"));
  const build = spawnSync(
    process.execPath,
    [join(root, "node_modules", "vitepress", "bin", "vitepress.js"), "build", "docs", "--outDir", site],
    { cwd: root, encoding: "utf8" },
  );
  expect(build.status, build.stdout + build.stderr).toBe(0);

  server = createServer((request, response) => {
    const file = fileFor(new URL(request.url ?? "/", "http://localhost").pathname);
    if (file === undefined) {
      response.writeHead(404).end();
      return;
    }
    response.writeHead(200, { "content-type": TYPES[extname(file)] ?? "application/octet-stream" });
    response.end(readFileSync(file));
  });
  await new Promise<void>((resolve) => server?.listen(0, "127.0.0.1", resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  browser = startChromium([`--window-size=${WIDTH},900`, "about:blank"], 110_000, true);
  page = await connectDevTools(browser).newPage();
  await page.send("Emulation.setDeviceMetricsOverride", {
    width: WIDTH,
    height: 900,
    deviceScaleFactor: 1,
    mobile: false,
  });
  await page.send("Emulation.setScrollbarsHidden", { hidden: true });
}, 110_000);

afterAll(async () => {
  browser?.close();
  await new Promise((resolve) => server?.close(resolve));
  rmSync(site, { recursive: true, force: true });
});

/** The pages of the built site, as paths from its root. */
function pages(): string[] {
  return readdirSync(site, { recursive: true, encoding: "utf8" })
    .map((file) => file.split("\\").join("/"))
    .filter((file) => file.endsWith(".html") && file !== "404.html")
    .sort();
}

describe("the docs site", () => {
  it("has a page for every page of docs/", () => {
    const markdown = readdirSync(join(root, "docs"), { recursive: true, encoding: "utf8" })
      .map((file) => file.split("\\").join("/"))
      .filter((file) => file.endsWith(".md"))
      .map((file) => file.replace(/\.md$/, ".html"))
      .sort();
    expect(pages()).toEqual(markdown);
  });

  it("renders every page, and every link within the site reaches a page and a heading of it", async () => {
    const p = page as Page;
    const ids = new Map<string, Set<string>>();
    const links: { from: string; href: string }[] = [];
    for (const path of pages()) {
      await p.navigate(`${origin}/${path}`);
      const seen = await p.evaluate<{ title: string; ids: string[]; hrefs: string[] }>(`({
        title: document.querySelector(".vp-doc h1")?.textContent ?? "",
        ids: [...document.querySelectorAll("[id]")].map((e) => e.id),
        hrefs: [...document.querySelectorAll("a[href]")].map((a) => a.href),
      })`);
      expect(seen.title, `${path} has no title`).not.toBe("");
      ids.set(`/${path}`, new Set(seen.ids));
      for (const href of seen.hrefs) if (href.startsWith(`${origin}/`)) links.push({ from: path, href });
    }
    expect(p.errors).toEqual([]);
    expect(links.length).toBeGreaterThan(pages().length);

    const broken: string[] = [];
    for (const { from, href } of links) {
      const url = new URL(href);
      const file = fileFor(url.pathname);
      if (file === undefined) {
        broken.push(`${from}: ${href} (no such page)`);
        continue;
      }
      const anchor = decodeURIComponent(url.hash.slice(1));
      if (anchor === "") continue;
      const target = `/${file
        .slice(site.length + 1)
        .split("\\")
        .join("/")}`;
      if (!ids.get(target)?.has(anchor)) broken.push(`${from}: ${href} (no such heading)`);
    }
    expect(broken).toEqual([]);
  }, 60_000);

  it("runs the policy explorer: the delays and the outage follow the fields", async () => {
    const p = page as Page;
    await p.navigate(`${origin}/explorer.html`);
    await p.waitFor(
      `document.querySelector("[data-outage]") && !document.querySelector("[data-simulating]")`,
    );
    const read = () =>
      p.evaluate<{
        rows: string[][];
        bars: number[];
        recovered: string;
        amplification: number;
        error: string;
      }>(`({
        rows: [...document.querySelectorAll("[data-delays] tbody tr")].map((tr) => [...tr.cells].map((c) => c.textContent.trim())),
        bars: [...document.querySelectorAll("[data-bar]")].map((b) => Number(b.getAttribute("height"))),
        recovered: document.querySelector("[data-recovered]")?.textContent ?? "",
        amplification: Number(document.querySelector("[data-amplification]")?.textContent),
        error: document.querySelector("[data-error]")?.textContent ?? "",
      })`);
    const set = (name: string, value: string) =>
      p.evaluate(`(() => {
        const field = document.querySelector('[name="${name}"]');
        field.value = ${JSON.stringify(value)};
        field.dispatchEvent(new Event(field.tagName === "SELECT" ? "change" : "input"));
      })()`);

    // As it opens: exponential backoff from the base, full jitter, a row and a bar per retry.
    const first = await read();
    expect(first.rows.map((r) => r[0])).toEqual(
      Array.from({ length: INITIAL.maxRetries }, (_, x) => String(x)),
    );
    expect(first.rows.map((r) => r[1]).slice(0, 3)).toEqual(["100 ms", "200 ms", "400 ms"]);
    expect(first.bars).toHaveLength(INITIAL.maxRetries);
    expect(first.recovered).toMatch(/^yes/);
    expect(first.amplification).toBeGreaterThan(1);

    // Fixed retries every 100 ms, for ever, without the default budget: a flat schedule, and a server that
    // never recovers.
    await p.evaluate(`(() => {
      const box = document.querySelector('[name="budget"]');
      box.checked = false;
      box.dispatchEvent(new Event("change"));
    })()`);
    await set("backoff", "constant");
    await set("jitter", "none");
    await set("maxRetries", "-1");
    await p.waitFor(
      `[...document.querySelectorAll("[data-delays] tbody td:nth-child(3)")].every((td) => td.textContent === "100 ms")`,
    );
    await p.waitFor(
      `document.querySelector("[data-recovered]")?.textContent === "no" && !document.querySelector("[data-simulating]")`,
    );
    const fixed = await read();
    expect(new Set(fixed.bars).size).toBe(1);
    expect(fixed.rows.length).toBeGreaterThan(INITIAL.maxRetries);
    expect(fixed.amplification).toBeGreaterThan(first.amplification * 5);

    // The default budget on again: the same policy's retries are cut, and the server recovers.
    await p.evaluate(`(() => {
      const box = document.querySelector('[name="budget"]');
      box.checked = true;
      box.dispatchEvent(new Event("change"));
    })()`);
    await p.waitFor(
      `document.querySelector("[data-recovered]")?.textContent.startsWith("yes") && !document.querySelector("[data-simulating]")`,
    );

    // An adaptive limit: its chart over the outage appears, and goes again with "none".
    await set("limit", "aimd");
    await p.waitFor(
      `document.querySelector("[data-limit-chart]") && !document.querySelector("[data-simulating]")`,
    );
    await set("limit", "none");
    await p.waitFor(
      `!document.querySelector("[data-limit-chart]") && !document.querySelector("[data-simulating]")`,
    );

    // A cap below the base: the OptionError robustly throws, in place of the delays.
    await set("backoff", "exponential");
    await set("max", "50");
    await p.waitFor(`document.querySelector("[data-error]")`);
    expect((await read()).error).toMatch(/max/);
    await set("max", String(INITIAL.max));
    await p.waitFor(
      `document.querySelector("[data-outage]") && !document.querySelector("[data-simulating]")`,
    );

    // It fits a laptop's screen, and the screenshot shows it.
    expect(await p.evaluate<number>("document.documentElement.scrollWidth")).toBeLessThanOrEqual(WIDTH);
    const { data } = (await p.send("Page.captureScreenshot", {
      format: "png",
      captureBeyondViewport: true,
    })) as {
      data: string;
    };
    const png = Buffer.from(data, "base64");
    writeFileSync(SCREENSHOT, png);
    expect(png.readUInt32BE(16)).toBe(WIDTH); // the width in the PNG's header
    expect(p.errors).toEqual([]);
  }, 60_000);
});
