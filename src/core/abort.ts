/**
 * One `abort` listener per signal, however many calls watch it. Many calls that share one caller's signal
 * (a request's, a shutdown's) would otherwise add a listener each, and Node warns of a leak past ten.
 */

type Watchers = Set<() => void>;

const watched = new WeakMap<AbortSignal, Watchers>();

function fire(this: AbortSignal): void {
  const watchers = watched.get(this);
  if (watchers === undefined) return;
  watched.delete(this);
  this.removeEventListener("abort", fire);
  for (const watcher of [...watchers]) watcher();
}

/**
 * Calls `callback` once when `signal` aborts, unless the returned function is called first. The signal
 * must not have aborted yet (check `signal.aborted` first).
 */
export function watchAbort(signal: AbortSignal, callback: () => void): () => void {
  let watchers = watched.get(signal);
  if (watchers === undefined) {
    watchers = new Set();
    watched.set(signal, watchers);
    signal.addEventListener("abort", fire);
  }
  const mine = () => callback();
  watchers.add(mine);
  return () => {
    const current = watched.get(signal);
    if (current === undefined || !current.delete(mine) || current.size > 0) return;
    watched.delete(signal);
    signal.removeEventListener("abort", fire);
  };
}
