// The code blocks of Markdown pages, as the README's and the docs' tests run them: found, written to files
// inside the repository (so that "robustly" and its entries resolve through the tsconfig paths and the
// vitest aliases, as in the tests), imported one by one, and type-checked together.
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

export const root = fileURLToPath(new URL("../..", import.meta.url));

/** Where the blocks are written: ignored by git and by the linter. Each page set has a folder of its own. */
export const blocksRoot = join(root, ".readme-blocks");

export interface Block {
  /** The page, relative to the repository's root. */
  file: string;
  /** The language tag after the opening fence, lower-cased; "" when there is none. */
  lang: string;
  /** The 1-based line of the opening fence. */
  line: number;
  code: string;
}

export const TS = new Set(["ts", "typescript"]);
export const SH = new Set(["sh", "shell", "bash"]);

/** The fenced code blocks of a Markdown text (``` or ~~~ fences, not indented). */
export function fencedBlocks(markdown: string, file: string): Block[] {
  const blocks: Block[] = [];
  const lines = markdown.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const open = /^(`{3,}|~{3,})\s*([^\s`]*)/.exec(lines[i] as string);
    if (open === null) continue;
    const fence = open[1] as string;
    const body: string[] = [];
    let j = i + 1;
    while (j < lines.length && !(lines[j] as string).startsWith(fence)) body.push(lines[j++] as string);
    if (j === lines.length) throw new Error(`${file}:${i + 1}: the code block is never closed`);
    blocks.push({ file, lang: (open[2] as string).toLowerCase(), line: i + 1, code: `${body.join("\n")}\n` });
    i = j;
  }
  return blocks;
}

/** The lines of a Markdown text outside its code blocks, with their 1-based numbers. */
export function proseLines(markdown: string): { text: string; line: number }[] {
  const out: { text: string; line: number }[] = [];
  let fence: string | undefined;
  markdown.split("\n").forEach((text, i) => {
    const open = /^(`{3,}|~{3,})/.exec(text)?.[1];
    if (fence === undefined && open !== undefined) fence = open;
    else if (fence !== undefined && text.startsWith(fence)) fence = undefined;
    else if (fence === undefined) out.push({ text, line: i + 1 });
  });
  return out;
}

/** Where a block is written in `dir`: its page's path and its line, so a failure names both. */
export function blockFile(dir: string, block: Block): string {
  const page = block.file.replace(/\.md$/, "").replace(/[^A-Za-z0-9-]+/g, "_");
  return join(dir, `${page}-line-${block.line}.ts`);
}

/** Empties `dir` and writes each TypeScript block to its file there. */
export function writeBlocks(dir: string, blocks: readonly Block[]): void {
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  for (const block of blocks) writeFileSync(blockFile(dir, block), block.code);
}

/** "README.md:12: "sh"" for each block whose language is not one of `allowed`. */
export function unknownLanguages(blocks: readonly Block[], allowed: ReadonlySet<string>): string[] {
  return blocks
    .filter((b) => !allowed.has(b.lang))
    .map((b) => `${b.file}:${b.line}: ${b.lang === "" ? "no language tag" : `"${b.lang}"`}`);
}

/**
 * Imports a written block, which runs it. A block that shows a warning listens for it itself; Node's own
 * printer would only add noise.
 */
export async function runBlock(dir: string, block: Block): Promise<void> {
  const printers = process.listeners("warning");
  process.removeAllListeners("warning");
  try {
    await import(pathToFileURL(blockFile(dir, block)).href);
  } finally {
    for (const printer of printers) process.on("warning", printer);
  }
}

/** Type-checks every block written in `dir` (a folder right below `blocksRoot`): tsc's output and status. */
/** Type-checks `files` (absolute paths) alone, with the repository's compiler options. */
export function typeCheckFiles(files: readonly string[]): { output: string; status: number | null } {
  // Inside the repository (in the ignored blocks folder), where tsc finds the packages' types.
  mkdirSync(blocksRoot, { recursive: true });
  const dir = mkdtempSync(join(blocksRoot, "typecheck-"));
  try {
    const config = join(dir, "tsconfig.json");
    writeFileSync(
      config,
      JSON.stringify({ extends: join(root, "tsconfig.json"), compilerOptions: { noEmit: true }, files }),
    );
    const tsc = spawnSync(
      process.execPath,
      [join(root, "node_modules", "typescript", "bin", "tsc"), "-p", config],
      {
        cwd: root,
        encoding: "utf8",
      },
    );
    return { output: tsc.stdout + tsc.stderr, status: tsc.status };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export function typeCheck(dir: string): { output: string; status: number | null } {
  writeFileSync(
    join(dir, "tsconfig.json"),
    JSON.stringify({ extends: "../../tsconfig.json", compilerOptions: { noEmit: true }, include: ["*.ts"] }),
  );
  const tsc = spawnSync(
    process.execPath,
    [join(root, "node_modules", "typescript", "bin", "tsc"), "-p", join(dir, "tsconfig.json")],
    { cwd: root, encoding: "utf8" },
  );
  return { output: tsc.stdout + tsc.stderr, status: tsc.status };
}

/** A shell block's commands: each line that is not a comment, with the `#>` lines right under it (its output). */
export function shellCommands(block: Block): { command: string; expected: string[]; line: number }[] {
  const out: { command: string; expected: string[]; line: number }[] = [];
  block.code
    .trimEnd()
    .split("\n")
    .forEach((text, i) => {
      const line = block.line + 1 + i;
      if (text.startsWith("#>")) {
        const last = out.at(-1);
        if (last === undefined)
          throw new Error(`${block.file}:${line}: expected output with no command above it`);
        last.expected.push(text.replace(/^#> ?/, ""));
      } else if (text.trim() !== "" && !text.trimStart().startsWith("#")) {
        out.push({ command: text, expected: [], line });
      }
    });
  return out;
}

/** The environment of a user's shell: none of the test run's own variables (vitest's, npm's). */
export function userEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (/^(VITEST|npm_)/i.test(key) || key === "NODE_ENV" || key === "TEST") continue;
    env[key] = value;
  }
  return env;
}

/** The start and the end of a long output, where the cause and the outcome of a failure usually are. */
export function excerpt(text: string, lines = 25): string {
  const all = text.trimEnd().split("\n");
  if (all.length <= 2 * lines) return all.join("\n");
  return [...all.slice(0, lines), "…", ...all.slice(-lines)].join("\n");
}
