// Callbacks and event listeners that fail in every way a function can: none of it reaches the caller's
// outcome, none of it becomes an unhandled rejection, and none of it holds a call open.
import { backoff, circuitBreaker, jitter, retry } from "robustly";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { captureWarnings, drive, tick, VirtualClock } from "../support/drive.js";

const quick = { backoff: backoff.constant({ base: 10 }), jitter: jitter.none() };

let unhandled: unknown[];
const collect = (reason: unknown) => unhandled.push(reason);
beforeEach(() => {
  unhandled = [];
  process.on("unhandledRejection", collect);
});
afterEach(() => {
  process.off("unhandledRejection", collect);
});

/** Lets rejections that nobody handles surface (Node reports them after the microtask queue drains). */
const settleRejections = async () => {
  await tick();
  await tick();
};

function failing(times: number) {
  let calls = 0;
  return async () => {
    calls += 1;
    if (calls <= times) throw new Error(`attempt ${calls} failed`);
    return "done";
  };
}

describe("an onCallbackError that rejects", () => {
  it("an async onCallbackError whose promise rejects is not an unhandled rejection", async () => {
    const clock = new VirtualClock();
    const seen: string[] = [];
    const result = await drive(
      clock,
      retry(failing(1), {
        ...quick,
        clock,
        onRetry: () => {
          throw new Error("logger down");
        },
        onCallbackError: async (error, name) => {
          seen.push(`${name}: ${(error as Error).message}`);
          throw new Error("the error handler is down too");
        },
      }),
    );
    await settleRejections();
    expect(result).toEqual({ ok: true, value: "done" });
    expect(seen).toEqual(["onRetry: logger down"]);
    expect(unhandled).toEqual([]);
  });

  it("an onCallbackError that throws at once is contained as well", async () => {
    const clock = new VirtualClock();
    const result = await drive(
      clock,
      retry(failing(1), {
        ...quick,
        clock,
        onRetry: async () => {
          throw new Error("async logger down");
        },
        onCallbackError: () => {
          throw new Error("handler down");
        },
      }),
    );
    await settleRejections();
    expect(result).toEqual({ ok: true, value: "done" });
    expect(unhandled).toEqual([]);
  });
});

describe("event listeners", () => {
  it("a listener that rejects becomes one warning line, not an unhandled rejection", async () => {
    const captured = captureWarnings();
    try {
      const clock = new VirtualClock();
      const breaker = circuitBreaker({ consecutiveFailures: 1, clock });
      breaker.on("change", async () => {
        throw new Error("dashboard down");
      });
      await retry(
        async () => {
          throw new Error("down");
        },
        { breaker, maxRetries: 0, clock },
      ).catch(() => {});
      await settleRejections();
      expect(breaker.state).toBe("open");
      expect(captured.warnings.map((w) => w.message)).toEqual([
        'a "change" listener threw (robustly went on): dashboard down',
      ]);
      expect(unhandled).toEqual([]);
    } finally {
      captured.restore();
    }
  });

  it("a listener or callback that never settles does not hold the call open", async () => {
    const clock = new VirtualClock();
    const forever = () => new Promise<never>(() => {});
    const result = await drive(
      clock,
      retry(failing(2), { ...quick, clock, onRetry: forever, onError: forever, onSuccess: forever }),
    );
    expect(result).toEqual({ ok: true, value: "done" });
    expect(clock.pending).toBe(0);
  });
});
