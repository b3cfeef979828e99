// The bulkhead: at most `limit` executions at once, `queue` more waiting in order, the rest refused at
// once; a waiter's abort takes it out of the line, a running one's frees its place, and every place is
// given back exactly once, through the controller (`execute`) and through the pipeline's step alike.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { Bulkhead, BulkheadRejectedError, bulkhead, MAX_BULKHEAD } from "../src/bulkhead/bulkhead.js";
import { BulkheadStep, bulkheadStep } from "../src/bulkhead/step.js";
import { OptionError } from "../src/core/errors.js";
import { fallbackStep } from "../src/fallback/fallback.js";
import { type ExecutionContext, RootScope } from "../src/pipeline/context.js";
import { pipeline } from "../src/pipeline/pipeline.js";
import { VirtualClock } from "../src/testing/virtual-clock.js";
import { timeoutStep } from "../src/timeout/step.js";
import { abortListeners, deferred } from "./support/drive.js";

/** Lets every queued continuation run (no time passes on any clock). */
const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

/** How a promise settled, without leaving a rejection unhandled. */
function outcome<T>(promise: Promise<T>) {
  const state: { settled: boolean; ok?: boolean; value?: T; error?: unknown } = { settled: false };
  promise.then(
    (value) => Object.assign(state, { settled: true, ok: true, value }),
    (error: unknown) => Object.assign(state, { settled: true, ok: false, error }),
  );
  return state;
}

describe("bulkhead(): options", () => {
  const bad: [string, unknown, string][] = [
    ["limit 0", { limit: 0 }, "bulkhead: limit"],
    ["limit 1.5", { limit: 1.5 }, "bulkhead: limit"],
    ["limit NaN", { limit: Number.NaN }, "bulkhead: limit"],
    ["limit -1", { limit: -1 }, "bulkhead: limit"],
    ["limit 1e10", { limit: 1e10 }, "bulkhead: limit"],
    ["limit Infinity", { limit: Number.POSITIVE_INFINITY }, "bulkhead: limit"],
    ["limit as a string", { limit: "3" }, "bulkhead: limit"],
    ["no limit", { queue: 3 }, "bulkhead: limit"],
    ["queue -1", { limit: 1, queue: -1 }, "bulkhead: queue"],
    ["queue 0.5", { limit: 1, queue: 0.5 }, "bulkhead: queue"],
    ["queue 1e10", { limit: 1, queue: 1e10 }, "bulkhead: queue"],
    ["queue NaN", { limit: 1, queue: Number.NaN }, "bulkhead: queue"],
    ["an unknown key", { limit: 1, size: 2 }, "bulkhead.size"],
    ["onCallbackError not a function", { limit: 1, onCallbackError: 5 }, "bulkhead: onCallbackError"],
    ["no options", undefined, "bulkhead"],
    ["null", null, "bulkhead"],
  ];

  for (const [what, options, option] of bad) {
    it(`refuses ${what}, naming ${option}`, () => {
      let thrown: unknown;
      try {
        bulkhead(options as never);
      } catch (error) {
        thrown = error;
      }
      expect(thrown).toBeInstanceOf(OptionError);
      expect((thrown as OptionError).option).toBe(option);
    });
  }

  it("the step names its options under steps.bulkhead", () => {
    expect(() => bulkheadStep({ limit: 0 })).toThrow(OptionError);
    expect(() => bulkheadStep({ limit: 0 })).toThrow(
      /^steps\.bulkhead: limit must be an integer in \[1, 1e9\]/,
    );
    expect(() => bulkheadStep({ limit: 1, queue: -1 })).toThrow(/^steps\.bulkhead: queue/);
    expect(() => bulkheadStep({ limit: 1, extra: true } as never)).toThrow(/^steps\.bulkhead\.extra/);
  });

  it("takes the largest values, queue 0 by default, and reports its places", () => {
    const big = bulkhead({ limit: MAX_BULKHEAD, queue: MAX_BULKHEAD });
    expect([big.limit, big.queue, big.available]).toEqual([1e9, 1e9, 1e9]);
    const small = bulkhead({ limit: 2 });
    expect([small.limit, small.queue, small.running, small.queued, small.available]).toEqual([2, 0, 0, 0, 2]);
  });
});

describe("Bulkhead.execute", () => {
  it("never runs more than `limit` at once under many concurrent calls, and runs them all", async () => {
    const clock = new VirtualClock();
    const pool = bulkhead({ limit: 3, queue: 100 });
    let active = 0;
    let most = 0;
    const calls = Array.from({ length: 60 }, (_, i) =>
      pool.execute(async () => {
        active += 1;
        most = Math.max(most, active);
        expect(pool.running).toBeLessThanOrEqual(3);
        await clock.sleep(((i * 37) % 11) + 1);
        active -= 1;
        return i;
      }),
    );
    expect(pool.running).toBe(3);
    expect(pool.queued).toBe(57);
    expect(pool.available).toBe(0);
    await clock.runAll();
    expect(await Promise.all(calls)).toEqual(Array.from({ length: 60 }, (_, i) => i));
    expect(most).toBe(3);
    expect([pool.running, pool.queued, pool.available]).toEqual([0, 0, 3]);
  });

  it("starts waiters first come, first served, each as a place frees", async () => {
    const pool = bulkhead({ limit: 1, queue: 5 });
    const order: number[] = [];
    const positions: number[] = [];
    const started: boolean[] = [];
    pool.on("queued", ({ position }) => positions.push(position));
    pool.on("started", ({ waited }) => started.push(waited));
    const gates = Array.from({ length: 6 }, () => deferred<void>());
    const calls = gates.map((gate, i) =>
      pool.execute(async () => {
        order.push(i);
        await gate.promise;
        return i;
      }),
    );
    expect(positions).toEqual([1, 2, 3, 4, 5]);
    // Release them out of order: the line decides who goes next, not who finished.
    for (const i of [0, 1, 2, 3, 4, 5]) {
      expect(order).toEqual(Array.from({ length: i + 1 }, (_, k) => k));
      gates[i]?.resolve();
      await tick();
    }
    expect(await Promise.all(calls)).toEqual([0, 1, 2, 3, 4, 5]);
    expect(started).toEqual([false, true, true, true, true, true]);
  });

  it("refuses at once when the queue is full, with the limits on the error, and does not run it", async () => {
    const pool = bulkhead({ limit: 2, queue: 1 });
    const rejected: unknown[] = [];
    pool.on("rejected", (event) => rejected.push(event));
    const hold = deferred<string>();
    const held = [
      pool.execute(() => hold.promise),
      pool.execute(() => hold.promise),
      pool.execute(() => hold.promise),
    ];
    let ran = false;
    const refused = outcome(
      pool.execute(() => {
        ran = true;
      }),
    );
    await Promise.resolve();
    await Promise.resolve();
    expect(refused.settled).toBe(true);
    expect(refused.error).toBeInstanceOf(BulkheadRejectedError);
    const error = refused.error as BulkheadRejectedError;
    expect([error.name, error.limit, error.queue]).toEqual(["BulkheadRejectedError", 2, 1]);
    expect(error).toBeInstanceOf(Error);
    expect(ran).toBe(false);
    expect(rejected).toEqual([{ running: 2, queued: 1 }]);
    hold.resolve("ok");
    expect(await Promise.all(held)).toEqual(["ok", "ok", "ok"]);
    expect([pool.running, pool.queued]).toEqual([0, 0]);
  });

  it("queue 0: refuses whatever finds every place taken", async () => {
    const pool = bulkhead({ limit: 1 });
    const hold = deferred<void>();
    const first = pool.execute(() => hold.promise);
    await expect(pool.execute(() => 1)).rejects.toBeInstanceOf(BulkheadRejectedError);
    hold.resolve();
    await first;
    expect(await pool.execute(() => 1)).toBe(1);
  });

  it("a waiter whose signal aborts leaves the line at once, frees its place and leaves no listener", async () => {
    const pool = bulkhead({ limit: 1, queue: 1 });
    const hold = deferred<string>();
    const first = pool.execute(() => hold.promise);
    const controller = new AbortController();
    let ran = false;
    const waiting = outcome(
      pool.execute(() => {
        ran = true;
      }, controller.signal),
    );
    expect(pool.queued).toBe(1);
    expect(abortListeners(controller.signal)).toBe(1);
    const reason = new Error("no longer wanted");
    controller.abort(reason);
    expect(pool.queued).toBe(0);
    expect(abortListeners(controller.signal)).toBe(0);
    await tick();
    expect(waiting).toMatchObject({ settled: true, ok: false, error: reason });
    // Its place in the line is free: a later caller waits instead of being refused.
    const later = pool.execute(() => "later");
    expect(pool.queued).toBe(1);
    hold.resolve("first");
    expect(await first).toBe("first");
    expect(await later).toBe("later");
    expect(ran).toBe(false);
    expect([pool.running, pool.queued]).toEqual([0, 0]);
  });

  it("a running call whose signal aborts rejects at once and frees its place; its late answer is ignored", async () => {
    const pool = bulkhead({ limit: 1 });
    const hold = deferred<string>();
    const controller = new AbortController();
    const running = outcome(pool.execute(() => hold.promise, controller.signal));
    expect(pool.available).toBe(0);
    controller.abort("stop");
    expect(pool.available).toBe(1);
    expect(abortListeners(controller.signal)).toBe(0);
    const next = pool.execute(() => "next");
    expect(pool.running).toBe(1);
    expect(await next).toBe("next");
    hold.resolve("late");
    await tick();
    expect(running).toMatchObject({ settled: true, ok: false, error: "stop" });
    expect([pool.running, pool.queued, pool.available]).toEqual([0, 0, 1]);
  });

  it("an already aborted signal rejects with its reason and runs nothing", async () => {
    const pool = bulkhead({ limit: 1 });
    let ran = false;
    await expect(
      pool.execute(() => {
        ran = true;
      }, AbortSignal.abort("gone")),
    ).rejects.toBe("gone");
    expect(ran).toBe(false);
    expect(pool.running).toBe(0);
  });

  it("a throwing or rejecting fn fails the call and frees its place; fn receives the signal", async () => {
    const pool = bulkhead({ limit: 1 });
    const boom = new Error("boom");
    await expect(
      pool.execute(() => {
        throw boom;
      }),
    ).rejects.toBe(boom);
    await expect(pool.execute(() => Promise.reject(boom))).rejects.toBe(boom);
    const controller = new AbortController();
    expect(await pool.execute((signal) => signal, controller.signal)).toBe(controller.signal);
    expect(abortListeners(controller.signal)).toBe(0);
    expect(pool.running).toBe(0);
  });

  it("one listener on a signal many waiting calls share, none once they settle", async () => {
    const pool = bulkhead({ limit: 2, queue: 50 });
    const controller = new AbortController();
    const hold = deferred<void>();
    const calls = Array.from({ length: 40 }, () => pool.execute(() => hold.promise, controller.signal));
    expect(abortListeners(controller.signal)).toBe(1);
    hold.resolve();
    await Promise.all(calls);
    expect(abortListeners(controller.signal)).toBe(0);
  });

  it("a listener that throws goes to onCallbackError and disturbs nothing", async () => {
    const reports: [unknown, string][] = [];
    const pool = bulkhead({ limit: 1, onCallbackError: (error, name) => reports.push([error, name]) });
    const boom = new Error("listener");
    pool.on("started", () => {
      throw boom;
    });
    expect(await pool.execute(() => 7)).toBe(7);
    expect(reports).toEqual([[boom, "started"]]);
    expect(pool.running).toBe(0);
  });

  it("a disposed listener hears nothing more", async () => {
    const pool = bulkhead({ limit: 1 });
    let heard = 0;
    const handle = pool.on("started", () => {
      heard += 1;
    });
    await pool.execute(() => 1);
    handle.dispose();
    await pool.execute(() => 1);
    expect(heard).toBe(1);
  });
});

describe("Bulkhead.acquire", () => {
  it("a release called twice frees one place, for a running and for a waiting hold", () => {
    const pool = bulkhead({ limit: 1, queue: 2 });
    const starts: string[] = [];
    const a = pool.acquire(() => starts.push("a"));
    const b = pool.acquire(() => starts.push("b"));
    const c = pool.acquire(() => starts.push("c"));
    expect([pool.running, pool.queued]).toEqual([1, 2]);
    b(); // leaves the line
    b();
    expect([pool.running, pool.queued]).toEqual([1, 1]);
    a(); // c starts
    a();
    expect(starts).toEqual(["a", "c"]);
    expect([pool.running, pool.queued]).toEqual([1, 0]);
    c();
    c();
    b();
    a();
    expect([pool.running, pool.queued, pool.available]).toEqual([0, 0, 1]);
  });

  it("a start that throws has its place freed", () => {
    const pool = bulkhead({ limit: 1, queue: 1 });
    expect(() =>
      pool.acquire(() => {
        throw new Error("bad start");
      }),
    ).toThrow("bad start");
    expect(pool.running).toBe(0);
    const reports: string[] = [];
    const quiet = new Bulkhead({ limit: 1, queue: 1, onCallbackError: (_e, name) => reports.push(name) });
    const first = quiet.acquire(() => {});
    quiet.acquire(() => {
      throw new Error("bad waiter");
    });
    first();
    expect(reports).toEqual(["start"]);
    expect([quiet.running, quiet.queued]).toEqual([0, 0]);
  });

  it("a long line of waiters that end at once is served without a deep recursion", async () => {
    const pool = bulkhead({ limit: 1, queue: 50_000 });
    const p = pipeline(bulkheadStep(pool));
    const hold = deferred<number>();
    const first = p.execute(() => hold.promise);
    const rest = Array.from({ length: 50_000 }, (_, i) => p.execute(() => i));
    expect(pool.queued).toBe(50_000);
    hold.resolve(-1);
    expect(await first).toBe(-1);
    const values = await Promise.all(rest);
    expect(values[49_999]).toBe(49_999);
    expect([pool.running, pool.queued]).toEqual([0, 0]);
  });
});

describe("bulkheadStep in a pipeline", () => {
  it("shares a bulkhead it is given, makes one from options", () => {
    const pool = bulkhead({ limit: 2 });
    const step = bulkheadStep(pool);
    expect(step).toBeInstanceOf(BulkheadStep);
    expect(step.bulkhead).toBe(pool);
    const own = bulkheadStep({ limit: 3, queue: 4 });
    expect([own.bulkhead.limit, own.bulkhead.queue]).toEqual([3, 4]);
  });

  it("limit 1: runs one at a time, queues, refuses, and hands the context on", async () => {
    const clock = new VirtualClock();
    const p = pipeline(bulkheadStep({ limit: 1, queue: 1 }), timeoutStep(100));
    const hung = (context: ExecutionContext) =>
      new Promise<never>((_, reject) =>
        context.signal.addEventListener("abort", () => reject(context.signal.reason)),
      );
    const failedAt: number[] = [];
    const a = p.execute(hung, { clock }).catch((e: unknown) => {
      failedAt.push(clock.now());
      return e;
    });
    const b = p.execute(hung, { clock }).catch((e: unknown) => {
      failedAt.push(clock.now());
      return e;
    });
    await expect(p.execute(() => "c", { clock })).rejects.toBeInstanceOf(BulkheadRejectedError);
    await clock.runAll();
    expect((await a) as Error).toMatchObject({ name: "TimeoutError" });
    expect((await b) as Error).toMatchObject({ name: "TimeoutError" });
    // b's timeout began only when it got its place.
    expect(failedAt).toEqual([100, 200]);
    expect(await p.execute((context) => context.timeout, { clock })).toBe(100);
  });

  it("shares places with execute() and with other pipelines on the same bulkhead", async () => {
    const pool = bulkhead({ limit: 2, queue: 0 });
    const p1 = pipeline(bulkheadStep(pool));
    const p2 = pipeline(bulkheadStep(pool));
    const hold = deferred<void>();
    const x = p1.execute(() => hold.promise);
    const y = pool.execute(() => hold.promise);
    await expect(p2.execute(() => 1)).rejects.toBeInstanceOf(BulkheadRejectedError);
    hold.resolve();
    await Promise.all([x, y]);
    expect(await p2.execute(() => 2)).toBe(2);
  });

  it("a caller's abort takes a waiting call out of the line, with no listener left", async () => {
    const pool = bulkhead({ limit: 1, queue: 1 });
    const p = pipeline(bulkheadStep(pool));
    const hold = deferred<string>();
    const first = p.execute(() => hold.promise);
    const controller = new AbortController();
    let ran = false;
    const waiting = outcome(
      p.execute(
        () => {
          ran = true;
        },
        { signal: controller.signal },
      ),
    );
    expect(pool.queued).toBe(1);
    controller.abort("bye");
    expect(pool.queued).toBe(0);
    expect(abortListeners(controller.signal)).toBe(0);
    const later = p.execute(() => "later");
    hold.resolve("first");
    expect([await first, await later]).toEqual(["first", "later"]);
    expect(waiting).toMatchObject({ settled: true, ok: false, error: "bye" });
    expect(ran).toBe(false);
  });

  it("a caller's abort frees a running call's place at once; the late outcome is ignored", async () => {
    const pool = bulkhead({ limit: 1 });
    const p = pipeline(bulkheadStep(pool));
    const hold = deferred<string>();
    const controller = new AbortController();
    const running = outcome(p.execute(() => hold.promise, { signal: controller.signal }));
    controller.abort("stop");
    expect(pool.running).toBe(0);
    expect(await p.execute(() => "next")).toBe("next");
    hold.reject(new Error("late"));
    await tick();
    expect(running).toMatchObject({ settled: true, ok: false, error: "stop" });
    expect([pool.running, pool.queued]).toEqual([0, 0]);
  });

  it("a timeout outside takes a waiter out of the line when it runs out", async () => {
    const clock = new VirtualClock();
    const pool = bulkhead({ limit: 1, queue: 1 });
    const p = pipeline(timeoutStep(50), bulkheadStep(pool));
    const hold = deferred<string>();
    const first = pipeline(bulkheadStep(pool)).execute(() => hold.promise, { clock });
    const waiting = p.execute(() => "never", { clock }).catch((e: unknown) => e);
    expect(pool.queued).toBe(1);
    await clock.advance(50);
    expect(await waiting).toMatchObject({ name: "TimeoutError" });
    expect(pool.queued).toBe(0);
    hold.resolve("first");
    expect(await first).toBe("first");
    expect([pool.running, pool.queued]).toEqual([0, 0]);
  });

  it("synchronous operations go through synchronously and free their place", async () => {
    const pool = bulkhead({ limit: 1 });
    const p = pipeline(bulkheadStep(pool));
    for (let i = 0; i < 5; i++) expect(await p.execute(() => i)).toBe(i);
    await expect(
      p.execute(() => {
        throw new Error("sync");
      }),
    ).rejects.toThrow("sync");
    expect(pool.running).toBe(0);
  });

  it("a fallback outside answers for a refusal", async () => {
    const pool = bulkhead({ limit: 1 });
    const p = pipeline(fallbackStep("busy", { when: BulkheadRejectedError }), bulkheadStep(pool));
    const hold = deferred<string>();
    const first = p.execute(() => hold.promise);
    expect(await p.execute(() => "second")).toBe("busy");
    hold.resolve("first");
    expect(await first).toBe("first");
  });
});

// ---------------------------------------------------------------------------------------------------
// A model of the bulkhead against the real one, over random arrivals, completions and aborts.

type Command =
  | { kind: "arrive"; sync: boolean }
  | { kind: "complete"; pick: number; fail: boolean }
  | { kind: "abort"; pick: number };

const commandArb: fc.Arbitrary<Command> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constant("arrive" as const), sync: fc.boolean() }) },
  {
    weight: 3,
    arbitrary: fc.record({ kind: fc.constant("complete" as const), pick: fc.nat(), fail: fc.boolean() }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("abort" as const), pick: fc.nat() }) },
);

type Runner = (
  pool: Bulkhead,
) => (fn: (signal?: AbortSignal) => unknown, signal: AbortSignal) => Promise<unknown>;

const viaExecute: Runner = (pool) => (fn, signal) => pool.execute(fn, signal);
const viaStep: Runner = (pool) => {
  const p = pipeline(bulkheadStep(pool));
  return (fn, signal) => p.execute((context) => fn(context.signal), { signal });
};

async function checkAgainstModel(run: Runner, limit: number, queue: number, commands: Command[]) {
  const pool = bulkhead({ limit, queue });
  const execute = run(pool);
  interface Call {
    id: number;
    sync: boolean;
    controller: AbortController;
    gate: ReturnType<typeof deferred<number>>;
  }
  const calls: Call[] = [];
  // The model: who runs, who waits (in order), who started in which order.
  const running: number[] = [];
  const waiting: number[] = [];
  const expectedStarts: number[] = [];
  const actualStarts: number[] = [];
  let rejected = 0;
  let settled = 0;
  let bulkheadRefusals = 0;

  const startInModel = (id: number) => {
    expectedStarts.push(id);
    // A synchronous operation ends as it starts, and frees its place for the next.
    if (calls[id]?.sync) promote();
    else running.push(id);
  };
  const promote = () => {
    while (running.length < limit && waiting.length > 0) startInModel(waiting.shift() as number);
  };

  for (const command of commands) {
    if (command.kind === "arrive") {
      const id = calls.length;
      const call: Call = {
        id,
        sync: command.sync,
        controller: new AbortController(),
        gate: deferred<number>(),
      };
      call.gate.promise.catch(() => {});
      calls.push(call);
      execute(() => {
        actualStarts.push(id);
        return call.sync ? id : call.gate.promise;
      }, call.controller.signal).then(
        () => {
          settled += 1;
        },
        (error: unknown) => {
          if (error instanceof BulkheadRejectedError) bulkheadRefusals += 1;
          else settled += 1;
        },
      );
      if (running.length < limit && waiting.length === 0) startInModel(id);
      else if (waiting.length < queue) waiting.push(id);
      else rejected += 1;
    } else if (command.kind === "complete") {
      if (running.length === 0) continue;
      const [id] = running.splice(command.pick % running.length, 1) as [number];
      const gate = (calls[id] as Call).gate;
      if (command.fail) gate.reject(new Error(`failed ${id}`));
      else gate.resolve(id);
      promote();
    } else {
      const live = [...running, ...waiting];
      if (live.length === 0) continue;
      const id = live[command.pick % live.length] as number;
      (calls[id] as Call).controller.abort(new Error(`aborted ${id}`));
      const r = running.indexOf(id);
      if (r >= 0) running.splice(r, 1);
      else waiting.splice(waiting.indexOf(id), 1);
      promote();
    }
    await tick();
    // The invariants, and the model's exact state.
    expect(pool.running).toBeLessThanOrEqual(limit);
    expect(pool.queued).toBeLessThanOrEqual(queue);
    expect(pool.running).toBe(running.length);
    expect(pool.queued).toBe(waiting.length);
    expect(pool.available).toBe(limit - running.length);
    expect(actualStarts).toEqual(expectedStarts);
    expect(bulkheadRefusals).toBe(rejected);
    expect(pool.running + pool.queued + bulkheadRefusals + settled).toBe(calls.length);
  }

  // Drain: everything still running completes (and the waiters after them), then no place is held.
  while (running.length > 0) {
    const id = running.shift() as number;
    (calls[id] as Call).gate.resolve(id);
    promote();
    await tick();
  }
  expect([pool.running, pool.queued, pool.available]).toEqual([0, 0, limit]);
  expect(settled + bulkheadRefusals).toBe(calls.length);
  for (const call of calls) expect(abortListeners(call.controller.signal)).toBe(0);
}

describe("the bulkhead against a model (fast-check)", () => {
  for (const [name, run] of [
    ["execute()", viaExecute],
    ["the pipeline step", viaStep],
  ] as const) {
    it(`through ${name}: running ≤ limit, queued ≤ queue, FIFO starts, every call accounted for, no place held at the end`, async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.integer({ min: 1, max: 4 }),
          fc.integer({ min: 0, max: 4 }),
          fc.array(commandArb, { maxLength: 40 }),
          (limit, queue, commands) => checkAgainstModel(run, limit, queue, commands),
        ),
        { numRuns: 150 },
      );
    });
  }
});

describe("the bulkhead's refusals say what was wrong", () => {
  it.each([
    [undefined, "undefined"],
    [null, "null"],
    [4, "4"],
    ["4", '"4"'],
  ])("refuses %s for options, asking for the object with limit", (given, shown) => {
    const asked = `must be an object { limit, queue? } (limit is required); got ${shown}`;
    expect(() => bulkhead(given as never)).toThrow(`bulkhead ${asked}`);
    expect(() => bulkheadStep(given as never)).toThrow(`steps.bulkhead ${asked}`);
  });

  it("a full bulkhead's error gives its limits in its message", async () => {
    const pool = bulkhead({ limit: 2, queue: 1 });
    const hold = deferred<void>();
    const held = [1, 2, 3].map(() => pool.execute(() => hold.promise));
    await expect(pool.execute(() => 1)).rejects.toThrow("the bulkhead is full: 2 running and 1 waiting");
    hold.resolve();
    await Promise.all(held);
  });

  it("execute refuses what is not a function, naming it, and takes no place", async () => {
    const pool = bulkhead({ limit: 1 });
    const refused = pool.execute("fetch" as never);
    await expect(refused).rejects.toBeInstanceOf(OptionError);
    await expect(refused).rejects.toThrow('bulkhead.execute: fn must be a function; got "fetch"');
    expect([pool.running, pool.queued]).toEqual([0, 0]);
  });

  it("a refused call leaves no listener on its signal", async () => {
    const pool = bulkhead({ limit: 1 });
    const hold = deferred<void>();
    const first = pool.execute(() => hold.promise);
    const controller = new AbortController();
    await expect(pool.execute(() => 1, controller.signal)).rejects.toBeInstanceOf(BulkheadRejectedError);
    expect(abortListeners(controller.signal)).toBe(0);
    hold.resolve();
    await first;
  });
});

describe("the bulkhead's line", () => {
  it("a waiter leaving from the middle keeps the others in their order", async () => {
    const pool = bulkhead({ limit: 1, queue: 3 });
    const hold = deferred<void>();
    const started: string[] = [];
    const first = pool.execute(() => hold.promise);
    const controller = new AbortController();
    const calls = ["b", "c", "d"].map((name) =>
      outcome(
        pool.execute(
          () => {
            started.push(name);
          },
          name === "c" ? controller.signal : undefined,
        ),
      ),
    );
    controller.abort(new Error("c left"));
    expect(pool.queued).toBe(2);
    hold.resolve();
    await first;
    await tick();
    expect(started).toEqual(["b", "d"]);
    expect(calls.map((call) => call.ok)).toEqual([true, false, true]);
    expect([pool.running, pool.queued]).toEqual([0, 0]);
  });

  it("a call asking for a place while the line is served goes behind those waiting, though a place is free", () => {
    const pool = bulkhead({ limit: 1, queue: 3 });
    const order: string[] = [];
    const first = pool.acquire(() => order.push("a"));
    // b ends as soon as it starts, and then asks again (as a loop of synchronous work would).
    pool.acquire((release) => {
      order.push("b");
      release();
      pool.acquire((again) => {
        order.push("b again");
        again();
      });
    });
    pool.acquire((release) => {
      order.push("c");
      release();
    });
    first();
    expect(order).toEqual(["a", "b", "c", "b again"]);
    expect([pool.running, pool.queued]).toEqual([0, 0]);
  });

  it("a call whose signal aborts while it takes its place (fn aborts it) rejects at once and frees it", async () => {
    const pool = bulkhead({ limit: 1 });
    const controller = new AbortController();
    const reason = new Error("gave up while starting");
    const call = pool.execute(() => {
      controller.abort(reason);
      return new Promise<never>(() => {});
    }, controller.signal);
    await expect(call).rejects.toBe(reason);
    expect([pool.running, pool.queued]).toEqual([0, 0]);
    expect(abortListeners(controller.signal)).toBe(0);
  });
});

describe("bulkheadStep inside something that aborts it", () => {
  // What runs inside ignores its signal: the step's own answer frees what is outside it.
  const scopeOf = (signal: AbortSignal) => new RootScope(new VirtualClock(), () => 0.5, signal);

  it("fails at once with the abort's reason and frees its place", async () => {
    const pool = bulkhead({ limit: 1 });
    const controller = new AbortController();
    const answer = new BulkheadStep(pool).execute(
      () => new Promise<never>(() => {}),
      scopeOf(controller.signal),
    );
    expect(pool.running).toBe(1);
    const reason = new Error("left");
    controller.abort(reason);
    await expect(answer).rejects.toBe(reason);
    expect(pool.running).toBe(0);
  });

  it("fails with the abort's reason when the abort comes while what it runs is being called", async () => {
    const pool = bulkhead({ limit: 1 });
    const controller = new AbortController();
    const reason = new Error("left while starting");
    const answer = new BulkheadStep(pool).execute(() => {
      controller.abort(reason);
      return new Promise<never>(() => {});
    }, scopeOf(controller.signal));
    await expect(answer).rejects.toBe(reason);
    expect(pool.running).toBe(0);
  });

  it("runs nothing and takes no place in a context already aborted", () => {
    const pool = bulkhead({ limit: 1 });
    const controller = new AbortController();
    const reason = new Error("gone before");
    controller.abort(reason);
    let ran = 0;
    expect(() =>
      new BulkheadStep(pool).execute(() => {
        ran++;
        return 1;
      }, scopeOf(controller.signal)),
    ).toThrow(reason);
    expect([ran, pool.running]).toEqual([0, 0]);
  });
});
