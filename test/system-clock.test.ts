/**
 * The real clock's timers, briefly and on loopback time only: a zero delay at the next turn, a timer that
 * keeps the process alive or not as asked, a background timer that never does, a cancel that holds, and
 * `sleep`'s timer and listener gone either way. What each timer is comes from spying on the platform's
 * own `setTimeout` and `setImmediate`.
 */
import { sleep } from "robustly";
import { VirtualClock } from "robustly/testing";
import { afterEach, describe, expect, it, vi } from "vitest";
import { deadlinesOf, setBackgroundTimer, systemClock, unrefClock } from "../src/core/clock.js";
import { Deadline } from "../src/core/deadlines.js";
import { abortListeners } from "./support/drive.js";

/** The platform timers a `set` made: `[kind, keeps the process alive]` for each. */
function timersMadeBy(set: () => void): [string, boolean][] {
  const made: [string, boolean][] = [];
  const timeout = vi.spyOn(globalThis, "setTimeout");
  const immediate = vi.spyOn(globalThis, "setImmediate");
  try {
    set();
    for (const result of timeout.mock.results)
      made.push(["timeout", (result.value as NodeJS.Timeout).hasRef()]);
    for (const result of immediate.mock.results)
      made.push(["immediate", (result.value as NodeJS.Immediate).hasRef()]);
  } finally {
    timeout.mockRestore();
    immediate.mockRestore();
  }
  return made;
}

/** Resolves once `fired` is true, or after `ms` of real time. */
async function within(ms: number, fired: () => boolean): Promise<boolean> {
  const end = Date.now() + ms;
  while (!fired() && Date.now() < end) await new Promise((resolve) => setTimeout(resolve, 5));
  return fired();
}

afterEach(() => vi.restoreAllMocks());

describe("the real clock's timers", () => {
  it("a zero delay goes on at the next turn of the event loop (an immediate), which keeps the process alive", async () => {
    let fired = false;
    expect(timersMadeBy(() => systemClock.setTimer(0, () => (fired = true)))).toEqual([["immediate", true]]);
    expect(await within(2000, () => fired)).toBe(true);
  });

  it("a delay keeps the process alive on the system clock, and not on the unref'd one, zero included", async () => {
    let fired = 0;
    expect(timersMadeBy(() => systemClock.setTimer(5, () => fired++))).toEqual([["timeout", true]]);
    expect(timersMadeBy(() => unrefClock.setTimer(5, () => fired++))).toEqual([["timeout", false]]);
    expect(timersMadeBy(() => unrefClock.setTimer(0, () => fired++))).toEqual([["timeout", false]]);
    expect(await within(2000, () => fired === 3)).toBe(true);
  });

  it("a background timer never keeps the process alive on the real clock, and is the clock's own timer on another", async () => {
    let fired = 0;
    expect(timersMadeBy(() => setBackgroundTimer(systemClock, 5, () => fired++))).toEqual([
      ["timeout", false],
    ]);
    expect(timersMadeBy(() => setBackgroundTimer(systemClock, 0, () => fired++))).toEqual([
      ["timeout", false],
    ]);
    expect(await within(2000, () => fired === 2)).toBe(true);
    const clock = new VirtualClock();
    expect(timersMadeBy(() => setBackgroundTimer(clock, 100, () => fired++))).toEqual([]);
    await clock.advance(100);
    expect(fired).toBe(3);
  });

  it("a cancelled timer, zero or not, never fires", async () => {
    let fired = 0;
    systemClock.setTimer(0, () => fired++)();
    systemClock.setTimer(1, () => fired++)();
    unrefClock.setTimer(0, () => fired++)();
    let after = false;
    systemClock.setTimer(30, () => (after = true));
    expect(await within(2000, () => after)).toBe(true);
    expect(fired).toBe(0);
  });
});

describe("sleep", () => {
  it("leaves no listener on the signal once it has slept, and rejects with the reason and removes its timer on an abort", async () => {
    const clock = new VirtualClock();
    const controller = new AbortController();
    const slept = sleep(clock, 100, controller.signal);
    expect(abortListeners(controller.signal)).toBe(1);
    await clock.advance(100);
    await slept;
    expect(abortListeners(controller.signal)).toBe(0);
    const aborted = sleep(clock, 100, controller.signal);
    controller.abort(new Error("stop"));
    await expect(aborted).rejects.toThrow("stop");
    expect(clock.pending).toBe(0);
    await expect(sleep(clock, 100, controller.signal)).rejects.toThrow("stop");
    expect(clock.pending).toBe(0);
  });
});

describe("the real clocks' shared deadlines (per-attempt timeouts)", () => {
  // A duration no other test uses, so that its lane is this test's alone.
  const ms = 987_654;

  it("keep the process alive while a deadline waits on the system clock, and not once none does; never on the unref'd clock", () => {
    const system = deadlinesOf(systemClock);
    const unref = deadlinesOf(unrefClock);
    expect(system).toBeDefined();
    expect(unref).toBeDefined();
    expect(unref).not.toBe(system);
    expect(deadlinesOf(new VirtualClock())).toBeUndefined();
    if (system === undefined || unref === undefined) return;

    // Spied on for the whole test: a deadline is queued on the timers in place when it is queued.
    const timeout = vi.spyOn(globalThis, "setTimeout");
    try {
      const first = new Deadline();
      system.add(first, ms);
      const timer = timeout.mock.results[0]?.value as NodeJS.Timeout;
      expect(timer.hasRef()).toBe(true);
      system.remove(first);
      // The emptied lane keeps its timer, parked: it no longer holds the process.
      expect(timer.hasRef()).toBe(false);
      const second = new Deadline();
      system.add(second, ms);
      expect(timeout).toHaveBeenCalledTimes(1);
      expect(timer.hasRef()).toBe(true);
      system.remove(second);
      expect(timer.hasRef()).toBe(false);

      const third = new Deadline();
      unref.add(third, ms);
      const unrefTimer = timeout.mock.results[1]?.value as NodeJS.Timeout;
      expect(unrefTimer.hasRef()).toBe(false);
      unref.remove(third);
      expect(unrefTimer.hasRef()).toBe(false);
    } finally {
      timeout.mockRestore();
    }
    expect([system.size, unref.size]).toEqual([0, 0]);
  });
});
