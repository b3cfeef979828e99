/**
 * Time is injected: the retry loop reads the time and sets timers only through a `Clock`.
 * Only this module touches the real timers and `performance.now`.
 */

import { type DeadlineHost, DeadlineQueue } from "./deadlines.js";
import { OptionError } from "./errors.js";

/** Cancels a timer set by `Clock.setTimer`; calling it after the timer fired, or twice, does nothing. */
export type CancelTimer = () => void;

/**
 * The time source and timer service the retry loop runs on.
 * `robustly/testing` ships `VirtualClock`, which implements it without ever waiting.
 */
export interface Clock {
  /** Milliseconds on a monotonic scale; only differences matter. */
  now(): number;
  /** Calls `callback` once, `ms` milliseconds from now, unless cancelled first. */
  setTimer(ms: number, callback: () => void): CancelTimer;
}

/**
 * The longest delay one timer can hold: Node.js and browsers store it in a signed 32-bit integer
 * (2^31 − 1 ms, about 24.8 days) and fire at once when asked for more. Every delay robustly computes is
 * clamped to it; a timeout or timer set for longer is a chain of such timers.
 */
export const MAX_TIMER_DELAY = 2_147_483_647;

/** The platform's `setImmediate` where it has one (Node.js, Deno, Bun); browsers have none. */
type ImmediateHandle = { unref?: () => void };
const immediate =
  typeof globalThis.setImmediate === "function" && typeof globalThis.clearImmediate === "function"
    ? {
        set: (callback: () => void): ImmediateHandle => globalThis.setImmediate(callback),
        clear: (handle: ImmediateHandle) =>
          globalThis.clearImmediate(handle as ReturnType<typeof setImmediate>),
      }
    : undefined;

/**
 * The platform's timer for "at the next turn of the event loop" as it was when this module loaded:
 * `setImmediate`, else `setTimeout(0)`.
 */
const turnTimerName = typeof globalThis.setImmediate === "function" ? "setImmediate" : "setTimeout";
const turnTimer: unknown = globalThis[turnTimerName];

/**
 * Whether the timer `atNextTurn` sets is still the platform's timer in use: not once a test's fake timers
 * replaced it, nor once fake timers in place when robustly loaded are gone (a timer set on them then may
 * never run).
 */
export function turnTimerInPlace(): boolean {
  return typeof turnTimer === "function" && globalThis[turnTimerName] === turnTimer;
}

/**
 * Calls `callback` at the next turn of the event loop, on a timer that does not keep the process alive:
 * for housekeeping that may wait until the microtasks running now are done. False, with nothing set, where
 * the platform has no timers, or while the timers are not those there were when robustly loaded (see
 * `turnTimerInPlace`).
 */
export function atNextTurn(callback: () => void): boolean {
  if (!turnTimerInPlace()) return false;
  const handle: { unref?: () => void } =
    turnTimerName === "setImmediate" ? setImmediate(callback) : setTimeout(callback, 0);
  handle.unref?.();
  return true;
}

/**
 * A real timer of any length: one beyond what a timer can hold is a chain of the longest ones, so that it
 * fires when its time comes rather than at once (or, capped, early). `unref` lets the process exit while
 * it waits, where the platform can.
 */
function realTimer(ms: number, callback: () => void, unref: boolean): CancelTimer {
  // A zero delay (a backoff of 0, a retry at once) goes on at the next turn of the event loop, not after
  // `setTimeout(0)`'s minimum of about a millisecond; still a macrotask, so that a retry loop that never
  // waits lets I/O and timers (an abort, a timeout) run between its attempts. Not when unref'd: Node.js
  // waits for I/O without a look at an unref'd immediate, which then runs only at the next event of
  // another kind (a second later, behind an unrelated one-second interval); an unref'd timer it does not
  // wait past.
  if (!(ms > 0) && immediate !== undefined && !unref) {
    const handle = immediate.set(callback);
    return () => immediate.clear(handle);
  }
  let left = Math.max(ms, 0);
  let handle: ReturnType<typeof setTimeout>;
  const arm = () => {
    const now = Math.min(left, MAX_TIMER_DELAY);
    left -= now;
    handle = setTimeout(left > 0 ? arm : callback, now);
    if (unref) (handle as { unref?: () => void }).unref?.();
  };
  arm();
  return () => clearTimeout(handle);
}

/** The real clock: `performance.now()` and `setTimeout`. */
export const systemClock: Clock = {
  now: () => performance.now(),
  setTimer: (ms, callback) => realTimer(ms, callback, false),
};

/**
 * The real clock whose timers do not keep the process alive (Node.js, Deno, Bun: a timer's `unref`), as
 * p-retry's `unref` option: a program that has nothing else to do exits during a backoff sleep or a
 * timeout instead of waiting it out.
 */
export const unrefClock: Clock = {
  now: () => performance.now(),
  setTimer: (ms, callback) => realTimer(ms, callback, true),
};

/** Calls that may share one reading of the real clock before it is read again (see `sharedStart`). */
export const COARSE_READS = 32;

/** How often, in ms, the shared reading is refreshed while calls keep reading it. */
export const COARSE_MS = 1;

let coarseNow = 0;
/** Readings left before the clock is read again; 0 while no refresh timer runs. */
let coarseLeft = 0;
/** The refresh timer; null where timers cannot be unref'd (then every reading is precise). */
let coarseTimer: { unref?: () => void; hasRef?: () => boolean } | null | undefined;
let coarseUsed = false;
/**
 * The `performance` there was when this module loaded, and its `now`: the shared reading is taken and
 * used only while both are still the ones (a test's spy or fake timers replace one or the other; the
 * global is an accessor in Node.js, too slow to ask at every call, so it is asked at each refresh and when
 * a start is used).
 */
const realPerformance: Performance | undefined = globalThis.performance;
const realNow: unknown = realPerformance?.now;
/**
 * And the `setInterval` there was: fake timers replace it along with `performance`, and it is a plain
 * global, cheap to compare at every call.
 */
const realSetInterval: unknown = globalThis.setInterval;
/**
 * The refresh timer is set only on that `setInterval`, and stopped with its own `clearInterval`: fake
 * timers installed meanwhile may not pass a real timer's clearing on, which would leave it running.
 */
const realClearInterval = globalThis.clearInterval;

/** Whether `performance` and its `now` are still those the shared reading comes from. */
function sameSource(): boolean {
  return (
    globalThis.performance === realPerformance &&
    realPerformance?.now === realNow &&
    globalThis.setInterval === realSetInterval
  );
}

function coarseTick(): void {
  if (!coarseUsed || !sameSource()) {
    // Nothing read it since the last tick (or the clock was replaced): stop, so that an idle program runs
    // no timer of ours.
    realClearInterval(coarseTimer as ReturnType<typeof setInterval>);
    coarseTimer = undefined;
    coarseLeft = 0;
    return;
  }
  coarseUsed = false;
  coarseNow = performance.now();
  coarseLeft = COARSE_READS;
}

function coarseRefresh(): number {
  if (coarseTimer === null || !startWasReal) return performance.now();
  coarseNow = performance.now();
  coarseUsed = true;
  if (coarseTimer === undefined) {
    const timer = setInterval(coarseTick, COARSE_MS) as { unref?: () => void };
    if (typeof timer.unref === "function") {
      timer.unref();
      coarseTimer = timer;
    } else {
      // A browser: its timers keep nothing alive, but a background tab slows them to a second or more,
      // which would make the shared reading that stale. Read the clock every time there.
      realClearInterval(timer as ReturnType<typeof setInterval>);
      coarseTimer = null;
      return coarseNow;
    }
  }
  coarseLeft = COARSE_READS;
  return coarseNow;
}

/**
 * When a call begins, on a real clock, for a call that no time limit depends on (no `maxElapsed`, no
 * timeout): its start is read only for the elapsed time its report and `onRetry` give if an attempt
 * fails. A reading of `performance.now()` (about 40 ns in Node.js 20, a third of the whole cost of a call
 * that succeeds at once) is shared by calls made close together: it is taken again after `COARSE_READS`
 * calls, and every `COARSE_MS` ms by a timer that does not keep the process alive and stops at the first
 * tick that finds it unused. So a start is never later than the call, and earlier by at most about a
 * millisecond, or by what the current turn of the event loop ran before the call (a turn that runs long
 * without letting timers fire). Once `performance`, its `now` or `setInterval` was replaced (a test's spy
 * or fake timers), the clock is read at every call; `startWasReal` tells which.
 */
export function sharedStart(): number {
  if (coarseLeft > 1 && realPerformance?.now === realNow && setInterval === realSetInterval) {
    coarseLeft -= 1;
    coarseUsed = true;
    startWasReal = true;
    return coarseNow;
  }
  startWasReal = sameSource();
  return coarseRefresh();
}

/** `sharedStart` on the real clocks; a reading of `clock` on any other. */
export function callStart(clock: Clock): number {
  return clock === systemClock || clock === unrefClock ? sharedStart() : clock.now();
}

/** Whether the last `sharedStart` read the `performance` there was when robustly loaded. */
export let startWasReal = true;

/** The refresh timer of the shared reading, while one runs (for tests: that it does not hold the process, and stops). */
export function coarseRefreshTimer(): { hasRef?: () => boolean } | undefined {
  return coarseTimer ?? undefined;
}

/**
 * Whether a start `sharedStart()` gave when `startWasReal` was `real` can be compared with the real
 * clock's readings now: not when `performance` was replaced (or put back) meanwhile, as by fake timers.
 */
export function sharedStartFits(real: boolean): boolean {
  return sameSource() === real;
}

/**
 * Waits `ms` on `clock`. Rejects with `signal.reason` as soon as `signal` aborts, removing its timer and
 * its listener either way.
 */
export function sleep(clock: Clock, ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.reject(signal.reason);
  return new Promise<void>((resolve, reject) => {
    let cancel: CancelTimer | undefined;
    const onAbort = () => {
      cancel?.();
      reject(signal?.reason);
    };
    cancel = clock.setTimer(ms, () => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    });
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/**
 * Sets a timer for background work (a shared policy's synchronisation): on the real clock it does not keep
 * the process alive, so forgetting to close a policy never stops a program from exiting.
 */
export function setBackgroundTimer(clock: Clock, ms: number, callback: () => void): CancelTimer {
  if (clock !== systemClock) return clock.setTimer(ms, callback);
  return realTimer(ms, callback, true);
}

/**
 * Deadlines queued between two full checks that the real clock's `performance` is still the one (see
 * `realHost`): one replaced alone, without `setTimeout`, is noticed within this many.
 */
const QUICK_HOST_CHECKS = 64;

/**
 * The real timers as a deadline queue runs on them; `unref`: none of them keeps the process alive. They
 * are those of the `performance` and `setTimeout` in use when a deadline is queued: a test's fake timers
 * replace them, and its deadlines run on the fake clock, apart from those queued before or after.
 */
function realHost(unref: boolean): DeadlineHost {
  let host: DeadlineHost | undefined;
  let source: { performance: Performance; now: unknown; setTimeout: unknown } | undefined;
  // The global `performance` is an accessor in Node.js (about 7 ns a read): between full checks, a deadline
  // checks only `setTimeout` (a plain global, which fake timers always replace) and `now`.
  let quickLeft = 0;
  const current = (exact = false): DeadlineHost => {
    const set = globalThis.setTimeout;
    if (host !== undefined && source !== undefined) {
      if (!exact && quickLeft > 0 && source.setTimeout === set && source.now === source.performance.now) {
        quickLeft -= 1;
        return host;
      }
      quickLeft = QUICK_HOST_CHECKS;
      const perf = globalThis.performance;
      if (source.performance === perf && source.now === perf.now && source.setTimeout === set) return host;
    }
    quickLeft = QUICK_HOST_CHECKS;
    const perf = globalThis.performance;
    source = { performance: perf, now: perf.now, setTimeout: set };
    host = timersHost(perf, set, globalThis.clearTimeout, unref);
    return host;
  };
  return { ...current(), current };
}

/** A deadline host on given timers. */
function timersHost(
  perf: Performance,
  set: typeof setTimeout,
  clear: typeof clearTimeout,
  unref: boolean,
): DeadlineHost {
  return {
    now: () => perf.now(),
    start(ms, callback) {
      const handle = set(callback, ms);
      if (unref) (handle as { unref?: () => void }).unref?.();
      return handle;
    },
    stop: (handle) => clear(handle as ReturnType<typeof setTimeout>),
    // An emptied lane's timer stays set, but no longer keeps the process alive; cheaper than clearing it
    // and setting another for the next call.
    park: unref ? () => {} : (handle) => (handle as { unref?: () => void }).unref?.(),
    unpark: unref ? () => {} : (handle) => (handle as { ref?: () => void }).ref?.(),
  };
}

const systemDeadlines = new DeadlineQueue(realHost(false));
const unrefDeadlines = new DeadlineQueue(realHost(true));

/**
 * The shared deadline queue of a real clock (per-attempt timeouts share its timers), or undefined for any
 * other clock, on which each time limit is a timer of its own.
 */
export function deadlinesOf(clock: Clock): DeadlineQueue | undefined {
  if (clock === systemClock) return systemDeadlines;
  if (clock === unrefClock) return unrefDeadlines;
  return undefined;
}

/**
 * The clock an option names: the real one when it is undefined. Anything else, null included, must have
 * `now()` and `setTimer()`, or an OptionError names `option`, the value and `allowed`.
 */
export function clockOption(option: string, clock: unknown, allowed: string): Clock {
  if (clock === undefined) return systemClock;
  const given = clock as Partial<Clock> | null;
  if (typeof given?.now !== "function" || typeof given.setTimer !== "function") {
    throw new OptionError(option, clock, allowed);
  }
  return clock as Clock;
}
