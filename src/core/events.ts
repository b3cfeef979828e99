/**
 * A small typed event emitter for robustly's stateful policies: `on(event, listener)` returns a
 * `Disposable`, so nothing stays subscribed by accident. A listener that throws is reported as a process
 * warning and never disturbs the policy or the other listeners.
 */
export interface Disposable {
  dispose(): void;
}

export class Events<M extends Record<string, unknown>> {
  readonly #listeners = new Map<keyof M, Set<(payload: never) => void>>();

  /** Calls `listener` on every `event` until the returned handle is disposed. */
  on<K extends keyof M>(event: K, listener: (payload: M[K]) => void): Disposable {
    let set = this.#listeners.get(event);
    if (set === undefined) {
      set = new Set();
      this.#listeners.set(event, set);
    }
    set.add(listener as (payload: never) => void);
    return {
      dispose: () => {
        set.delete(listener as (payload: never) => void);
      },
    };
  }

  /** How many listeners `event` has. */
  count(event: keyof M): number {
    return this.#listeners.get(event)?.size ?? 0;
  }

  emit<K extends keyof M>(event: K, payload: M[K]): void {
    const set = this.#listeners.get(event);
    if (set === undefined || set.size === 0) return;
    for (const listener of [...set]) {
      try {
        (listener as (payload: M[K]) => void)(payload);
      } catch (error) {
        const proc = (globalThis as { process?: { emitWarning?: (w: string, o: object) => void } }).process;
        proc?.emitWarning?.(
          `a listener of "${String(event)}" threw: ${error instanceof Error ? error.message : String(error)}`,
          {
            type: "RobustlyListenerWarning",
          },
        );
      }
    }
  }
}
