import { describe, expect, it, vi } from "vitest";
import { progressBar } from "../src/cli/progress.js";

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
