// Pay for what you import: an app that imports one feature of robustly gets that feature's code in its
// bundle, and not the code of features it did not import, nor the descriptions written for the docs and
// `--help`. Each app is bundled from the sources as an app's bundler would (esbuild, browser, minified),
// and the modules that reach its output are named.
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { bundleApp } from "../scripts/bundle-app.js";

const src = (path: string) => fileURLToPath(new URL(`../src/${path}`, import.meta.url));

/** Each entry of the package as an app imports it ("robustly/steps"), and its source (tsconfig.json's paths). */
const ENTRIES: Record<string, string> = Object.fromEntries(
  Object.entries(
    (
      JSON.parse(readFileSync(new URL("../tsconfig.json", import.meta.url), "utf8")) as {
        compilerOptions: { paths: Record<string, string[]> };
      }
    ).compilerOptions.paths,
  ).map(([entry, [path]]) => [entry, fileURLToPath(new URL(`../${path}`, import.meta.url))]),
);

/** The source files (relative to src/) whose code reaches the bundle of `app`. */
async function modulesOf(app: string): Promise<string[]> {
  const { modules } = await bundleApp(app, src("."), ENTRIES);
  return modules.map((m) => m.path.replace(/^.*?src\//, "")).sort();
}

/** Folders and files of features an app of `retry` alone has not imported. */
const FEATURES = [
  "hedge/",
  "chaos/",
  "bulkhead/",
  "ratelimit/",
  "limit/",
  "fallback/",
  "budget/",
  "adaptive/",
  "http/",
  "config/",
  "store/",
  "sim/",
  "cli/",
  "supervisor/",
  "telemetry/",
  "breaker/circuit-breaker.ts",
];
/** The descriptions of the options, which the docs and `--help` read, never the checks. */
const descriptions = (modules: readonly string[]) =>
  modules.filter((path) => path.endsWith("/schema.ts") && path !== "core/schema.ts");

describe("an app's bundle holds the features it imports, and no option descriptions", () => {
  it("retry alone: its default budget, and no hedging, fault injection, bulkhead, fallback, retryBudget, responsive backoff, fetch, config, store or breaker", async () => {
    const modules = await modulesOf(`import { retry } from "robustly"; retry(async () => 1);`);
    expect(modules).toContain("retry/retry.ts");
    // The default budget is on in every call: its small module comes along, and no other of budget/.
    expect(modules).toContain("budget/default.ts");
    expect(
      modules.filter(
        (path) => path !== "budget/default.ts" && FEATURES.some((feature) => path.startsWith(feature)),
      ),
    ).toEqual([]);
    expect(descriptions(modules)).toEqual([]);
  });

  it("a strategy from robustly/backoff or a step from robustly/steps brings that one alone", async () => {
    const modules = await modulesOf(
      `import * as backoff from "robustly/backoff"; import * as jitter from "robustly/jitter"; import * as steps from "robustly/steps";
       console.log(backoff.linear(), jitter.equal(), steps.timeout(10));`,
    );
    expect(modules).toEqual(
      expect.arrayContaining(["backoff/linear.ts", "jitter/equal.ts", "timeout/step.ts"]),
    );
    const others = [
      "backoff/fibonacci.ts",
      "backoff/polynomial.ts",
      "backoff/combine.ts",
      "jitter/decorrelated.ts",
      "jitter/normal.ts",
      "chaos/chaos.ts",
      "hedge/hedge.ts",
      "bulkhead/bulkhead.ts",
      "retry/retry.ts",
    ];
    expect(modules.filter((path) => others.includes(path))).toEqual([]);
    expect(descriptions(modules)).toEqual([]);
  });

  it.each([
    [
      "circuitBreaker",
      `import { circuitBreaker } from "robustly"; circuitBreaker();`,
      "breaker/circuit-breaker.ts",
    ],
    ["retryBudget", `import { retryBudget } from "robustly"; retryBudget();`, "budget/retry-budget.ts"],
    ["bulkhead", `import { bulkhead } from "robustly"; bulkhead({ limit: 1 });`, "bulkhead/bulkhead.ts"],
    ["hedge", `import { hedge } from "robustly"; hedge(async () => 1, { delay: 1 });`, "hedge/hedge.ts"],
    [
      "ResponsiveBackoff",
      `import { ResponsiveBackoff } from "robustly"; new ResponsiveBackoff();`,
      "adaptive/responsive.ts",
    ],
  ])("%s brings its own code and no option descriptions", async (_, app, own) => {
    const modules = await modulesOf(app);
    expect(modules).toContain(own);
    expect(descriptions(modules)).toEqual([]);
  });
});
