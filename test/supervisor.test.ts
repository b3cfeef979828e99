/**
 * The supervisor (seed 004) with in-process workers, all on the virtual clock: the seed's backoff checks,
 * redelivery in order, the bounded buffer, truncation, poison messages, groups, stop, events and metrics,
 * and properties over random crash schedules. Nothing here waits on the wall clock.
 */
import fc from "fast-check";
import { backoff, OptionError, PermanentError, TimeoutError } from "robustly";
import { seededRandom, VirtualClock } from "robustly/testing";
import { describe, expect, it } from "vitest";
import {
  type Delivery,
  inProcessWorker,
  MessageDeadLetteredError,
  MessageDroppedError,
  type SuperviseOptions,
  type Supervisor,
  type SupervisorEvents,
  SupervisorGaveUpError,
  SupervisorStoppedError,
  supervise,
  type WorkerFactory,
} from "../src/supervisor/index.js";
import { captureWarnings } from "./support/drive.js";

type Settled<T> = { ok: true; value: T } | { ok: false; error: unknown };

/** Records how each promise settled, in send order, and how many times (it must be once). */
function track<T>(promises: Promise<T>[] = []) {
  const results: (Settled<T> | undefined)[] = [];
  const counts: number[] = [];
  const add = (p: Promise<T>) => {
    const i = results.length;
    results.push(undefined);
    counts.push(0);
    p.then(
      (value) => {
        counts[i] = (counts[i] ?? 0) + 1;
        results[i] = { ok: true, value };
      },
      (error: unknown) => {
        counts[i] = (counts[i] ?? 0) + 1;
        results[i] = { ok: false, error };
      },
    );
  };
  for (const p of promises) add(p);
  return { results, counts, add };
}

type Log = { event: string; at: number; data: unknown }[];

/** Every event of `s`, with the virtual time it came at. */
function record<M, R>(s: Supervisor<M, R>, clock: VirtualClock): Log {
  const log: Log = [];
  const names: (keyof SupervisorEvents<M, R>)[] = [
    "start",
    "ready",
    "crash",
    "restart",
    "ack",
    "drop",
    "dead-letter",
    "give-up",
    "stop",
  ];
  for (const name of names) s.on(name, (data) => log.push({ event: name, at: clock.now(), data }));
  return log;
}

const of = (log: Log, event: string) => log.filter((e) => e.event === event);

/** The data of the `i`-th `event` in `log`; fails when there is none. */
function dataOf<T>(log: Log, event: string, i = 0): T {
  const entry = of(log, event)[i];
  if (entry === undefined) throw new Error(`no ${event} event #${i}`);
  return entry.data as T;
}

/** An in-process worker whose handler is `fn`, the same for every incarnation. */
function worker<M, R>(fn: (message: M, delivery: Delivery) => R | Promise<R>): WorkerFactory<M, R> {
  return inProcessWorker(() => fn);
}

function setup<M, R>(options: Omit<SuperviseOptions<M, R>, "clock" | "random">, seed = 1) {
  const clock = new VirtualClock();
  const s = supervise<M, R>({ clock, random: seededRandom(seed), ...options });
  const log = record(s, clock);
  return { clock, s, log };
}

describe("delivery and replies", () => {
  it("a handler's return value is the sender's reply and the acknowledgement", async () => {
    const { clock, s, log } = setup<number, number>({ worker: worker((n) => n * 2) });
    const replies = await Promise.all([1, 2, 3].map((n) => s.send(n)));
    expect(replies).toEqual([2, 4, 6]);
    expect(of(log, "ack").map((e) => (e.data as { id: number }).id)).toEqual([1, 2, 3]);
    expect(s.metrics).toMatchObject({ sent: 3, delivered: 3, acknowledged: 3, crashes: 0, pending: 0 });
    await s.stop();
    expect(clock.pending).toBe(0);
  });

  it("a crash puts the unacknowledged message back; it is delivered again, and the handler sees the count", async () => {
    const seen: [number, number][] = [];
    const { clock, s, log } = setup<number, string>({
      worker: worker((n, { id, deliveries }) => {
        seen.push([id, deliveries]);
        if (n === 2 && deliveries < 3) throw new Error(`boom ${deliveries}`);
        return `ok ${n}`;
      }),
    });
    const { results } = track([1, 2, 3, 4].map((n) => s.send(n)));
    await clock.runAll();
    expect(results.map((r) => r?.ok && r.value)).toEqual(["ok 1", "ok 2", "ok 3", "ok 4"]);
    // One message at a time, in order; message 2 again after each crash, before 3 and 4.
    expect(seen).toEqual([
      [1, 1],
      [2, 1],
      [2, 2],
      [2, 3],
      [3, 1],
      [4, 1],
    ]);
    expect(of(log, "crash").map((e) => (e.data as { cause: Error }).cause.message)).toEqual([
      "boom 1",
      "boom 2",
    ]);
    expect(s.metrics).toMatchObject({
      delivered: 6,
      redelivered: 2,
      crashes: 2,
      restarts: 2,
      acknowledged: 4,
    });
    await s.stop();
  });

  it("a PermanentError fails one message for its sender without a crash", async () => {
    const { s, log } = setup<number, number>({
      worker: worker((n) => {
        if (n === 2) throw new PermanentError(new RangeError("no such item"));
        return n;
      }),
    });
    const { results } = track([1, 2, 3].map((n) => s.send(n)));
    await s.stop();
    expect(results[0]).toEqual({ ok: true, value: 1 });
    expect(results[1]?.ok).toBe(false);
    expect((results[1] as { error: Error }).error).toBeInstanceOf(RangeError);
    expect(results[2]).toEqual({ ok: true, value: 3 });
    expect(of(log, "crash")).toHaveLength(0);
    expect(of(log, "ack").map((e) => (e.data as { ok: boolean }).ok)).toEqual([true, false, true]);
  });

  it("the handler factory runs on every start: state is fresh after a crash", async () => {
    const incarnations: number[] = [];
    const { clock, s } = setup<string, number>({
      worker: inProcessWorker(({ incarnation }) => {
        incarnations.push(incarnation);
        let handled = 0;
        return (m) => {
          if (m === "crash") throw new Error("crash");
          handled += 1;
          return handled;
        };
      }),
      maxDeliveries: 1,
    });
    const { results } = track(["a", "b", "crash", "c"].map((m) => s.send(m)));
    await clock.runAll();
    expect(results.map((r) => (r?.ok ? r.value : "error"))).toEqual([1, 2, "error", 1]);
    expect(incarnations).toEqual([1, 2]);
    await s.stop();
  });

  it("create returning a non-function is a crash that says what to do", async () => {
    const { clock, s, log } = setup<number, number>({
      worker: inProcessWorker((() => 42) as never),
      maxRestarts: 0,
    });
    const { results } = track([s.send(1)]);
    await clock.runAll();
    const cause = dataOf<{ cause: Error }>(log, "crash").cause;
    expect(cause.message).toMatch(/create must return the handler.*inProcessWorker\(\(\) => handler\)/);
    expect((results[0] as { error: Error }).error).toBeInstanceOf(SupervisorGaveUpError);
    await s.stop();
  });
});

describe("seed 004's backoff between restarts", () => {
  /** Restarts of a worker that crashes as it starts, until `n` restarts have been scheduled. */
  async function restartDelays(
    seed: number,
    n: number,
    options: Partial<SuperviseOptions<number, number>> = {},
  ) {
    const clock = new VirtualClock();
    const s = supervise<number, number>({
      clock,
      random: seededRandom(seed),
      worker: inProcessWorker(() => {
        throw new Error("fails to start");
      }),
      maxRestarts: -1,
      ...options,
    });
    const delays: number[] = [];
    const starts: number[] = [];
    s.on("start", () => starts.push(clock.now()));
    s.on("restart", ({ delay }) => {
      delays.push(delay);
      if (delays.length === n) void s.stop({ drain: false });
    });
    await clock.runAll();
    await s.stop();
    return { delays, starts };
  }

  it("slot 10 ms, ceiling 10: first 0 or 10 ms, then within {0, 10, 30}, then {0, 10, 30, 70}, …; the 10th is the reset", async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer(), async (seed) => {
        const { delays, starts } = await restartDelays(seed, 25);
        expect(delays).toHaveLength(25);
        delays.forEach((delay, x) => {
          const s = (x % 10) + 1; // seed 004: the slot grows by one per retry
          if (s === 10) {
            // slot >= ceiling and !stayAtCeiling: reset(), no wait, and the slots start again from 1.
            expect(delay).toBe(0);
          } else {
            const allowed = Array.from({ length: s + 1 }, (_, k) => 10 * (2 ** k - 1));
            expect(allowed).toContain(delay);
          }
        });
        // Each restart really waited its delay on the clock.
        for (let k = 0; k + 1 < starts.length; k++) {
          expect((starts[k + 1] as number) - (starts[k] as number)).toBe(delays[k]);
        }
      }),
      { seed: 4004, numRuns: 60 },
    );
  });

  it("over many seeds every allowed value comes up: {0, 10}, then {0, 10, 30}, then {0, 10, 30, 70}", async () => {
    const seen = [new Set<number>(), new Set<number>(), new Set<number>()];
    for (let seed = 0; seed < 200; seed++) {
      const { delays } = await restartDelays(seed, 3);
      delays.forEach((d, i) => {
        seen[i]?.add(d);
      });
    }
    expect([...(seen[0] as Set<number>)].sort((a, b) => a - b)).toEqual([0, 10]);
    expect([...(seen[1] as Set<number>)].sort((a, b) => a - b)).toEqual([0, 10, 30]);
    expect([...(seen[2] as Set<number>)].sort((a, b) => a - b)).toEqual([0, 10, 30, 70]);
  });

  it("an acknowledgement resets the backoff", async () => {
    const { clock, s, log } = setup<string, string>({
      worker: worker((m, { deliveries }) => {
        if (m.startsWith("bad") && deliveries <= 4) throw new Error(m);
        return m;
      }),
      backoff: backoff.slotted({ slot: 10, ceiling: 10, stayAtCeiling: true }),
      poisonAfter: 5,
    });
    const { results } = track([s.send("bad-1"), s.send("bad-2")]);
    await clock.runAll();
    expect(results.every((r) => r?.ok)).toBe(true);
    // 4 restarts for bad-1 (retries 1..4), its ack resets; bad-2 starts again from 1.
    expect(of(log, "restart").map((e) => (e.data as { retries: number }).retries)).toEqual([
      1, 2, 3, 4, 1, 2, 3, 4,
    ]);
    await s.stop();
  });

  it("any core backoff can be used; the delays are the clock's waits", async () => {
    const { delays, starts } = await restartDelays(1, 4, { backoff: backoff.exponential({ base: 100 }) });
    expect(delays).toEqual([100, 200, 400, 800]);
    expect(starts).toEqual([0, 100, 300, 700, 1500].slice(0, starts.length));
  });

  it("while backing off, new messages wait their turn instead of being sent", async () => {
    const calls: [string, number][] = [];
    const { clock, s } = setup<string, string>({
      worker: worker((m, { deliveries }) => {
        calls.push([m, clock.now()]);
        if (m === "first" && deliveries === 1) throw new Error("crash");
        return m;
      }),
      backoff: backoff.constant({ base: 1000 }),
    });
    const first = s.send("first");
    await clock.advance(10);
    expect(calls).toEqual([["first", 0]]);
    const second = s.send("second");
    await clock.advance(500);
    expect(calls).toHaveLength(1);
    await clock.runAll();
    expect(await first).toBe("first");
    expect(await second).toBe("second");
    expect(calls).toEqual([
      ["first", 0],
      ["first", 1000],
      ["second", 1000],
    ]);
    await s.stop();
  });
});

describe("concurrency and the order of redelivery", () => {
  it("a window of 4: the crashed worker's messages come back in order, one at a time until each is answered", async () => {
    const calls: [number, number][] = [];
    const gates = new Map<number, () => void>();
    const { clock, s } = setup<number, number>({
      worker: worker(async (n, { deliveries }) => {
        calls.push([n, deliveries]);
        if (n === 3 && deliveries <= 2) throw new Error("poisonous twice");
        if (deliveries === 1 && n <= 6) await new Promise<void>((resolve) => gates.set(n, resolve));
        return n;
      }),
      concurrency: 4,
      backoff: backoff.none(),
    });
    const { results } = track([1, 2, 3, 4, 5, 6, 7, 8].map((n) => s.send(n)));
    await clock.runAll();
    // 1, 2, 4 were in flight with 3 when it crashed; nothing was acknowledged.
    expect(calls.slice(0, 4)).toEqual([
      [1, 1],
      [2, 1],
      [3, 1],
      [4, 1],
    ]);
    // Then the four it held, one at a time until each is answered: 1, 2, 3 (crashes again, alone), 3, 4;
    // only then the window opens again for 5 to 8.
    expect(calls.slice(4)).toEqual([
      [1, 2],
      [2, 2],
      [3, 2],
      [3, 3],
      [4, 2],
      [5, 1],
      [6, 1],
      [7, 1],
      [8, 1],
    ]);
    expect(results.filter((r) => r?.ok)).toHaveLength(6);
    for (const open of gates.values()) open();
    await clock.runAll();
    expect(results.map((r) => r?.ok && r.value)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    await s.stop();
  });

  it("with one message at a time, each worker sees ids in non-decreasing order, whatever crashes", async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer(), fc.integer({ min: 1, max: 3 }), async (seed, instances) => {
        const crashAt = new Set<string>();
        const draw = seededRandom(seed);
        for (let id = 1; id <= 60; id++)
          for (let d = 1; d <= 2; d++) if (draw() < 0.25) crashAt.add(`${id}/${d}`);
        const seen = new Map<number, number[]>();
        const { clock, s } = setup<number, number>(
          {
            worker: inProcessWorker(({ worker: w }) => async (n, { id, deliveries }) => {
              seen.set(w, [...(seen.get(w) ?? []), id]);
              await clock.sleep(1 + (id % 3));
              if (crashAt.has(`${id}/${deliveries}`)) throw new Error("crash");
              return n;
            }),
            instances,
            maxRestarts: -1,
            maxPending: -1,
          },
          seed,
        );
        const { results } = track(Array.from({ length: 60 }, (_, i) => s.send(i)));
        await clock.runAll();
        expect(results.map((r) => r?.ok && r.value)).toEqual(Array.from({ length: 60 }, (_, i) => i));
        for (const ids of seen.values()) {
          for (let i = 1; i < ids.length; i++) expect(ids[i]).toBeGreaterThanOrEqual(ids[i - 1] as number);
        }
        await s.stop();
      }),
      { seed: 77, numRuns: 40 },
    );
  });
});

describe("the bounded buffer: maxPending", () => {
  it("beyond it the oldest waiting message is dropped: its sender gets a MessageDroppedError and a dead-letter event carries it", async () => {
    const { clock, s, log } = setup<string, string>({
      worker: worker((m, { deliveries }) => {
        if (m === "a" && deliveries === 1) throw new Error("crash");
        return m.toUpperCase();
      }),
      backoff: backoff.constant({ base: 1000 }),
      maxPending: 3,
    });
    const a = track([s.send("a")]);
    await clock.advance(1); // "a" crashed; the worker backs off for 1 s, nothing is in flight
    const { results } = track(["b", "c", "d", "e"].map((m) => s.send(m)));
    await clock.runAll();
    // Held: a, b, c; then d pushes out a (the oldest waiting), and e pushes out b.
    expect((a.results[0] as { error: unknown }).error).toBeInstanceOf(MessageDroppedError);
    expect(results.map((r) => (r?.ok ? r.value : (r as { error: Error }).error.name))).toEqual([
      "MessageDroppedError",
      "C",
      "D",
      "E",
    ]);
    const drops = of(log, "drop").map((e) => (e.data as { message: string }).message);
    expect(drops).toEqual(["a", "b"]);
    expect(of(log, "dead-letter").map((e) => (e.data as { reason: string }).reason)).toEqual([
      "dropped",
      "dropped",
    ]);
    expect((a.results[0] as { error: Error }).error.message).toBe(
      "Message 1 was dropped: more than maxPending (3) messages were pending and it was the oldest waiting one",
    );
    expect(s.metrics).toMatchObject({ sent: 5, dropped: 2, deadLettered: 2, acknowledged: 3, pending: 0 });
    await s.stop();
  });

  it("in-flight messages are never dropped; at the limit the new message is the oldest waiting one", async () => {
    const release: (() => void)[] = [];
    const { clock, s } = setup<number, number>({
      worker: worker((n) => new Promise<number>((resolve) => release.push(() => resolve(n)))),
      maxPending: 1,
    });
    const { results, add } = track([s.send(1)]);
    await clock.runAll(); // 1 is in flight
    add(s.send(2));
    await clock.runAll();
    expect((results[1] as { error: unknown }).error).toBeInstanceOf(MessageDroppedError);
    expect((results[1] as { error: MessageDroppedError<number> }).error.payload).toBe(2);
    release[0]?.();
    await clock.runAll();
    expect(results[0]).toEqual({ ok: true, value: 1 });
    await s.stop();
  });

  it("property: the drops are exactly those reported, and every other message gets its reply", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer(),
        fc.integer({ min: 1, max: 12 }),
        fc.integer({ min: 1, max: 3 }),
        async (seed, maxPending, concurrency) => {
          const draw = seededRandom(seed);
          const { clock, s, log } = setup<number, number>(
            {
              worker: worker(async (n, { deliveries }) => {
                await clock.sleep(Math.floor(draw() * 5));
                if (deliveries === 1 && draw() < 0.2) throw new Error("crash");
                return -n;
              }),
              concurrency,
              maxPending: Math.max(maxPending, concurrency),
              maxRestarts: -1,
            },
            seed,
          );
          const { results, counts, add } = track<number>();
          for (let i = 0; i < 80; i++) {
            clock.setTimer(Math.floor(draw() * 200), () => add(s.send(i)));
          }
          await clock.runAll();
          expect(counts.every((c) => c === 1)).toBe(true);
          const dropped = new Set(of(log, "drop").map((e) => (e.data as { message: number }).message));
          results.forEach((r) => {
            if (r?.ok) expect(dropped.has(-r.value)).toBe(false);
            else {
              const error = r?.error as MessageDroppedError<number>;
              expect(error).toBeInstanceOf(MessageDroppedError);
              expect(dropped.has(error.payload)).toBe(true);
            }
          });
          const m = s.metrics;
          expect(m.dropped).toBe(dropped.size);
          expect(m.sent).toBe(m.acknowledged + m.deadLettered + m.pending);
          expect(m.pending).toBe(0);
          await s.stop();
          expect(clock.pending).toBe(0);
        },
      ),
      { seed: 0x5eed, numRuns: 60 },
    );
  });
});

describe("truncation: maxRestarts within restartWindow", () => {
  it("past the limit the supervisor gives up: the worker stays stopped, every pending sender gets a clear error, an event says why", async () => {
    const { clock, s, log } = setup<number, number>({
      worker: worker(() => {
        throw new Error("always");
      }),
      maxRestarts: 3,
      maxDeliveries: -1,
      poisonAfter: 1000,
    });
    const { results } = track([1, 2, 3].map((n) => s.send(n)));
    await clock.runAll();
    expect(of(log, "restart")).toHaveLength(3);
    expect(of(log, "crash")).toHaveLength(4);
    const giveUp = of(log, "give-up")[0]?.data as { reason: string; cause: Error; workers: number[] };
    expect(giveUp.reason).toBe("maxRestarts (3) restarts within 60000 ms used up");
    expect(giveUp.cause.message).toBe("always");
    expect(giveUp.workers).toEqual([0]);
    for (const r of results) {
      const error = (r as { error: SupervisorGaveUpError }).error;
      expect(error).toBeInstanceOf(SupervisorGaveUpError);
      expect(error.message).toBe(
        "The supervisor gave up on worker 0: maxRestarts (3) restarts within 60000 ms used up",
      );
      expect((error.cause as Error).message).toBe("always");
    }
    expect(s.state).toBe("gave-up");
    expect(s.workers[0]?.state).toBe("gave-up");
    await expect(s.send(4)).rejects.toBeInstanceOf(SupervisorGaveUpError);
    expect(clock.pending).toBe(0);
    await s.stop();
    expect(s.state).toBe("stopped");
  });

  it("0 never restarts; negative never gives up", async () => {
    const zero = setup<number, number>({
      worker: worker(() => Promise.reject(new Error("x"))),
      maxRestarts: 0,
    });
    const z = track([zero.s.send(1)]);
    await zero.clock.runAll();
    expect(of(zero.log, "restart")).toHaveLength(0);
    expect((z.results[0] as { error: unknown }).error).toBeInstanceOf(SupervisorGaveUpError);
    await zero.s.stop();

    const forever = setup<number, number>({
      worker: worker((_, { deliveries }) => {
        if (deliveries < 200) throw new Error("x");
        return 1;
      }),
      maxRestarts: -1,
      maxDeliveries: -1,
      poisonAfter: 1000,
    });
    const f = track([forever.s.send(1)]);
    await forever.clock.runAll();
    expect(f.results[0]).toEqual({ ok: true, value: 1 });
    expect(forever.s.metrics.restarts).toBe(199);
    await forever.s.stop();
  });

  it("only the restarts within the window count", async () => {
    const { clock, s, log } = setup<string, string>({
      worker: worker((m, { deliveries }) => {
        if (m === "doomed" || deliveries === 1) throw new Error("x");
        return m;
      }),
      backoff: backoff.none(),
      maxRestarts: 2,
      restartWindow: 1000,
      maxDeliveries: -1,
    });
    // One crash every 600 ms: never more than 2 restarts within 1000 ms.
    for (let i = 0; i < 6; i++) {
      const p = s.send(`m${i}`);
      await clock.runAll();
      expect(await p).toBe(`m${i}`);
      await clock.advance(600);
    }
    expect(of(log, "give-up")).toHaveLength(0);
    expect(of(log, "restart").map((e) => e.at)).toEqual([0, 600, 1200, 1800, 2400, 3000]);
    // Now a message that always crashes: the restart at 3600 is the second within 1000 ms, the next is refused.
    const doomed = track([s.send("doomed")]);
    await clock.runAll();
    expect(of(log, "restart").map((e) => e.at)).toEqual([0, 600, 1200, 1800, 2400, 3000, 3600]);
    expect(of(log, "give-up")).toHaveLength(1);
    expect((doomed.results[0] as { error: unknown }).error).toBeInstanceOf(SupervisorGaveUpError);
    await s.stop();
  });
});

describe("poison messages: maxDeliveries", () => {
  it("a message that always crashes its worker is dead-lettered after maxDeliveries; the others go on", async () => {
    const { clock, s, log } = setup<string, string>({
      worker: worker((m) => {
        if (m === "poison") throw new Error("I always crash");
        return m;
      }),
      maxDeliveries: 3,
      concurrency: 2,
    });
    const { results } = track(["a", "poison", "b", "c"].map((m) => s.send(m)));
    await clock.runAll();
    expect(results[0]).toEqual({ ok: true, value: "a" });
    const error = (results[1] as { error: MessageDeadLetteredError<string> }).error;
    expect(error).toBeInstanceOf(MessageDeadLetteredError);
    expect(error.message).toBe(
      "Message 2 was dead-lettered: delivered 3 times (maxDeliveries) and never acknowledged",
    );
    expect(error.payload).toBe("poison");
    expect((error.cause as Error).message).toBe("I always crash");
    expect(results.slice(2)).toEqual([
      { ok: true, value: "b" },
      { ok: true, value: "c" },
    ]);
    const dead = of(log, "dead-letter").map((e) => e.data as { reason: string; deliveries: number });
    expect(dead).toEqual([expect.objectContaining({ reason: "max-deliveries", deliveries: 3 })]);
    expect(s.metrics).toMatchObject({ crashes: 3, restarts: 3, deadLettered: 1, acknowledged: 3 });
    // "b" was in flight beside the poison at its first crash: delivered again alone, after the poison was set aside.
    const acks = of(log, "ack").map((e) => e.data as { message: string; deliveries: number });
    expect(acks.map((a) => [a.message, a.deliveries])).toEqual([
      ["a", 1],
      ["b", 2],
      ["c", 1],
    ]);
    await s.stop();
  });

  it("the default policy: 3 crashes (poisonAfter), well under the default 10 restarts per minute", async () => {
    const { clock, s, log } = setup<string, string>({
      worker: worker((m) => {
        if (m === "poison") throw new Error("x");
        return m;
      }),
    });
    const { results } = track(["poison", "fine"].map((m) => s.send(m)));
    await clock.runAll();
    const error = (results[0] as { error: MessageDeadLetteredError }).error;
    expect(error.message).toBe(
      "Message 1 was dead-lettered as a poison message: it crashed its worker 3 times (poisonAfter)",
    );
    expect([error.deliveries, error.crashes]).toEqual([3, 3]);
    expect(of(log, "dead-letter").map((e) => (e.data as { reason: string }).reason)).toEqual(["poison"]);
    expect(results[1]).toEqual({ ok: true, value: "fine" });
    expect(s.state).toBe("running");
    await s.stop();
  });
});

describe("timeouts", () => {
  it("ackTimeout: a hung handler counts as a crash; the message is delivered again", async () => {
    const { clock, s, log } = setup<number, number>({
      worker: worker((n, { deliveries }) => (deliveries === 1 ? new Promise<number>(() => {}) : n)),
      ackTimeout: 500,
      backoff: backoff.none(),
    });
    const p = s.send(7);
    await clock.runAll();
    expect(await p).toBe(7);
    const cause = dataOf<{ cause: unknown }>(log, "crash").cause;
    expect(cause).toBeInstanceOf(TimeoutError);
    expect((cause as Error).message).toBe("Message 1 was not acknowledged within 500 ms");
    expect(of(log, "ack")[0]?.at).toBe(500);
    await s.stop();
    expect(clock.pending).toBe(0);
  });

  it("startTimeout: a worker that never becomes ready counts as crashed", async () => {
    let starts = 0;
    const { clock, s, log } = setup<number, number>({
      worker: inProcessWorker(() => {
        starts += 1;
        return starts === 1 ? new Promise<never>(() => {}) : (n: number) => n;
      }),
      startTimeout: 200,
      backoff: backoff.none(),
    });
    const p = s.send(1);
    await clock.runAll();
    expect(await p).toBe(1);
    expect(dataOf<{ cause: Error }>(log, "crash").cause.message).toBe(
      "Worker 0 was not ready within 200 ms of its start",
    );
    await s.stop();
  });
});

describe("groups: one-for-one and all-for-one", () => {
  /** A group of 3 where worker 1 crashes on its first message; records every handler call. */
  async function group(strategy: "one-for-one" | "all-for-one") {
    const calls: [number, number, number, number][] = [];
    const { clock, s, log } = setup<number, number>({
      worker: inProcessWorker(({ worker: w }) => async (n, { deliveries }) => {
        calls.push([clock.now(), w, n, deliveries]);
        await clock.sleep(10);
        if (w === 1 && n === 1 && deliveries === 1) throw new Error("worker 1 crashed");
        return n;
      }),
      instances: 3,
      strategy,
      route: (n) => n % 3,
      backoff: backoff.constant({ base: 100 }),
    });
    const { results } = track([0, 1, 2, 3, 4, 5].map((n) => s.send(n)));
    await clock.runAll();
    expect(results.map((r) => r?.ok && r.value)).toEqual([0, 1, 2, 3, 4, 5]);
    const starts = of(log, "start").map((e) => [(e.data as { worker: number }).worker, e.at]);
    const restart = of(log, "restart")[0]?.data as { workers: number[] };
    await s.stop();
    return { starts, restart, calls };
  }

  it("one-for-one restarts only the worker that crashed; the others go on meanwhile", async () => {
    const { starts, restart, calls } = await group("one-for-one");
    expect(restart.workers).toEqual([1]);
    expect(starts).toEqual([
      [0, 0],
      [1, 0],
      [2, 0],
      [1, 110],
    ]);
    // [time, worker, message, deliveries]: workers 0 and 2 finished both their messages before worker 1 came back.
    expect(calls).toEqual([
      [0, 0, 0, 1],
      [0, 1, 1, 1],
      [0, 2, 2, 1],
      [10, 0, 3, 1],
      [10, 2, 5, 1],
      [110, 1, 1, 2],
      [120, 1, 4, 1],
    ]);
  });

  it("all-for-one restarts them all, and delivers again what the others held", async () => {
    const { starts, restart, calls } = await group("all-for-one");
    expect(restart.workers).toEqual([0, 1, 2]);
    expect(starts).toEqual([
      [0, 0],
      [1, 0],
      [2, 0],
      [0, 110],
      [1, 110],
      [2, 110],
    ]);
    // At 10 ms worker 0 had answered 0 and taken 3, worker 2 still held 2: both come again after the restart.
    expect(calls).toEqual([
      [0, 0, 0, 1],
      [0, 1, 1, 1],
      [0, 2, 2, 1],
      [10, 0, 3, 1],
      [110, 0, 3, 2],
      [110, 1, 1, 2],
      [110, 2, 2, 2],
      [120, 1, 4, 1],
      [120, 2, 5, 1],
    ]);
  });

  it("one-for-one gives up on one worker; the others keep taking messages", async () => {
    const { clock, s, log } = setup<number, string>({
      worker: inProcessWorker(({ worker: w }) => (n) => {
        if (w === 0) throw new Error("worker 0 is broken");
        return `${w}:${n}`;
      }),
      instances: 2,
      maxRestarts: 1,
      maxDeliveries: -1,
    });
    const first = track([s.send(1)]);
    await clock.runAll();
    expect(of(log, "give-up")).toHaveLength(1);
    expect(first.results[0]).toEqual({ ok: false, error: expect.any(SupervisorGaveUpError) });
    expect(s.state).toBe("running");
    expect(await s.send(2)).toBe("1:2");
    expect(await s.send(3)).toBe("1:3");
    await s.stop();
  });

  it("a route returning a bad index rejects that message", async () => {
    const { s } = setup<number, number>({ worker: worker((n) => n), instances: 2, route: () => 2 });
    await expect(s.send(1)).rejects.toThrow(
      "supervise: route returned 2; it must return a worker index, an integer in [0, 1]",
    );
    await s.stop();
  });

  it("by default a message goes to the worker holding the fewest", async () => {
    const { clock, s } = setup<number, number>({
      worker: inProcessWorker(({ worker: w }) => async () => {
        await clock.sleep(w === 0 ? 1000 : 10);
        return w;
      }),
      instances: 2,
    });
    const { results } = track([1, 2, 3, 4, 5, 6].map((n) => s.send(n)));
    await clock.runAll();
    // Worker 0 is slow: ties alternate, then worker 1 takes more, not an equal share.
    const counts = [0, 0];
    for (const r of results) if (r?.ok) counts[r.value] = (counts[r.value] ?? 0) + 1;
    expect(counts[0]).toBe(3);
    await s.stop();
  });
});

describe("stop", () => {
  it("drains by default: pending messages are answered, restarts included; then nothing remains", async () => {
    const { clock, s, log } = setup<number, number>({
      worker: worker(async (n, { deliveries }) => {
        await clock.sleep(5);
        if (n === 2 && deliveries === 1) throw new Error("crash");
        return n;
      }),
    });
    const { results } = track([1, 2, 3].map((n) => s.send(n)));
    const stopped = s.stop();
    await expect(s.send(4)).rejects.toThrow("The supervisor is stopping: it takes no new messages");
    expect(s.state).toBe("stopping");
    await clock.runAll();
    await stopped;
    expect(results.map((r) => r?.ok && r.value)).toEqual([1, 2, 3]);
    expect(s.state).toBe("stopped");
    expect(of(log, "stop").map((e) => e.data)).toEqual([{ drained: true }]);
    expect(clock.pending).toBe(0);
    expect(s.workers.map((w) => w.state)).toEqual(["stopped"]);
    await expect(s.send(5)).rejects.toBeInstanceOf(SupervisorStoppedError);
  });

  it("drain: false rejects every pending message with a SupervisorStoppedError", async () => {
    const signals: AbortSignal[] = [];
    const { clock, s, log } = setup<number, number>({
      worker: worker((_, { signal }) => {
        signals.push(signal);
        return new Promise<number>(() => {});
      }),
    });
    const { results } = track([1, 2].map((n) => s.send(n)));
    await clock.runAll();
    await s.stop({ drain: false });
    for (const r of results) expect((r as { error: unknown }).error).toBeInstanceOf(SupervisorStoppedError);
    expect(of(log, "dead-letter").map((e) => (e.data as { reason: string }).reason)).toEqual([
      "stopped",
      "stopped",
    ]);
    expect(of(log, "stop").map((e) => e.data)).toEqual([{ drained: false }]);
    // The handler still running was told through its signal.
    expect(signals[0]?.aborted).toBe(true);
    expect(clock.pending).toBe(0);
  });

  it("a drain with a timeout rejects what is left when it ends; stop({ drain: false }) cuts a drain short", async () => {
    const { clock, s } = setup<number, number>({ worker: worker(() => new Promise<number>(() => {})) });
    const a = track([s.send(1)]);
    const stopped = s.stop({ timeout: 300 });
    await clock.advance(299);
    expect(a.results[0]).toBeUndefined();
    await clock.advance(1);
    await stopped;
    expect((a.results[0] as { error: unknown }).error).toBeInstanceOf(SupervisorStoppedError);

    const other = setup<number, number>({ worker: worker(() => new Promise<number>(() => {})) });
    const b = track([other.s.send(1)]);
    const draining = other.s.stop({ timeout: -1 });
    await other.clock.advance(60_000);
    expect(b.results[0]).toBeUndefined();
    const cut = other.s.stop({ drain: false });
    expect(cut).toBe(draining);
    await cut;
    expect((b.results[0] as { error: unknown }).error).toBeInstanceOf(SupervisorStoppedError);
  });

  it("stop while backing off cancels the restart timer; every listener is removed", async () => {
    const { clock, s } = setup<number, number>({
      worker: worker(() => {
        throw new Error("x");
      }),
      backoff: backoff.constant({ base: 5000 }),
    });
    const listener = s.on("crash", () => {});
    const p = track([s.send(1)]);
    await clock.advance(1);
    expect(clock.pending).toBe(1);
    await s.stop({ drain: false });
    expect(clock.pending).toBe(0);
    expect((p.results[0] as { error: unknown }).error).toBeInstanceOf(SupervisorStoppedError);
    listener.dispose(); // after stop: harmless
  });
});

describe("events", () => {
  it("start, ready, crash (with the cause), restart (with the delay), ack, in order", async () => {
    const { clock, s, log } = setup<number, number>({
      worker: worker((n, { deliveries }) => {
        if (deliveries === 1) throw new Error("first time");
        return n;
      }),
      backoff: backoff.constant({ base: 50 }),
    });
    const p = s.send(1);
    await clock.runAll();
    await p;
    await s.stop();
    expect(log.map((e) => [e.event, e.at])).toEqual([
      ["start", 0],
      ["ready", 0],
      ["crash", 0],
      ["restart", 0],
      ["start", 50],
      ["ready", 50],
      ["ack", 50],
      ["stop", 50],
    ]);
    expect(of(log, "crash")[0]?.data).toEqual({
      worker: 0,
      incarnation: 1,
      cause: new Error("first time"),
      inFlight: 1,
    });
    expect(of(log, "restart")[0]?.data).toEqual({
      workers: [0],
      delay: 50,
      retries: 1,
      cause: new Error("first time"),
    });
    expect(of(log, "ack")[0]?.data).toEqual({
      worker: 0,
      id: 1,
      message: 1,
      deliveries: 2,
      ok: true,
      reply: 1,
    });
  });

  it("dispose removes a listener; a listener that throws becomes a warning, and the supervisor goes on", async () => {
    const captured = captureWarnings();
    try {
      const { clock, s } = setup<number, number>({ worker: worker((n) => n) });
      const seen: number[] = [];
      const sub = s.on("ack", ({ id }) => seen.push(id));
      s.on("ack", () => {
        throw new Error("bad listener");
      });
      expect(await s.send(1)).toBe(1);
      sub.dispose();
      expect(await s.send(2)).toBe(2);
      expect(seen).toEqual([1]);
      await s.stop();
      await clock.runAll();
      await new Promise((resolve) => setImmediate(resolve));
      expect(captured.warnings.map((w) => w.message)).toContain(
        'a supervisor "ack" listener threw (the supervisor went on): bad listener',
      );
    } finally {
      captured.restore();
    }
  });

  it("metrics and worker status are snapshots", async () => {
    const { clock, s } = setup<number, number>({
      worker: worker(() => new Promise<number>(() => {})),
      instances: 2,
    });
    track([1, 2, 3].map((n) => s.send(n)));
    await clock.runAll();
    expect(s.metrics).toEqual({
      sent: 3,
      delivered: 2,
      redelivered: 0,
      acknowledged: 0,
      crashes: 0,
      restarts: 0,
      dropped: 0,
      deadLettered: 0,
      pending: 3,
      inFlight: 2,
    });
    expect(s.workers).toEqual([
      expect.objectContaining({
        index: 0,
        kind: "in-process",
        state: "running",
        incarnation: 1,
        pending: 2,
        inFlight: 1,
      }),
      expect.objectContaining({
        index: 1,
        kind: "in-process",
        state: "running",
        incarnation: 1,
        pending: 1,
        inFlight: 1,
      }),
    ]);
    expect(Object.isFrozen(s.metrics)).toBe(true);
    await s.stop({ drain: false });
  });
});

describe("custom worker kinds, re-entrant listeners, real timers", () => {
  it("a factory that answers synchronously: 100,000 messages without deep recursion", async () => {
    const sync: WorkerFactory<number, number> = {
      kind: "sync",
      start(context) {
        context.ready(); // inside start: heard once start has returned
        return {
          deliver: ({ id, message }) => context.acknowledge(id, message + 1),
          stop: () => Promise.resolve(),
        };
      },
    };
    const { s } = setup<number, number>({ worker: sync, concurrency: 3, maxPending: -1 });
    const replies = await Promise.all(Array.from({ length: 100_000 }, (_, i) => s.send(i)));
    expect(replies.every((r, i) => r === i + 1)).toBe(true);
    await s.stop();
  });

  it("a factory whose start throws: that start is a crash", async () => {
    let starts = 0;
    const flaky: WorkerFactory<number, number> = {
      kind: "flaky",
      start(context) {
        starts += 1;
        if (starts === 1) throw new Error("cannot start");
        queueMicrotask(() => context.ready());
        return {
          deliver: ({ id, message }) => context.acknowledge(id, message),
          stop: () => Promise.resolve(),
        };
      },
    };
    const { clock, s, log } = setup<number, number>({ worker: flaky });
    const p = s.send(5);
    await clock.runAll();
    expect(await p).toBe(5);
    expect(dataOf<{ cause: Error }>(log, "crash").cause.message).toBe("cannot start");
    await s.stop();
  });

  it("a listener may stop the supervisor or send more, from inside any event", async () => {
    const { clock, s } = setup<number, number>({
      worker: worker((n) => {
        if (n === 3) throw new Error("crash");
        return n;
      }),
    });
    let followUp: Promise<number> | undefined;
    s.on("ack", ({ message }) => {
      if (message === 1) followUp = s.send(2);
    });
    let stopping: Promise<void> | undefined;
    s.on("crash", () => {
      stopping = s.stop({ drain: false });
    });
    expect(await s.send(1)).toBe(1);
    await clock.runAll();
    expect(await followUp).toBe(2);
    const crashed = s.send(3).catch((e: unknown) => e);
    await clock.runAll();
    await stopping;
    expect(await crashed).toBeInstanceOf(SupervisorStoppedError);
    expect(s.metrics.restarts).toBe(0);
    expect(s.state).toBe("stopped");
    expect(clock.pending).toBe(0);
  });

  it("on the real clock, once stop resolves no timer of the supervisor is left in the event loop", async () => {
    const timeouts = () => process.getActiveResourcesInfo().filter((r) => r === "Timeout").length;
    const before = timeouts();
    const s = supervise<number, number>({
      worker: worker((n, { deliveries }) => {
        if (n % 10 === 0 && deliveries === 1) throw new Error("crash");
        return n;
      }),
      ackTimeout: 60_000,
      startTimeout: 60_000,
      maxRestarts: -1,
    });
    const replies = await Promise.all(Array.from({ length: 50 }, (_, i) => s.send(i)));
    expect(replies).toEqual(Array.from({ length: 50 }, (_, i) => i));
    await s.stop({ timeout: 60_000 });
    await new Promise((resolve) => setImmediate(resolve));
    expect(timeouts()).toBeLessThanOrEqual(before);
  });
});

describe("every sender gets exactly one outcome, whatever happens (property)", () => {
  it("random crashes, hangs, groups, windows, limits: one outcome each, the right reply, counts that add up, nothing left", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          seed: fc.integer(),
          instances: fc.integer({ min: 1, max: 3 }),
          concurrency: fc.integer({ min: 1, max: 4 }),
          strategy: fc.constantFrom("one-for-one" as const, "all-for-one" as const),
          maxDeliveries: fc.constantFrom(-1, 2, 5),
          maxRestarts: fc.constantFrom(-1, 3, 20),
          maxPending: fc.constantFrom(-1, 12, 40),
          ackTimeout: fc.constantFrom(-1, 50),
          crashRate: fc.double({ min: 0, max: 0.5, noNaN: true }),
          stopAt: fc.option(fc.integer({ min: 0, max: 400 }), { nil: undefined }),
          drain: fc.boolean(),
        }),
        async (p) => {
          const draw = seededRandom(p.seed);
          const { clock, s, log } = setup<number, number>(
            {
              worker: inProcessWorker(() => async (n) => {
                await clock.sleep(Math.floor(draw() * 20));
                const roll = draw();
                if (roll < p.crashRate) throw new Error("crash");
                if (roll < p.crashRate + 0.02) await new Promise(() => {}); // hangs (ackTimeout, or stop)
                return n * 3;
              }),
              instances: p.instances,
              concurrency: p.concurrency,
              strategy: p.strategy,
              maxDeliveries: p.maxDeliveries,
              maxRestarts: p.maxRestarts,
              maxPending: p.maxPending === -1 ? -1 : Math.max(p.maxPending, p.instances * p.concurrency),
              ackTimeout: p.ackTimeout,
            },
            p.seed,
          );
          const { results, counts, add } = track<number>();
          for (let i = 0; i < 50; i++) clock.setTimer(Math.floor(draw() * 300), () => add(s.send(i)));
          let stopped: Promise<void> | undefined;
          clock.setTimer(p.stopAt ?? 350, () => {
            stopped = s.stop(p.drain ? { timeout: 2000 } : { drain: false });
          });
          await clock.runAll();
          await stopped;
          await clock.runAll();
          expect(counts.every((c) => c === 1)).toBe(true);
          const acked = new Set(of(log, "ack").map((e) => (e.data as { message: number }).message));
          const dead = new Set(of(log, "dead-letter").map((e) => (e.data as { message: number }).message));
          results.forEach((r, i) => {
            if (r?.ok) {
              expect(r.value % 3).toBe(0);
              expect(acked.has(r.value / 3)).toBe(true);
              expect(dead.has(r.value / 3)).toBe(false);
            } else {
              expect(r?.error).toBeInstanceOf(Error);
              // Either refused at the door (after stop or give-up), or dead-lettered with a reason.
              const refused =
                r?.error instanceof SupervisorStoppedError || r?.error instanceof SupervisorGaveUpError;
              expect(refused || dead.size > 0).toBe(true);
              void i;
            }
          });
          expect(acked.size).toBe(of(log, "ack").length); // nothing answered twice
          const m = s.metrics;
          expect(m.sent).toBe(m.acknowledged + m.deadLettered + m.pending);
          expect(m.pending).toBe(0);
          expect(s.state).toBe("stopped");
          expect(clock.pending).toBe(0);
        },
      ),
      { seed: 0x004, numRuns: 150 },
    );
  });
});

describe("options are validated up front", () => {
  const ok = { worker: worker((n: number) => n) };
  const cases: [string, Record<string, unknown>, string][] = [
    ["supervise.colour", { colour: 1 }, "one of the known options"],
    ["supervise: worker", { worker: (n: number) => n }, "a worker factory"],
    ["supervise: worker", { worker: [] }, "a non-empty array"],
    ["supervise: worker[1]", { worker: [ok.worker, {}] }, "a worker factory"],
    ["supervise: instances", { instances: 0 }, "an integer in [1, 1000]"],
    ["supervise: instances", { worker: [ok.worker], instances: 2 }, "left out when worker is an array"],
    ["supervise: strategy", { strategy: "one-for-all" }, '"one-for-one" or "all-for-one"'],
    ["supervise: route", { route: 3 }, "a function"],
    ["supervise: concurrency", { concurrency: 1.5 }, "an integer in [1, 1e6]"],
    ["supervise: backoff", { backoff: backoff.exponential }, "call the factory"],
    ["supervise: maxPending", { maxPending: 3, instances: 2, concurrency: 2 }, "workers × concurrency (4)"],
    ["supervise: maxPending", { maxPending: Number.NaN }, "an integer"],
    ["supervise: maxDeliveries", { maxDeliveries: 0 }, "an integer >= 1"],
    ["supervise: poisonAfter", { poisonAfter: 0 }, "an integer in [1, 1000]"],
    ["supervise: poisonAfter", { poisonAfter: -1 }, "an integer in [1, 1000]"],
    ["supervise: maxRestarts", { maxRestarts: 1.5 }, "an integer (negative or Infinity = no limit)"],
    ["supervise: restartWindow", { restartWindow: 0 }, "a number > 0"],
    ["supervise: ackTimeout", { ackTimeout: "1s" }, "a number"],
    ["supervise: startTimeout", { startTimeout: 0 }, "a number > 0"],
    ["supervise: clock", { clock: { now: () => 0 } }, "a Clock"],
    ["supervise: random", { random: 0.5 }, "a function"],
  ];
  it.each(cases)("%s: %o", (option, bad, allowed) => {
    let error: unknown;
    try {
      supervise({ ...ok, ...bad } as SuperviseOptions<number, number>);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(OptionError);
    expect((error as OptionError).option).toBe(option);
    expect((error as Error).message.startsWith(`${option} must be `)).toBe(true);
    expect((error as Error).message).toContain(allowed);
  });

  it("stop's options too", async () => {
    const s = supervise({ ...ok, clock: new VirtualClock() });
    await expect(s.stop({ drain: "yes" } as never)).rejects.toThrow(
      'stop: drain must be true or false; got "yes"',
    );
    await expect(s.stop({ wait: 1 } as never)).rejects.toBeInstanceOf(OptionError);
    await expect(s.stop({ timeout: 86_400_001 })).rejects.toThrow(
      "stop: timeout must be a number of ms in [0, 86400000] (24 h), or negative or Infinity to wait as long as it takes; got 86400001",
    );
    await s.stop();
  });

  it("inProcessWorker wants a function", () => {
    expect(() => inProcessWorker(42 as never)).toThrow("inProcessWorker: create must be a function; got 42");
  });
});
