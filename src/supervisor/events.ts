/**
 * A small typed event emitter with disposable listeners (as cockatiel's `onRetry(listener) → { dispose }`).
 * A listener that throws must not break the supervisor's state machine, so its error becomes a process
 * warning, as the retry loop does with its callbacks.
 */
import type { Disposable } from "./types.js";

/** Listeners by event name; emitting costs nothing for an event nobody listens to. */
export class Emitter<Events extends object> {
  readonly #listeners = new Map<keyof Events, Set<(event: never) => void>>();

  /** Adds `listener` for `event`; `dispose()` removes it (twice does nothing). */
  on<K extends keyof Events>(event: K, listener: (event: Events[K]) => void): Disposable {
    let set = this.#listeners.get(event);
    if (set === undefined) {
      set = new Set();
      this.#listeners.set(event, set);
    }
    // A wrapper, so that the same function added twice is two listeners, each with its own dispose.
    const entry = (value: never) => listener(value);
    set.add(entry);
    return {
      dispose: () => {
        const current = this.#listeners.get(event);
        current?.delete(entry);
        if (current?.size === 0) this.#listeners.delete(event);
      },
    };
  }

  /** Whether anyone listens to `event`: lets the caller skip building an event nobody reads. */
  has(event: keyof Events): boolean {
    return this.#listeners.has(event);
  }

  /** Calls every listener of `event`, in the order they were added. */
  emit<K extends keyof Events>(event: K, value: Events[K]): void {
    const set = this.#listeners.get(event);
    if (set === undefined) return;
    for (const listener of [...set]) {
      try {
        (listener as (event: Events[K]) => void)(value);
      } catch (error) {
        reportListenerError(error, String(event));
      }
    }
  }

  /** How many listeners are registered, over all events. */
  get size(): number {
    let n = 0;
    for (const set of this.#listeners.values()) n += set.size;
    return n;
  }

  /** Removes every listener. */
  clear(): void {
    this.#listeners.clear();
  }
}

function reportListenerError(error: unknown, event: string): void {
  const message = `a supervisor "${event}" listener threw (the supervisor went on): ${error instanceof Error ? error.message : String(error)}`;
  const proc = (globalThis as { process?: { emitWarning?: (w: string, o: object) => void } }).process;
  if (typeof proc?.emitWarning === "function") {
    const detail = error instanceof Error && error.stack !== undefined ? error.stack : undefined;
    proc.emitWarning(message, { type: "RobustlySupervisorWarning", detail });
  } else {
    console.error(`robustly: ${message}`);
  }
}
