/**
 * A rate limiter (Polly's and resilience4j's RateLimiter): a token bucket that holds `burst` tokens and
 * gains `rate` of them every `per` ms; each call takes one. A call that finds none waits its turn in a
 * bounded first-come-first-served queue, or is refused at once with a `RateLimitedError` that says when
 * a token will be there (`retryAfter`), which the retry loop waits for as it waits for a server's
 * `Retry-After`. Over any span of T ms it lets through at most `burst + rate × T / per` calls.
 */
import { executeAdmitted, WaitLine } from "../core/admission.js";
import { type CancelTimer, type Clock, systemClock } from "../core/clock.js";
import { OptionError, RETRY_AFTER } from "../core/errors.js";
import { type CallbackErrorHandler, type Disposable, Events, safeCall, warnOnce } from "../core/events.js";
import { checkKeys, read } from "../core/schema.js";
import { MAX_PERIOD, RATE_LIMITER_CHECKS } from "./checks.js";

/** Refused at once: no token now, and no room (or no time) to wait for one. */
export class RateLimitedError extends Error {
  override readonly name = "RateLimitedError";
  /** Milliseconds until a token will be there for a call that comes back (the queue's calls served first). */
  readonly retryAfter: number;
  /** The limiter's rate and period. */
  readonly rate: number;
  readonly per: number;
  /** The least wait before a retry, read by the retry loop as it reads a server's `Retry-After`. */
  readonly [RETRY_AFTER]: number;

  constructor(retryAfter: number, rate: number, per: number) {
    super(`the rate limit (${rate} per ${per} ms) is reached: retry after ${retryAfter} ms`);
    this.retryAfter = retryAfter;
    this.rate = rate;
    this.per = per;
    this[RETRY_AFTER] = retryAfter;
  }
}

export interface RateLimiterOptions {
  /** Calls allowed per `per` ms on average, in (0, 1e9]. Required. */
  rate: number;
  /** The period `rate` counts over, ms, in [1, 2^31 − 1]. Default 1000. */
  per?: number;
  /** The bucket's size: calls allowed at once after a quiet spell, an integer in [1, 1e9]. Default: `rate`, rounded up. */
  burst?: number;
  /** Calls that may wait for a token, first come first served, an integer in [0, 1e9]. Default 0. */
  queue?: number;
  /** The longest a call may wait in the queue, ms, in [0, 2^31 − 1]. Default 2^31 − 1. */
  maxWait?: number;
  /** The tokens' time and the queue's timer. Default: the real clock. */
  clock?: Clock;
  /** Receives what an event listener threw (or rejected with). Default: one warning line. */
  onCallbackError?: CallbackErrorHandler;
}

export interface RateLimiterEvents extends Record<string, unknown> {
  /** A call got its token; `waited`: ms it waited in the queue (0 for none). */
  acquired: { readonly waited: number };
  /** A call waits for a token; `position` 1 is next, `wait` the ms until its token is due. */
  queued: { readonly position: number; readonly wait: number };
  /** A call was refused; `retryAfter` as the error has it, `queued` the calls then waiting. */
  rejected: { readonly retryAfter: number; readonly queued: number };
}

/** A limiter's state: one plain object. */
export interface RateLimiterState {
  /** Tokens in the bucket now (fractions count toward the next). */
  readonly tokens: number;
  /** Calls waiting now. */
  readonly queued: number;
}

/** One waiting call. */
interface Waiter {
  readonly start: (waited: number) => void;
  readonly since: number;
}

/** Leaves the queue (a waiting call that no longer wants its token); nothing once it has its token. */
export type Leave = () => void;

/** Checks a limiter's options, naming each bad one under `where` ("rateLimiter" or "steps.rateLimit"). */
export function checkRateLimiterOptions(
  where: string,
  options: unknown,
): Required<Omit<RateLimiterOptions, "onCallbackError">> {
  if (options === undefined || options === null || typeof options !== "object") {
    throw new OptionError(
      where,
      options,
      "an object { rate, per?, burst?, queue?, maxWait? } (rate is required)",
    );
  }
  checkKeys(RATE_LIMITER_CHECKS, options, where);
  const o = options as Partial<RateLimiterOptions>;
  const field = <V>(key: keyof RateLimiterOptions): V =>
    read(RATE_LIMITER_CHECKS, key, o[key], `${where}: ${key}`);
  const rate = field<number>("rate");
  const per = field<number | undefined>("per") ?? 1000;
  const burst = field<number | undefined>("burst") ?? Math.max(1, Math.ceil(rate));
  const queue = field<number | undefined>("queue") ?? 0;
  const maxWait = field<number | undefined>("maxWait") ?? MAX_PERIOD;
  field("onCallbackError");
  const clock = o.clock ?? systemClock;
  if (typeof clock?.now !== "function" || typeof clock?.setTimer !== "function") {
    throw new OptionError(`${where}: clock`, clock, "a Clock (now() and setTimer())");
  }
  return { rate, per, burst, queue, maxWait, clock };
}

/**
 * A rate limiter many calls share: `limiter.execute(fn, signal)`, or `steps.rateLimit(limiter)` in as
 * many pipelines as should share its tokens.
 */
export class RateLimiter {
  readonly rate: number;
  readonly per: number;
  readonly burst: number;
  readonly queue: number;
  readonly maxWait: number;
  readonly #clock: Clock;
  /** Milliseconds per token. */
  readonly #interval: number;
  readonly #events: Events<RateLimiterEvents>;
  readonly #onCallbackError: CallbackErrorHandler;
  #tokens: number;
  /** When `#tokens` was last brought up to date. */
  #at: number;
  readonly #line = new WaitLine<Waiter>();
  #cancelTimer: CancelTimer | undefined;

  constructor(options: RateLimiterOptions) {
    const { rate, per, burst, queue, maxWait, clock } = checkRateLimiterOptions("rateLimiter", options);
    this.rate = rate;
    this.per = per;
    this.burst = burst;
    this.queue = queue;
    this.maxWait = maxWait;
    this.#clock = clock;
    this.#interval = per / rate;
    this.#onCallbackError = options.onCallbackError ?? warnOnce;
    this.#events = new Events<RateLimiterEvents>(this.#onCallbackError);
    this.#tokens = burst;
    this.#at = clock.now();
  }

  /**
   * Brings the bucket up to `now`: tokens gained since, up to `burst`. Time that goes back a little (or a
   * reading that is no number) adds nothing and moves nothing: the tokens come again once the clock passes
   * the last reading. Time that goes back by more than the bucket takes to fill (a clock stepped back, or
   * one that read far ahead once, as fake timers advanced and then uninstalled) adds nothing either, and
   * the bucket goes on from the new reading, so that it is never stuck ahead of the clock.
   */
  #refill(now: number): void {
    if (now > this.#at) {
      this.#tokens = Math.min(this.burst, this.#tokens + (now - this.#at) / this.#interval);
      this.#at = now;
    } else if (this.#at - now > this.burst * this.#interval || Number.isNaN(this.#at)) {
      // Far back, or no reading yet that was a number: go on from this one.
      this.#at = now;
    }
  }

  /** Calls waiting now. */
  get queued(): number {
    return this.#line.size;
  }

  /** Tokens in the bucket now. */
  get tokens(): number {
    this.#refill(this.#clock.now());
    return this.#tokens;
  }

  /** Its state now: tokens and calls waiting. */
  snapshot(): RateLimiterState {
    return { tokens: this.tokens, queued: this.#line.size };
  }

  /** Listens to `acquired`, `queued` or `rejected` until the handle is disposed. */
  on<K extends keyof RateLimiterEvents>(
    event: K,
    listener: (payload: RateLimiterEvents[K]) => unknown,
  ): Disposable {
    return this.#events.on(event, listener);
  }

  /** Milliseconds until the bucket holds `n` tokens, from now (0 when it does). */
  #until(n: number): number {
    return Math.max(0, Math.ceil((n - this.#tokens) * this.#interval));
  }

  /**
   * Asks for a token (for steps and other code that runs calls itself). With a token in the bucket and
   * nobody waiting, `start(0)` is called at once, before `acquire` returns; when the queue has room and the
   * turn comes within `maxWait`, `start(waited)` is called when it comes; otherwise `acquire` throws a
   * `RateLimitedError`. The returned `leave` takes a waiting call out of the queue (`start` is then never
   * called); after `start` it does nothing. A `start` that throws: the error is thrown from `acquire`, or,
   * for a waiter, goes to `onCallbackError`.
   */
  acquire(start: (waited: number) => void): Leave {
    const now = this.#clock.now();
    this.#refill(now);
    const line = this.#line;
    if (line.size === 0 && this.#tokens >= 1) {
      this.#tokens -= 1;
      if (this.#events.has("acquired")) this.#events.emit("acquired", { waited: 0 });
      try {
        start(0);
      } catch (error) {
        // Nothing ran: the token goes back.
        this.#tokens += 1;
        throw error;
      }
      return noop;
    }
    // This call's token comes after those of the calls already waiting.
    const wait = this.#until(line.size + 1);
    if (line.size >= this.queue || wait > this.maxWait) {
      if (this.#events.has("rejected")) {
        this.#events.emit("rejected", { retryAfter: wait, queued: line.size });
      }
      throw new RateLimitedError(wait, this.rate, this.per);
    }
    const node = line.join({ start, since: now });
    if (this.#events.has("queued")) this.#events.emit("queued", { position: line.size, wait });
    this.#arm();
    return () => {
      // Nobody left to wait for a token: no timer either.
      if (line.leave(node) && line.size === 0) this.#disarm();
    };
  }

  /** Sets the timer for the first waiter's token, unless one is set. */
  #arm(): void {
    if (this.#cancelTimer !== undefined || this.#line.size === 0) return;
    // At the first waiter's token's exact time (a fraction of a ms on a virtual clock), not rounded up:
    // a timer late by a fraction loses it, the bucket being full at that moment, and each waiter after
    // would start that much later than the wait it was told.
    this.#cancelTimer = this.#clock.setTimer(Math.max(0, (1 - this.#tokens) * this.#interval), () => {
      this.#cancelTimer = undefined;
      this.#serve();
    });
  }

  #disarm(): void {
    const cancel = this.#cancelTimer;
    this.#cancelTimer = undefined;
    cancel?.();
  }

  /** Hands the tokens there are to the waiters at the head of the line, in order; waits again for the rest. */
  #serve(): void {
    const now = this.#clock.now();
    this.#refill(now);
    // A token due now may fall short of 1 by a rounding error of the float arithmetic.
    while (this.#line.size > 0 && this.#tokens >= 1 - TOKEN_EPSILON) {
      const { start, since } = this.#line.shift() as Waiter;
      this.#tokens = Math.max(0, this.#tokens - 1);
      const waited = now - since > 0 ? now - since : 0;
      if (this.#events.has("acquired")) this.#events.emit("acquired", { waited });
      safeCall(this.#onCallbackError, "start", () => start(waited));
    }
    this.#arm();
  }

  /**
   * Runs `fn` when it gets a token: at once if one is there, after waiting its turn if the queue has room,
   * else rejected at once with `RateLimitedError`. With a `signal`, an abort takes a waiting call out of
   * the queue and rejects at once with its reason; no listener is left on the signal once the call has
   * settled.
   *
   * @example
   * const limiter = rateLimiter({ rate: 10, queue: 100 }); // 10 calls a second, 100 more may wait
   * const body = await limiter.execute((signal) => fetch(url, { signal }), request.signal);
   */
  execute<T>(fn: (signal?: AbortSignal) => T | PromiseLike<T>, signal?: AbortSignal): Promise<T> {
    return executeAdmitted("rateLimiter", (start) => this.acquire(start), fn, signal);
  }
}

function noop(): void {}

/** How far below a whole token a waiter's token may be, from floating-point rounding, and still be due. */
const TOKEN_EPSILON = 1e-9;

/**
 * A rate limiter to share among calls: `steps.rateLimit(limiter)` in as many pipelines as should share
 * its tokens, or `limiter.execute(fn, signal)`.
 *
 * @example
 * const limiter = rateLimiter({ rate: 100, per: 60_000, queue: 20 }); // 100 calls a minute
 * const p = pipeline(steps.retry({ maxRetries: 3 }), steps.rateLimit(limiter));
 */
export function rateLimiter(options: RateLimiterOptions): RateLimiter {
  return new RateLimiter(options);
}
