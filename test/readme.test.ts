// Every fenced code block in README.md runs here, so the README cannot drift from the code.
// - ```ts blocks are written to .readme-blocks/readme/ and imported, so "robustly" and "robustly/testing"
//   resolve through the test aliases; each block asserts its own claims. They are type-checked too.
// - ```sh blocks run for real, command by command, in a copy of the repository that has neither
//   node_modules nor dist, as on a fresh clone. Lines starting with `#>` under a command are its
//   expected output. `npm test` is the run this file is part of: there it runs its pretest and the test
//   runner on one small test file, so the command is checked without running the whole suite twice.
// A block in any other language (or none) fails the test.
import { spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  blocksRoot,
  excerpt,
  fencedBlocks,
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

const blocksDir = join(blocksRoot, "readme");

const blocks = fencedBlocks(readFileSync(join(root, "README.md"), "utf8"), "README.md");
const tsBlocks = blocks.filter((b) => TS.has(b.lang));
const shBlocks = blocks.filter((b) => SH.has(b.lang));

// The fleet section's example talks to a real Redis: a redis-server of its own, on a free port.
let redis: RedisServer | undefined;
beforeAll(async () => {
  if (tsBlocks.some((b) => b.code.includes("REDIS_URL"))) {
    redis = await startRedisServer();
    process.env.REDIS_URL = redis.url;
  }
});
afterAll(async () => {
  await redis?.stop();
});

beforeAll(() => writeBlocks(blocksDir, tsBlocks));

afterAll(() => rmSync(blocksDir, { recursive: true, force: true }));

describe("README.md", () => {
  it("has code blocks, each in a language this test runs", () => {
    expect(tsBlocks.length).toBeGreaterThan(0);
    expect(shBlocks.length).toBeGreaterThan(0);
    expect(unknownLanguages(blocks, new Set([...TS, ...SH]))).toEqual([]);
  });

  it("opens with the two commands that set the project up and run it", () => {
    const first = shBlocks[0];
    expect(first?.code).toBe("npm ci && npm run robustly -- simulate\nnpm test\n");
  });

  it("writes no count of strategies, policies or scenarios in words: the code's tables say how many", () => {
    const words = "two|three|four|five|six|seven|eight|nine|ten|eleven|twelve";
    const counts = new RegExp(`\\b(${words})\\s+(\\w+\\s+)?(strateg|polic|scenario)\\w*`, "gi");
    const prose = readFileSync(join(root, "README.md"), "utf8").replace(/```[\s\S]*?```/g, "");
    expect([...prose.matchAll(counts)].map((m) => m[0])).toEqual([]);
  });

  it("runs only npm scripts that package.json defines", () => {
    const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as {
      scripts: Record<string, string>;
    };
    const named = shBlocks.flatMap((block) =>
      shellCommands(block).flatMap(({ command }) => npmScripts(command)),
    );
    expect(named).toContain("test");
    expect(named.filter((name) => !(name in pkg.scripts))).toEqual([]);
  });

  it.each(tsBlocks.map((b) => [b.line, b] as const))("the TypeScript block at line %i runs", (_line, block) =>
    runBlock(blocksDir, block),
  );

  it("the TypeScript blocks type-check", () => {
    expect(typeCheck(blocksDir)).toEqual({ output: "", status: 0 });
  }, 120_000);

  it(
    "the shell blocks run on a fresh copy of the repository",
    () => {
      const copy = freshCopy();
      try {
        for (const block of shBlocks) {
          for (const { command, expected, line } of shellCommands(block)) {
            const run = spawnSync("bash", ["-c", forTest(command)], {
              cwd: copy,
              env: userEnv(),
              encoding: "utf8",
              maxBuffer: 64 * 1024 * 1024,
            });
            const where = `README.md:${line}: ${command}`;
            expect(run.status, `${where}\n${excerpt(run.stdout)}\n${excerpt(run.stderr)}`).toBe(0);
            if (expected.length > 0) expect(run.stdout, where).toBe(`${expected.join("\n")}\n`);
          }
        }
      } finally {
        rmSync(copy, { recursive: true, force: true });
      }
    },
    10 * 60_000,
  );
});

/** The npm scripts a command line runs: `npm test`, `npm run NAME`, `npm run --silent NAME`. */
function npmScripts(command: string): string[] {
  return [...command.matchAll(/\bnpm (?:test\b|t\b|run(?: --?[\w-]+)* ([\w:-]+))/g)].map(
    (m) => m[1] ?? "test",
  );
}

/** One small test file, which the README's `npm test` runs here instead of the whole suite. */
const ONE_TEST_FILE = "test/test-tools.test.ts";

/**
 * A command as the test runs it: `npm ci` from the local cache where it can, without the audit and funding
 * notes; `npm test` (this very run) on one test file.
 */
function forTest(command: string): string {
  return command
    .replace(/\bnpm ci\b/g, "npm ci --prefer-offline --no-audit --no-fund")
    .replace(/\bnpm test\s*$/, `npm test -- ${ONE_TEST_FILE}`);
}

/** The files a fresh clone would have: the tracked ones and the new ones git does not ignore. */
function freshCopy(): string {
  const copy = mkdtempSync(join(tmpdir(), "robustly-readme-"));
  const listed = spawnSync("git", ["ls-files", "-z", "--cached", "--others", "--exclude-standard"], {
    cwd: root,
    encoding: "utf8",
  });
  expect(listed.status, listed.stderr).toBe(0);
  for (const file of listed.stdout.split("\0")) {
    // A file deleted in the working tree is still listed until the deletion is committed.
    if (file === "" || !existsSync(join(root, file))) continue;
    mkdirSync(dirname(join(copy, file)), { recursive: true });
    copyFileSync(join(root, file), join(copy, file));
  }
  expect(existsSync(join(copy, "node_modules"))).toBe(false);
  return copy;
}
