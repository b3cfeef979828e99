/**
 * A bulkhead (cockatiel's `bulkhead`, Polly's concurrency limiter): at most `limit` executions at once,
 * at most `queue` more waiting their turn in order, the rest refused at once. It keeps a struggling
 * dependency from tying up every caller, and sheds load instead of queueing it without end.
 */
import { watchAbort } from "../core/abort.js";
import { OptionError } from "../core/errors.js";
import { type CallbackErrorHandler, type Disposable, Events, safeCall, warnOnce } from "../core/events.js";
import { checkKeys, read } from "../core/schema.js";
import { BULKHEAD_CHECKS } from "./checks.js";

/** The largest `limit` and `queue` a bulkhead takes (1e9). */
export const MAX_BULKHEAD = 1_000_000_000;

/** Refused at once: `limit` executions are running and `queue` are waiting. */
export class BulkheadRejectedError extends Error {
  override readonly name = "BulkheadRejectedError";
  /** The bulkhead's limit on executions at once. */
  readonly limit: number;
  /** The bulkhead's limit on executions waiting. */
  readonly queue: number;
  constructor(limit: number, queue: number) {
    super(`the bulkhead is full: ${limit} running and ${queue} waiting`);
    this.limit = limit;
    this.queue = queue;
  }
}

export interface BulkheadOptions {
  /** Executions at once, an integer in [1, 1e9]. Required. */
  limit: number;
  /** Executions waiting for a place, first come first served, an integer in [0, 1e9]. Default 0. */
  queue?: number;
  /** Receives what an event listener threw (or rejected with). Default: one warning line. */
  onCallbackError?: CallbackErrorHandler;
}

export interface BulkheadEvents extends Record<string, unknown> {
  /** An execution was refused; the counts are those that filled the bulkhead. */
  rejected: { readonly running: number; readonly queued: number };
  /** An execution waits for a place; `position` 1 is next. */
  queued: { readonly position: number };
  /** An execution got a place; `waited` when it queued first. */
  started: { readonly waited: boolean };
}

/**
 * Ends a hold on a bulkhead: a running execution's place is freed (and the next waiter starts), a waiting
 * one leaves the queue. Only the first call does anything.
 */
export type Release = () => void;

const WAITING = 0;
const RUNNING = 1;
const DONE = 2;

/** One execution's hold on the bulkhead; a waiting one is a node of the queue (a doubly linked list). */
interface Hold {
  state: typeof WAITING | typeof RUNNING | typeof DONE;
  start: ((release: Release) => void) | undefined;
  release: Release;
  prev: Hold | undefined;
  next: Hold | undefined;
}

/** Checks a bulkhead's options, naming each bad one under `where` ("bulkhead" or "steps.bulkhead"). */
export function checkBulkheadOptions(
  where: string,
  options: unknown,
): Required<Omit<BulkheadOptions, "onCallbackError">> {
  if (options === undefined || options === null || typeof options !== "object") {
    throw new OptionError(where, options, "an object { limit, queue? } (limit is required)");
  }
  checkKeys(BULKHEAD_CHECKS, options, where);
  const o = options as Partial<BulkheadOptions>;
  const field = <V>(key: keyof BulkheadOptions): V => read(BULKHEAD_CHECKS, key, o[key], `${where}: ${key}`);
  const limit = field<number>("limit");
  const queue = field<number | undefined>("queue") ?? 0;
  field("onCallbackError");
  return { limit, queue };
}

/**
 * A bulkhead many calls share: `bulkhead.execute(fn, signal)`, or `steps.bulkhead(bulkhead)` in as many
 * pipelines as should share its places.
 */
export class Bulkhead {
  /** Executions at once. */
  readonly limit: number;
  /** Executions that may wait. */
  readonly queue: number;
  readonly #events: Events<BulkheadEvents>;
  readonly #onCallbackError: CallbackErrorHandler;
  #running = 0;
  #queued = 0;
  // The waiters, first come first served: O(1) to join, to leave from anywhere, and to serve.
  #head: Hold | undefined;
  #tail: Hold | undefined;
  /** True while `#serve` hands out places (a release made meanwhile is picked up by its loop). */
  #serving = false;

  constructor(options: BulkheadOptions) {
    const { limit, queue } = checkBulkheadOptions("bulkhead", options);
    this.limit = limit;
    this.queue = queue;
    this.#onCallbackError = options.onCallbackError ?? warnOnce;
    this.#events = new Events<BulkheadEvents>(this.#onCallbackError);
  }

  /** Executions running now (holding a place). */
  get running(): number {
    return this.#running;
  }

  /** Executions waiting now. */
  get queued(): number {
    return this.#queued;
  }

  /** Places free now (`limit − running`). */
  get available(): number {
    return this.limit - this.#running;
  }

  /** Listens to `rejected`, `queued` or `started` until the handle is disposed. */
  on<K extends keyof BulkheadEvents>(
    event: K,
    listener: (payload: BulkheadEvents[K]) => unknown,
  ): Disposable {
    return this.#events.on(event, listener);
  }

  /**
   * Asks for a place (for steps and other code that runs executions itself). When a place is free and
   * nobody waits, `start(release)` is called at once, before `acquire` returns; when the queue has room,
   * it is called when the execution's turn comes; otherwise `acquire` throws `BulkheadRejectedError`.
   *
   * The returned `release` is the one `start` receives: call it exactly when the execution ends, whether
   * it is still waiting (it leaves the queue, and `start` will never be called) or running (its place goes
   * to the next waiter). Calls after the first do nothing. A `start` that throws has its place freed; the
   * error is thrown from `acquire`, or, for a waiter, goes to `onCallbackError`.
   */
  acquire(start: (release: Release) => void): Release {
    if (this.#running < this.limit && this.#queued === 0) {
      const hold = this.#hold(undefined);
      hold.state = RUNNING;
      this.#running += 1;
      if (this.#events.has("started")) this.#events.emit("started", { waited: false });
      try {
        start(hold.release);
      } catch (error) {
        hold.release();
        throw error;
      }
      return hold.release;
    }
    if (this.#queued >= this.queue) {
      if (this.#events.has("rejected")) {
        this.#events.emit("rejected", { running: this.#running, queued: this.#queued });
      }
      throw new BulkheadRejectedError(this.limit, this.queue);
    }
    const hold = this.#hold(start);
    hold.prev = this.#tail;
    if (this.#tail === undefined) this.#head = hold;
    else this.#tail.next = hold;
    this.#tail = hold;
    this.#queued += 1;
    if (this.#events.has("queued")) this.#events.emit("queued", { position: this.#queued });
    return hold.release;
  }

  #hold(start: ((release: Release) => void) | undefined): Hold {
    const hold: Hold = {
      state: WAITING,
      start,
      release: () => {
        if (hold.state === RUNNING) {
          hold.state = DONE;
          this.#running -= 1;
          this.#serve();
        } else if (hold.state === WAITING) {
          hold.state = DONE;
          this.#unlink(hold);
          this.#queued -= 1;
        }
      },
      prev: undefined,
      next: undefined,
    };
    return hold;
  }

  #unlink(hold: Hold): void {
    if (hold.prev === undefined) this.#head = hold.next;
    else hold.prev.next = hold.next;
    if (hold.next === undefined) this.#tail = hold.prev;
    else hold.next.prev = hold.prev;
    hold.prev = undefined;
    hold.next = undefined;
    hold.start = undefined;
  }

  /** Hands free places to the waiters at the head of the line, in order. */
  #serve(): void {
    // Not reentrant: a waiter that ends at once (a synchronous operation) frees its place within its own
    // start; this loop hands it on, instead of a recursion as deep as the queue.
    if (this.#serving) return;
    this.#serving = true;
    try {
      while (this.#running < this.limit && this.#head !== undefined) {
        const hold = this.#head;
        const start = hold.start as (release: Release) => void;
        this.#unlink(hold);
        this.#queued -= 1;
        this.#running += 1;
        hold.state = RUNNING;
        if (this.#events.has("started")) this.#events.emit("started", { waited: true });
        safeCall(this.#onCallbackError, "start", () => {
          try {
            start(hold.release);
          } catch (error) {
            hold.release();
            throw error;
          }
        });
      }
    } finally {
      this.#serving = false;
    }
  }

  /**
   * Runs `fn` in the bulkhead: at once if a place is free, after waiting its turn if the queue has room,
   * else rejected at once with `BulkheadRejectedError`. With a `signal`, an abort takes a waiting call out
   * of the queue, or frees a running call's place, and rejects at once with its reason (what `fn` answers
   * later is ignored); no listener is left on the signal once the call has settled.
   *
   * @example
   * const pool = bulkhead({ limit: 4, queue: 100 });
   * const body = await pool.execute((signal) => fetch(url, { signal }), request.signal);
   */
  execute<T>(fn: (signal?: AbortSignal) => T | PromiseLike<T>, signal?: AbortSignal): Promise<T> {
    if (typeof fn !== "function")
      return Promise.reject(new OptionError("bulkhead.execute: fn", fn, "a function"));
    if (signal?.aborted) return Promise.reject(signal.reason);
    return new Promise<T>((resolve, reject) => {
      let done = false;
      let unwatch: () => void = noop;
      const finish = (release: Release, ok: boolean, outcome: unknown) => {
        if (done) return;
        done = true;
        unwatch();
        release();
        if (ok) resolve(outcome as T);
        else reject(outcome);
      };
      let release: Release;
      try {
        release = this.acquire((free) => {
          let result: T | PromiseLike<T>;
          try {
            result = fn(signal);
          } catch (error) {
            finish(free, false, error);
            return;
          }
          Promise.resolve(result).then(
            (value) => finish(free, true, value),
            (error: unknown) => finish(free, false, error),
          );
        });
      } catch (error) {
        reject(error);
        return;
      }
      if (done || signal === undefined) return;
      // Aborted already (by `fn`, or by a listener of this bulkhead's events), or from now on.
      if (signal.aborted) finish(release, false, signal.reason);
      else unwatch = watchAbort(signal, () => finish(release, false, signal.reason));
    });
  }
}

function noop(): void {}

/**
 * A bulkhead to share among calls: `steps.bulkhead(pool)` in as many pipelines as should share it, or
 * `pool.execute(fn, signal)`.
 *
 * @example
 * const pool = bulkhead({ limit: 10, queue: 100 });
 * const p = pipeline(steps.bulkhead(pool), steps.retry({ maxRetries: 2 }));
 */
export function bulkhead(options: BulkheadOptions): Bulkhead {
  return new Bulkhead(options);
}
