/**
 * A thenable that settles synchronously. The simulated operations return it: when the simulated server
 * answers, the retry loop's callbacks run at once, inside the engine's event, instead of in a microtask
 * after it. It chains like a promise (`then` returns a new `Outcome`, adopting any thenable a callback
 * returns), so an operation of several calls (read, then write) reads as it would with promises.
 */
type Settled<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly error: unknown };

export class Outcome<T> implements PromiseLike<T> {
  #settled: Settled<T> | undefined;
  #waiting: ((settled: Settled<T>) => void)[] | undefined;

  /** An outcome settled with `value` already. */
  static of<T>(value: T): Outcome<T> {
    const outcome = new Outcome<T>();
    outcome.resolve(value);
    return outcome;
  }

  get settled(): boolean {
    return this.#settled !== undefined;
  }

  resolve(value: T): void {
    this.#settle({ ok: true, value });
  }

  reject(error: unknown): void {
    this.#settle({ ok: false, error });
  }

  #settle(settled: Settled<T>): void {
    if (this.#settled !== undefined) return;
    this.#settled = settled;
    const waiting = this.#waiting;
    this.#waiting = undefined;
    if (waiting !== undefined) for (const callback of waiting) callback(settled);
  }

  #listen(callback: (settled: Settled<T>) => void): void {
    if (this.#settled !== undefined) {
      callback(this.#settled);
      return;
    }
    if (this.#waiting === undefined) this.#waiting = [callback];
    else this.#waiting.push(callback);
  }

  // biome-ignore lint/suspicious/noThenProperty: an Outcome is a thenable by design, so the retry loop can treat it as a promise
  then<A = T, B = never>(
    onFulfilled?: ((value: T) => A | PromiseLike<A>) | null,
    onRejected?: ((error: unknown) => B | PromiseLike<B>) | null,
  ): Outcome<A | B> {
    const next = new Outcome<A | B>();
    this.#listen((settled) => {
      const handler = settled.ok ? onFulfilled : onRejected;
      if (handler == null) {
        if (settled.ok) next.resolve(settled.value as unknown as A);
        else next.reject(settled.error);
        return;
      }
      let result: A | B | PromiseLike<A | B>;
      try {
        result = settled.ok
          ? (handler as (value: T) => A | PromiseLike<A>)(settled.value)
          : (handler as (error: unknown) => B | PromiseLike<B>)(settled.error);
      } catch (error) {
        next.reject(error);
        return;
      }
      if (
        result !== null &&
        typeof result === "object" &&
        typeof (result as PromiseLike<A | B>).then === "function"
      ) {
        (result as PromiseLike<A | B>).then(
          (value) => next.resolve(value),
          (error: unknown) => next.reject(error),
        );
      } else {
        next.resolve(result as A | B);
      }
    });
    return next;
  }
}
