// What tenacity's users reach for: statistics on success as well as failure.
import fc from "fast-check";
import {
  type Backoff,
  backoff,
  jitter,
  type RetryStats,
  retry,
  retryReport,
  seededRandom,
  steps,
} from "robustly";
import { VirtualClock } from "robustly/testing";
import { describe, expect, it } from "vitest";
import { drive } from "../support/drive.js";

const none = jitter.none();

/** A few pure backoffs, any parameters. */
const anyBackoff: fc.Arbitrary<Backoff> = fc.oneof(
  fc.integer({ min: 0, max: 10_000 }).map((base) => backoff.constant({ base })),
  fc
    .tuple(fc.integer({ min: 0, max: 5000 }), fc.integer({ min: 0, max: 5000 }))
    .map(([base, interval]) => backoff.linear({ base, interval })),
  fc
    .tuple(fc.integer({ min: 1, max: 5000 }), fc.integer({ min: 1, max: 4 }))
    .map(([base, multiplier]) => backoff.exponential({ base, multiplier, max: 1e9 })),
  fc.integer({ min: 1, max: 5000 }).map((max) => backoff.random({ max })),
);

describe("statistics on success and on failure", () => {
  it("onSuccess receives the attempts, the time since the first attempt and the time slept", async () => {
    const clock = new VirtualClock();
    const stats: RetryStats[] = [];
    let calls = 0;
    const result = await drive(
      clock,
      retry(
        async () => {
          calls += 1;
          await clock.sleep(50);
          if (calls < 3) throw new Error("again");
          return "ok";
        },
        {
          clock,
          backoff: backoff.constant({ base: 1000 }),
          jitter: none,
          onSuccess: (_value, s) => stats.push(s),
        },
      ),
    );
    expect(result).toEqual({ ok: true, value: "ok" });
    expect(stats).toEqual([{ attempts: 3, elapsed: 2150, idle: 2000 }]);
  });

  it("a call that succeeds at once has one attempt and no idle time, also on the fast path", async () => {
    const stats: RetryStats[] = [];
    const events: unknown[] = [];
    const step = steps.retry({ onSuccess: (_value, s) => stats.push(s) });
    step.on("success", (e) => events.push(e));
    const clock = new VirtualClock();
    await expect(retry(() => 1, { clock, onSuccess: (_value, s) => stats.push(s) })).resolves.toBe(1);
    expect(step.execute(() => 2, { attempt: 1, retries: 0, elapsed: 0, clock } as never)).toBe(2);
    expect(stats).toEqual([
      { attempts: 1, elapsed: 0, idle: 0 },
      { attempts: 1, elapsed: 0, idle: 0 },
    ]);
    expect(events).toEqual([{ value: 2, attempt: 1, elapsed: 0, idle: 0 }]);
  });

  it("on failure, retryReport and onGiveUp tell the idle time too", async () => {
    const clock = new VirtualClock();
    const error = new Error("down");
    const given: unknown[] = [];
    await drive(
      clock,
      retry(
        async () => {
          await clock.sleep(10);
          throw error;
        },
        {
          clock,
          maxRetries: 2,
          backoff: backoff.linear({ base: 100, interval: 100 }),
          jitter: none,
          onGiveUp: ({ idle, attempts, elapsed }) => given.push({ idle, attempts, elapsed }),
        },
      ),
    );
    expect(retryReport(error)).toEqual({ reason: "retries", attempts: 3, elapsed: 330, idle: 300 });
    expect(given).toEqual([{ idle: 300, attempts: 3, elapsed: 330 }]);
  });

  it("idle is the sum of the waits onRetry announced, and never more than elapsed", async () => {
    await fc.assert(
      fc.asyncProperty(
        anyBackoff,
        fc.integer({ min: 0, max: 6 }),
        fc.integer({ min: 0, max: 100 }),
        fc.integer(),
        async (b, failures, work, seed) => {
          const clock = new VirtualClock();
          const waits: number[] = [];
          let stats: RetryStats | undefined;
          let calls = 0;
          await drive(
            clock,
            retry(
              async () => {
                calls += 1;
                await clock.sleep(work);
                if (calls <= failures) throw new Error("again");
              },
              {
                clock,
                random: seededRandom(seed),
                maxRetries: 10,
                backoff: b,
                onRetry: ({ delay }) => waits.push(delay),
                onSuccess: (_v, s) => {
                  stats = s;
                },
              },
            ),
          );
          const slept = waits.reduce((sum, w) => sum + w, 0);
          expect(stats?.attempts).toBe(failures + 1);
          expect(stats?.idle).toBeCloseTo(slept, 6);
          expect(stats?.elapsed).toBeCloseTo(slept + work * (failures + 1), 6);
          expect(stats?.idle).toBeLessThanOrEqual((stats?.elapsed ?? 0) + 1e-9);
        },
      ),
      { numRuns: 60 },
    );
  });
});
