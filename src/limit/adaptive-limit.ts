/**
 * An adaptive concurrency limit: at most `limit` calls at once, as a bulkhead, but the limit is found at run
 * time from what the calls see, as TCP finds a path's window: it grows while latency stays near its floor
 * and shrinks when latency rises or calls are dropped (a timeout, or an error `isDrop` says is congestion),
 * always within [min, max]. Calls over the limit wait in a bounded first-come-first-served queue or are
 * refused at once with `ConcurrencyLimitError`. The algorithms are in ./algorithms.ts.
 */
import { executeAdmitted, WaitLine } from "../core/admission.js";
import { type Clock, clockOption } from "../core/clock.js";
import { OptionError, TimeoutError } from "../core/errors.js";
import { type CallbackErrorHandler, type Disposable, Events, safeCall, warnOnce } from "../core/events.js";
import { checkKeys, read } from "../core/schema.js";
import { ALGORITHMS, type LimitAlgorithm, type LimitReason } from "./algorithms.js";
import { LIMIT_CHECKS, MAX_LIMIT } from "./checks.js";

/** Refused at once: `limit` calls are running and the queue is full. */
export class ConcurrencyLimitError extends Error {
  override readonly name = "ConcurrencyLimitError";
  /** The limit when the call was refused. */
  readonly limit: number;
  /** Calls running then. */
  readonly inFlight: number;
  constructor(limit: number, inFlight: number) {
    super(`the adaptive concurrency limit is reached: ${inFlight} running, limit ${limit}`);
    this.limit = limit;
    this.inFlight = inFlight;
  }
}

export interface AdaptiveLimitOptions {
  /** How the limit moves: "aimd", "vegas", "gradient2" (default), or an algorithm of your own. */
  algorithm?: "aimd" | "vegas" | "gradient2" | LimitAlgorithm;
  /** The least limit, an integer in [1, 1e6]. Default 1. */
  min?: number;
  /** The greatest limit, an integer in [min, 1e6]. Default 1000. */
  max?: number;
  /** The limit to start from, an integer in [min, max]. Default 20 (within [min, max]). */
  initial?: number;
  /** Calls that may wait for a place, first come first served, an integer in [0, 1e9]. Default 0. */
  queue?: number;
  /** Which errors are congestion (a drop): default a `TimeoutError`. Other errors leave the limit as it is. */
  isDrop?: (error: unknown) => boolean;
  /** Times the calls. Default: the real clock. */
  clock?: Clock;
  /** Receives what an event listener (or `isDrop`) threw. Default: one warning line. */
  onCallbackError?: CallbackErrorHandler;
}

export interface AdaptiveLimitEvents extends Record<string, unknown> {
  /** The limit moved (as admission sees it: a whole number), and why. */
  change: { readonly from: number; readonly to: number; readonly reason: LimitReason };
  /** A call was refused. */
  rejected: { readonly limit: number; readonly inFlight: number; readonly queued: number };
  /** A call waits for a place; `position` 1 is next. */
  queued: { readonly position: number };
}

/** An adaptive limit's state: one plain object. */
export interface AdaptiveLimitState {
  readonly algorithm: string;
  /** The limit admission uses now. */
  readonly limit: number;
  readonly inFlight: number;
  readonly queued: number;
}

/** What a call that got a place reports, once: its outcome, or nothing (`ignore`: no sample). */
export interface LimitPermit {
  /** It succeeded: a latency sample. */
  success(): void;
  /** It failed with `error`: a drop when `isDrop(error)`, else no sample. */
  failure(error: unknown): void;
  /** It ended without an outcome to learn from (its caller left): its place is freed, no sample. */
  ignore(): void;
}

/** Leaves the queue (a waiting call that no longer wants its place); nothing once it has one. */
export type LeaveLimit = () => void;

interface Checked {
  algorithm: LimitAlgorithm;
  min: number;
  max: number;
  initial: number;
  queue: number;
  isDrop: (error: unknown) => boolean;
  clock: Clock;
}

const isTimeout = (error: unknown) => error instanceof TimeoutError;

/** Checks an adaptive limit's options, naming each bad one under `where`. */
export function checkAdaptiveLimitOptions(where: string, options: unknown): Checked {
  const given = options === undefined ? {} : options;
  if (typeof given !== "object" || given === null) {
    throw new OptionError(where, options, "an object { algorithm?, min?, max?, initial?, queue?, isDrop? }");
  }
  checkKeys(LIMIT_CHECKS, given, where);
  const o = given as AdaptiveLimitOptions;
  const field = <V>(key: keyof AdaptiveLimitOptions): V =>
    read(LIMIT_CHECKS, key, o[key], `${where}: ${key}`);
  const min = field<number | undefined>("min") ?? 1;
  const max = field<number | undefined>("max") ?? Math.max(min, 1000);
  if (max < min) throw new OptionError(`${where}: max`, max, `an integer in [min (${min}), ${MAX_LIMIT}]`);
  const initial = field<number | undefined>("initial") ?? Math.min(max, Math.max(min, 20));
  if (initial < min || initial > max)
    throw new OptionError(`${where}: initial`, initial, `an integer in [min (${min}), max (${max})]`);
  const queue = field<number | undefined>("queue") ?? 0;
  const isDrop = field<((error: unknown) => boolean) | undefined>("isDrop") ?? isTimeout;
  field("onCallbackError");
  const named = o.algorithm ?? "gradient2";
  let algorithm: LimitAlgorithm;
  if (typeof named === "string" && Object.hasOwn(ALGORITHMS, named)) algorithm = ALGORITHMS[named]();
  else if (typeof named === "object" && named !== null && typeof named.update === "function")
    algorithm = named;
  else
    throw new OptionError(
      `${where}: algorithm`,
      named,
      `"aimd", "vegas", "gradient2", or an algorithm ({ name, update(limit, sample) })`,
    );
  const clock = clockOption(`${where}: clock`, o.clock, "a Clock (now() and setTimer())");
  return { algorithm, min, max, initial, queue, isDrop, clock };
}

/**
 * An adaptive concurrency limit many calls share: `limit.execute(fn, signal)`, or
 * `steps.adaptiveLimit(limit)` in as many pipelines as should share it.
 */
export class AdaptiveLimit {
  readonly min: number;
  readonly max: number;
  readonly queue: number;
  readonly #algorithm: LimitAlgorithm;
  readonly #isDrop: (error: unknown) => boolean;
  readonly #clock: Clock;
  readonly #events: Events<AdaptiveLimitEvents>;
  readonly #onCallbackError: CallbackErrorHandler;
  /** The limit as the algorithm keeps it (a fraction); admission uses its whole part. */
  #limit: number;
  #inFlight = 0;
  readonly #line = new WaitLine<(permit: LimitPermit) => void>();
  #serving = false;

  constructor(options: AdaptiveLimitOptions = {}) {
    const checked = checkAdaptiveLimitOptions("adaptiveLimit", options);
    this.min = checked.min;
    this.max = checked.max;
    this.queue = checked.queue;
    this.#algorithm = checked.algorithm;
    this.#isDrop = checked.isDrop;
    this.#clock = checked.clock;
    this.#limit = checked.initial;
    this.#onCallbackError = options.onCallbackError ?? warnOnce;
    this.#events = new Events<AdaptiveLimitEvents>(this.#onCallbackError);
  }

  /** The limit admission uses now: a whole number in [min, max]. */
  get limit(): number {
    return Math.floor(this.#limit);
  }

  /** Calls running now. */
  get inFlight(): number {
    return this.#inFlight;
  }

  /** Calls waiting now. */
  get queued(): number {
    return this.#line.size;
  }

  snapshot(): AdaptiveLimitState {
    return {
      algorithm: this.#algorithm.name,
      limit: this.limit,
      inFlight: this.#inFlight,
      queued: this.#line.size,
    };
  }

  /** Listens to `change`, `rejected` or `queued` until the handle is disposed. */
  on<K extends keyof AdaptiveLimitEvents>(
    event: K,
    listener: (payload: AdaptiveLimitEvents[K]) => unknown,
  ): Disposable {
    return this.#events.on(event, listener);
  }

  /**
   * Asks for a place (for steps and other code that runs calls itself). Under the limit with nobody
   * waiting, `start(permit)` is called at once, before `acquire` returns; when the queue has room, when the
   * call's turn comes; otherwise `acquire` throws `ConcurrencyLimitError`. The call reports its end through
   * the permit exactly once; the returned function takes a waiting call out of the queue.
   */
  acquire(start: (permit: LimitPermit) => void): LeaveLimit {
    const line = this.#line;
    if (line.size === 0 && this.#inFlight < this.limit) {
      const permit = this.#permit();
      try {
        start(permit);
      } catch (error) {
        permit.ignore();
        throw error;
      }
      return noop;
    }
    if (line.size >= this.queue) {
      if (this.#events.has("rejected"))
        this.#events.emit("rejected", { limit: this.limit, inFlight: this.#inFlight, queued: line.size });
      throw new ConcurrencyLimitError(this.limit, this.#inFlight);
    }
    const node = line.join(start);
    if (this.#events.has("queued")) this.#events.emit("queued", { position: line.size });
    return () => {
      line.leave(node);
    };
  }

  /** A place taken now: the call is in flight from here, timed from here. */
  #permit(): LimitPermit {
    this.#inFlight += 1;
    const inFlight = this.#inFlight;
    const started = this.#clock.now();
    let ended = false;
    const end = (sample: boolean, dropped: boolean) => {
      if (ended) return;
      ended = true;
      this.#inFlight -= 1;
      try {
        if (sample) this.#sample(this.#clock.now() - started, inFlight, dropped);
      } finally {
        this.#serve();
      }
    };
    return {
      success: () => end(true, false),
      failure: (error) => {
        let dropped = false;
        safeCall(this.#onCallbackError, "isDrop", () => {
          dropped = this.#isDrop(error) === true;
        });
        end(dropped, dropped);
      },
      ignore: () => end(false, false),
    };
  }

  /**
   * Tells the algorithm of one finished call, and moves the limit within [min, max]. A latency below 0 (a
   * clock that went back) counts as 0; one that is no finite number, or an answer that is none, changes
   * nothing.
   */
  #sample(latency: number, inFlight: number, dropped: boolean): void {
    if (!Number.isFinite(latency)) return;
    const from = this.limit;
    let next: unknown;
    let reason: unknown;
    // The algorithm's answer is read inside the guard too: a custom one may answer with getters that throw.
    safeCall(this.#onCallbackError, "algorithm", () => {
      const update = this.#algorithm.update(this.#limit, {
        latency: Math.max(0, latency),
        inFlight,
        dropped,
      });
      next = update?.limit;
      reason = update?.reason;
    });
    if (typeof next !== "number" || !Number.isFinite(next)) return;
    this.#limit = Math.min(this.max, Math.max(this.min, next));
    const to = this.limit;
    if (to !== from && this.#events.has("change"))
      this.#events.emit("change", {
        from,
        to,
        reason: typeof reason === "string" ? (reason as LimitReason) : "grow",
      });
  }

  /** Hands free places to the waiters at the head of the line, in order. */
  #serve(): void {
    if (this.#serving) return;
    this.#serving = true;
    try {
      while (this.#line.size > 0 && this.#inFlight < this.limit) {
        const start = this.#line.shift() as (permit: LimitPermit) => void;
        const permit = this.#permit();
        safeCall(this.#onCallbackError, "start", () => start(permit));
      }
    } finally {
      this.#serving = false;
    }
  }

  /**
   * Runs `fn` under the limit: at once if under it, after waiting its turn if the queue has room, else
   * rejected at once with `ConcurrencyLimitError`. Its latency (and a drop: by default a `TimeoutError`)
   * moves the limit. With a `signal`, an abort takes a waiting call out of the queue and rejects at once;
   * a running call's place is held until `fn` settles.
   *
   * @example
   * const limit = adaptiveLimit({ algorithm: "vegas", max: 200 });
   * const body = await limit.execute((signal) => fetch(url, { signal }), request.signal);
   */
  execute<T>(fn: (signal?: AbortSignal) => T | PromiseLike<T>, signal?: AbortSignal): Promise<T> {
    return executeAdmitted(
      "adaptiveLimit",
      (start: (permit: LimitPermit) => void) => this.acquire(start),
      fn,
      signal,
      (permit, ok, outcome) => (ok ? permit.success() : permit.failure(outcome)),
    );
  }
}

function noop(): void {}

/**
 * An adaptive concurrency limit to share among calls: `steps.adaptiveLimit(limit)` in as many pipelines as
 * should share it, or `limit.execute(fn, signal)`.
 *
 * @example
 * const limit = adaptiveLimit({ algorithm: "gradient2", min: 5, max: 500, queue: 50 });
 * const p = pipeline(steps.retry({ maxRetries: 2 }), steps.adaptiveLimit(limit), steps.timeout(2000));
 */
export function adaptiveLimit(options?: AdaptiveLimitOptions): AdaptiveLimit {
  return new AdaptiveLimit(options);
}
