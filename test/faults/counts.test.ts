// Counts beyond any use: every count flag and option has a documented maximum and fails over it at once,
// before any work (today `--runs 1e9` or `--retries 1e9` would run out of memory or never end).
import { OptionError } from "robustly";
import { SIM_LIMITS, simulate } from "robustly/sim";
import { describe, expect, it } from "vitest";
import { UsageError } from "../../src/cli/args.js";
import { MAX_PLOTTED_RETRIES, runPlot } from "../../src/cli/plot.js";
import { MAX_SCHEDULED_RETRIES, runSchedule } from "../../src/cli/schedule.js";
import { simulateOptions } from "../../src/cli/simulate.js";

const sink = { write: () => true } as unknown as NodeJS.WritableStream;

describe("count flags", () => {
  it.each([
    [["--clients", "1e9"], `--clients must be an integer in [1, ${SIM_LIMITS.clients}]`],
    [["--runs", "1e9"], `--runs must be an integer in [1, ${SIM_LIMITS.runs}]`],
    [
      ["--scenario", "throttled-store", "--batch", "1e12"],
      `--batch must be an integer in [1, ${SIM_LIMITS.batch}]`,
    ],
  ])("simulate %j fails at once, naming the maximum", (argv, said) => {
    expect(() => simulateOptions(argv)).toThrow(UsageError);
    expect(() => simulateOptions(argv)).toThrow(said);
  });

  it("plot --retries 1e9 fails at once, naming the maximum", async () => {
    await expect(runPlot(["--retries", "1e9"], sink)).rejects.toThrow(
      `--retries must be an integer in [1, ${MAX_PLOTTED_RETRIES}]`,
    );
  });

  it.each([[["--retries", "1e9"]], [["--totals", "--retries", "1,1e9"]]])(
    "schedule %j fails at once, naming the maximum",
    async (argv) => {
      await expect(runSchedule(argv, sink)).rejects.toThrow(
        `--retries must be an integer in [0, ${MAX_SCHEDULED_RETRIES}]`,
      );
    },
  );
});

describe("simulate's options", () => {
  it.each([
    ["clients", { clients: [1e9] }],
    ["clients", { clients: Array.from({ length: SIM_LIMITS.points + 1 }, () => 1) }],
    ["runs", { runs: 1e9 }],
    ["batch", { scenario: "throttled-store", batch: 1e12 }],
    ["duration", { duration: 1e15 }],
  ] as const)("%s beyond its maximum fails at once with an OptionError", (option, options) => {
    let error: unknown;
    try {
      simulate(options as never);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(OptionError);
    expect((error as OptionError).option.startsWith(option)).toBe(true);
  });

  it("an unknown option fails, naming the one meant", () => {
    let error: unknown;
    try {
      simulate({ client: [10] } as never);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(OptionError);
    expect((error as OptionError).hint).toBe("Did you mean `clients`?");
  });
});

describe("a simulation whose memory would grow without bound", () => {
  it("simulate --timeout 2 --clients 100 (every attempt times out at the server) is refused up front", () => {
    const started = performance.now();
    let error: unknown;
    try {
      simulate({ scenario: "outage", clients: [100], timeout: 2 });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(OptionError);
    expect((error as OptionError).message).toMatch(
      /timeout must be at least the latency server's shortest service time \(100 ms\)/,
    );
    // Refused before any work (it used to run for minutes and out of memory).
    expect(performance.now() - started).toBeLessThan(5000);
  });

  it("the flaky and capacity servers are held to their own latency", () => {
    expect(() => simulate({ server: "flaky", timeout: 5, clients: [10] })).toThrow(
      /flaky server's shortest service time \(10 ms\)/,
    );
    expect(() => simulate({ server: "capacity", timeout: 50, clients: [10] })).toThrow(
      /capacity server's shortest service time \(100 ms\)/,
    );
  });
});
