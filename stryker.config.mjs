// Mutation testing: `npm run mutation` (scripts/mutation.mjs), which runs Stryker on Node.js 22 and
// prints each folder's score against its goal. Survivors and why each stays: stryker.survivors.md.
// Stryker run by hand (not through the script) writes reports the script never takes for a folder's.
const run = process.env.ROBUSTLY_MUTATION_RUN ?? "by-hand";
/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
export default {
  testRunner: "vitest",
  vitest: { configFile: "vitest.mutation.config.ts", related: false },
  coverageAnalysis: "perTest",
  mutate: [
    "src/{backoff,jitter,policy,core,retry,pipeline,timeout,breaker,budget,bulkhead,hedge,adaptive}/**/*.ts",
    // The options' descriptions and check tables: data loaded once at import, held to docs/options.md
    // and to the errors by test/schema.test.ts and test/validation.test.ts. A mutant of such a table is
    // "static" (it acts only while the module loads), and Stryker's vitest runner runs it with the one
    // test that loaded the module first, so its score would say nothing about the tests.
    "!src/**/schema.ts",
    "!src/**/checks.ts",
  ],
  // A mutant that acts while its module loads is run with the whole suite on a fresh load of the modules
  // (the vitest runner starts its worker afresh for each run, so this holds without isolation too).
  ignoreStatic: false,
  incremental: true,
  // One incremental file and report per set of folders (scripts/mutation.mjs names it), so a run on one
  // folder does not throw away what a run on another remembers.
  incrementalFile: `reports/mutation/${run}.incremental.json`,
  reporters: ["json", "progress"],
  jsonReporter: { fileName: `reports/mutation/${run}.json` },
  concurrency: 2,
  // `npm run mutation -- --timeout=<ms>` raises it when other work shares the cores.
  timeoutMS: Number(process.env.ROBUSTLY_MUTATION_TIMEOUT_MS ?? 10000),
  tempDirName: ".stryker-tmp",
  cleanTempDir: "always",
};
