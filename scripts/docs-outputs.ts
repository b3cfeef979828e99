/**
 * Rewrites the `#>` lines under each command of the shell blocks in the given Markdown files with what the
 * command prints now. Run it after a change that moves the numbers: `npm run docs:outputs -- docs/simulator.md`.
 * The docs test checks that the lines match. Commands that need a service (a `REDIS_URL`) are left alone.
 */
import { spawnSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { fencedBlocks, root, SH, shellCommands, userEnv } from "../test/support/blocks.js";

for (const file of process.argv.slice(2)) {
  const markdown = readFileSync(file, "utf8");
  const lines = markdown.split("\n");
  // From the last block up, so that line numbers above stay valid as outputs change length.
  const edits: { from: number; to: number; output: string[] }[] = [];
  for (const block of fencedBlocks(markdown, file).filter((b) => SH.has(b.lang))) {
    // Every command of a block runs, in order (a block may clean up after itself); only those with `#>`
    // lines under them are rewritten.
    for (const { command, expected, line } of shellCommands(block)) {
      if (command.includes("REDIS_URL")) continue;
      const run = spawnSync("bash", ["-c", command], {
        cwd: root,
        env: userEnv(),
        encoding: "utf8",
        maxBuffer: 64 * 1024 * 1024,
      });
      if (run.status !== 0)
        throw new Error(`${file}:${line}: ${command} exited ${run.status}\n${run.stderr}`);
      if (expected.length === 0) continue;
      const output = run.stdout.replace(/\n$/, "").split("\n");
      edits.push({ from: line, to: line + expected.length, output: output.map((o) => `#> ${o}`.trimEnd()) });
      process.stdout.write(`${file}:${line}: ${command}\n`);
    }
  }
  for (const { from, to, output } of edits.reverse()) lines.splice(from, to - from, ...output);
  writeFileSync(file, lines.join("\n"));
}
