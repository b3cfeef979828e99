import v8 from "node:v8";
import vm from "node:vm";
import { backoff, jitter, retry } from "robustly";
import { describe, expect, it } from "vitest";
import { drive, VirtualClock } from "./support/drive.js";

// A full garbage collection before each reading, so the heap holds only what is still reachable.
v8.setFlagsFromString("--expose-gc");
const gc = vm.runInNewContext("gc") as () => void;

describe("endurance", () => {
  it("a million retries with no limit run on the virtual clock in constant memory", async () => {
    const clock = new VirtualClock();
    const attempts = 1_000_000;
    let calls = 0;
    let heapAtTenThousand = 0;
    const op = async () => {
      calls += 1;
      if (calls === 10_000) {
        gc();
        heapAtTenThousand = process.memoryUsage().heapUsed;
      }
      if (calls < attempts) throw new Error("still down");
      return calls;
    };
    const result = await drive(
      clock,
      retry(op, {
        clock,
        maxRetries: -1,
        backoff: backoff.exponential({ base: 1000, max: 60_000 }),
        jitter: jitter.none(),
      }),
    );
    gc();
    const heapAtEnd = process.memoryUsage().heapUsed;
    expect(result).toEqual({ ok: true, value: attempts });
    // About 60 s per retry once capped: the virtual clock covered almost two years.
    expect(clock.now()).toBeGreaterThan(59_000 * (attempts - 20));
    // Anything kept per attempt (a closure, a record, a listener) would add tens of megabytes here.
    expect(heapAtEnd - heapAtTenThousand).toBeLessThan(8 * 1024 * 1024);
  }, 120_000);
});
