// The only tests that run on real timers: brief, with generous bounds, to show the system clock is wired right.
import { backoff, jitter, retry, systemClock, TimeoutError } from "robustly";
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
});
