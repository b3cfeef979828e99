import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { seededRandom } from "../src/core/random.js";
import { Simulation } from "../src/sim/engine.js";
import { EventQueue } from "../src/sim/event-queue.js";
import { Outcome } from "../src/sim/outcome.js";

describe("the simulation engine", () => {
  it("never moves time back, runs ties in the order they were scheduled, and runs each event once", () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.integer({ min: 0, max: 1000 }), fc.integer({ min: 0, max: 3 })), {
          minLength: 1,
          maxLength: 60,
        }),
        fc.integer({ min: 0, max: 3000 }),
        (plan, until) => {
          const sim = new Simulation(1);
          const seen: { id: number; at: number; scheduledAt: number; seq: number }[] = [];
          let seq = 0;
          const schedule = (delay: number, children: number, id: number) => {
            const scheduledAt = sim.now;
            const mySeq = seq++;
            sim.after(delay, () => {
              seen.push({ id, at: sim.now, scheduledAt: scheduledAt + delay, seq: mySeq });
              // An event may schedule more events, some at the same instant.
              for (let c = 0; c < children; c++) schedule(c * 7, 0, id * 10 + c + 1);
            });
          };
          plan.forEach(([delay, children], i) => {
            schedule(delay, children, i + 1);
          });
          sim.run(until);
          for (let i = 1; i < seen.length; i++) {
            const a = seen[i - 1] as (typeof seen)[number];
            const b = seen[i] as (typeof seen)[number];
            expect(b.at).toBeGreaterThanOrEqual(a.at);
            if (a.at === b.at) expect(b.seq).toBeGreaterThan(a.seq);
          }
          for (const event of seen) {
            expect(event.at).toBe(event.scheduledAt);
            expect(event.at).toBeLessThanOrEqual(until);
          }
          expect(new Set(seen.map((e) => e.seq)).size).toBe(seen.length);
          expect(sim.events).toBe(seen.length);
          expect(sim.now).toBe(Math.max(until, 0));
          // Whatever is still queued is due after `until`.
          sim.run(Number.POSITIVE_INFINITY);
          expect(sim.pending).toBe(0);
        },
      ),
      { numRuns: 200 },
    );
  });

  it("a cancelled event never runs", () => {
    const sim = new Simulation(1);
    const ran: string[] = [];
    const cancel = sim.after(10, () => ran.push("cancelled"));
    sim.after(20, () => ran.push("kept"));
    cancel();
    cancel();
    sim.run(100);
    expect(ran).toEqual(["kept"]);
  });

  it("makes errors without a stack while it runs, and restores the limit after, even after a throw", () => {
    const limit = Error.stackTraceLimit;
    const sim = new Simulation(1);
    const stacks: (string | undefined)[] = [];
    sim.after(1, () => stacks.push(new Error("inside").stack));
    sim.run(10);
    expect(stacks).toEqual(["Error: inside"]);
    expect(Error.stackTraceLimit).toBe(limit);
    sim.after(1, () => {
      throw new Error("a broken model");
    });
    expect(() => sim.run(20)).toThrow("a broken model");
    expect(Error.stackTraceLimit).toBe(limit);
    expect(new Error("outside").stack).toContain("sim-engine.test");
  });

  it("its clock is what the retry loop reads: now() and setTimer", () => {
    const sim = new Simulation(1);
    const times: number[] = [];
    sim.clock.setTimer(250, () => times.push(sim.clock.now()));
    sim.clock.setTimer(-5, () => times.push(sim.clock.now()));
    sim.run(1000);
    expect(times).toEqual([0, 250]);
    expect(sim.clock.now()).toBe(1000);
  });
});

describe("events as objects", () => {
  it("fire in time order among callbacks, ties in the order queued, and a cancelled one never fires", () => {
    const sim = new Simulation(1);
    const seen: string[] = [];
    const timed = (name: string) => ({ fire: () => seen.push(`${name} at ${sim.now}`) });
    sim.after(10, () => seen.push(`a at ${sim.now}`));
    sim.schedule(10, timed("b"));
    const slot = sim.schedule(5, timed("cancelled"));
    sim.cancel(slot, sim.generation(slot));
    sim.schedule(-3, timed("c"));
    // A stale generation cancels nothing once the slot is reused.
    const reused = sim.schedule(20, timed("d"));
    sim.cancel(reused, sim.generation(reused) + 1);
    sim.run(100);
    expect(seen).toEqual(["c at 0", "a at 10", "b at 10", "d at 20"]);
    expect(sim.events).toBe(4);
  });
});

describe("Outcome, the synchronous thenable", () => {
  it("calls back at once when settled, and in order when settled later", () => {
    const order: string[] = [];
    const done = Outcome.of(1);
    done.then((v) => order.push(`now ${v}`));
    expect(order).toEqual(["now 1"]);
    const later = new Outcome<number>();
    later.then((v) => order.push(`a ${v}`));
    later.then((v) => order.push(`b ${v}`));
    expect(order).toEqual(["now 1"]);
    later.resolve(2);
    later.resolve(3); // settles once
    later.reject(new Error("ignored"));
    expect(order).toEqual(["now 1", "a 2", "b 2"]);
  });

  it("listenBy calls the listener's methods; unlisten takes it back; a listener's throw goes nowhere", () => {
    const seen: string[] = [];
    const listener = (name: string) => ({
      heard: (v: number) => seen.push(`${name} ${v}`),
      failed: (e: unknown) => {
        seen.push(`${name} failed ${String(e)}`);
        throw new Error("ignored");
      },
    });
    const a = new Outcome<number>();
    const first = listener("first");
    a.listenBy(first);
    a.listenBy(listener("second"));
    a.unlisten(first);
    a.resolve(1);
    const b = new Outcome<number>();
    b.listenBy(listener("third"));
    b.listen(
      () => seen.push("never"),
      () => seen.push("fourth failed"),
    );
    b.reject("x");
    Outcome.of(2).listenBy(listener("settled"));
    expect(seen).toEqual(["second 1", "third failed x", "fourth failed", "settled 2"]);
  });

  it("listen hears of the result without chaining; unlisten takes back only the first listener, unheard", () => {
    const heard: string[] = [];
    const outcome = new Outcome<number>();
    const first = (v: number) => heard.push(`first ${v}`);
    outcome.listen(first, () => heard.push("first failed"));
    outcome.listen(
      (v) => heard.push(`second ${v}`),
      () => heard.push("second failed"),
    );
    outcome.unlisten((v: number) => heard.push(`other ${v}`));
    outcome.unlisten(first);
    outcome.resolve(4);
    expect(heard).toEqual(["second 4"]);
    const failed = new Outcome<number>();
    failed.reject(new Error("no"));
    failed.listen(first, (e) => heard.push(`failed: ${(e as Error).message}`));
    expect(heard).toEqual(["second 4", "failed: no"]);
  });

  it("chains like a promise: values, thrown errors, adopted thenables, pass-through", () => {
    const out: unknown[] = [];
    const inner = new Outcome<string>();
    const source = new Outcome<number>();
    source
      .then((v) => v + 1)
      .then((v) => {
        if (v > 1) throw new Error(`too big: ${v}`);
        return v;
      })
      .then(undefined, (e: unknown) => (e as Error).message)
      .then((message) => {
        out.push(message);
        return inner;
      })
      .then((v) => out.push(`inner ${v}`));
    source.resolve(1);
    expect(out).toEqual(["too big: 2"]);
    inner.resolve("ok");
    expect(out).toEqual(["too big: 2", "inner ok"]);
    const rejected = new Outcome<number>();
    const seen: unknown[] = [];
    rejected.then((v) => v * 2).then(undefined, (e) => seen.push(e));
    const reason = new Error("no");
    rejected.reject(reason);
    expect(seen).toEqual([reason]);
  });
});

describe("the event queue", () => {
  // Ties at one instant are common (many clients at t = 0, timers on a grid), and a run is deterministic
  // only if they come out in the order they went in.
  const operations = fc.array(
    fc.oneof(
      fc.record({ push: fc.integer({ min: 0, max: 20 }).map((t) => t / 4) }),
      // A delay after the time of the last event out: recurring delays go to the queue's lanes.
      fc.record({
        after: fc.oneof(
          fc.constantFrom(0, 0.25, 1, 2.5, 5, 7, 9),
          fc.integer({ min: 0, max: 40 }).map((t) => t / 8),
        ),
      }),
      fc.record({ cancel: fc.nat() }),
      fc.record({ pop: fc.constant(true) }),
    ),
    { maxLength: 300 },
  );

  it("pops in (time, insertion) order, as a stable sort does, with cancelled events left out", () => {
    fc.assert(
      fc.property(operations, (ops) => {
        const queue = new EventQueue();
        // The reference: a plain list, sorted stably by time at each pop.
        let reference: { at: number; id: number }[] = [];
        const handles: { slot: number; generation: number; id: number }[] = [];
        const popped: number[] = [];
        const expected: number[] = [];
        let id = 0;
        let now = 0;
        for (const op of ops) {
          if ("push" in op || "after" in op) {
            const mine = id++;
            const at = "push" in op ? op.push : now + op.after;
            const slot =
              "push" in op
                ? queue.push(at, () => popped.push(mine))
                : queue.pushAfter(at, op.after, () => popped.push(mine));
            handles.push({ slot, generation: queue.generation(slot), id: mine });
            reference.push({ at, id: mine });
          } else if ("cancel" in op) {
            const handle = handles[op.cancel % Math.max(1, handles.length)];
            if (handle === undefined) continue;
            // Cancelling twice, or after the event ran, does nothing.
            queue.cancel(handle.slot, handle.generation);
            reference = reference.filter((e) => e.id !== handle.id);
          } else {
            reference.sort((a, b) => a.at - b.at);
            const first = reference.shift();
            if (first !== undefined) expected.push(first.id);
            const at = queue.peekTime();
            expect(at).toBe(first?.at ?? Number.POSITIVE_INFINITY);
            if (first !== undefined && first.at > now) now = first.at;
            queue.pop()?.();
          }
          expect(queue.size).toBe(reference.length);
        }
        reference.sort((a, b) => a.at - b.at);
        for (const e of reference) {
          expected.push(e.id);
          queue.pop()?.();
        }
        expect(queue.pop()).toBeUndefined();
        expect(popped).toEqual(expected);
      }),
      { numRuns: 1000 },
    );
  });

  it("stays ordered past its initial size, with a million pending events", () => {
    const queue = new EventQueue();
    const random = seededRandom(5);
    const n = 1_000_000;
    for (let i = 0; i < n; i++) queue.push(Math.floor(random() * 1000), () => {});
    let last = -1;
    let outOfOrder = 0;
    for (let i = 0; i < n; i++) {
      const at = queue.peekTime();
      if (at < last) outOfOrder += 1;
      last = at;
      queue.pop();
    }
    expect(outOfOrder).toBe(0);
    expect(last).toBe(999);
    expect(queue.size).toBe(0);
  });
});
