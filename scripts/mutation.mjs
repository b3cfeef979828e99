#!/usr/bin/env node
/**
 * `npm run mutation [-- src/jitter src/backoff …]`: mutation testing with Stryker (vitest runner, per-test
 * coverage, incremental), on the folders given or on every folder with a goal, then each folder's score
 * against its goal and the mutants that survived. Stryker 10 needs Node.js 22 or later: when this Node.js
 * is older, it runs Stryker on the `node` package of version 22 from the npm registry (fetched once by
 * npx into its cache); Stryker itself is installed, unsaved, at the first run. Out of CI: a full run takes
 * hours on two cores; an incremental one, minutes.
 *
 * Score: mutants killed or timed out, over every mutant that ran or was not covered (mutants that did not
 * compile or crashed on load are left out, as Stryker does). A static mutant (one that acts while its
 * module loads, such as a top-level constant or a factory's registration) counts like any other: Stryker
 * runs it with the whole suite on a fresh load of the modules (`ignoreStatic: false`), some 16 s each on
 * two cores, and the survivors' list marks it "(static)".
 *
 * Options: --survivors prints every survivor (file:line, mutator, replacement); --report-only shows each
 * folder from the newest report of a run that mutated it (reports/mutation/<folders joined by +>.json, or
 * all.json), without running Stryker; --timeout=<ms> sets how long a mutant's tests may run beyond their
 * usual time (times 1.5) before it counts as timed out: 10000 by default, more when other work shares the
 * cores (a slowed test run that times out would count as killed).
 */
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { relative } from "node:path";
import { pathToFileURL } from "node:url";

/** Each folder's goal, as a share of its mutants killed. */
export const GOALS = {
  "src/backoff": 0.9,
  "src/jitter": 0.9,
  "src/policy": 0.9,
  "src/core": 0.9,
  "src/retry": 0.85,
  "src/pipeline": 0.85,
  "src/timeout": 0.85,
  "src/breaker": 0.85,
  "src/budget": 0.85,
  "src/bulkhead": 0.85,
  "src/hedge": 0.85,
  "src/adaptive": 0.85,
};
const NODE = "node@22.23.3";
/** Files stryker.config.mjs leaves out (a report from before may still hold them). */
const LEFT_OUT = /\/(schema|checks)\.ts$/;

const args = process.argv.slice(2);
const flags = new Set(args.filter((a) => a.startsWith("--")));
/** --timeout=<ms>: the time a mutant's tests may take beyond their usual time before it counts as timed out. */
let timeoutMs;
for (const flag of flags) {
  const timeout = /^--timeout=(.*)$/.exec(flag);
  if (timeout !== null) {
    timeoutMs = Number(timeout[1]);
    if (!Number.isInteger(timeoutMs) || timeoutMs < 1000 || timeoutMs > 600_000) {
      console.error(
        `npm run mutation: --timeout must be a whole number of ms from 1000 to 600000; got ${timeout[1]}`,
      );
      process.exit(2);
    }
    flags.delete(flag);
  } else if (!["--survivors", "--report-only"].includes(flag)) {
    console.error(
      `npm run mutation: unknown flag ${flag}; allowed: --survivors, --report-only, --timeout=<ms>`,
    );
    process.exit(2);
  }
}
const folders = args
  .filter((a) => !a.startsWith("--"))
  .map((a) => (a.startsWith("src/") ? a : `src/${a}`).replace(/\/+$/, ""));
for (const folder of folders) {
  if (!(folder in GOALS)) {
    console.error(
      `npm run mutation: ${folder} has no goal; one of ${Object.keys(GOALS).join(", ")} (or none for all)`,
    );
    process.exit(2);
  }
}
const chosen = folders.length > 0 ? folders : Object.keys(GOALS);
/** The name of this set of folders' incremental file and report (stryker.config.mjs reads it). */
const RUN =
  new Set(chosen).size === Object.keys(GOALS).length
    ? "all"
    : [...new Set(chosen)]
        .sort()
        .map((f) => f.slice("src/".length))
        .join("+");
const REPORT = `reports/mutation/${RUN}.json`;
/** When this run began: a report older than that is not this run's. */
const runStarted = Date.now();

/** Stryker's packages, installed when a run first needs them (not in package.json: on Node.js 20, `npm ci`
 * would warn about their engines for every install of the project). */
const STRYKER = ["@stryker-mutator/core@10.1.1", "@stryker-mutator/vitest-runner@10.1.1"];

if (!flags.has("--report-only")) {
  if (!existsSync("node_modules/@stryker-mutator/core/bin/stryker.js")) {
    console.log(`Installing ${STRYKER.join(" and ")} (not saved in package.json)…`);
    const install = spawnSync(
      "npm",
      ["install", "--no-save", "--no-audit", "--no-fund", "--loglevel=error", ...STRYKER],
      { stdio: "inherit" },
    );
    if (install.status !== 0) {
      console.error("npm run mutation: could not install Stryker");
      process.exit(1);
    }
  }
  const major = Number(process.versions.node.split(".")[0]);
  const stryker = ["node_modules/@stryker-mutator/core/bin/stryker.js", "run", "stryker.config.mjs"];
  // The folders, less what stryker.config.mjs leaves out (--mutate replaces its list).
  const config = (await import(pathToFileURL("stryker.config.mjs").href)).default;
  const excluded = config.mutate.filter((glob) => glob.startsWith("!"));
  const mutate = ["--mutate", [...chosen.map((f) => `${f}/**/*.ts`), ...excluded].join(",")];
  const [command, commandArgs] =
    major >= 22
      ? [process.execPath, [...stryker, ...mutate]]
      : ["npx", ["--yes", NODE, ...stryker, ...mutate]];
  const started = Date.now();
  const run = spawnSync(command, commandArgs, {
    stdio: "inherit",
    env: {
      ...process.env,
      ROBUSTLY_MUTATION_RUN: RUN,
      ...(timeoutMs === undefined ? {} : { ROBUSTLY_MUTATION_TIMEOUT_MS: String(timeoutMs) }),
    },
  });
  console.log(`\nStryker ran for ${((Date.now() - started) / 60_000).toFixed(1)} min`);
  if (run.status !== 0) {
    console.error(`npm run mutation: Stryker exited with ${run.status ?? run.signal}`);
    process.exit(1);
  }
}

if (!flags.has("--report-only") && !(existsSync(REPORT) && statSync(REPORT).mtimeMs >= runStarted)) {
  console.error(`npm run mutation: Stryker wrote no report at ${REPORT}`);
  process.exit(1);
}

/** Every report on disk, newest first: a folder's figures come from the newest run that mutated it
 * (reports/mutation/<its folders, joined by +>.json). */
const runOf = (name) => name.slice(0, -".json".length);
const isRun = (run) => run === "all" || run.split("+").every((part) => Object.hasOwn(GOALS, `src/${part}`));
const reports = existsSync("reports/mutation")
  ? readdirSync("reports/mutation")
      .filter((name) => name.endsWith(".json") && isRun(runOf(name)))
      .map((name) => ({ file: `reports/mutation/${name}`, run: runOf(name) }))
      .map((r) => ({ ...r, mtime: statSync(r.file).mtime }))
      .sort((a, b) => b.mtime - a.mtime)
  : [];
/** A report's contents, read when a folder first needs it; undefined for one that cannot be read. */
const contents = new Map();
function read(file) {
  if (!contents.has(file)) {
    try {
      contents.set(file, JSON.parse(readFileSync(file, "utf8")));
    } catch {
      console.error(`npm run mutation: ${file} cannot be read; left out`);
      contents.set(file, undefined);
    }
  }
  return contents.get(file);
}
const folderOf = (file) => relative(process.cwd(), file).replaceAll("\\", "/");
const COUNTED = new Set(["Killed", "Timeout", "Survived", "NoCoverage"]);
const rows = new Map(
  chosen.map((f) => [
    f,
    { killed: 0, timeout: 0, survived: 0, noCoverage: 0, left: 0, static: 0, from: undefined },
  ]),
);
const survivors = [];
for (const [folder, row] of rows) {
  // Only a run that mutated the whole folder counts (a report also carries files from earlier runs).
  const found = reports.find(
    ({ file, run }) =>
      (run === "all" || run.split("+").includes(folder.slice("src/".length))) && read(file) !== undefined,
  );
  if (found === undefined) continue;
  row.from = `${found.file}, ${found.mtime.toISOString().slice(0, 16).replace("T", " ")} UTC`;
  for (const [file, { mutants, source }] of Object.entries(read(found.file).files)) {
    const path = folderOf(file);
    if (!path.startsWith(`${folder}/`) || LEFT_OUT.test(path)) continue;
    const lines = source.split("\n");
    for (const m of mutants) {
      if (!COUNTED.has(m.status)) {
        row.left += 1;
        continue;
      }
      if (m.status === "Killed") row.killed += 1;
      else if (m.status === "Timeout") row.timeout += 1;
      else {
        // The column counts the static mutants among those not killed.
        if (m.static) row.static += 1;
        if (m.status === "Survived") row.survived += 1;
        else row.noCoverage += 1;
        const line = m.location.start.line;
        survivors.push({
          where: `${path}:${line}`,
          status: m.status,
          mutator: m.mutatorName + (m.static ? " (static)" : ""),
          replacement: (m.replacement ?? "").replace(/\s+/g, " ").slice(0, 80),
          code: (lines[line - 1] ?? "").trim().slice(0, 100),
        });
      }
    }
  }
}

let failed = false;
console.log(
  "\n| folder | mutants | killed | timed out | survived | no coverage | of them static | score | goal |",
);
console.log("| --- | --: | --: | --: | --: | --: | --: | --: | --- |");
for (const [folder, r] of rows) {
  if (r.from === undefined || r.killed + r.timeout + r.survived + r.noCoverage === 0) {
    failed = true;
    console.log(`| ${folder} | | | | | | | not measured | FAIL ≥ ${GOALS[folder] * 100} % |`);
    continue;
  }
  const total = r.killed + r.timeout + r.survived + r.noCoverage;
  const score = (r.killed + r.timeout) / total;
  const goal = GOALS[folder];
  const pass = score >= goal;
  failed ||= !pass;
  console.log(
    `| ${folder} | ${total} | ${r.killed} | ${r.timeout} | ${r.survived} | ${r.noCoverage} | ${r.static} | ${(100 * score).toFixed(1)} % | ${pass ? "PASS" : "FAIL"} ≥ ${goal * 100} % |`,
  );
}
console.log("\nFrom:");
for (const [folder, r] of rows) {
  if (r.from === undefined) continue;
  const left = r.left > 0 ? ` (${r.left} left out: they did not compile or crashed on load)` : "";
  console.log(`- ${folder}: ${r.from}${left}`);
}
if (flags.has("--survivors")) {
  console.log("\nSurvivors:");
  for (const s of survivors)
    console.log(`${s.where} ${s.status} ${s.mutator}: ${s.replacement}    // ${s.code}`);
}
process.exit(failed ? 1 : 0);
