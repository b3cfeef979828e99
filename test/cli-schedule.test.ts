import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import fc from "fast-check";
import { backoff, DEFAULTS, delays, fromConfig, jitter, seededRandom } from "robustly";
import { describe, expect, it } from "vitest";
import { UsageError } from "../src/cli/args.js";
import { runSchedule, schedule } from "../src/cli/schedule.js";

async function run(...args: string[]): Promise<string> {
  let text = "";
  const out = new Writable({
    write(chunk, _encoding, done) {
      text += String(chunk);
      done();
    },
  });
  expect(await runSchedule(args, out)).toBe(0);
  return text;
}

describe("robustly schedule", () => {
  it("--json prints the same delays as the library's delays(), and their total", async () => {
    const printed = JSON.parse(
      await run(
        "--backoff",
        "exponential",
        "--base",
        "1s",
        "--max",
        "60s",
        "--jitter",
        "full",
        "--seed",
        "7",
        "--retries",
        "12",
        "--json",
      ),
    ) as { delays: number[]; total: number };
    const expected = delays(
      {
        backoff: backoff.exponential({ base: 1000, max: 60_000 }),
        jitter: jitter.full(),
        random: seededRandom(7),
      },
      12,
    );
    expect(printed.delays).toEqual(expected);
    expect(printed.total).toBeCloseTo(
      expected.reduce((a, b) => a + b, 0),
      9,
    );
  });

  it("shows raw backoff, jittered and final delay and the running total; --max-retries does not cut it", async () => {
    const text = await run(
      "--backoff",
      "linear",
      "--base",
      "0",
      "--interval",
      "2s",
      "--jitter",
      "none",
      "--scale",
      "0.5",
      "--retries",
      "4",
      "--max-retries",
      "1",
    );
    expect(text.trimEnd().split("\n")).toEqual([
      "x  backoff  jittered  delay  total",
      "-  -------  --------  -----  -----",
      "0     0 ms      0 ms   0 ms   0 ms",
      "1      2 s       2 s    1 s    1 s",
      "2      4 s       4 s    2 s    3 s",
      "3      6 s       6 s    3 s    6 s",
    ]);
  });

  it("the schedule's final delays are delays() for any seed, whatever the strategies", () => {
    fc.assert(
      fc.property(
        fc.integer(),
        fc.constantFrom(
          "full",
          "equal",
          "decorrelated",
          "decorrelatedAws",
          "decorrelatedPolly",
          "normal",
          "proportional",
          "none",
        ),
        (seed, j) => {
          const make = () => ({
            backoff: backoff.exponential({ base: 100, max: 5000 }),
            jitter: (jitter as Record<string, () => ReturnType<typeof jitter.full>>)[j]?.() ?? jitter.none(),
            random: seededRandom(seed),
            scale: 1.5,
          });
          const rows = schedule(make(), 15);
          expect(rows.map((r) => r.delay)).toEqual(delays(make(), 15));
          for (const r of rows) expect(r.delay).toBeCloseTo(r.jittered * 1.5, 6);
        },
      ),
      { numRuns: 50 },
    );
  });

  it("--totals prints seed 001's Total Delays in its layout, with its numbers", async () => {
    const text = await run("--totals", "--retries", "3,20");
    expect(text.trimEnd().split("\n")).toEqual([
      "Starting experiments with maximum 3 retries.",
      "> Constant Backoff > Total delay: 3 seconds.",
      "> Linear Backoff > Total delay: 3 seconds.",
      "> Fibonacci Backoff > Total delay: 2 seconds.",
      "> Quadratic Backoff > Total delay: 5 seconds.",
      "> Exponential Backoff > Total delay: 7 seconds.",
      "> Polynomial Backoff > Total delay: 9 seconds.",
      "",
      "Starting experiments with maximum 20 retries.",
      "> Constant Backoff > Total delay: 20 seconds.",
      "> Linear Backoff > Total delay: 190 seconds.",
      "> Fibonacci Backoff > Total delay: 10945 seconds.",
      "> Quadratic Backoff > Total delay: 2470 seconds.",
      "> Exponential Backoff > Total delay: 1048575 seconds.",
      "> Polynomial Backoff > Total delay: 36100 seconds.",
    ]);
    const json = JSON.parse(await run("--totals", "--json", "--retries", "1,5")) as {
      strategies: { name: string; totals: number[] }[];
    };
    expect(json.strategies.find((s) => s.name === "Polynomial")?.totals).toEqual([0, 100_000]);
  });

  it("a wrong flag or value names it", async () => {
    await expect(run("--backoff", "exponentiel")).rejects.toThrow(UsageError);
    await expect(run("--backoff", "linear", "--multiplier", "3")).rejects.toThrow(
      "--multiplier is not an option of backoff linear, which takes --base, --max, --interval",
    );
    await expect(run("--base=-1")).rejects.toThrow("--base must be a finite number >= 0; got -1");
    await expect(run("--retries", "many")).rejects.toThrow(
      '--retries must be an integer in [0, 10000]; got "many"',
    );
    await expect(run("--colour")).rejects.toThrow("robustly schedule --help");
  });
});

describe("one default cap for a named backoff, on the command line, in --config and in fromConfig", () => {
  const json = async (...args: string[]) =>
    (JSON.parse(await run(...args, "--json")) as { delays: number[] }).delays;

  it("a named backoff without max gives the same delays by flags, --config and fromConfig", async () => {
    const dir = mkdtempSync(join(tmpdir(), "robustly-cap-"));
    try {
      for (const name of ["exponential", "linear"]) {
        const file = join(dir, `${name}.json`);
        writeFileSync(file, JSON.stringify({ backoff: name, jitter: "none" }));
        const byFlags = await json("--backoff", name, "--jitter", "none", "--retries", "40");
        const byFile = await json("--config", file, "--retries", "40");
        const byCode = delays(fromConfig({ backoff: name, jitter: "none" }), 40);
        expect(byFile).toEqual(byFlags);
        expect(byCode).toEqual(byFlags);
        expect(Math.max(...byFlags)).toBe(DEFAULTS.backoffMax);
      }
    } finally {
      rmSync(dir, { recursive: true });
    }
  });

  it("a base above the default cap raises the cap to the base instead of failing", async () => {
    expect(await json("--base", "60s", "--jitter", "none", "--retries", "3")).toEqual([
      60_000, 60_000, 60_000,
    ]);
    expect(delays(fromConfig({ backoff: { name: "linear", base: "45s" }, jitter: "none" }), 2)).toEqual([
      45_000, 45_000,
    ]);
  });

  it("a --max below --base names the flag --max", async () => {
    await expect(run("--base", "10s", "--max", "1s")).rejects.toThrow(/^--max must be/);
  });

  it("--max Infinity uncaps, and --help says the one default", async () => {
    expect(await json("--jitter", "none", "--retries", "13", "--max", "Infinity")).toContain(4_096_000);
    const help = await run("--help");
    expect(help).not.toContain("given or default");
    expect(help).toMatch(/--max .*default 30 s, or the base when larger/);
  });
});

describe("--max-elapsed: the schedule says where the policy stops", () => {
  it("marks the retries beyond maxElapsed (waits counted) with a line, when every attempt fails at once", async () => {
    const lines = (await run("--max-elapsed", "5s", "--jitter", "none", "--retries", "6"))
      .trimEnd()
      .split("\n");
    // 1 + 2 + 4 = 7 s already ends past 5 s: the third retry is never made.
    const stop = lines.findIndex((l) => l.includes("the policy stops here"));
    expect(lines[stop]).toMatch(/the policy stops here: maxElapsed 5 s/);
    expect(lines.slice(2, stop).map((l) => l.trim().split(/\s+/)[0])).toEqual(["0", "1"]);
    expect(lines.length - stop - 1).toBe(4);
  });

  it("counts only the time gone with maxElapsedCountsWait false, and says nothing without a limit", async () => {
    const dir = mkdtempSync(join(tmpdir(), "robustly-elapsed-"));
    const file = join(dir, "p.json");
    writeFileSync(file, JSON.stringify({ maxElapsed: "5s", maxElapsedCountsWait: false, jitter: "none" }));
    const lines = (await run("--config", file, "--retries", "6")).trimEnd().split("\n");
    rmSync(dir, { recursive: true });
    const stop = lines.findIndex((l) => l.includes("the policy stops here"));
    // Retries start at 0, 1, 3 s: at 7 s the time gone is past 5 s.
    expect(stop - 2).toBe(3);
    expect(await run("--jitter", "none", "--retries", "6")).not.toContain("stops here");
  });

  it("--json gives how many of the delays the policy sleeps", async () => {
    const json = JSON.parse(await run("--max-elapsed", "5s", "--jitter", "none", "--retries", "6", "--json"));
    expect(json.withinMaxElapsed).toBe(2);
  });
});
