// Every code block of every page under docs/ runs here, as the README's do (test/readme.test.ts), so that
// the guides cannot drift from the code:
// - ```ts blocks are written to .readme-blocks/docs/ and imported, so "robustly" and its entries resolve
//   through the test aliases, and type-checked together. Each one asserts its results with
//   node:assert/strict (a block that asserts nothing is a defect) and never waits on the real clock: one
//   that sets a real timer fails (a VirtualClock runs the waits at once). The one exception is a block
//   that talks to a real Redis (it reads REDIS_URL): Redis keeps its own time, so the block runs in real
//   time, against a redis-server of its own on a free loopback port.
// - ```sh blocks run command by command in the repository; the `#>` lines under a command are its output,
//   which must be what the command prints.
// - ```json blocks must parse; ```text blocks are shown as they are.
// A block in any other language (or none) fails the test. Links between the pages, and from the README to
// them, must reach a file and, when they name one, a heading of it.
import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync, rmSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { githubSlug } from "../docs/.vitepress/slug.js";
import {
  type Block,
  blockFile,
  blocksRoot,
  excerpt,
  fencedBlocks,
  proseLines,
  root,
  runBlock,
  SH,
  shellCommands,
  TS,
  typeCheck,
  unknownLanguages,
  userEnv,
  writeBlocks,
} from "./support/blocks.js";
import { type RedisServer, startRedisServer } from "./support/redis-server.js";

const blocksDir = join(blocksRoot, "docs");

const pages = readdirSync(join(root, "docs"), { recursive: true, encoding: "utf8" })
  .filter((file) => file.endsWith(".md"))
  .map((file) => `docs/${file.split("\\").join("/")}`)
  .sort();
const text = new Map(pages.map((page) => [page, readFileSync(join(root, page), "utf8")]));
const blocks = pages.flatMap((page) => fencedBlocks(text.get(page) as string, page));
const tsBlocks = blocks.filter((b) => TS.has(b.lang));
const jsonBlocks = blocks.filter((b) => b.lang === "json");
const shBlocks = blocks.filter((b) => SH.has(b.lang));
/** A block that talks to a real Redis, in real time. */
const onRedis = (block: Block) => block.code.includes("REDIS_URL");

let redis: RedisServer | undefined;
beforeAll(async () => {
  writeBlocks(blocksDir, tsBlocks);
  if (tsBlocks.some(onRedis)) {
    redis = await startRedisServer();
    process.env.REDIS_URL = redis.url;
  }
});
afterAll(async () => {
  rmSync(blocksDir, { recursive: true, force: true });
  await redis?.stop();
});

describe("docs/", () => {
  it("has code blocks, each in a language this test runs or shows", () => {
    expect(tsBlocks.length).toBeGreaterThan(0);
    expect(unknownLanguages(blocks, new Set([...TS, ...SH, "json", "text"]))).toEqual([]);
  });

  it("every TypeScript block asserts its results with node:assert/strict", () => {
    const silent = tsBlocks.filter(
      (b) =>
        !/^import assert from "node:assert\/strict";$/m.test(b.code) || !/\bassert(\.\w+)?\(/.test(b.code),
    );
    expect(silent.map((b) => `${b.file}:${b.line}`)).toEqual([]);
  });

  it.each(jsonBlocks.map((b) => [`${b.file}:${b.line}`, b] as const))(
    "the JSON block at %s parses",
    (_at, b) => {
      expect(() => JSON.parse(b.code)).not.toThrow();
    },
  );

  it.each(tsBlocks.map((b) => [`${b.file}:${b.line}`, b] as const))(
    "the TypeScript block at %s runs, on no real timer",
    async (_at, block) => {
      if (onRedis(block)) return runBlock(blocksDir, block);
      const timers = await realTimers(block, () => runBlock(blocksDir, block));
      expect(timers, "a wait on the real clock: give the example a VirtualClock").toEqual([]);
    },
  );

  it.each(shBlocks.map((b) => [`${b.file}:${b.line}`, b] as const))(
    "the shell block at %s prints what it shows",
    (_at, block) => {
      for (const { command, expected, line } of shellCommands(block)) {
        const run = spawnSync("bash", ["-c", command], {
          cwd: root,
          env: userEnv(),
          encoding: "utf8",
          maxBuffer: 64 * 1024 * 1024,
        });
        const where = `${block.file}:${line}: ${command}`;
        expect(run.status, `${where}\n${excerpt(run.stdout)}\n${excerpt(run.stderr)}`).toBe(0);
        if (expected.length > 0) expect(run.stdout, where).toBe(`${expected.join("\n")}\n`);
      }
    },
    120_000,
  );

  it("the TypeScript blocks type-check", () => {
    expect(typeCheck(blocksDir)).toEqual({ output: "", status: 0 });
  }, 120_000);

  it("the README links every page (but the docs site's home, which lists them too)", () => {
    const readme = readFileSync(join(root, "README.md"), "utf8");
    const linked = new Set(links(readme).map(({ target }) => target.split("#")[0]));
    expect(pages.filter((page) => page !== "docs/index.md" && !linked.has(page))).toEqual([]);
  });

  it("links between the pages, and from the README to them, reach a file and a heading of it", () => {
    const sources = [...pages, "README.md"];
    const broken: string[] = [];
    for (const source of sources) {
      const markdown = text.get(source) ?? readFileSync(join(root, source), "utf8");
      for (const { target, line } of links(markdown)) {
        if (/^[a-z]+:/i.test(target)) continue; // another site
        const [path = "", anchor] = target.split("#");
        if (source === "README.md" && !path.startsWith("docs/")) continue; // the README's own, not ours
        const file = path === "" ? source : relative(root, join(root, dirname(source), path));
        let headings: Set<string>;
        try {
          headings = anchors(text.get(file) ?? readFileSync(join(root, file), "utf8"));
        } catch {
          broken.push(`${source}:${line}: ${target} (no such file)`);
          continue;
        }
        if (anchor !== undefined && !headings.has(anchor)) {
          broken.push(`${source}:${line}: ${target} (no such heading)`);
        }
      }
    }
    expect(broken).toEqual([]);
  });
});

/**
 * Runs `run` while watching the real timers with a delay that are set from the block itself or from
 * robustly's real clock: each is a wait on the wall clock, which a documented example should not make.
 */
async function realTimers(block: Block, run: () => Promise<void>): Promise<string[]> {
  const seen: string[] = [];
  const real = globalThis.setTimeout;
  const watched = [blockFile(blocksDir, block), join(root, "src")];
  const spy = ((callback: (...args: unknown[]) => void, ms?: number, ...args: unknown[]) => {
    const stack = new Error().stack ?? "";
    if ((ms ?? 0) > 0 && watched.some((place) => stack.includes(place))) seen.push(`setTimeout(…, ${ms})`);
    return real(callback, ms, ...args);
  }) as typeof setTimeout;
  globalThis.setTimeout = Object.assign(spy, real);
  try {
    await run();
  } finally {
    globalThis.setTimeout = real;
  }
  return seen;
}

/** The inline links of a Markdown text outside its code blocks: `[text](target)`, with their lines. */
function links(markdown: string): { target: string; line: number }[] {
  return proseLines(markdown).flatMap(({ text, line }) =>
    [...text.matchAll(/\]\(([^)\s]+)\)/g)].map((match) => ({ target: match[1] as string, line })),
  );
}

/** The anchors GitHub gives a page's headings: lower case, punctuation dropped, spaces as hyphens, repeats numbered. */
function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const { text } of proseLines(markdown)) {
    const heading = /^#{1,6}\s+(.*)$/.exec(text)?.[1];
    if (heading === undefined) continue;
    // The docs site gives its headings the same anchors (docs/.vitepress/slug.ts).
    const slug = githubSlug(heading.replace(/\[([^\]]*)\]\([^)]*\)/g, "$1"));
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    out.add(n === 0 ? slug : `${slug}-${n}`);
  }
  return out;
}
