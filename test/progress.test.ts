// The progress bar of the long commands: on a terminal only, never on a pipe, and never with --quiet.
import { Writable } from "node:stream";
import { describe, expect, it, vi } from "vitest";
import { LOAD_HELP, runLoad } from "../src/cli/load.js";
import { progressBar } from "../src/cli/progress.js";
import { runSimulate, SIMULATE_HELP } from "../src/cli/simulate.js";

/** A stand-in for process.stderr that records what is written. */
function stream(isTTY: boolean) {
  const written: string[] = [];
  return {
    written,
    stream: {
      isTTY,
      columns: 80,
      write: (text: string) => written.push(text),
    } as unknown as NodeJS.WriteStream,
  };
}

describe("the progress bar", () => {
  it("draws nothing when standard error is not a terminal", () => {
    const { written, stream: s } = stream(false);
    const bar = progressBar(s, 0);
    bar.update(0.5, "run 1 of 2");
    bar.done();
    expect(written).toEqual([]);
  });

  it("on a terminal, draws only after the delay, then clears its line", () => {
    vi.useFakeTimers({ toFake: ["performance"] });
    try {
      const { written, stream: s } = stream(true);
      const bar = progressBar(s, 1000);
      bar.update(0.1, "run 1 of 7");
      expect(written).toEqual([]);
      vi.advanceTimersByTime(1500);
      bar.update(0.5, "run 4 of 7");
      expect(written).toHaveLength(1);
      expect(written[0]).toContain(" 50% run 4 of 7");
      expect(written[0]?.startsWith("\r")).toBe(true);
      bar.done();
      expect(written[1]).toBe("\r\u001b[2K");
    } finally {
      vi.useRealTimers();
    }
  });
});

/** A stand-in for stdout that keeps what is written. */
function sink() {
  let text = "";
  const out = new Writable({
    write(chunk, _encoding, done) {
      text += String(chunk);
      done();
    },
  });
  return { out, text: () => text };
}

describe("robustly simulate's progress", () => {
  // The bar shows after a second: each reading of the clock moves it on 400 ms, so a run "takes" long.
  const run = async (isTTY: boolean, ...flags: string[]) => {
    let now = 0;
    const clock = vi.spyOn(performance, "now").mockImplementation(() => (now += 400));
    try {
      const { written, stream: errors } = stream(isTTY);
      const { out, text } = sink();
      const args = ["--clients", "50", "--duration", "60s", "--runs", "3", ...flags];
      expect(await runSimulate(args, out, errors)).toBe(0);
      expect(text()).toContain("scenario outage");
      return written;
    } finally {
      clock.mockRestore();
    }
  };

  it("draws a bar on a terminal, naming the run, and clears it before the table", async () => {
    const written = await run(true);
    // Every strategy three times: the last run is numbered as the total.
    expect(written.some((w) => /^\r.*100% run (\d+) of \1$/.test(w))).toBe(true);
    expect(written.at(-1)).toBe("\r\u001b[2K");
  });

  it("draws nothing on a pipe, nor with --quiet", async () => {
    expect(await run(false)).toEqual([]);
    expect(await run(true, "--quiet")).toEqual([]);
  });
});

describe("robustly load's progress", () => {
  // No client calls within the run (a mean think time of a day): only the timers and the bar move.
  const run = async (isTTY: boolean, ...flags: string[]) => {
    vi.useFakeTimers({
      toFake: ["setTimeout", "clearTimeout", "setInterval", "clearInterval", "performance"],
    });
    try {
      const { written, stream: errors } = stream(isTTY);
      const { out, text } = sink();
      const args = ["--url", "http://127.0.0.1:9/", "--clients", "1", "--think", "24h"];
      const status = runLoad([...args, "--duration", "3s", "--interval", "1s", ...flags], out, errors);
      await vi.advanceTimersByTimeAsync(3000);
      await status;
      expect(text()).toMatch(/^OK: .*\nOK: .*\n/);
      return written.filter((w) => !w.startsWith("robustly:"));
    } finally {
      vi.useRealTimers();
    }
  };

  it("draws the time run against --duration on a terminal, clearing it for each rate line", async () => {
    const written = await run(true);
    expect(written.some((w) => /^\r.*%.*2 s of 3 s/.test(w))).toBe(true);
    expect(written).toContain("\r\u001b[2K");
  });

  it("draws nothing on a pipe, nor with --quiet", async () => {
    expect(await run(false)).toEqual([]);
    expect(await run(true, "--quiet")).toEqual([]);
  });
});

it("--quiet is in the help of the long commands", () => {
  expect(SIMULATE_HELP).toMatch(/--quiet\s+no progress bar/);
  expect(LOAD_HELP).toMatch(/--quiet\s+no progress bar/);
});
