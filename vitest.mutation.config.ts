/**
 * The tests mutation testing runs (`npm run mutation`): the suite without the tests that start processes,
 * servers or a browser, build the package, type-check or run the simulator (they exercise no more of the
 * mutated folders, and would make each mutant's run take seconds).
 */
import { defineConfig, mergeConfig } from "vitest/config";
import base from "./vitest.config.js";

export const SLOW_TESTS = [
  "test/bundle.test.ts",
  "test/cli-*.test.ts",
  "test/demo.test.ts",
  "test/docs-site.test.ts",
  "test/docs-wording.test.ts",
  "test/docs.test.ts",
  "test/endurance.test.ts",
  "test/explorer.test.ts",
  "test/faults/cli.test.ts",
  "test/fleet.test.ts",
  "test/layout.test.ts",
  "test/load-summary.test.ts",
  "test/loopback.test.ts",
  "test/optional-packages.test.ts",
  "test/package.test.ts",
  "test/peers/unref.test.ts",
  "test/plot-browser.test.ts",
  "test/portable.test.ts",
  "test/progress.test.ts",
  "test/readme.test.ts",
  "test/real-timers.test.ts",
  "test/redis-store.test.ts",
  "test/report.test.ts",
  "test/sim-*.test.ts",
  "test/simulate.test.ts",
  "test/supervisor-workers.test.ts",
  "test/supervisor.test.ts",
  "test/test-tools.test.ts",
  "test/types.test.ts",
];

export default mergeConfig(
  base,
  defineConfig({
    test: {
      exclude: ["**/node_modules/**", ...SLOW_TESTS],
      // One module graph for every file: a mutant is switched on at run time, and each run re-imports
      // nothing (with isolation, each mutant's run loaded the package afresh for each test file).
      isolate: false,
      // What isolation gave each file and the files would otherwise share: a fresh default budget.
      setupFiles: ["test/support/mutation-setup.ts"],
    },
  }),
);
