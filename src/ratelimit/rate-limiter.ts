/**
 * A rate limiter (Polly's and resilience4j's RateLimiter): a token bucket that holds `burst` tokens and
 * gains `rate` of them every `per` ms; each call takes one. A call that finds none waits its turn in a
 * bounded first-come-first-served queue, or is refused at once with a `RateLimitedError` that says when
 * a token will be there (`retryAfter`), which the retry loop waits for as it waits for a server's
 * `Retry-After`. Over any span of T ms it lets through at most `burst + rate × T / per` calls.
 */
import { executeAdmitted, WaitLine } from "../core/admission.js";
import { type CancelTimer, type Clock, clockOption } from "../core/clock.js";
import { OptionError, RETRY_AFTER } from "../core/errors.js";
import { type CallbackErrorHandler, type Disposable, Events, safeCall, warnOnce } from "../core/events.js";
import { checkKeys, read } from "../core/schema.js";
import { type Sharing, type SharingOptions, sharingOptions } from "../store/replica.js";
import { SharedPolicy, type StoreEvents } from "../store/shared-policy.js";
import { MAX_PERIOD, RATE_LIMITER_CHECKS } from "./checks.js";
import {
  checkSharedRate,
  MAX_HOLD_LIFE,
  mergeRate,
  type RateBatch,
  type RateGrant,
  type SharedRate,
} from "./shared.js";
import { MAX_WINDOW_RATE, SlidingLog } from "./window.js";

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

export interface RateLimiterOptions extends SharingOptions {
  /**
   * "token-bucket" (the default): `burst` calls at once after a quiet spell, then `rate` per `per` ms on
   * average. "sliding-window": at most `rate` calls start in any `per` ms (an exact log of the last
   * `rate` starts; `rate` a whole number up to 100,000, no `burst`, kept in one process).
   */
  kind?: "token-bucket" | "sliding-window";
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

export interface RateLimiterEvents extends StoreEvents {
  /** A call got its token; `waited`: ms it waited in the queue (0 for none). */
  acquired: { readonly waited: number };
  /** A call waits for a token; `position` 1 is next, `wait` the ms until its token is due (exact, a fraction on a virtual clock). */
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
  /** Shared: told when the wait runs past `maxWait`. */
  readonly refuse: ((error: RateLimitedError) => void) | undefined;
  readonly since: number;
}

/** Leaves the queue (a waiting call that no longer wants its token); nothing once it has its token. */
export type Leave = () => void;

/** Checks a limiter's options, naming each bad one under `where` ("rateLimiter" or "steps.rateLimit"). */
export function checkRateLimiterOptions(
  where: string,
  options: unknown,
): Required<Pick<RateLimiterOptions, "kind" | "rate" | "per" | "burst" | "queue" | "maxWait" | "clock">> {
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
  // The sharing options, named under `where` (the limiter takes them again when it is made).
  sharingOptions(where, o);
  const kind = field<RateLimiterOptions["kind"]>("kind") ?? "token-bucket";
  const rate = field<number>("rate");
  if (kind === "sliding-window") {
    if (!Number.isInteger(rate) || rate > MAX_WINDOW_RATE) {
      throw new OptionError(
        `${where}: rate`,
        rate,
        `a whole number of calls in [1, ${MAX_WINDOW_RATE}] with kind "sliding-window"`,
      );
    }
    for (const key of ["burst", "store"] as const) {
      if (o[key] !== undefined) {
        throw new OptionError(
          `${where}: ${key}`,
          o[key],
          `given only with kind "token-bucket" (a sliding window allows rate calls at once, and is kept in one process)`,
        );
      }
    }
  }
  const per = field<number | undefined>("per") ?? 1000;
  const burst = field<number | undefined>("burst") ?? Math.max(1, Math.ceil(rate));
  const queue = field<number | undefined>("queue") ?? 0;
  const maxWait = field<number | undefined>("maxWait") ?? MAX_PERIOD;
  field("onCallbackError");
  const clock = clockOption(`${where}: clock`, o.clock, "a Clock (now() and setTimer())");
  return { kind, rate, per, burst: kind === "sliding-window" ? rate : burst, queue, maxWait, clock };
}

/**
 * A rate limiter many calls share: `limiter.execute(fn, signal)`, or `steps.rateLimit(limiter)` in as
 * many pipelines as should share its tokens. With a `store` (and a `key`), one bucket for every process
 * that names the same store and key (see `shared.ts`).
 */
export class RateLimiter extends SharedPolicy {
  readonly kind: "token-bucket" | "sliding-window";
  readonly rate: number;
  readonly per: number;
  readonly burst: number;
  readonly queue: number;
  readonly maxWait: number;
  /** The clock decisions are made on: the store's time, when shared. */
  readonly #clock: Clock;
  /** The clock as given: the exchanges' pace (the first exchange starts before the store's time is known). */
  readonly #ownClock: Clock;
  /** Milliseconds per token. */
  readonly #interval: number;
  readonly #events: Events<RateLimiterEvents>;
  readonly #onCallbackError: CallbackErrorHandler;
  readonly #sharing: Sharing | undefined;
  /** The local bucket (deciding alone): its tokens, and when they were last brought up to date. */
  #tokens: number;
  #at: number;
  /** Deciding alone in a fleet: this process's share of the rate and the burst. */
  #localInterval: number;
  #localBurst: number;
  readonly #line = new WaitLine<Waiter>();
  #cancelTimer: CancelTimer | undefined;
  /** Shared: the tokens this process holds of the fleet's bucket, and what it asked for since the last exchange. */
  #lease = 0;
  #demand = 0;
  /** Shared: the smoothed demand, per ms, and when the last exchange took it. */
  #demandRate = 0;
  #lastDetach = Number.NEGATIVE_INFINITY;
  /** Shared: the fleet's bucket as of the last exchange (tokens, store time). */
  #fleetTokens: number;
  #fleetAt = Number.NEGATIVE_INFINITY;
  #grant: RateGrant = { topUp: 0, revoke: 0 };
  /** Shared: the last `#mode()` was "shared" (leaving it starts the local bucket from the lease). */
  #wasShared = false;
  /** Shared: the exchange under way replaces something else found under the key. */
  #replacing = false;
  readonly #id: string;
  /** The sliding window's log (kind "sliding-window"), which then decides instead of the tokens. */
  readonly #window: SlidingLog | undefined;

  constructor(options: RateLimiterOptions) {
    super();
    const { kind, rate, per, burst, queue, maxWait, clock } = checkRateLimiterOptions("rateLimiter", options);
    this.kind = kind;
    this.#window = kind === "sliding-window" ? new SlidingLog(rate, per) : undefined;
    this.rate = rate;
    this.per = per;
    this.burst = burst;
    this.queue = queue;
    this.maxWait = maxWait;
    this.#interval = per / rate;
    this.#localInterval = this.#interval;
    this.#localBurst = burst;
    this.#onCallbackError = options.onCallbackError ?? warnOnce;
    this.#events = new Events<RateLimiterEvents>(this.#onCallbackError);
    this.#tokens = burst;
    this.#fleetTokens = burst;
    this.#id = processId();
    this.#sharing = sharingOptions("rateLimiter", options);
    this.#ownClock = clock;
    this.#clock = this.share<RateBatch>("rateLimiter", this.#sharing, clock, this.#events, () => ({
      detach: (final) => this.#detach(final),
      reattach: (batch) => {
        // Nothing reached the store: what was handed back is still this process's.
        this.#lease += batch.returned;
        this.#demand += batch.demand;
        this.#replacing = false;
      },
      // A write that may have landed: what was handed back stays handed back, and a grant it may have
      // made is lost (the bucket refills it): the fleet errs towards fewer calls.
      dropped: () => {
        this.#replacing = false;
      },
      check: checkSharedRate,
      corrupted: () => {
        this.#replacing = true;
      },
      merge: (shared, batch, now) => {
        const sharing = this.#sharing as Sharing;
        const life = Math.min(MAX_HOLD_LIFE, Math.max(10 * sharing.syncEvery, 10_000));
        const { state, grant } = mergeRate(
          shared,
          batch,
          now,
          this.#id,
          life,
          { burst, interval: this.#interval },
          this.#replacing && shared === undefined,
        );
        this.#grant = grant;
        return state;
      },
      adopt: (shared) => this.#adopt(shared as SharedRate),
    }));
    this.#at = this.#clock.now();
  }

  /** The clock's reading, made safe for the sliding window's log. */
  #now(): number {
    const now = this.#clock.now();
    return this.#window === undefined ? now : this.#window.read(now);
  }

  /** How this limiter decides now: on its own bucket, on its lease of the fleet's, or refusing (the store down, `whenStoreDown: "closed"`). */
  #mode(): "local" | "shared" | "closed" {
    const replica = this.replica;
    if (replica === undefined) return "local";
    if (replica.shared) {
      this.#wasShared = true;
      return "shared";
    }
    if (this.#wasShared) {
      // Leaving the fleet (the store down, or close()): the local bucket starts from what this process
      // holds of the fleet's, not full, so nothing is spent twice.
      this.#wasShared = false;
      this.#tokens = Math.min(this.#lease, this.#localBurst);
      this.#lease = 0;
      this.#at = this.#clock.now();
    }
    return replica.refusing ? "closed" : "local";
  }

  #detach(final: boolean): RateBatch {
    const sharing = this.#sharing as Sharing;
    const now = this.#ownClock.now();
    const demand = this.#demand;
    this.#demand = 0;
    // The lease should last until the next exchange: twice the demand since the last one, or three times
    // what the smoothed rate of demand asks for in syncEvery, whichever is more, and at least one token.
    const sample = demand / Math.max(sharing.syncEvery, now - this.#lastDetach);
    this.#lastDetach = now;
    this.#demandRate = this.#demandRate === 0 ? sample : (this.#demandRate + sample) / 2;
    // The calls waiting in the queue need a token each, whenever they asked.
    const waiting = this.#line.size;
    const target = final
      ? 0
      : Math.min(
          this.burst,
          Math.max(1, 2 * demand, waiting, Math.ceil(3 * this.#demandRate * sharing.syncEvery)),
        );
    // (The last exchange, made by close(), is made only while the store is up.)
    if (!final && !this.shared) {
      // Back after the store was down: the old lease may have lapsed in the store, so it is let go.
      this.#lease = 0;
      return { demand, waiting, target, keep: 0, returned: 0, final };
    }
    // Idle, with the bucket less than half full: the standing token goes back too.
    const idle = demand === 0 && waiting === 0;
    const keep = Math.min(this.#lease, idle && this.#fleetTokens < this.burst / 2 ? 0 : target);
    const returned = this.#lease - keep;
    this.#lease = keep;
    return { demand, waiting, target, keep, returned, final };
  }

  #adopt(shared: SharedRate): void {
    this.#replacing = false;
    const { topUp, revoke } = this.#grant;
    this.#lease = this.#lease - Math.min(this.#lease, revoke) + topUp;
    this.#fleetTokens = shared.tokens;
    this.#fleetAt = shared.at;
    // Alone (the store down), each process takes its share of the rate among the fleet it last saw.
    const processes = Math.max(1, shared.holders.length);
    this.#localInterval = this.#interval * processes;
    this.#localBurst = Math.max(1, Math.floor(this.burst / processes));
    if (this.#line.size > 0) this.#serve();
  }

  /**
   * Brings the local bucket up to `now`: tokens gained since, up to its burst. Time that goes back a little (or a
   * reading that is no number) adds nothing and moves nothing: the tokens come again once the clock passes
   * the last reading. Time that goes back by more than the bucket takes to fill (a clock stepped back, or
   * one that read far ahead once, as fake timers advanced and then uninstalled) adds nothing either, and
   * the bucket goes on from the new reading, so that it is never stuck ahead of the clock.
   */
  #refill(now: number): void {
    if (now > this.#at) {
      this.#tokens = Math.min(this.#localBurst, this.#tokens + (now - this.#at) / this.#localInterval);
      this.#at = now;
    } else if (this.#at - now > this.#localBurst * this.#localInterval || Number.isNaN(this.#at)) {
      // Far back, or no reading yet that was a number: go on from this one.
      this.#at = now;
    }
  }

  /** Calls waiting now. */
  get queued(): number {
    return this.#line.size;
  }

  /** Tokens this process may spend now: in its own bucket, or (shared) held of the fleet's. */
  get tokens(): number {
    const mode = this.#mode();
    if (mode === "shared") return this.#lease;
    if (mode === "closed") return 0;
    const window = this.#window;
    if (window !== undefined) return window.rate - window.inWindow(this.#now());
    this.#refill(this.#clock.now());
    return this.#tokens;
  }

  /** Its state now: tokens and calls waiting. */
  snapshot(): RateLimiterState {
    return { tokens: this.tokens, queued: this.#line.size };
  }

  /** Listens to `acquired`, `queued`, `rejected` (and, shared, the store's events) until the handle is disposed. */
  on<K extends keyof RateLimiterEvents>(
    event: K,
    listener: (payload: RateLimiterEvents[K]) => unknown,
  ): Disposable {
    return this.#events.on(event, listener);
  }

  /**
   * Milliseconds from now until `n` tokens will be there for this process (0 when they are), exactly:
   * compared with `maxWait` as it is, and rounded up (and capped at 2^31 − 1) only for a `retryAfter`.
   */
  #until(mode: "local" | "shared" | "closed", n: number, now: number): number {
    if (mode === "local") {
      const wait =
        this.#window === undefined ? (n - this.#tokens) * this.#localInterval : this.#window.until(n, now);
      return Math.max(0, wait);
    }
    const sharing = this.#sharing as Sharing;
    // Closed: until the store is tried again, at the longest pause between tries.
    if (mode === "closed") return Math.max(1000, sharing.syncEvery);
    const short = n - this.#lease;
    if (short <= 0) return 0;
    // The fleet's bucket as last seen, refilled since: what the next exchange may bring.
    const elapsed = now > this.#fleetAt ? now - this.#fleetAt : 0;
    const there = Math.min(this.burst, this.#fleetTokens + elapsed / this.#interval);
    return Math.max(sharing.syncEvery / 10, (short - there) * this.#interval);
  }

  /**
   * Asks for a token (for steps and other code that runs calls itself). With a token at hand and nobody
   * waiting, `start(0)` is called at once, before `acquire` returns; when the queue has room and the turn
   * comes within `maxWait`, `start(waited)` is called when it comes; otherwise `acquire` throws a
   * `RateLimitedError`. Shared through a store, the turn is foreseen less exactly: a waiter whose turn has
   * not come `maxWait` ms after it joined gets `refuse(error)` instead (and keeps waiting without one).
   * The returned `leave` takes a waiting call out of the queue (`start` is then never called); after
   * `start` it does nothing. A `start` that throws: the error is thrown from `acquire`, or, for a waiter,
   * goes to `onCallbackError`.
   */
  acquire(start: (waited: number) => void, refuse?: (error: RateLimitedError) => void): Leave {
    const now = this.#now();
    const mode = this.#mode();
    const line = this.#line;
    const window = this.#window;
    if (window !== undefined) {
      if (line.size === 0 && window.free(now)) {
        const undo = window.take(now);
        if (this.#events.has("acquired")) this.#events.emit("acquired", { waited: 0 });
        try {
          start(0);
        } catch (error) {
          // Nothing ran: its place in the window goes back.
          window.undo(undo);
          throw error;
        }
        return noop;
      }
    } else if (mode === "local") this.#refill(now);
    else if (mode === "shared") this.#demand += 1;
    if (
      window === undefined &&
      line.size === 0 &&
      mode !== "closed" &&
      (mode === "local" ? this.#tokens : this.#lease) >= 1
    ) {
      if (mode === "local") this.#tokens -= 1;
      else this.#lease -= 1;
      if (this.#events.has("acquired")) this.#events.emit("acquired", { waited: 0 });
      try {
        start(0);
      } catch (error) {
        // Nothing ran: the token goes back.
        if (mode === "local") this.#tokens += 1;
        else this.#lease += 1;
        throw error;
      }
      return noop;
    }
    if (mode === "shared") this.replica?.soon();
    // This call's token comes after those of the calls already waiting.
    const wait = this.#until(mode, line.size + 1, now);
    if (mode === "closed" || line.size >= this.queue || wait > this.maxWait) {
      throw this.#refused(wait, line.size);
    }
    const node = line.join({ start, refuse, since: this.#since(now) });
    if (this.#events.has("queued")) this.#events.emit("queued", { position: line.size, wait });
    this.#arm();
    return () => {
      // Nobody left to wait for a token: no timer either.
      if (line.leave(node) && line.size === 0) this.#disarm();
    };
  }

  /**
   * When a call joins the line, for its `waited` and its `maxWait`: shared, on the process's own clock
   * (the store's time is not known before the first exchange, and `maxWait` is a span, not a time).
   */
  #since(now: number): number {
    return this.#sharing === undefined ? now : this.#ownClock.now();
  }

  /** Shared: the first waiter that may be refused when its wait runs past `maxWait`. */
  #firstRefusable(): Waiter | undefined {
    for (const node of this.#line.nodes()) if (node.value?.refuse !== undefined) return node.value;
    return undefined;
  }

  /** A refusal: `wait` (exact) rounded up to whole ms, and at most 2^31 − 1, as its retryAfter. */
  #refused(wait: number, queued: number): RateLimitedError {
    const retryAfter = Math.min(MAX_PERIOD, Math.ceil(wait));
    if (this.#events.has("rejected")) this.#events.emit("rejected", { retryAfter, queued });
    return new RateLimitedError(retryAfter, this.rate, this.per);
  }

  /** Sets the timer for the first waiter's token (or, shared, its deadline and a look again), unless one is set. */
  #arm(): void {
    const first = this.#line.first;
    if (this.#cancelTimer !== undefined || first === undefined) return;
    let ms: number;
    if (this.#window !== undefined) {
      ms = this.#window.until(1, this.#now());
    } else if (this.#mode() === "local") {
      // At the first waiter's token's exact time (a fraction of a ms on a virtual clock), not rounded up:
      // a timer late by a fraction loses it, the bucket being full at that moment, and each waiter after
      // would start that much later than the wait it was told.
      ms = Math.max(0, (1 - this.#tokens) * this.#localInterval);
    } else {
      // The exchange that brings tokens serves the line; this timer only looks again (and keeps a
      // process with calls waiting alive).
      ms = (this.#sharing as Sharing).syncEvery;
    }
    const refusable = this.#sharing === undefined ? undefined : this.#firstRefusable();
    if (refusable !== undefined) {
      ms = Math.min(ms, Math.max(0, refusable.since + this.maxWait - this.#ownClock.now()));
    }
    this.#cancelTimer = this.#clock.setTimer(ms, () => {
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
    this.#disarm();
    const now = this.#now();
    const mode = this.#mode();
    const line = this.#line;
    if (this.#sharing !== undefined) {
      // Shared, a turn is foreseen less exactly: waiters whose maxWait is over are refused, and all are
      // while the store is down and the limiter refuses. (A waiter given no `refuse` keeps waiting.)
      const own = this.#ownClock.now();
      for (const node of line.nodes()) {
        const waiter = node.value as Waiter;
        const refuse = waiter.refuse;
        if (refuse === undefined) continue;
        // The line is in the order the calls joined: the rest joined later.
        if (mode !== "closed" && own - waiter.since < this.maxWait) break;
        line.leave(node);
        const error = this.#refused(this.#until(mode, 1, now), line.size);
        safeCall(this.#onCallbackError, "refuse", () => refuse(error));
      }
    }
    const window = this.#window;
    if (window !== undefined) {
      while (line.size > 0 && window.free(now)) {
        const undo = window.take(now);
        if (!this.#start(line.shift() as Waiter, now)) window.undo(undo);
      }
    } else if (mode === "local") {
      this.#refill(now);
      // A token due now may fall short of 1 by a rounding error of the float arithmetic.
      while (line.size > 0 && this.#tokens >= 1 - TOKEN_EPSILON) {
        const before = this.#tokens;
        this.#tokens = Math.max(0, this.#tokens - 1);
        if (!this.#start(line.shift() as Waiter, now)) this.#tokens = before;
      }
    } else if (mode === "shared") {
      while (line.size > 0 && this.#lease >= 1) {
        this.#lease -= 1;
        if (!this.#start(line.shift() as Waiter, now)) this.#lease += 1;
      }
      if (line.size > 0) this.replica?.soon();
    }
    this.#arm();
  }

  /** Starts a waiter; false when its `start` threw (nothing ran: its token or place goes back). */
  #start({ start, since }: Waiter, now: number): boolean {
    const at = this.#since(now);
    const waited = at - since > 0 ? at - since : 0;
    if (this.#events.has("acquired")) this.#events.emit("acquired", { waited });
    let ok = true;
    safeCall(this.#onCallbackError, "start", () => {
      try {
        start(waited);
      } catch (error) {
        ok = false;
        throw error;
      }
    });
    return ok;
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
    return executeAdmitted("rateLimiter", (start, refuse) => this.acquire(start, refuse), fn, signal);
  }
}

/** An id for this process's hold in a shared bucket: random, so that no two processes share one. */
function processId(): string {
  const crypto = (globalThis as { crypto?: { randomUUID?: () => string } }).crypto;
  if (typeof crypto?.randomUUID === "function") return crypto.randomUUID();
  return `${Math.random().toString(36).slice(2)}${Math.random().toString(36).slice(2)}`;
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
