// Regression tests for defects where the short form's parts (retry, breaker, hedge, budget, backoff, CLI)
// were composed wrongly. Every test but the CLI's runs on a virtual clock; the CLI's run real, short commands.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { runRun } from "../src/cli/run.js";
import {
  type BudgetEvents,
  type BudgetState,
  backoff,
  circuitBreaker,
  delays,
  jitter,
  PermanentError,
  ResponsiveBackoff,
  type RetryBudget,
  retry,
  seededRandom,
  steps,
} from "../src/index.js";
import { VirtualClock } from "../src/testing/virtual-clock.js";

const never = <T>(): Promise<T> => new Promise<T>(() => {});
const steady = { backoff: backoff.constant({ base: 1000 }), jitter: jitter.none() };

/** How `promise` settled, once the virtual clock has no timer left. */
async function drive<T>(
  clock: VirtualClock,
  promise: Promise<T>,
): Promise<{ ok: true; value: T } | { ok: false; error: unknown }> {
  const settled = promise.then(
    (value) => ({ ok: true as const, value }),
    (error: unknown) => ({ ok: false as const, error }),
  );
  await clock.runAll();
  return settled;
}

describe("breaker under retry: an aborted call", () => {
  it("an aborted half-open probe frees the breaker's probe slot", async () => {
    const clock = new VirtualClock();
    const breaker = circuitBreaker({
      consecutiveFailures: 1,
      openFor: backoff.constant({ base: 1000 }),
      clock,
    });
    const opened = await drive(
      clock,
      retry(
        () => {
          throw new Error("down");
        },
        { breaker, maxRetries: 0, clock },
      ),
    );
    expect(opened.ok).toBe(false);
    expect(breaker.state).toBe("open");

    await clock.advance(1001);
    expect(breaker.state).toBe("half-open");

    // The probe hangs, and its caller gives up on it.
    const controller = new AbortController();
    const reason = new Error("caller gave up");
    const probe = retry(() => never<string>(), { breaker, maxRetries: 0, clock, signal: controller.signal });
    const probed = probe.then(
      () => "resolved",
      (error: unknown) => error,
    );
    await clock.advance(10);
    controller.abort(reason);
    expect(await probed).toBe(reason);
    // Neither a failure (it would open again) nor a success (it would close).
    expect(breaker.state).toBe("half-open");

    // The probe's place is free again: the next call is let through and closes the breaker.
    const next = await drive(
      clock,
      retry(() => "ok", { breaker, maxRetries: 0, clock }),
    );
    expect(next).toEqual({ ok: true, value: "ok" });
    expect(breaker.state).toBe("closed");
  });
});

/** A RetryBudget that grants every retry and counts what it is told. */
function spyBudget() {
  const calls = { request: 0, tryRetry: 0, succeeded: 0, failed: 0 };
  const budget: RetryBudget = {
    kind: "ratio",
    request() {
      calls.request += 1;
    },
    success() {
      calls.succeeded += 1;
    },
    failure() {
      calls.failed += 1;
    },
    tryRetry() {
      calls.tryRetry += 1;
      return true;
    },
    available: true,
    on<K extends keyof BudgetEvents>(_event: K, _listener: (payload: BudgetEvents[K]) => void) {
      return { dispose() {} };
    },
    snapshot(): BudgetState {
      return { kind: "tokens", tokens: 0 };
    },
    restore() {},
    shared: false,
    ready: () => Promise.resolve(),
    close: () => Promise.resolve(),
  };
  return { budget, calls };
}

describe("one retry budget given to retry and to its hedge", () => {
  it("a retry budget given to both retry and hedge is charged once per extra attempt", async () => {
    const clock = new VirtualClock();
    const { budget, calls } = spyBudget();
    let invocations = 0;
    const timeline: string[] = [];
    // Invocation 1 (retry attempt 1, first try): fails after 150 ms, so the hedge starts at 100 ms.
    // Invocation 2 (retry attempt 1, the hedge): fails at once; attempt 1 fails when invocation 1 does.
    // Invocation 3 (retry attempt 2, after the 1000 ms backoff): succeeds at once, before any hedge.
    const op = () => {
      invocations += 1;
      const n = invocations;
      timeline.push(`${n}@${clock.now()}`);
      if (n === 1) {
        return new Promise<string>((_, reject) => {
          clock.setTimer(150, () => reject(new Error("slow failure")));
        });
      }
      if (n === 2) return Promise.reject(new Error("fast failure"));
      return Promise.resolve("ok");
    };
    const result = await drive(
      clock,
      retry(op, {
        maxRetries: 1,
        ...steady,
        budget,
        hedge: steps.hedge({ delay: 100, maxHedges: 1, budget }),
        clock,
        random: seededRandom(1),
      }),
    );
    expect(result).toEqual({ ok: true, value: "ok" });
    // The scenario ran as designed: three invocations, at these times.
    expect(invocations).toBe(3);
    expect(timeline).toEqual(["1@0", "2@100", "3@1150"]);
    expect(calls).toEqual({
      // One call of retry: one request.
      request: 1,
      // One hedge and one retry started: two extra attempts.
      tryRetry: 2,
      // Each invocation that settled reported exactly once: two failures, one success.
      failed: 2,
      succeeded: 1,
    });
  });
});

describe("delays() previews a stateful backoff", () => {
  it("delays() never mutates the ResponsiveBackoff it is given", () => {
    const clock = new VirtualClock();
    const responsive = new ResponsiveBackoff({ base: 100, clock, random: seededRandom(7) });
    // Some history first, so that a reset would show too.
    responsive.failure();
    responsive.success();
    const before = responsive.snapshot();
    const previewed = delays({ backoff: responsive, jitter: jitter.none(), random: seededRandom(3) }, 5);
    expect(previewed).toHaveLength(5);
    expect(responsive.snapshot()).toEqual(before);
  });
});

describe("what counts against the breaker", () => {
  it("a PermanentError does not help open the breaker", async () => {
    const clock = new VirtualClock();
    const breaker = circuitBreaker({ consecutiveFailures: 2, clock });
    const notFound = new Error("404");
    for (let i = 0; i < 2; i++) {
      const result = await drive(
        clock,
        retry(
          () => {
            throw new PermanentError(notFound);
          },
          { breaker, clock },
        ),
      );
      expect(result).toEqual({ ok: false, error: notFound });
    }
    expect(breaker.state).toBe("closed");
  });

  it("a breaker with handles counts only the failures it matches", async () => {
    const clock = new VirtualClock();
    const breaker = circuitBreaker({ consecutiveFailures: 1, handles: TypeError, clock });
    const range = await drive(
      clock,
      retry(
        () => {
          throw new RangeError("not the service's fault");
        },
        { breaker, maxRetries: 0, clock },
      ),
    );
    expect(range.ok).toBe(false);
    expect(breaker.state).toBe("closed");
    const type = await drive(
      clock,
      retry(
        () => {
          throw new TypeError("the service's fault");
        },
        { breaker, maxRetries: 0, clock },
      ),
    );
    expect(type.ok).toBe(false);
    expect(breaker.state).toBe("open");
  });

  it("a caller's abort of an attempt in flight does not count as a breaker failure", async () => {
    const clock = new VirtualClock();
    const breaker = circuitBreaker({ consecutiveFailures: 1, clock });
    const controller = new AbortController();
    const reason = new Error("caller gave up");
    const call = retry(() => never<string>(), { breaker, maxRetries: 0, clock, signal: controller.signal });
    const settled = call.then(
      () => "resolved",
      (error: unknown) => error,
    );
    await clock.advance(10);
    controller.abort(reason);
    expect(await settled).toBe(reason);
    expect(breaker.state).toBe("closed");
    expect(breaker.snapshot().consecutiveFailures).toBe(0);
  });
});

describe("robustly run: the library decides when to give up, and run says so", () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "robustly-composition-"));
  });
  afterEach(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  /** A silent command that counts its runs in a file and always exits 1. */
  function failing(): { path: string; runs: () => number } {
    const count = join(dir, "count");
    const path = join(dir, "fail");
    writeFileSync(
      path,
      `#!/bin/sh\nc=$(cat '${count}' 2>/dev/null || echo 0); echo $((c+1)) > '${count}'; exit 1\n`,
      { mode: 0o755 },
    );
    return { path, runs: () => Number(readFileSync(count, "utf8").trim()) };
  }

  function capture(): { stream: Writable; lines: () => string[] } {
    let text = "";
    const stream = new Writable({
      write(chunk, _encoding, callback) {
        text += String(chunk);
        callback();
      },
    });
    return { stream, lines: () => text.split("\n").filter((line) => line !== "") };
  }

  // A constant 300 ms backoff, no jitter, 500 ms in all: attempt 1 fails within a few ms, so the retry at
  // ~300 ms fits; attempt 2 fails at >= 300 ms, and a retry at >= 600 ms would not. Exactly 2 attempts,
  // ended by --max-elapsed although --max-retries would allow 10 retries.
  const byMaxElapsed = [
    "--backoff",
    "constant",
    "--base",
    "300ms",
    "--jitter",
    "none",
    "--max-elapsed",
    "500ms",
  ];

  it("robustly run gives up by the library's decision and says why", async () => {
    const { path, runs } = failing();
    const { stream, lines } = capture();
    const status = await runRun([...byMaxElapsed, "--max-retries", "10", "--", path], stream);
    expect(status).toBe(1);
    expect(runs()).toBe(2);
    const said = lines();
    // One line per failed attempt, the last saying it gives up, and why.
    expect(said).toHaveLength(2);
    expect(said[0]).toMatch(/^robustly: attempt 1\b.*failed \(exit 1\); retrying in 300 ?ms$/);
    expect(said[1]).toMatch(/^robustly: attempt 2\b.*failed \(exit 1\); giving up: .*--max-elapsed/);
  });

  it("robustly run with no retry limit but a --max-elapsed does not count attempts out of ∞", async () => {
    const { path, runs } = failing();
    const { stream, lines } = capture();
    const status = await runRun([...byMaxElapsed, "--max-retries=-1", "--", path], stream);
    expect(status).toBe(1);
    expect(runs()).toBe(2);
    const said = lines();
    expect(said).toHaveLength(2);
    expect(said[1]).toMatch(/giving up: .*--max-elapsed/);
    // An attempt is not "1/∞": the count out of an unbounded number says nothing.
    for (const line of said) expect(line).not.toContain("∞");
  });
});
