import fc from "fast-check";
import { backoff, pipeline, retry, steps, systemClock, TimeoutError } from "robustly";
import { VirtualClock } from "robustly/testing";
import { describe, expect, it, vi } from "vitest";
import { deadlinesOf } from "../src/core/clock.js";
import { Deadline, type DeadlineHost, DeadlineQueue } from "../src/core/deadlines.js";
import { deferred } from "./support/drive.js";

/** A deadline that records when it expired. */
class Recorded extends Deadline {
  fired: number[] = [];
  constructor(
    readonly id: number,
    readonly clock: VirtualClock,
  ) {
    super();
  }
  override expire(): void {
    this.fired.push(this.clock.now());
  }
}

/** The queue on a virtual clock; `parking`: emptied lanes park their timer (as the real clocks do). */
function onVirtualClock(parking: boolean) {
  const clock = new VirtualClock();
  const parked = new Set<unknown>();
  let stopped = 0;
  const host: DeadlineHost = {
    now: () => clock.now(),
    start: (ms, callback) => {
      const handle = {
        cancel: clock.setTimer(ms, () => {
          parked.delete(handle);
          callback();
        }),
      };
      return handle;
    },
    stop: (handle) => {
      stopped += 1;
      (handle as { cancel: () => void }).cancel();
    },
    ...(parking
      ? { park: (handle: unknown) => parked.add(handle), unpark: (handle: unknown) => parked.delete(handle) }
      : {}),
  };
  return { clock, queue: new DeadlineQueue(host), parked, stopped: () => stopped };
}

type Op = { kind: "add"; ms: number } | { kind: "remove"; pick: number } | { kind: "advance"; ms: number };

const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constant("add" as const), ms: fc.constantFrom(1, 5, 10, 250, 1000) }),
  fc.record({ kind: fc.constant("remove" as const), pick: fc.nat() }),
  fc.record({ kind: fc.constant("advance" as const), ms: fc.integer({ min: 0, max: 400 }) }),
);

describe("the deadline queue (a FIFO per duration, one timer each)", () => {
  for (const parking of [false, true]) {
    it(`every deadline expires once, at its time, in order; none after removal; no timer holds on after the last (${parking ? "parking" : "stopping"} emptied lanes)`, async () => {
      await fc.assert(
        fc.asyncProperty(fc.array(op, { maxLength: 80 }), async (ops) => {
          const { clock, queue, parked } = onVirtualClock(parking);
          const all: Recorded[] = [];
          const live: Recorded[] = [];
          const removedAt = new Map<Recorded, number>();
          const due = new Map<Recorded, number>();
          const order: Recorded[] = [];
          for (const step of ops) {
            if (step.kind === "add") {
              const d = new Recorded(all.length, clock);
              const expire = d.expire.bind(d);
              d.expire = () => {
                order.push(d);
                expire();
              };
              queue.add(d, step.ms);
              due.set(d, clock.now() + step.ms);
              all.push(d);
              live.push(d);
            } else if (step.kind === "remove") {
              if (live.length === 0) continue;
              const [d] = live.splice(step.pick % live.length, 1) as [Recorded];
              queue.remove(d);
              queue.remove(d); // twice: nothing more
              removedAt.set(d, clock.now());
            } else {
              await clock.advance(step.ms);
              for (let i = live.length - 1; i >= 0; i--)
                if ((live[i] as Recorded).fired.length > 0) live.splice(i, 1);
            }
          }
          await clock.runAll();
          expect(queue.size).toBe(0);
          for (const d of all) {
            const removed = removedAt.get(d);
            if (removed !== undefined && removed < (due.get(d) as number)) {
              // Taken out before its time: never expires.
              expect(d.fired).toEqual([]);
            } else {
              // Expired exactly once, at its time (a virtual clock is exact).
              expect(d.fired).toEqual([due.get(d)]);
            }
          }
          // In the order of their times; among equal times, in the order they were set within a duration.
          const times = order.map((d) => d.fired[0] as number);
          expect(times).toEqual([...times].sort((a, b) => a - b));
          // No timer left that could keep a process alive.
          if (parking) expect(clock.pending === 0 || parked.size === clock.pending).toBe(true);
          else expect(clock.pending).toBe(0);
        }),
        { numRuns: 200 },
      );
    });
  }

  it("deadlines of one duration share one timer", () => {
    const { clock, queue } = onVirtualClock(false);
    const ds = Array.from({ length: 100 }, (_, i) => new Recorded(i, clock));
    for (const d of ds) queue.add(d, 1000);
    expect(clock.pending).toBe(1);
    expect(queue.timers).toBe(1);
    for (const d of ds) queue.remove(d);
    expect(clock.pending).toBe(0);
  });

  it("a deadline set while a lane's due ones expire is armed for its own time", async () => {
    const { clock, queue } = onVirtualClock(false);
    const late = new Recorded(1, clock);
    const first = new Recorded(0, clock);
    const expire = first.expire.bind(first);
    first.expire = () => {
      expire();
      queue.add(late, 10);
    };
    const second = new Recorded(2, clock);
    queue.add(first, 10);
    await clock.advance(3);
    queue.add(second, 10);
    await clock.runAll();
    expect([first.fired, second.fired, late.fired]).toEqual([[10], [13], [20]]);
  });
});

describe("a per-attempt timeout on the real clock", () => {
  it("an operation that reads its signal sees it abort with the TimeoutError; one that does not still times out", async () => {
    const reader = deferred<unknown>();
    const reading = retry(
      ({ signal }) =>
        new Promise<never>(() => {
          signal.addEventListener("abort", () => reader.resolve(signal.reason), { once: true });
        }),
      { maxRetries: 0, timeout: 5 },
    );
    await expect(reading).rejects.toBeInstanceOf(TimeoutError);
    expect(await reader.promise).toBeInstanceOf(TimeoutError);

    const ignoring = retry(() => new Promise<never>(() => {}), { maxRetries: 0, timeout: 5 });
    await expect(ignoring).rejects.toBeInstanceOf(TimeoutError);
  });

  it("a first attempt's signal read after its time ran out is aborted, its late rejection is heard, and no deadline stays queued", async () => {
    const queue = deadlinesOf(systemClock) as DeadlineQueue;
    const late = deferred<void>();
    let lateSignal: AbortSignal | undefined;
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on("unhandledRejection", onUnhandled);
    try {
      const call = retry(
        async (ctx) => {
          if (ctx.attempt > 1) return "second";
          await late.promise;
          lateSignal = ctx.signal;
          throw new Error("too late");
        },
        { maxRetries: 1, timeout: 5, backoff: backoff.none() },
      );
      expect(await call).toBe("second");
      late.resolve();
      await new Promise((resolve) => setTimeout(resolve, 10));
      expect(lateSignal?.aborted).toBe(true);
      expect(lateSignal?.reason).toBeInstanceOf(TimeoutError);
      expect(unhandled).toEqual([]);
      expect(queue.size).toBe(0);
      // Answered, thrown, bailed: each takes its deadline out at once.
      await retry(async () => 1, { timeout: 1000 });
      await retry(
        () => {
          throw new Error("sync");
        },
        { maxRetries: 0, timeout: 1000 },
      ).catch(() => {});
      await retry(
        async ({ bail }) => {
          bail(new Error("stop"));
          return 0;
        },
        { timeout: 1000 },
      ).catch(() => {});
      expect(queue.size).toBe(0);
    } finally {
      process.off("unhandledRejection", onUnhandled);
    }
  });

  it("many calls of one timeout, settled and hung, all end on time and are not held up by each other", async () => {
    const p = pipeline(steps.retry({ maxRetries: 0 }), steps.timeout(20));
    const quick = Array.from({ length: 50 }, (_, i) => p.execute(async () => i));
    const hung = Array.from({ length: 5 }, () => p.execute(() => new Promise<never>(() => {})));
    expect(await Promise.all(quick)).toEqual(Array.from({ length: 50 }, (_, i) => i));
    for (const h of hung) await expect(h).rejects.toBeInstanceOf(TimeoutError);
  });
});

describe("a per-attempt timeout on the real clock, with fake timers before or after", () => {
  const hang = () => new Promise<never>(() => {});
  const outcome = (call: Promise<unknown>) =>
    call.then(
      () => "answered",
      (error: unknown) => (error instanceof TimeoutError ? "timed out" : error),
    );

  it("runs out on fake timers when a real call of the same limit left its lane's timer set", async () => {
    for (const execute of [
      (op: () => Promise<unknown>) => retry(op, { maxRetries: 0, timeout: 777 }),
      (op: () => Promise<unknown>) =>
        pipeline(steps.retry({ maxRetries: 0 }), steps.timeout(777)).execute(op, {}),
    ]) {
      // A call that answered at once leaves the lane of 777 ms with a real timer set, which holds nothing.
      await retry(async () => 1, { timeout: 777 });
      vi.useFakeTimers();
      try {
        const ended = outcome(execute(hang));
        await vi.advanceTimersByTimeAsync(777);
        expect(await Promise.race([ended, Promise.resolve("still running")])).toBe("timed out");
      } finally {
        vi.useRealTimers();
      }
    }
  });

  it("runs out on fake timers that leave performance.now() real", async () => {
    for (const execute of [
      (op: () => Promise<unknown>) => retry(op, { maxRetries: 0, timeout: 1000 }),
      (op: () => Promise<unknown>) => pipeline(steps.timeout(1000)).execute(op, {}),
    ]) {
      vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
      try {
        const ended = outcome(execute(hang));
        await vi.advanceTimersByTimeAsync(1000);
        expect(await Promise.race([ended, Promise.resolve("still running")])).toBe("timed out");
      } finally {
        vi.useRealTimers();
      }
    }
  });

  it("runs out on the real clock when fake timers, gone since, left its lane's timer set", async () => {
    for (const execute of [
      (op: () => Promise<unknown>) => retry(op, { maxRetries: 0, timeout: 13 }),
      (op: () => Promise<unknown>) =>
        pipeline(steps.retry({ maxRetries: 0 }), steps.timeout(13)).execute(op, {}),
    ]) {
      vi.useFakeTimers();
      try {
        await retry(async () => 1, { timeout: 13 });
      } finally {
        vi.useRealTimers();
      }
      // The lane of 13 ms kept a timer of the fake clock, which will never fire now.
      const ended = outcome(execute(hang));
      await new Promise((resolve) => setTimeout(resolve, 60));
      expect(await Promise.race([ended, Promise.resolve("still running")])).toBe("timed out");
    }
    expect(deadlinesOf(systemClock)?.size).toBe(0);
  });
});

/** A queue on timers the test fires by hand, on a clock it sets. */
function byHand(parking: boolean) {
  interface Timer {
    ms: number;
    fire: () => void;
    stopped: boolean;
    parked: boolean;
  }
  let now = 0;
  const timers: Timer[] = [];
  const host: DeadlineHost = {
    now: () => now,
    start: (ms, fire) => {
      const timer: Timer = { ms, fire, stopped: false, parked: false };
      timers.push(timer);
      return timer;
    },
    stop: (timer) => {
      (timer as Timer).stopped = true;
    },
    ...(parking
      ? {
          park: (timer: unknown) => {
            (timer as Timer).parked = true;
          },
          unpark: (timer: unknown) => {
            (timer as Timer).parked = false;
          },
        }
      : {}),
  };
  const expired: string[] = [];
  const deadline = (name: string) =>
    Object.assign(new Deadline(), {
      expire: () => {
        expired.push(name);
      },
    });
  return {
    queue: new DeadlineQueue(host),
    timers,
    expired,
    deadline,
    at: (t: number) => {
      now = t;
    },
  };
}

describe("the deadline queue's timers", () => {
  it("a timer expires the deadline it was armed for, even when the clock read says it fired early", () => {
    const { queue, timers, expired, deadline } = byHand(true);
    queue.add(deadline("d"), 50);
    expect(timers.map((t) => t.ms)).toEqual([50]);
    // Fake timers may run on a clock of their own: the timer fires while the clock read still says 0.
    timers[0]?.fire();
    expect(expired).toEqual(["d"]);
    expect(queue.size).toBe(0);
  });

  it("a deadline longer than the longest timer is not expired when that timer fires; its lane re-arms for the rest", () => {
    const { queue, timers, expired, deadline, at } = byHand(true);
    const longest = 2 ** 31 - 1;
    queue.add(deadline("long"), longest + 1000);
    expect(timers.map((t) => t.ms)).toEqual([longest]);
    at(longest);
    timers[0]?.fire();
    expect(expired).toEqual([]);
    expect(timers.map((t) => t.ms)).toEqual([longest, 1000]);
    at(longest + 1000);
    timers[1]?.fire();
    expect(expired).toEqual(["long"]);
    // Exactly the longest: armed for its whole time, so due when its timer fires.
    const { queue: exact, timers: exactTimers, expired: exactExpired, deadline: make } = byHand(true);
    exact.add(make("exact"), longest);
    exactTimers[0]?.fire();
    expect(exactExpired).toEqual(["exact"]);
  });

  it("a timer's firing expires, after the one it was armed for, the next ones due within 1 ms, not one due 1 ms later", () => {
    const { queue, timers, expired, deadline, at } = byHand(true);
    queue.add(deadline("first"), 100);
    at(0.5);
    queue.add(deadline("half a ms later"), 100);
    at(1);
    queue.add(deadline("a ms later"), 100);
    at(100);
    timers[0]?.fire();
    expect(expired).toEqual(["first", "half a ms later"]);
    expect(timers.map((t) => t.ms)).toEqual([100, 1]);
  });

  it("an emptied lane parks its timer where the host can, and a deadline that comes unparks it rather than set another", () => {
    const { queue, timers, deadline } = byHand(true);
    const first = deadline("first");
    queue.add(first, 100);
    queue.remove(first);
    expect(timers).toMatchObject([{ parked: true, stopped: false }]);
    expect(queue.timers).toBe(1);
    queue.add(deadline("second"), 100);
    expect(timers).toMatchObject([{ parked: false, stopped: false }]);
    expect(queue.size).toBe(1);
  });

  it("an emptied lane stops its timer where the host cannot park it, and the next deadline of its duration sets a new one", () => {
    const { queue, timers, deadline } = byHand(false);
    const first = deadline("first");
    queue.add(first, 100);
    queue.remove(first);
    expect(timers).toMatchObject([{ stopped: true }]);
    expect(queue.timers).toBe(0);
    queue.add(deadline("second"), 100);
    expect(timers.map((t) => t.stopped)).toEqual([true, false]);
    expect(queue.timers).toBe(1);
  });
});
