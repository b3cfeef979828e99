/**
 * Running the engine under code that awaits promises. The engine's events run synchronously, one after
 * the other, with no microtask in between (see `Simulation`); a shared budget's or breaker's exchange with
 * its store (`Replica`) is a chain of promise continuations, which would then run only after the whole
 * run, while the store's timeout, a timer on the virtual clock, fires first: every process would decide
 * alone. `runInSlices` runs the engine a slice of virtual time at a time and lets every pending
 * continuation run between two slices, so that an exchange begun in one slice is over before the next.
 *
 * A slice ends on the next turn of the event loop, after the microtask queue has drained. Only the
 * simulation's own continuations are waiting then (an in-memory store answers at once), so the same seed
 * gives the same run, however fast the machine.
 */
import { sleep, systemClock } from "../core/clock.js";
import type { Simulation } from "./engine.js";

/** The virtual time the engine runs between two turns of the event loop, ms: a tenth of a store's default `syncEvery`. */
export const SLICE_MS = 10;

/**
 * Runs `sim` until `until` in slices of `slice` ms of virtual time, letting pending promise work finish
 * after each. `onSlice` hears the virtual time about every `report` ms.
 *
 * @example
 * const sim = new Simulation(7);
 * await runInSlices(sim, 120_000); // a store's exchanges, started by the sim's timers, finish within 10 ms
 */
export async function runInSlices(
  sim: Simulation,
  until: number,
  onSlice?: (now: number) => void,
  slice = SLICE_MS,
  report = 1000,
): Promise<void> {
  if (!(slice > 0 && Number.isFinite(slice)))
    throw new RangeError(`slice must be a finite number of ms > 0; got ${slice}`);
  let nextReport = sim.now + report;
  while (sim.now < until) {
    sim.run(Math.min(until, sim.now + slice));
    // One turn of the event loop: every continuation queued by the slice, and those they queue, run first.
    await sleep(systemClock, 0);
    if (onSlice !== undefined && sim.now >= nextReport) {
      onSlice(sim.now);
      nextReport = sim.now + report;
    }
  }
}
