// The supervisor against what takes supervisors down in production: a few poison messages among many
// good ones, and a handler that never returns when the supervisor is asked to stop.
import {
  inProcessWorker,
  MessageDeadLetteredError,
  processWorker,
  type SupervisorEvents,
  SupervisorGaveUpError,
  SupervisorStoppedError,
  supervise,
} from "robustly/supervisor";
import { seededRandom } from "robustly/testing";
import { describe, expect, it } from "vitest";
import { fixture, useCompiledServe } from "../fixtures/supervisor/serve-module.js";
import { procState } from "../support/commands.js";
import { type Settled, VirtualClock, within } from "../support/drive.js";

// Process workers run the worker side of the source under test (see the fixture).
useCompiledServe();

/** Records how each promise settles, in order. */
function settle<T>(promises: Promise<T>[]): (Settled<T> | undefined)[] {
  const results: (Settled<T> | undefined)[] = promises.map(() => undefined);
  promises.forEach((p, i) => {
    p.then(
      (value) => {
        results[i] = { ok: true, value };
      },
      (error: unknown) => {
        results[i] = { ok: false, error };
      },
    );
  });
  return results;
}

describe("poison messages among good ones", () => {
  it("3 poison messages among 300, default options: the 297 good ones get their replies, the 3 poison ones are dead-lettered, the supervisor does not give up", async () => {
    const clock = new VirtualClock();
    const poison = new Set([40, 150, 260]);
    const s = supervise<number, number>({
      worker: inProcessWorker(() => (n) => {
        if (poison.has(n)) throw new Error(`message ${n} crashes its worker`);
        return n * 2;
      }),
      clock,
      random: seededRandom(4),
    });
    const gaveUp: SupervisorEvents<number, number>["give-up"][] = [];
    s.on("give-up", (event) => gaveUp.push(event));
    const dead: SupervisorEvents<number, number>["dead-letter"][] = [];
    s.on("dead-letter", (letter) => dead.push(letter));
    const results = settle(Array.from({ length: 300 }, (_, n) => s.send(n)));
    await clock.runAll();
    results.forEach((r, n) => {
      if (poison.has(n)) {
        expect(r?.ok, `message ${n}`).toBe(false);
        expect((r as { error: unknown }).error, `message ${n}`).toBeInstanceOf(MessageDeadLetteredError);
      } else {
        expect(r, `message ${n}`).toEqual({ ok: true, value: n * 2 });
      }
    });
    expect(gaveUp).toEqual([]);
    expect(dead.map((d) => [d.message, d.reason, (d.error as MessageDeadLetteredError).crashes])).toEqual([
      [40, "poison", 3],
      [150, "poison", 3],
      [260, "poison", 3],
    ]);
    expect(s.state).toBe("running");
    expect(s.metrics).toMatchObject({ acknowledged: 297, deadLettered: 3, pending: 0 });
    await s.stop();
    expect(clock.pending).toBe(0);
  });

  it("a worker that crashes on every message is still given up on: a poison message's crashes are forgiven only once the worker acknowledges another", async () => {
    const clock = new VirtualClock();
    const s = supervise<number, number>({
      worker: inProcessWorker(() => () => {
        throw new Error("broken");
      }),
      clock,
      random: seededRandom(4),
    });
    const results = settle(Array.from({ length: 20 }, (_, n) => s.send(n)));
    await clock.runAll();
    // 10 restarts allowed: messages 0, 1 and 2 take 3 crashes each, message 3 the last one.
    expect(s.state).toBe("gave-up");
    expect(results.slice(0, 3).map((r) => (r as { error: unknown }).error)).toEqual([
      expect.any(MessageDeadLetteredError),
      expect.any(MessageDeadLetteredError),
      expect.any(MessageDeadLetteredError),
    ]);
    for (const r of results.slice(3))
      expect((r as { error: unknown }).error).toBeInstanceOf(SupervisorGaveUpError);
    await s.stop();
    expect(clock.pending).toBe(0);
  });
});

describe("stop() with a handler that never returns", () => {
  it("stop() ends after 10 s by default: the unanswered messages are rejected with a SupervisorStoppedError, nothing is left", async () => {
    const clock = new VirtualClock();
    const signals: AbortSignal[] = [];
    const s = supervise<number, number>({
      worker: inProcessWorker(() => (_n, { signal }) => {
        signals.push(signal);
        return new Promise<number>(() => {});
      }),
      clock,
    });
    const results = settle([s.send(1), s.send(2)]);
    await clock.runAll();
    let stopped = false;
    void s.stop().then(() => {
      stopped = true;
    });
    await clock.advance(9_999);
    expect([stopped, results[0], results[1]]).toEqual([false, undefined, undefined]);
    await clock.advance(1);
    await clock.runAll();
    expect(stopped).toBe(true);
    for (const r of results) {
      const error = (r as { error: Error }).error;
      expect(error).toBeInstanceOf(SupervisorStoppedError);
      expect(error.message).toBe(
        "The supervisor stopped before the message was answered: stop's timeout (10000 ms) ran out",
      );
    }
    expect(signals.map((signal) => signal.aborted)).toEqual([true]);
    expect(s.state).toBe("stopped");
    expect(clock.pending).toBe(0);
  });

  it("with a real process worker, stop() ends by default and the child process is gone afterwards", async () => {
    const clock = new VirtualClock();
    const s = supervise<{ op: string }, unknown>({
      worker: processWorker(fixture("echo.mjs"), { execArgv: [], stdio: "ignore" }),
      clock,
    });
    try {
      const ready = new Promise<void>((resolve) => s.on("ready", () => resolve()));
      const result = settle([s.send({ op: "hang" })]);
      await within(20_000, "the worker's start", ready);
      const pid = s.workers[0]?.pid as number;
      expect(procState(pid)).toBeDefined();
      const stopped = s.stop();
      await clock.advance(10_000);
      // The worker is asked to exit, and killed when the grace of its kind ends.
      await clock.advance(1_000);
      await within(20_000, "stop()", stopped);
      expect((result[0] as { error: unknown }).error).toBeInstanceOf(SupervisorStoppedError);
      expect(procState(pid)).toBeUndefined();
      expect(clock.pending).toBe(0);
    } finally {
      await s.stop({ drain: false });
    }
  });
});
