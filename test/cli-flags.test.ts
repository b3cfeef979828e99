// The command line as a new user types it: the library's defaults, negative numbers as separate
// arguments, durations with units (a bare number in ms everywhere), names in kebab-case (camelCase too)
// with "did you mean" for a near miss.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { delays, jitter } from "robustly";
import { afterAll, describe, expect, it } from "vitest";
import { loadOptions } from "../src/cli/load.js";
import { runSchedule, SCHEDULE_HELP } from "../src/cli/schedule.js";
import { SIMULATE_HELP, simulateOptions } from "../src/cli/simulate.js";
import { MAX_SEED } from "../src/core/random.js";
import { plan } from "../src/sim/simulate.js";
import { runCli } from "./support/commands.js";

/** `robustly schedule ARGS --json`'s delays. */
async function scheduled(...args: string[]): Promise<number[]> {
  let text = "";
  const out = new Writable({
    write(chunk, _encoding, done) {
      text += String(chunk);
      done();
    },
  });
  expect(await runSchedule([...args, "--json"], out)).toBe(0);
  return (JSON.parse(text) as { delays: number[] }).delays;
}

const dir = mkdtempSync(join(tmpdir(), "robustly-cli-flags-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("robustly schedule's defaults are the library's", () => {
  it("--backoff exponential is the default backoff, capped where retry() caps it", async () => {
    const library = delays({ jitter: jitter.none() }, 12);
    expect(Math.max(...library)).toBe(30_000);
    expect(await scheduled("--jitter", "none", "--retries", "12")).toEqual(library);
    expect(await scheduled("--backoff", "exponential", "--jitter", "none", "--retries", "12")).toEqual(
      library,
    );
    expect(
      await scheduled("--backoff", "exponential", "--base", "2s", "--jitter", "none", "--retries", "6"),
    ).toEqual([2000, 4000, 8000, 16_000, 30_000, 30_000]);
  });

  it("--help gives the same defaults", () => {
    expect(SCHEDULE_HELP).toMatch(/--backoff NAME .*\(default exponential\)/);
    expect(SCHEDULE_HELP).toMatch(/--max T .*\(default 30 s, or the base when larger/);
    expect(SCHEDULE_HELP).not.toMatch(/default Infinity/);
  });
});

describe("negative numbers as separate arguments", () => {
  it("--max-retries -1 and --timeout -1 mean what --max-retries=-1 and --timeout=-1 do", async () => {
    expect(await scheduled("--max-retries", "-1", "--timeout", "-1", "--jitter", "none")).toEqual(
      await scheduled("--max-retries=-1", "--timeout=-1", "--jitter", "none"),
    );
    const run = runCli(dir, "run", ["--max-retries", "-1", "--jitter", "none", "--", "true"]);
    expect(run.stderr).toBe("");
    expect(run.status).toBe(0);
  });

  it("a negative where none is allowed is refused by the option's own check, not taken for a flag", async () => {
    await expect(scheduled("--base", "-1")).rejects.toThrow("--base must be a finite number >= 0; got -1");
  });
});

describe("durations: a unit, or a bare number of ms, on every flag", () => {
  it("robustly simulate reads --duration, --outage and --think like every other duration", () => {
    const { options } = simulateOptions(["--duration", "120000", "--outage", "20s:30s", "--think", "500"]);
    expect(options).toMatchObject({
      duration: 120_000,
      outage: { start: 20_000, length: 30_000 },
      think: 500,
    });
    expect(simulateOptions(["--duration", "2m", "--outage", "1m:500"]).options).toMatchObject({
      duration: 120_000,
      outage: { start: 60_000, length: 500 },
    });
    expect(SIMULATE_HELP).not.toMatch(/bare numbers? in s/);
  });

  it("robustly load reads --think, --duration and --interval in ms when bare", () => {
    expect(loadOptions(["--think", "250", "--duration", "90000", "--interval", "2000"])).toMatchObject({
      options: { think: 250 },
      duration: 90_000,
      interval: 2000,
    });
  });

  it("a timeout below the server's shortest service time is refused in one line, before any run", () => {
    const run = runCli(dir, "simulate", ["--timeout", "2"]);
    expect(run.status).toBe(2);
    expect(run.stdout).toBe("");
    expect(run.stderr.trimEnd().split("\n")).toHaveLength(1);
    expect(run.stderr).toMatch(
      /^robustly: --timeout must be at least the latency server.s shortest service time \(100 ms\).*; got 2\n$/,
    );
  });
});

describe("names on the command line: kebab-case, camelCase too, and did you mean", () => {
  it("--jitter decorrelated-aws is --jitter decorrelatedAws", async () => {
    const args = ["--seed", "3", "--retries", "8"];
    const kebab = await scheduled("--jitter", "decorrelated-aws", ...args);
    expect(kebab).toEqual(await scheduled("--jitter", "decorrelatedAws", ...args));
    expect(SCHEDULE_HELP).toMatch(/--jitter NAME .*decorrelated-aws/);
    expect(SCHEDULE_HELP).not.toMatch(/decorrelatedAws/);
  });

  it("scenarios, strategies and servers take both forms", () => {
    expect(simulateOptions(["--scenario", "throttledStore"]).options.scenario).toBe("throttled-store");
    expect(
      simulateOptions(["--scenario", "contention", "--strategies", "fullJitter,no-backoff"]).options
        .strategies,
    ).toEqual(["full-jitter", "no-backoff"]);
  });

  it("a near miss gets did you mean, with the kebab-case name", async () => {
    await expect(scheduled("--jitter", "decorelated-aws")).rejects.toThrow(
      /--jitter must be one of none, full, equal, decorrelated, decorrelated-aws, [a-z, -]*; got "decorelated-aws"\. Did you mean `decorrelated-aws`\?/,
    );
    await expect(scheduled("--backoff", "exponentiel")).rejects.toThrow(/Did you mean `exponential`\?/);
    expect(() => simulateOptions(["--scenario", "outag"])).toThrow(/Did you mean `outage`\?/);
    expect(() => simulateOptions(["--server", "flakey"])).toThrow(/Did you mean `flaky`\?/);
    expect(() => simulateOptions(["--strategies", "exponentail"])).toThrow(/Did you mean `exponential`\?/);
  });
});

describe("seeds: an integer in [0, 4294967295] everywhere, never wrapped", () => {
  const refused = /--seed must be an integer in \[0, 4294967295\]/;

  it("simulate refuses a seed beyond 32 bits, a huge one, a negative one, and one whose runs overflow", () => {
    for (const seed of ["4294967296", "1e308", "-1", "1.5"]) {
      expect(() => simulateOptions(["--seed", seed])).toThrow(refused);
    }
    expect(simulateOptions(["--seed", "4294967295"]).options.seed).toBe(4_294_967_295);
    expect(() => simulateOptions(["--seed", "4294967295", "--runs", "2"])).toThrow(
      /^--seed must be at most 4294967295 − \(runs − 1\)/,
    );
  });

  it("the policy commands refuse it too", async () => {
    const out = new Writable({ write: (_c, _e, done) => done() });
    await expect(runSchedule(["--seed", "4294967297"], out)).rejects.toThrow(refused);
    await expect(runSchedule(["--seed", "1e308"], out)).rejects.toThrow(refused);
  });

  it("the library's simulate({ seed }) takes the same range", () => {
    expect(() => plan({ seed: 2 ** 32 })).toThrow(/seed must be an integer in \[0, 4294967295\]/);
    expect(() => plan({ seed: -1 })).toThrow(/seed must be an integer in \[0, 4294967295\]/);
    expect(() => plan({ seed: MAX_SEED })).not.toThrow();
  });
});
