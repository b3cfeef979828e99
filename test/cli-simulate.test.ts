import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { SIMULATE_HELP, simulateOptions, TABLE_COLUMNS, table } from "../src/cli/simulate.js";
import { type SimulateOptions, simulateAsync } from "../src/sim/simulate.js";

const root = fileURLToPath(new URL("..", import.meta.url));

/** Runs the robustly command from source, as `npm run robustly --` does. */
function robustly(...args: string[]) {
  const run = spawnSync(process.execPath, ["--import", "tsx", "src/cli/main.ts", ...args], {
    cwd: root,
    encoding: "utf8",
    env: { ...process.env, NODE_NO_WARNINGS: "1" },
  });
  return { status: run.status, stdout: run.stdout, stderr: run.stderr };
}

describe("robustly simulate", () => {
  it("prints a comparison table of the outage scenario", () => {
    const run = robustly(
      "simulate",
      "--strategies",
      "fixed,exponential",
      "--clients",
      "1000",
      "--duration",
      "120s",
    );
    expect(run.stderr).toBe("");
    expect(run.status).toBe(0);
    const lines = run.stdout.trimEnd().split("\n");
    expect(lines[0]).toBe("scenario outage, seed 1, 120 s, server latency, outage 20–50 s, backlog 512");
    expect(lines[2]).toMatch(
      /^strategy\s+clients\s+recovered\s+recovery\s+in flight\s+over knee\s+peak conc\.\s+attempts\/req\s+success\s+server work\s+completion$/,
    );
    expect(lines[4]).toMatch(/^fixed\s+1000\s+NO\s+—\s+—\s+\d+\.\d s/);
    expect(lines[5]).toMatch(/^exponential\s+1000\s+yes\s+\d+\.\d s\s+\d+\.\d s\s+0\.0 s/);
  });

  it("--json prints the full results with the documented fields", () => {
    const run = robustly(
      "simulate",
      "--scenario",
      "amplification",
      "--strategies",
      "no-retries,3-retries",
      "--failure-probability",
      "0,1",
      "--duration",
      "60s",
      "--json",
    );
    expect(run.status).toBe(0);
    const result = JSON.parse(run.stdout) as {
      scenario: string;
      seed: number;
      runs: Record<string, unknown>[];
    };
    expect(result.scenario).toBe("amplification");
    expect(result.seed).toBe(1);
    expect(result.runs.map((r) => [r.strategy, r.failureProbability])).toEqual([
      ["no-retries", 0],
      ["3-retries", 0],
      ["no-retries", 1],
      ["3-retries", 1],
    ]);
    for (const r of result.runs) {
      for (const field of [
        "strategy",
        "clients",
        "failureProbability",
        "recovered",
        "recoveryTime",
        "inFlightRecoveryTime",
        "aboveKneeTime",
        "peakConcurrency",
        "amplification",
        "successRate",
        "work",
        "completionTime",
        "makespan",
      ]) {
        expect(r, field).toHaveProperty(field);
      }
      expect(r.recovered).toBeNull();
    }
    // Every attempt fails at p = 1: 4 attempts per request, less the requests the end of the run cuts off.
    expect(result.runs[3]?.amplification).toBeGreaterThan(3.7);
    expect(result.runs[3]?.amplification).toBeLessThanOrEqual(4);
    expect(result.runs[2]?.amplification).toBe(1);
  });

  it("a wrong scenario, strategy, flag or value is a clear error with status 2, listing what exists", () => {
    const cases: [string[], string][] = [
      [
        ["simulate", "--scenario", "storm"],
        'robustly: --scenario must be one of outage, contention, amplification, throttled-store, metastable, fleet; got "storm"',
      ],
      [
        ["simulate", "--strategies", "fixed,yolo"],
        'robustly: --strategies: "yolo" is not a strategy of the outage scenario; it has fixed, exponential, exponential-after-think, robustly, p-retry, async-retry, exponential-backoff, cockatiel, robustly-no-budget, robustly-budget, robustly-breaker, robustly-retry-breaker, robustly-gradient2, robustly-vegas, robustly-aimd, robustly-rate',
      ],
      [["simulate", "--clients", "ten"], 'robustly: --clients must be an integer in [1, 100000]; got "ten"'],
      [
        ["simulate", "--outage", "20"],
        'robustly: --outage must be START:LENGTH (e.g. 20s:30s) or none; got "20"',
      ],
      [
        ["simulate", "--duration", "5 minutes"],
        "robustly: --duration must be a duration such as 1.5s, 200ms or 2m",
      ],
      [["simulate", "--jobs", "0"], "robustly: --jobs must be an integer in [1, 256]; got"],
      [["simulate", "--jobs", "two"], "robustly: --jobs must be an integer in [1, 256]; got"],
      [
        ["fly"],
        'robustly: unknown command "fly"; the commands are simulate, schedule, run, plot, serve, load',
      ],
    ];
    for (const [args, message] of cases) {
      const run = robustly(...args);
      expect(run.status, args.join(" ")).toBe(2);
      expect(run.stderr.startsWith(message), `${args.join(" ")}: ${run.stderr}`).toBe(true);
      expect(run.stdout).toBe("");
    }
    const unknown = robustly("simulate", "--colour");
    expect(unknown.status).toBe(2);
    expect(unknown.stderr).toContain("--colour");
    expect(unknown.stderr).toContain("robustly simulate --help");
  });

  it("--jobs shares the runs among threads and prints what one thread prints", () => {
    const args = ["simulate", "--scenario", "contention", "--clients", "10,40", "--runs", "6", "--json"];
    const one = robustly(...args, "--jobs", "1");
    const two = robustly(...args, "--jobs", "2");
    expect(one.status).toBe(0);
    expect(two.status).toBe(0);
    expect(two.stderr).toBe("");
    expect(JSON.parse(two.stdout)).toEqual(JSON.parse(one.stdout));
    expect(JSON.parse(one.stdout).parameters.runs).toBe(6);
  });

  it("robustly --version prints the package's version; robustly --help lists the commands", () => {
    const version = robustly("--version");
    expect(version.status).toBe(0);
    expect(version.stdout).toMatch(/^robustly \d+\.\d+\.\d+\n$/);
    const help = robustly("--help");
    expect(help.status).toBe(0);
    for (const command of ["simulate", "schedule", "run", "plot", "serve", "load"])
      expect(help.stdout).toContain(`  ${command} `);
  });

  it("--help lists the options and every scenario's strategies", () => {
    const run = robustly("simulate", "--help");
    expect(run.status).toBe(0);
    expect(run.stdout).toContain("--outage START:LENGTH");
    expect(run.stdout).toContain(
      "contention: no-backoff, aws-exponential, aws-full-jitter, aws-equal-jitter, aws-decorrelated-jitter, exponential, full-jitter, equal-jitter, decorrelated-choice-jitter, decorrelated-aws-jitter, decorrelated-polly-jitter",
    );
  });
});

describe("--clients ranges", () => {
  it("FROM:TO:STEP is every count from FROM to TO in steps of STEP, FROM:TO doubles, beside plain counts", () => {
    expect(simulateOptions(["--clients", "10:190:10"]).options.clients).toEqual(
      Array.from({ length: 19 }, (_, i) => 10 * (i + 1)),
    );
    expect(simulateOptions(["--clients", "1,5:7:1,100"]).options.clients).toEqual([1, 5, 6, 7, 100]);
    expect(simulateOptions(["--clients", "10:190"]).options.clients).toEqual([10, 20, 40, 80, 160]);
    expect(simulateOptions(["--backlog", "128:2048"]).options.backlogs).toEqual([128, 256, 512, 1024, 2048]);
    expect(simulateOptions(["--backlog", "600"]).options.latencyServer).toEqual({ backlog: 600 });
    expect(simulateOptions(["--clients", "10:25:10"]).options.clients).toEqual([10, 20]);
  });

  it("a malformed range names the flag and the form", () => {
    expect(() => simulateOptions(["--clients", "10:5:1"])).toThrow(/--clients must be an integer in \[10, /);
    expect(() => simulateOptions(["--clients", "1:2:3:4"])).toThrow(/FROM:TO:STEP/);
    expect(() => simulateOptions(["--clients", "1:100000:1"])).toThrow(/more than 1000 values/);
  });
});

describe("errors name the flags the user gave, not the library's option paths", () => {
  it("a --duration shorter than the default outage names --outage and --duration, with the ways out", () => {
    expect(() => simulateOptions(["--duration", "30s"])).toThrow(
      /^--duration 30s \(30000 ms\) ends before the default outage .*--outage none.*longer --duration/,
    );
  });

  it("a bare --duration shorter than the default outage asks whether seconds were meant", () => {
    expect(() => simulateOptions(["--duration", "60"])).toThrow(/a bare number is ms; did you mean 60s\?/);
    expect(() => simulateOptions(["--duration", "30s"])).not.toThrow(/bare number/);
  });

  it("an --outage beyond the duration names --outage and the duration", () => {
    expect(() => simulateOptions(["--outage", "20s:30s", "--duration", "40s"])).toThrow(
      /^--outage 20s:30s must end within --duration \(40000 ms\)/,
    );
  });

  it("a bad value names its flag", () => {
    expect(() => simulateOptions(["--think", "-1"])).toThrow(
      /^--think must be a finite number of ms > 0; got -1/,
    );
  });
});

describe("simulate --help", () => {
  it("explains every column the table shows, in every scenario", async () => {
    const small: SimulateOptions[] = [
      {
        scenario: "outage",
        clients: [5],
        duration: 30_000,
        outage: { start: 5_000, length: 5_000 },
        backlogs: [8, 16],
      },
      { scenario: "contention", clients: [2], runs: 1 },
      { scenario: "amplification", clients: [5], duration: 2_000, failureProbability: [0.5] },
      { scenario: "throttled-store", clients: [2], batch: 20, duration: 60_000 },
      { scenario: "metastable", clients: [5], duration: 30_000 },
      {
        scenario: "fleet",
        processes: 2,
        clients: [3],
        duration: 30_000,
        outage: { start: 5_000, length: 5_000 },
      },
    ];
    const shown = new Set<string>();
    for (const options of small) {
      const header = table(await simulateAsync({ ...options, strategies: undefined })).split("\n")[0] ?? "";
      for (const column of header.split(/\s{2,}/)) shown.add(column.trim());
    }
    for (const column of shown) {
      expect(TABLE_COLUMNS[column], column).toBeDefined();
      expect(SIMULATE_HELP).toContain(`  ${column}`);
    }
    expect(shown.size).toBeGreaterThan(12);
  });
});
