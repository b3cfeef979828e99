/**
 * Calling code that may answer with a value, a throw, a promise or any thenable, and hearing of its
 * outcome through callbacks. Nothing here waits for a microtask, so a thenable that settles synchronously
 * (the simulator's) is heard of synchronously too.
 */

/**
 * Whether `value` is to be waited for. An object whose `then` getter throws is one (it never throws here):
 * waiting for it, as `settleWith` and `await` do, fails with the getter's error, so that a hostile answer is
 * the outcome of whatever produced it instead of an exception in the code that looked at it.
 */
export function isThenable(value: unknown): value is PromiseLike<unknown> {
  if (value === null || (typeof value !== "object" && typeof value !== "function")) return false;
  try {
    return typeof (value as PromiseLike<unknown>).then === "function";
  } catch {
    return true;
  }
}

/** What `Eventual.listenBy` calls when the eventual settles. */
export interface OutcomeListener<T> {
  heard(value: T): void;
  failed(error: unknown): void;
}

/** Marks an eventual's first listener as an object (`listenBy`) rather than a callback. */
const HEARD_BY = (): void => {};

/**
 * A minimal thenable that settles once and calls its listeners synchronously as it settles (or at once,
 * when it has settled already). The pipeline's steps answer with it, so that a chain of steps over an
 * operation that settles synchronously settles synchronously as a whole. `then` gives a real promise for
 * code that chains on it; `await` works on it like on any thenable.
 */
export class Eventual<T> implements PromiseLike<T> {
  /** 0 pending, 1 fulfilled, 2 rejected. */
  #state: 0 | 1 | 2 = 0;
  #value: unknown;
  // The first listener in fields (the usual case: one), any more in a list.
  #onValue: ((value: T) => void) | undefined;
  #onError: ((error: unknown) => void) | undefined;
  #more: [(value: T) => void, (error: unknown) => void][] | undefined;

  /** Whether it has fulfilled (then `value` holds the value). */
  get fulfilled(): boolean {
    return this.#state === 1;
  }

  /** The value it fulfilled with; undefined while it has not. */
  get value(): T | undefined {
    return this.#state === 1 ? (this.#value as T) : undefined;
  }

  /** Settles with `value` (ignored once settled). */
  resolve(value: T): void {
    this.#settle(1, value);
  }

  /** Settles with `error` (ignored once settled). */
  reject(error: unknown): void {
    this.#settle(2, error);
  }

  #settle(state: 1 | 2, value: unknown): void {
    if (this.#state !== 0) return;
    this.#state = state;
    this.#value = value;
    const onValue = this.#onValue;
    const onError = this.#onError;
    const more = this.#more;
    this.#onValue = undefined;
    this.#onError = undefined;
    this.#more = undefined;
    if (onValue === undefined) return;
    if (onError === HEARD_BY) {
      // The first listener is an object (`listenBy`), kept where `onValue` would be.
      const listener = onValue as unknown as OutcomeListener<T>;
      if (state === 1) listener.heard(value as T);
      else listener.failed(value);
    } else if (state === 1) onValue(value as T);
    else (onError as (error: unknown) => void)(value);
    if (more === undefined) return;
    for (const [next, fail] of more) {
      if (state === 1) next(value as T);
      else fail(value);
    }
  }

  /** Calls exactly one of the two when this settles (at once if it has). */
  listen(onValue: (value: T) => void, onError: (error: unknown) => void): void {
    if (this.#state === 1) onValue(this.#value as T);
    else if (this.#state === 2) onError(this.#value);
    else if (this.#onValue === undefined) {
      this.#onValue = onValue;
      this.#onError = onError;
    } else {
      this.#more ??= [];
      this.#more.push([onValue, onError]);
    }
  }

  /**
   * As `listen`, with an object instead of two callbacks: `heard` or `failed` is called. A caller that
   * listens to many eventuals (an attempt each) makes one small object where two closures would do.
   */
  listenBy(listener: OutcomeListener<T>): void {
    if (this.#state === 1) listener.heard(this.#value as T);
    else if (this.#state === 2) listener.failed(this.#value);
    else if (this.#onValue === undefined) {
      this.#onValue = listener as unknown as (value: T) => void;
      this.#onError = HEARD_BY;
    } else
      this.listen(
        (value) => listener.heard(value),
        (error) => listener.failed(error),
      );
  }

  // biome-ignore lint/suspicious/noThenProperty: an Eventual is a thenable by design, so that `await` and promise code take it
  then<A = T, B = never>(
    onfulfilled?: ((value: T) => A | PromiseLike<A>) | null,
    onrejected?: ((reason: unknown) => B | PromiseLike<B>) | null,
  ): Promise<A | B> {
    return new Promise<T>((resolve, reject) => this.listen(resolve, reject)).then(onfulfilled, onrejected);
  }
}

/**
 * Calls `run` and reports its outcome through exactly one of `onValue` or `onError`: a synchronous value
 * or throw at once, a thenable's when it settles (a thenable whose `then` throws reports that error).
 */
export function invoke<T>(
  run: () => T | PromiseLike<T>,
  onValue: (value: T) => void,
  onError: (error: unknown) => void,
): void {
  let result: T | PromiseLike<T>;
  try {
    result = run();
  } catch (error) {
    onError(error);
    return;
  }
  settleWith(result, onValue, onError);
}

/**
 * How many thenables one outcome may pass through, each answering with the next (a thenable of another kind
 * than a promise may answer with a thenable, which is waited for as `await` waits for it): past it the
 * outcome is a `TypeError`, so that a thenable that answers with itself, or a ring of them, ends.
 */
export const MAX_ADOPTED = 100;

/**
 * Reports the outcome of `result` (a value or a thenable) through exactly one of the two callbacks. A
 * thenable's value that is itself a thenable is waited for too, up to `MAX_ADOPTED` deep.
 */
export function settleWith<T>(
  result: T | PromiseLike<T>,
  onValue: (value: T) => void,
  onError: (error: unknown) => void,
  depth = 0,
): void {
  if (result instanceof Eventual) {
    (result as Eventual<T>).listen(onValue, onError);
    return;
  }
  if (!isThenable(result)) {
    onValue(result as T);
    return;
  }
  let called = false;
  // A promise's value is never a thenable (a promise waits for one itself); another thenable's may be.
  const adopt = !(result instanceof Promise);
  try {
    (result as PromiseLike<T>).then(
      (value) => {
        if (called) return;
        called = true;
        if (!adopt || !isThenable(value)) onValue(value);
        else if (depth >= MAX_ADOPTED) {
          onError(
            new TypeError(`a thenable answered with a thenable more than ${MAX_ADOPTED} times in a row`),
          );
        } else settleWith(value, onValue, onError, depth + 1);
      },
      (error) => {
        if (called) return;
        called = true;
        onError(error);
      },
    );
  } catch (error) {
    if (!called) {
      called = true;
      onError(error);
    }
  }
}
