// The only tests that run on real timers: brief, with generous bounds, to show the system clock is wired right.

import { spawnSync } from "node:child_process";
import { stat } from "node:fs/promises";
import { backoff, jitter, retry, systemClock, TimeoutError, unrefClock } from "robustly";
import { describe, expect, it } from "vitest";

describe("on the real clock", () => {
  it("a per-attempt timeout of 20 ms ends a hung attempt, then a backoff of 10 ms runs before the retry", async () => {
    const started = systemClock.now();
    const starts: number[] = [];
    const result = await retry(
      (ctx) => {
        starts.push(ctx.elapsed);
        return ctx.attempt === 1 ? new Promise<string>(() => {}) : "ok";
      },
      { timeout: 20, backoff: backoff.constant({ base: 10 }), jitter: jitter.none() },
    );
    expect(result).toBe("ok");
    expect(starts[1]).toBeGreaterThanOrEqual(29);
    expect(systemClock.now() - started).toBeLessThan(2000);
  });

  it("the caller's abort ends a long real sleep at once", async () => {
    const controller = new AbortController();
    const started = systemClock.now();
    const pending = retry(
      async () => {
        throw new TimeoutError(1);
      },
      { backoff: backoff.constant({ base: 60_000 }), jitter: jitter.none(), signal: controller.signal },
    );
    setTimeout(() => controller.abort(new Error("stop")), 10);
    await expect(pending).rejects.toThrow("stop");
    expect(systemClock.now() - started).toBeLessThan(2000);
  });

  it("a zero delay retries at the next turn of the event loop, before a setTimeout(0) set before the call", async () => {
    // Start in the poll phase of the event loop (an I/O callback; the test may run in any phase): from there
    // the loop's check phase, where a zero delay retries, comes before its next timers phase, however long
    // the first attempt takes. Started from the check or the timers phase, a millisecond spent in the first
    // attempt let the setTimeout(0) run first, which made this test fail on a loaded machine.
    await stat(".");
    const order: string[] = [];
    setTimeout(() => order.push("setTimeout(0)"), 0);
    let calls = 0;
    const value = await retry(
      async () => {
        calls += 1;
        if (calls === 1) throw new Error("once");
        order.push("retry");
        return calls;
      },
      { backoff: backoff.none(), jitter: jitter.none() },
    );
    expect(value).toBe(2);
    expect(order).toEqual(["retry"]);
  });

  it("a zero delay with unref: true retries at once, not at the next event of another kind (an unrelated interval's)", () => {
    // In a process of its own, whose event loop nothing else wakes: a one-second interval keeps it alive,
    // and the call starts from a timer's callback, after which Node.js waits for I/O.
    const script = `
      import { backoff, retry } from ${JSON.stringify(new URL("../src/index.ts", import.meta.url).href)};
      const keepAlive = setInterval(() => {}, 1000);
      await new Promise((resolve) => setTimeout(resolve, 5));
      const started = performance.now();
      let n = 0;
      const fails = () => (++n < 2 ? Promise.reject(new Error("once")) : "ok");
      await retry(fails, { unref: true, backoff: backoff.none(), maxElapsed: 60_000 });
      console.log(Math.round(performance.now() - started));
      clearInterval(keepAlive);
    `;
    const run = spawnSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], {
      encoding: "utf8",
      timeout: 20_000,
    });
    expect(run.stderr).toBe("");
    // About a millisecond; a stalled retry took the interval's second.
    expect(Number(run.stdout.trim())).toBeLessThan(500);
  });

  it("a zero-delay timer of either real clock fires once, and not at all once cancelled", async () => {
    for (const clock of [systemClock, unrefClock]) {
      const fired: string[] = [];
      clock.setTimer(0, () => fired.push("kept"));
      const cancel = clock.setTimer(0, () => fired.push("cancelled"));
      cancel();
      // The system clock's runs at the next turn, the unref'd clock's after setTimeout(0)'s millisecond.
      await new Promise((resolve) => setTimeout(resolve, 20));
      expect(fired).toEqual(["kept"]);
    }
  });
});
