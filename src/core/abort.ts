/**
 * One `abort` listener per signal, however many calls watch it. Many calls that share one caller's signal
 * (a request's, a shutdown's) would otherwise add a listener each, and Node warns of a leak past ten.
 *
 * When the last call watching a signal ends, its listener is removed at the next turn of the event loop,
 * not at once: calls made one after another on one signal (awaited in turn, in one request's handling)
 * then keep one listener between them, where adding and removing it for each would cost more than the rest
 * of the call. A signal no call watches keeps no listener of robustly's past that turn.
 */
import { atNextTurn, turnTimerInPlace } from "./clock.js";

/** What is told when a watched signal aborts. */
export interface AbortWatcher {
  /** The signal aborted (called once, unless unwatched first). */
  signalAborted(): void;
}

/**
 * The watchers of one signal, and whether its listener is on. Kept (in a weak map) while the signal
 * lives, so that calls made one after another on one signal do not build it anew each time.
 *
 * The oldest watcher is kept in a field of its own while it is the only one or older than all others:
 * calls awaited one after another on one signal (the common case) then watch it without a set, whose
 * adding and deleting of a new object each call (its hash made, the table rebuilt) cost more than the
 * rest of watching. The others are told after it, in the order they came, as a set alone tells them.
 */
class Watchers {
  readonly signal: AbortSignal;
  listening = false;
  /** The oldest watcher, unless it went while `more` held some (who then come first, in `more`). */
  first: AbortWatcher | undefined = undefined;
  more: Set<AbortWatcher> | undefined = undefined;

  constructor(signal: AbortSignal) {
    this.signal = signal;
  }

  get size(): number {
    return (this.first === undefined ? 0 : 1) + (this.more === undefined ? 0 : this.more.size);
  }

  add(watcher: AbortWatcher): void {
    if (this.first === undefined && (this.more === undefined || this.more.size === 0)) this.first = watcher;
    else if (watcher !== this.first) {
      this.more ??= new Set();
      this.more.add(watcher);
    }
  }

  /** Whether `watcher` was one. */
  delete(watcher: AbortWatcher): boolean {
    if (watcher !== this.first) return this.more?.delete(watcher) === true;
    this.first = undefined;
    return true;
  }

  /** Takes every watcher off, and returns them in the order they came. */
  take(): AbortWatcher[] {
    const told = this.first === undefined ? [] : [this.first];
    this.first = undefined;
    if (this.more !== undefined) {
      for (const watcher of this.more) told.push(watcher);
      this.more.clear();
    }
    return told;
  }
}

const watched = new WeakMap<AbortSignal, Watchers>();

function fire(this: AbortSignal): void {
  const watchers = watched.get(this);
  if (watchers === undefined || !watchers.listening) return;
  watchers.listening = false;
  this.removeEventListener("abort", fire);
  for (const watcher of watchers.take()) watcher.signalAborted();
}

/**
 * Tells `watcher` once when `signal` aborts, unless `unwatch(signal, watcher)` is called first. The signal
 * must not have aborted yet (check `signal.aborted` first). An object, not a callback, so that a call
 * that watches its caller's signal allocates nothing for it.
 */
export function watch(signal: AbortSignal, watcher: AbortWatcher): void {
  let watchers = watched.get(signal);
  if (watchers === undefined) {
    watchers = new Watchers(signal);
    watched.set(signal, watchers);
  }
  watchers.add(watcher);
  if (!watchers.listening) {
    watchers.listening = true;
    signal.addEventListener("abort", fire);
  }
}

/**
 * Stops telling `watcher` of `signal`'s abort; the listener goes at the next turn of the event loop if no
 * one watches the signal by then.
 */
export function unwatch(signal: AbortSignal, watcher: AbortWatcher): void {
  const watchers = watched.get(signal);
  if (watchers === undefined || !watchers.delete(watcher) || watchers.size > 0 || !watchers.listening) return;
  idle.add(watchers);
  // A sweep set on timers replaced since (a test's fake timers, installed or removed) may never run.
  if (sweepSet && turnTimerInPlace()) return;
  sweepSet = atNextTurn(sweep);
  // Where no timer can be set, or none that is sure to run, at once.
  if (!sweepSet) sweep();
}

/** Signals whose last watcher went, their listener still on. */
const idle = new Set<Watchers>();
let sweepSet = false;

/**
 * Removes the listener of every signal no one watches any more. Runs at the next turn of the event loop
 * after a signal's last watcher went; a test may call it to look at a signal's listeners at once.
 */
export function sweep(): void {
  sweepSet = false;
  for (const watchers of idle) {
    if (watchers.size > 0 || !watchers.listening) continue;
    watchers.listening = false;
    watchers.signal.removeEventListener("abort", fire);
  }
  idle.clear();
}

/**
 * Calls `callback` once when `signal` aborts, unless the returned function is called first. The signal
 * must not have aborted yet (check `signal.aborted` first).
 */
export function watchAbort(signal: AbortSignal, callback: () => void): () => void {
  const mine: AbortWatcher = { signalAborted: callback };
  watch(signal, mine);
  return () => unwatch(signal, mine);
}
