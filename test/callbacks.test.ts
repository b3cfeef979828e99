import { backoff, jitter, retry } from "robustly";
import { describe, expect, it } from "vitest";
import { captureWarnings, drive, tick, VirtualClock } from "./support/drive.js";

const steady = { backoff: backoff.constant({ base: 100 }), jitter: jitter.none() };

function failTwice() {
  let calls = 0;
  return async () => {
    calls += 1;
    if (calls <= 2) throw new Error(`failure ${calls}`);
    return "ok";
  };
}

describe("callbacks", () => {
  it("onError sees every failed attempt with the retries so far; onRetry sees each delay; onSuccess the value", async () => {
    const clock = new VirtualClock();
    const log: string[] = [];
    const result = await drive(
      clock,
      retry(failTwice(), {
        clock,
        ...steady,
        onError: (e, retries) => log.push(`error ${(e as Error).message} after ${retries}`),
        onRetry: ({ retries, delay, attempt, elapsed }) =>
          log.push(`retry ${retries} in ${delay} (attempt ${attempt} at ${elapsed})`),
        onSuccess: (value) => log.push(`success ${value} at ${clock.now()}`),
      }),
    );
    expect(result).toEqual({ ok: true, value: "ok" });
    expect(log).toEqual([
      "error failure 1 after 0",
      "retry 0 in 100 (attempt 1 at 0)",
      "error failure 2 after 1",
      "retry 1 in 100 (attempt 2 at 100)",
      "success ok at 200",
    ]);
  });

  it("onError is called for the last failed attempt too, and onRetry is not", async () => {
    const clock = new VirtualClock();
    const errors: number[] = [];
    const retries: number[] = [];
    await drive(
      clock,
      retry(
        async () => {
          throw new Error("always");
        },
        {
          clock,
          ...steady,
          maxRetries: 2,
          onError: (_e, n) => errors.push(n),
          onRetry: (e) => retries.push(e.retries),
        },
      ),
    );
    expect(errors).toEqual([0, 1, 2]);
    expect(retries).toEqual([0, 1]);
  });

  it("a callback that throws does not disturb the loop; its error goes to onCallbackError", async () => {
    const clock = new VirtualClock();
    const reported: [string, string][] = [];
    const boom = (name: string) => () => {
      throw new Error(`${name} broke`);
    };
    const result = await drive(
      clock,
      retry(failTwice(), {
        clock,
        ...steady,
        onError: boom("onError"),
        onRetry: boom("onRetry"),
        onSuccess: boom("onSuccess"),
        onCallbackError: (error, callback) => reported.push([callback, (error as Error).message]),
      }),
    );
    expect(result).toEqual({ ok: true, value: "ok" });
    expect(reported).toEqual([
      ["onError", "onError broke"],
      ["onRetry", "onRetry broke"],
      ["onError", "onError broke"],
      ["onRetry", "onRetry broke"],
      ["onSuccess", "onSuccess broke"],
    ]);
  });

  it("an async callback that rejects is reported the same way, never as an unhandled rejection", async () => {
    const clock = new VirtualClock();
    const reported: string[] = [];
    const unhandled: unknown[] = [];
    const collect = (reason: unknown) => unhandled.push(reason);
    process.on("unhandledRejection", collect);
    try {
      const result = await drive(
        clock,
        retry(failTwice(), {
          clock,
          ...steady,
          onRetry: async () => {
            throw new Error("async broke");
          },
          onCallbackError: (error, callback) => reported.push(`${callback}: ${(error as Error).message}`),
        }),
      );
      await tick();
      expect(result).toEqual({ ok: true, value: "ok" });
      expect(reported).toEqual(["onRetry: async broke", "onRetry: async broke"]);
      expect(unhandled).toEqual([]);
    } finally {
      process.off("unhandledRejection", collect);
    }
  });

  it("by default a callback's error becomes a process warning", async () => {
    const captured = captureWarnings();
    try {
      const value = await retry(async () => "fine", {
        onSuccess: () => {
          throw new Error("logger down");
        },
      });
      expect(value).toBe("fine");
      await tick();
      expect(captured.warnings).toEqual([
        {
          message: "the onSuccess callback threw (robustly went on): logger down",
          type: "RobustlyCallbackWarning",
        },
      ]);
    } finally {
      captured.restore();
    }
  });

  it("an onCallbackError that throws is contained as well", async () => {
    const clock = new VirtualClock();
    const result = await drive(
      clock,
      retry(failTwice(), {
        clock,
        ...steady,
        onError: () => {
          throw new Error("a");
        },
        onCallbackError: () => {
          throw new Error("b");
        },
      }),
    );
    expect(result).toEqual({ ok: true, value: "ok" });
  });
});
