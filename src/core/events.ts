/**
 * The one event model: every step and controller emits typed events through `on(event, listener)`, which
 * returns a `Disposable`, so nothing stays subscribed by accident. A listener that throws, or returns a
 * promise that rejects, is reported to an error handler (by default one process warning line) and never
 * disturbs the emitter, the other listeners or the call's outcome.
 */
import { watchAbort } from "./abort.js";
import { isThenable } from "./invoke.js";

export interface Disposable {
  dispose(): void;
}

/** Receives what a callback or listener threw (or rejected with), and the name of the callback or event. */
export type CallbackErrorHandler = (error: unknown, callback: string) => void;

/** The default handler: one warning line (`process.emitWarning` where there is one, else `console.error`). */
export function warnOnce(error: unknown, callback: string): void {
  const what = callback.startsWith("on") ? `the ${callback} callback` : `a "${callback}" listener`;
  warn(`${what} threw (robustly went on): ${messageOf(error)}`, "RobustlyCallbackWarning");
}

/** One warning line of the given type, wherever robustly runs. */
export function warn(message: string, type: string): void {
  const proc = (globalThis as { process?: { emitWarning?: (w: string, o: object) => void } }).process;
  if (typeof proc?.emitWarning === "function") proc.emitWarning(message, { type });
  else console.error(`robustly: ${message}`);
}

/** What an error says, in one line. */
export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * Calls `call`; a throw or a rejected promise goes to `handler` (and if the handler throws too, nowhere:
 * there is nothing left to tell, and the caller must go on).
 */
export function safeCall(handler: CallbackErrorHandler, name: string, call: () => unknown): void {
  try {
    const result = call();
    if (isThenable(result)) {
      result.then(undefined, (error: unknown) => report(handler, name, error));
    }
  } catch (error) {
    report(handler, name, error);
  }
}

/** Hands `error` (thrown by the callback `name`) to `handler`, which may itself fail: that goes nowhere. */
export function report(handler: CallbackErrorHandler, name: string, error: unknown): void {
  try {
    // The error handler itself may fail, at once or later: there is nowhere left to send that.
    const result: unknown = handler(error, name);
    if (isThenable(result)) result.then(undefined, ignore);
  } catch {
    // As above.
  }
}

const ignore = () => {};

export class Events<M extends Record<string, unknown>> {
  readonly #listeners = new Map<keyof M, Set<(payload: never) => unknown>>();
  /** Listeners over all events, kept so that `any()` costs no walk over them. */
  #count = 0;
  /** Where a listener's throw or rejection goes. */
  onListenerError: CallbackErrorHandler;

  constructor(onListenerError: CallbackErrorHandler = warnOnce) {
    this.onListenerError = onListenerError;
  }

  /** Calls `listener` on every `event` until the returned handle is disposed. */
  on<K extends keyof M>(event: K, listener: (payload: M[K]) => unknown): Disposable {
    if (typeof listener !== "function") {
      throw new TypeError(`on("${String(event)}", listener): listener must be a function`);
    }
    let set = this.#listeners.get(event);
    if (set === undefined) {
      set = new Set();
      this.#listeners.set(event, set);
    }
    // A wrapper, so that the same function added twice is two listeners, each with its own dispose.
    const entry = (payload: never) => (listener as (payload: never) => unknown)(payload);
    set.add(entry);
    this.#count += 1;
    return {
      dispose: () => {
        if (set.delete(entry)) this.#count -= 1;
      },
    };
  }

  /** How many listeners there are, over all events. */
  get size(): number {
    let n = 0;
    for (const set of this.#listeners.values()) n += set.size;
    return n;
  }

  /** Removes every listener. */
  clear(): void {
    // Emptied too, so that a handle disposed later finds nothing to take off the count.
    for (const set of this.#listeners.values()) set.clear();
    this.#listeners.clear();
    this.#count = 0;
  }

  /** Whether anyone listens to any event. */
  any(): boolean {
    return this.#count > 0;
  }

  /** How many listeners `event` has. */
  count(event: keyof M): number {
    return this.#listeners.get(event)?.size ?? 0;
  }

  /** Whether anyone listens to `event` (cheap: for skipping the making of a payload). */
  has(event: keyof M): boolean {
    const set = this.#listeners.get(event);
    return set !== undefined && set.size > 0;
  }

  emit<K extends keyof M>(event: K, payload: M[K]): void {
    const set = this.#listeners.get(event);
    if (set === undefined || set.size === 0) return;
    const name = String(event);
    for (const listener of [...set]) {
      safeCall(this.onListenerError, name, () => (listener as (payload: M[K]) => unknown)(payload));
    }
  }
}

/** Anything with the one event model's `on(event, listener) → Disposable`: a breaker, a step, a budget… */
export interface EventSource {
  // biome-ignore lint/suspicious/noExplicitAny: every source's own generic `on` must fit, whatever its events
  on(event: never, listener: (payload: any) => unknown): Disposable;
}

/**
 * The next `event` of `source`, as a promise of its payload (cockatiel's `Event.toPromise`). Its listener is
 * removed as the event comes, or as `signal` aborts (the promise then rejects with the signal's reason),
 * so nothing stays subscribed. TypeScript cannot read a payload's type off a source's generic `on`: name
 * it, as `once<BreakerEvents["change"]>(breaker, "change")`.
 *
 * @example
 * const { to } = await once<BreakerEvents["change"]>(breaker, "change", { signal: AbortSignal.timeout(60_000) });
 */
export function once<P = unknown>(
  source: EventSource,
  event: string,
  options?: { readonly signal?: AbortSignal },
): Promise<P> {
  const signal = options?.signal;
  if (signal?.aborted) return Promise.reject(signal.reason);
  return new Promise<P>((resolve, reject) => {
    let unwatch: (() => void) | undefined;
    const listening = source.on(event as never, (payload: P) => {
      listening.dispose();
      unwatch?.();
      resolve(payload);
    });
    if (signal !== undefined) {
      unwatch = watchAbort(signal, () => {
        listening.dispose();
        reject(signal.reason);
      });
    }
  });
}
