/**
 * The real clock's timers, briefly and on loopback time only: a zero delay at the next turn, a timer that
 * keeps the process alive or not as asked, a background timer that never does, a cancel that holds, and
 * `sleep`'s timer and listener gone either way. What each timer is comes from spying on the platform's
 * own `setTimeout` and `setImmediate`.
 */
import { sleep } from "robustly";
import { VirtualClock } from "robustly/testing";
import { afterEach, describe, expect, it, vi } from "vitest";
import { setBackgroundTimer, systemClock, unrefClock } from "../src/core/clock.js";
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
