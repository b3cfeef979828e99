/**
 * A thenable that settles synchronously. The simulated operations return it: when the simulated server
 * answers, the retry loop's callbacks run at once, inside the engine's event, instead of in a microtask
 * after it. It chains like a promise (`then` returns a new `Outcome`, adopting any thenable a callback
 * returns), so an operation of several calls (read, then write) reads as it would with promises.
 *
 * Thousands of outcomes can wait at once in an overloaded simulated server, so a waiting outcome keeps its
 * first reaction in fields of its own rather than in a list of closures.
 */
const PENDING = 0;
const FULFILLED = 1;
const REJECTED = 2;

type Handler = ((value: never) => unknown) | null | undefined;

/** What `listenBy` calls when an outcome settles: an object, so that a listener needs no closures. */
export interface Listener<T> {
  heard(value: T): void;
  failed(error: unknown): void;
}

interface Reaction {
  readonly onFulfilled: Handler;
  readonly onRejected: Handler;
  readonly next: Outcome<unknown>;
}

export class Outcome<T> implements PromiseLike<T> {
  #state: typeof PENDING | typeof FULFILLED | typeof REJECTED = PENDING;
  #result: unknown;
  // The first reaction, inline; any further ones in a list.
  #onFulfilled: Handler;
  #onRejected: Handler;
  #next: Outcome<unknown> | undefined;
  #more: Reaction[] | undefined;

  /** An outcome settled with `value` already. */
  static of<T>(value: T): Outcome<T> {
    const outcome = new Outcome<T>();
    outcome.resolve(value);
    return outcome;
  }

  get settled(): boolean {
    return this.#state !== PENDING;
  }

  resolve(value: T): void {
    this.#settle(FULFILLED, value);
  }

  reject(error: unknown): void {
    this.#settle(REJECTED, error);
  }

  #settle(state: typeof FULFILLED | typeof REJECTED, result: unknown): void {
    if (this.#state !== PENDING) return;
    this.#state = state;
    this.#result = result;
    const next = this.#next;
    if (next === undefined) return;
    const onFulfilled = this.#onFulfilled;
    const onRejected = this.#onRejected;
    const more = this.#more;
    this.#onFulfilled = undefined;
    this.#onRejected = undefined;
    this.#next = undefined;
    this.#more = undefined;
    react(state, result, onFulfilled, onRejected, next);
    if (more !== undefined) for (const r of more) react(state, result, r.onFulfilled, r.onRejected, r.next);
  }

  /**
   * Calls one of the two when this settles (at once if it has), like `then` but building no outcome to
   * chain on: for the simulator's own steps, which only need to hear of the result.
   */
  listen(onValue: (value: T) => void, onError: (error: unknown) => void): void {
    if (this.#state !== PENDING) {
      if (this.#state === FULFILLED) onValue(this.#result as T);
      else onError(this.#result);
    } else if (this.#next === undefined) {
      this.#onFulfilled = onValue as Handler;
      this.#onRejected = onError as Handler;
      this.#next = HEARD;
    } else {
      const reaction = { onFulfilled: onValue as Handler, onRejected: onError as Handler, next: HEARD };
      if (this.#more === undefined) this.#more = [reaction];
      else this.#more.push(reaction);
    }
  }

  /** As `listen`, with the two callbacks as the methods of one object. */
  listenBy(listener: Listener<T>): void {
    if (this.#state !== PENDING) {
      if (this.#state === FULFILLED) listener.heard(this.#result as T);
      else listener.failed(this.#result);
    } else if (this.#next === undefined) {
      this.#onFulfilled = listener as unknown as Handler;
      this.#onRejected = undefined;
      this.#next = HEARD_BY;
    } else {
      const reaction = { onFulfilled: listener as unknown as Handler, onRejected: undefined, next: HEARD_BY };
      if (this.#more === undefined) this.#more = [reaction];
      else this.#more.push(reaction);
    }
  }

  /**
   * Takes back the first listener `listen` (its `onValue`) or `listenBy` gave, if `listener` is it and it
   * has not been called: a request its client gave up on may wait in a simulated server for a long time,
   * and should not keep the client's state alive meanwhile.
   */
  unlisten(listener: ((value: T) => void) | Listener<T>): void {
    if ((this.#next !== HEARD && this.#next !== HEARD_BY) || this.#onFulfilled !== listener) return;
    const more = this.#more?.shift();
    this.#onFulfilled = more?.onFulfilled;
    this.#onRejected = more?.onRejected;
    this.#next = more?.next;
    if (this.#more?.length === 0) this.#more = undefined;
    if (this.#next === undefined) this.abandoned();
  }

  /**
   * Called when `unlisten` has taken back the last listener of a pending outcome: nobody waits for it any
   * more. A server that holds many such outcomes (one per request its clients gave up on) lets go of it here.
   */
  protected abandoned(): void {}

  // biome-ignore lint/suspicious/noThenProperty: an Outcome is a thenable by design, so the retry loop can treat it as a promise
  then<A = T, B = never>(
    onFulfilled?: ((value: T) => A | PromiseLike<A>) | null,
    onRejected?: ((error: unknown) => B | PromiseLike<B>) | null,
  ): Outcome<A | B> {
    const next = new Outcome<A | B>();
    if (this.#state !== PENDING) {
      react(
        this.#state,
        this.#result,
        onFulfilled as Handler,
        onRejected as Handler,
        next as Outcome<unknown>,
      );
    } else if (this.#next === undefined) {
      this.#onFulfilled = onFulfilled as Handler;
      this.#onRejected = onRejected as Handler;
      this.#next = next as Outcome<unknown>;
    } else {
      const reaction = {
        onFulfilled: onFulfilled as Handler,
        onRejected: onRejected as Handler,
        next: next as Outcome<unknown>,
      };
      if (this.#more === undefined) this.#more = [reaction];
      else this.#more.push(reaction);
    }
    return next;
  }
}

/** The outcome `listen`'s reactions settle: settled already, so what a listener returns goes nowhere. */
const HEARD: Outcome<unknown> = Outcome.of(undefined);
/** As `HEARD`, for a reaction of `listenBy`: its `onFulfilled` is the listener object. */
const HEARD_BY: Outcome<unknown> = Outcome.of(undefined);

/** Runs one reaction to a settled outcome and settles `next` with what it gives. */
function react(
  state: typeof FULFILLED | typeof REJECTED,
  result: unknown,
  onFulfilled: Handler,
  onRejected: Handler,
  next: Outcome<unknown>,
): void {
  if (next === HEARD_BY) {
    const listener = onFulfilled as unknown as Listener<unknown>;
    // What a listener throws goes nowhere, as with `listen`'s reactions (their outcome is settled already).
    try {
      if (state === FULFILLED) listener.heard(result);
      else listener.failed(result);
    } catch {}
    return;
  }
  const handler = (state === FULFILLED ? onFulfilled : onRejected) as
    | ((value: unknown) => unknown)
    | null
    | undefined;
  if (handler == null) {
    if (state === FULFILLED) next.resolve(result);
    else next.reject(result);
    return;
  }
  let value: unknown;
  try {
    value = handler(result);
  } catch (error) {
    next.reject(error);
    return;
  }
  if (
    value !== null &&
    typeof value === "object" &&
    typeof (value as PromiseLike<unknown>).then === "function"
  ) {
    (value as PromiseLike<unknown>).then(
      (v) => next.resolve(v),
      (e: unknown) => next.reject(e),
    );
  } else {
    next.resolve(value);
  }
}
