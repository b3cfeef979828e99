/**
 * What the limiters that admit calls one by one share (the rate limiter, the adaptive concurrency limit):
 * a first-come-first-served line of waiters, and `execute`'s way of running a call once it is admitted.
 */
import { watchAbort } from "./abort.js";
import { OptionError } from "./errors.js";

/** One place in a `WaitLine`. */
export interface WaitNode<T> {
  value: T | undefined;
  prev: WaitNode<T> | undefined;
  next: WaitNode<T> | undefined;
  /** Out of the line: served, or left. */
  done: boolean;
}

/** A first-come-first-served line: O(1) to join, to leave from anywhere, and to serve. */
export class WaitLine<T> {
  #head: WaitNode<T> | undefined;
  #tail: WaitNode<T> | undefined;
  /** Waiters in the line now. */
  size = 0;

  /** The first waiter's value, without serving it. */
  get first(): T | undefined {
    return this.#head?.value;
  }

  join(value: T): WaitNode<T> {
    const node: WaitNode<T> = { value, prev: this.#tail, next: undefined, done: false };
    if (this.#tail === undefined) this.#head = node;
    else this.#tail.next = node;
    this.#tail = node;
    this.size += 1;
    return node;
  }

  /** Takes `node` out of the line; false when it was out already (served, or gone). */
  leave(node: WaitNode<T>): boolean {
    if (node.done) return false;
    node.done = true;
    if (node.prev === undefined) this.#head = node.next;
    else node.prev.next = node.next;
    if (node.next === undefined) this.#tail = node.prev;
    else node.next.prev = node.prev;
    node.prev = undefined;
    node.next = undefined;
    node.value = undefined;
    this.size -= 1;
    return true;
  }

  /** The places in the line, first to last (a place may be left while the walk goes on). */
  *nodes(): Generator<WaitNode<T>> {
    for (let node = this.#head; node !== undefined; ) {
      const next = node.next;
      yield node;
      node = next;
    }
  }

  /** Serves the first waiter: out of the line, its value. */
  shift(): T | undefined {
    const head = this.#head;
    if (head === undefined) return undefined;
    const value = head.value;
    this.leave(head);
    return value;
  }
}

/**
 * A limiter's `execute`: asks `acquire` for admission and runs `fn(signal)` once admitted (at once, or
 * when its turn comes); a refusal (what `acquire` throws, or what it hands `refuse` later) rejects. While it waits, an abort of
 * `signal` takes it out of the line (`acquire`'s answer) and rejects with the reason; no listener is left
 * on the signal once it runs. `ended`, if given, hears how `fn` ended, with the permit it was admitted on.
 */
export function executeAdmitted<T, P>(
  where: string,
  acquire: (start: (permit: P) => void, refuse: (error: unknown) => void) => () => void,
  fn: (signal?: AbortSignal) => T | PromiseLike<T>,
  signal: AbortSignal | undefined,
  ended?: (permit: P, ok: boolean, outcome: unknown) => void,
): Promise<T> {
  if (typeof fn !== "function")
    return Promise.reject(new OptionError(`${where}.execute: fn`, fn, "a function"));
  if (signal?.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    let started = false;
    let unwatch: () => void = noop;
    const settle = (permit: P, ok: boolean, outcome: unknown) => {
      ended?.(permit, ok, outcome);
      if (ok) resolve(outcome as T);
      else reject(outcome);
    };
    let leave: () => void;
    try {
      leave = acquire(
        (permit) => {
          started = true;
          unwatch();
          let result: T | PromiseLike<T>;
          try {
            result = fn(signal);
          } catch (error) {
            settle(permit, false, error);
            return;
          }
          Promise.resolve(result).then(
            (value) => settle(permit, true, value),
            (error: unknown) => settle(permit, false, error),
          );
        },
        (error) => {
          // Refused after waiting (a shared limiter's wait that ran past maxWait).
          unwatch();
          reject(error);
        },
      );
    } catch (error) {
      reject(error);
      return;
    }
    if (started || signal === undefined) return;
    // Aborted while it joined the line (by a listener of the limiter's events).
    if (signal.aborted) {
      leave();
      reject(signal.reason);
      return;
    }
    unwatch = watchAbort(signal, () => {
      if (started) return;
      leave();
      reject(signal.reason);
    });
  });
}

function noop(): void {}
