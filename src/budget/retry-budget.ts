/**
 * Retry budgets: retries allowed only while they stay a fraction of the traffic, so that under a long
 * outage retries cannot multiply the load on the failing resource (seed 000's conclusion, after Marc
 * Brooker: backoff spreads retries out but does not reduce them). Two flavours:
 *
 * - ratio and floor over a window (Finagle's RetryBudget): within the last `ttl` ms, retries may be at
 *   most `ratio` × requests + `minPerSecond` × ttl / 1000;
 * - tokens (gRPC's retry throttling): a bucket starts full at `maxTokens`; each failed attempt takes 1, each
 *   success gives back `tokenRatio`; no retry while the tokens are at or below half the bucket.
 */
import { type Clock, systemClock } from "../core/clock.js";
import { OptionError } from "../core/errors.js";
import { type Disposable, Events } from "../core/events.js";
import { finiteAbove, finiteAtLeast, knownKeys } from "../core/validate.js";
import { Replica, SHARING_KEYS, type SharingOptions, sharingOptions, storeClock } from "../store/replica.js";

export interface RatioBudgetOptions extends SharingOptions {
  /** Retries allowed per request, in [0, 1000]. Default 0.2 (Finagle's default percentCanRetry). */
  ratio?: number;
  /** Retries allowed per second whatever the traffic, >= 0. Default 10 (Finagle's minRetriesPerSec). */
  minPerSecond?: number;
  /** The window, ms, > 0. Default 10,000 (Finagle's ttl). */
  ttl?: number;
  clock?: Clock;
}

export interface TokenBudgetOptions extends SharingOptions {
  /** The bucket, > 0; it starts full. */
  maxTokens: number;
  /** Given back per success, > 0. */
  tokenRatio: number;
  /** Times the exchanges with a `store`. Default: the real clock. */
  clock?: Clock;
}

/** What a budget reports. */
export interface BudgetEvents extends Record<string, unknown> {
  /** A retry was refused: the budget is spent. */
  refused: { readonly state: BudgetState };
  /** The shared store failed or timed out: this process decides alone (or refuses, with `whenStoreDown: "closed"`). */
  "store-down": { readonly error: unknown };
  /** The shared store answers again: the budget is the fleet's again. */
  "store-up": { readonly downFor: number };
}

/** A budget's state: one plain object, to read, store and restore. */
export type BudgetState =
  | {
      readonly kind: "ratio";
      readonly requests: readonly number[];
      readonly retries: readonly number[];
      readonly bucketAt: number;
    }
  | { readonly kind: "tokens"; readonly tokens: number };

/** A retry budget, shared by every call that should draw on it. */
export interface RetryBudget {
  readonly kind: "ratio" | "tokens";
  /** A call starts (the ratio flavour counts it as traffic). */
  request(): void;
  /** An attempt succeeded. */
  succeeded(): void;
  /** An attempt failed. */
  failed(): void;
  /** May one more retry happen now? If so it is counted; if not, a `refused` event says so. */
  tryRetry(): boolean;
  /** Whether a retry would be allowed now, without taking it. */
  readonly available: boolean;
  on<K extends keyof BudgetEvents>(event: K, listener: (payload: BudgetEvents[K]) => void): Disposable;
  state(): BudgetState;
  restore(state: BudgetState): void;
  /** Whether the budget is shared through a store now (false without one, and while the store is down). */
  readonly shared: boolean;
  /** Resolves when the first exchange with the store is over (at once without a store). */
  ready(): Promise<void>;
  /** Hands this process's counts to the store one last time and stops exchanging (nothing without a store). */
  close(): Promise<void>;
}

const BUCKETS = 10;

class RatioBudget implements RetryBudget {
  readonly kind = "ratio";
  readonly #events = new Events<BudgetEvents>();
  readonly #ratio: number;
  readonly #floor: number;
  readonly #width: number;
  readonly #clock: Clock;
  // The window as BUCKETS buckets of ttl / BUCKETS ms; index = bucket number mod BUCKETS.
  #requests = new Array<number>(BUCKETS).fill(0);
  #retries = new Array<number>(BUCKETS).fill(0);
  #bucket: number;

  constructor(options: RatioBudgetOptions) {
    this.#ratio = finiteAtLeast("retryBudget: ratio", options.ratio ?? 0.2, 0, 1000);
    const minPerSecond = finiteAtLeast("retryBudget: minPerSecond", options.minPerSecond ?? 10, 0);
    const ttl = finiteAbove("retryBudget: ttl", options.ttl ?? 10_000, 0);
    this.#floor = (minPerSecond * ttl) / 1000;
    this.#width = ttl / BUCKETS;
    this.#clock = options.clock ?? systemClock;
    this.#bucket = Math.floor(this.#clock.now() / this.#width);
  }

  /** Moves the window to now, emptying the buckets that fell out of it. */
  #advance(): number {
    const bucket = Math.floor(this.#clock.now() / this.#width);
    const gone = Math.min(BUCKETS, bucket - this.#bucket);
    for (let i = 1; i <= gone; i++) {
      const index = (((this.#bucket + i) % BUCKETS) + BUCKETS) % BUCKETS;
      this.#requests[index] = 0;
      this.#retries[index] = 0;
    }
    if (bucket > this.#bucket) this.#bucket = bucket;
    return ((this.#bucket % BUCKETS) + BUCKETS) % BUCKETS;
  }

  request(): void {
    const i = this.#advance();
    this.#requests[i] = (this.#requests[i] as number) + 1;
  }

  readonly shared = false;
  ready(): Promise<void> {
    return Promise.resolve();
  }
  close(): Promise<void> {
    return Promise.resolve();
  }

  /** Shared mode: counts `requests` and `retries` in the current bucket. */
  add(requests: number, retries: number): void {
    const i = this.#advance();
    this.#requests[i] = (this.#requests[i] as number) + requests;
    this.#retries[i] = (this.#retries[i] as number) + retries;
  }

  /** Shared mode: takes back `retries` counted in bucket number `bucket`, if it is still in the window. */
  unretry(retries: number, bucket: number): void {
    this.#advance();
    if (retries <= 0 || bucket > this.#bucket || bucket <= this.#bucket - BUCKETS) return;
    const i = ((bucket % BUCKETS) + BUCKETS) % BUCKETS;
    this.#retries[i] = Math.max(0, (this.#retries[i] as number) - retries);
  }

  /** Shared mode: the retries the window allows now (negative: more are counted than it allows). */
  room(): number {
    this.#advance();
    const requests = this.#requests.reduce((a, b) => a + b, 0);
    const retries = this.#retries.reduce((a, b) => a + b, 0);
    return Math.floor(this.#ratio * requests + this.#floor - retries);
  }

  /** The current bucket's number. */
  get bucket(): number {
    this.#advance();
    return this.#bucket;
  }

  succeeded(): void {}

  failed(): void {}

  get available(): boolean {
    this.#advance();
    const requests = this.#requests.reduce((a, b) => a + b, 0);
    const retries = this.#retries.reduce((a, b) => a + b, 0);
    return retries + 1 <= this.#ratio * requests + this.#floor;
  }

  tryRetry(): boolean {
    if (!this.available) {
      this.#events.emit("refused", { state: this.state() });
      return false;
    }
    const i = this.#advance();
    this.#retries[i] = (this.#retries[i] as number) + 1;
    return true;
  }

  on<K extends keyof BudgetEvents>(event: K, listener: (payload: BudgetEvents[K]) => void): Disposable {
    return this.#events.on(event, listener);
  }

  state(): BudgetState {
    this.#advance();
    return {
      kind: "ratio",
      requests: [...this.#requests],
      retries: [...this.#retries],
      bucketAt: this.#bucket,
    };
  }

  restore(state: BudgetState): void {
    if (state?.kind !== "ratio" || state.requests.length !== BUCKETS || state.retries.length !== BUCKETS) {
      throw new OptionError("retryBudget.restore", state, `the state of a ratio budget (${BUCKETS} buckets)`);
    }
    this.#requests = [...state.requests];
    this.#retries = [...state.retries];
    this.#bucket = state.bucketAt;
  }
}

class TokenBudget implements RetryBudget {
  readonly kind = "tokens";
  readonly #events = new Events<BudgetEvents>();
  readonly #max: number;
  readonly #ratio: number;
  #tokens: number;

  constructor(options: TokenBudgetOptions) {
    this.#max = finiteAbove("retryBudget: maxTokens", options.maxTokens, 0);
    this.#ratio = finiteAbove("retryBudget: tokenRatio", options.tokenRatio, 0);
    this.#tokens = this.#max;
  }

  readonly shared = false;
  ready(): Promise<void> {
    return Promise.resolve();
  }
  close(): Promise<void> {
    return Promise.resolve();
  }

  /** Shared mode: takes `n` tokens (negative: gives them back), within [0, maxTokens]. */
  take(n: number): void {
    this.#tokens = Math.min(this.#max, Math.max(0, this.#tokens - n));
  }

  /**
   * Shared mode: retries that the tokens allow before they fall to half the bucket (each retry follows a
   * failure, which takes one); negative when more are held back than the tokens allow.
   */
  room(): number {
    return Math.ceil(this.#tokens - this.#max / 2 - 1);
  }

  get tokenRatio(): number {
    return this.#ratio;
  }

  request(): void {}

  succeeded(): void {
    this.#tokens = Math.min(this.#max, this.#tokens + this.#ratio);
  }

  failed(): void {
    this.#tokens = Math.max(0, this.#tokens - 1);
  }

  get available(): boolean {
    return this.#tokens > this.#max / 2;
  }

  tryRetry(): boolean {
    if (this.available) return true;
    this.#events.emit("refused", { state: this.state() });
    return false;
  }

  on<K extends keyof BudgetEvents>(event: K, listener: (payload: BudgetEvents[K]) => void): Disposable {
    return this.#events.on(event, listener);
  }

  state(): BudgetState {
    return { kind: "tokens", tokens: this.#tokens };
  }

  restore(state: BudgetState): void {
    if (state?.kind !== "tokens")
      throw new OptionError("retryBudget.restore", state, "the state of a token budget");
    this.#tokens = finiteAtLeast("retryBudget.restore: tokens", state.tokens, 0, this.#max);
  }
}

/** What one process saw between two exchanges with the store. */
interface BudgetBatch {
  requests: number;
  failures: number;
  successes: number;
  /** Retries asked for (taken or refused) since the last exchange. */
  demand: number;
  /** The lease the process wants to hold until the next exchange: twice its demand, at least 1. */
  target: number;
  /** The part of its lease the process keeps (and may still spend) while the exchange is under way. */
  keep: number;
  /** The part it hands back: no longer spendable from the moment the batch is taken. */
  returned: number;
  /** Lease taken back by the last exchange (the budget shrank below what was leased), handed back now. */
  revoked: number;
  /** Tokens: retries spent from the lease since the last exchange (their reservation is released; their failures are counted). */
  spent: number;
  /** Ratio: the bucket the lease is counted in (-Infinity: unknown, never taken back). */
  leaseMark: number;
}

type LocalBudget = RatioBudget | TokenBudget;

/**
 * A budget the fleet shares. A process may retry only on a lease: retries reserved for it in the shared
 * budget (counted as retries in the ratio window, or held back from the tokens). At each exchange it keeps
 * what it expects to need until the next (twice what it asked for since the last, at least one), hands
 * back the rest, and is topped up from what is left (at most half of it, so that one busy process cannot
 * take everything). A lease is counted in the shared state before it can be spent, and the part kept is
 * counted again in the current bucket at each exchange so that it never slides out of the window while
 * held: the fleet's retries never exceed the budget, however many processes there are. A process that
 * runs out of its lease refuses, and asks for an exchange at once.
 */
class SharedBudget implements RetryBudget {
  readonly kind: "ratio" | "tokens";
  readonly #events = new Events<BudgetEvents>();
  readonly #make: (clock: Clock) => LocalBudget;
  readonly #local: LocalBudget;
  readonly #replica: Replica<BudgetBatch>;
  #batch: BudgetBatch = emptyBatch();
  /** Retries this process may spend now. */
  #lease = 0;
  #leaseMark = Number.NEGATIVE_INFINITY;
  #spent = 0;
  /** Lease taken back at the last exchange, to hand back at the next. */
  #revoked = 0;
  /** What the last merge decided: the top-up, what is taken back, and where the lease is counted. */
  #granted = { lease: 0, revoke: 0, mark: Number.NEGATIVE_INFINITY };

  constructor(
    kind: "ratio" | "tokens",
    make: (clock: Clock) => LocalBudget,
    sharing: NonNullable<ReturnType<typeof sharingOptions>>,
    clock: Clock,
  ) {
    this.kind = kind;
    this.#make = make;
    this.#local = make(storeClock(() => this.#replica, clock));
    this.#replica = new Replica<BudgetBatch>(`budget-${kind}`, sharing, clock, {
      detach: (final) => {
        // The last exchange hands the whole lease back and takes none.
        const target = final ? 0 : Math.max(1, 2 * this.#batch.demand);
        const keep = Math.min(this.#lease, target);
        const batch = {
          ...this.#batch,
          target,
          keep,
          returned: this.#lease - keep,
          revoked: this.#revoked,
          spent: this.#spent,
          leaseMark: this.#leaseMark,
        };
        this.#lease = keep;
        this.#spent = 0;
        this.#revoked = 0;
        this.#batch = emptyBatch();
        return batch;
      },
      reattach: (batch) => {
        // Nothing reached the store: the counts wait for the next exchange, and the lease handed back is still ours.
        const b = this.#batch;
        b.requests += batch.requests;
        b.failures += batch.failures;
        b.successes += batch.successes;
        b.demand += batch.demand;
        this.#lease += batch.returned;
        this.#revoked += batch.revoked;
        this.#spent += batch.spent;
      },
      dropped: () => {
        // The write may or may not have landed: assume the lease handed back is gone, and never take back
        // from a bucket what may have been moved. Both err towards fewer retries.
        this.#leaseMark = Number.NEGATIVE_INFINITY;
      },
      merge: (shared, batch, now, recovering) => this.#merge(shared, batch, now, recovering),
      adopt: (shared) => {
        this.#local.restore(shared as BudgetState);
        this.#lease += this.#granted.lease;
        const revoked = Math.min(this.#lease, this.#granted.revoke);
        this.#lease -= revoked;
        this.#revoked += revoked;
        this.#leaseMark = this.#granted.mark;
      },
      down: (error) => this.#events.emit("store-down", { error }),
      up: (downFor) => this.#events.emit("store-up", { downFor }),
    });
  }

  #merge(shared: unknown, batch: BudgetBatch, now: number, recovering: boolean): BudgetState {
    const scratch = this.#make({ now: () => now, setTimer: () => () => {} });
    if (shared !== undefined) {
      try {
        scratch.restore(shared as BudgetState);
      } catch {
        // Not a state of this kind of budget (another version wrote it): start afresh.
      }
    }
    const handedBack = batch.returned + batch.revoked;
    if (scratch instanceof RatioBudget) {
      if (!recovering) scratch.add(batch.requests, 0);
      // The unspent lease leaves the bucket it was counted in; the part kept is counted again now.
      scratch.unretry(batch.keep + handedBack, batch.leaseMark);
      scratch.add(0, batch.keep);
    } else {
      // Tokens held back for the lease handed back, and for the retries spent, go back; failures are counted.
      scratch.take(-(handedBack + batch.spent));
      if (!recovering) scratch.take(batch.failures - batch.successes * scratch.tokenRatio);
    }
    const room = scratch.room();
    // More is leased than the budget now allows (failures elsewhere, the window sliding): take back what
    // this process kept, as far as it has not spent it by the time the exchange is over.
    const revoke = room < 0 ? Math.min(batch.keep, -room) : 0;
    const topUp =
      room > 0
        ? Math.max(0, Math.min(batch.target - batch.keep, room, Math.max(1, Math.floor(room / 2))))
        : 0;
    if (scratch instanceof RatioBudget) {
      scratch.add(0, topUp);
      this.#granted = { lease: topUp, revoke, mark: scratch.bucket };
    } else {
      scratch.take(topUp);
      this.#granted = { lease: topUp, revoke, mark: Number.NEGATIVE_INFINITY };
    }
    return scratch.state();
  }

  get shared(): boolean {
    return this.#replica.shared;
  }

  ready(): Promise<void> {
    return this.#replica.ready();
  }

  close(): Promise<void> {
    return this.#replica.close();
  }

  request(): void {
    this.#local.request();
    this.#batch.requests += 1;
  }

  succeeded(): void {
    this.#local.succeeded();
    this.#batch.successes += 1;
  }

  failed(): void {
    this.#local.failed();
    this.#batch.failures += 1;
  }

  get available(): boolean {
    if (this.#replica.refusing) return false;
    return this.#replica.shared ? this.#lease > 0 : this.#local.available;
  }

  tryRetry(): boolean {
    let ok: boolean;
    if (this.#replica.refusing) ok = false;
    else if (!this.#replica.shared) ok = this.#local.tryRetry();
    else {
      this.#batch.demand += 1;
      ok = this.#lease > 0;
      if (ok) {
        this.#lease -= 1;
        this.#spent += 1;
        if (this.#local instanceof RatioBudget) this.#local.add(0, 1);
      } else this.#replica.soon();
    }
    if (!ok) this.#events.emit("refused", { state: this.state() });
    return ok;
  }

  on<K extends keyof BudgetEvents>(event: K, listener: (payload: BudgetEvents[K]) => void): Disposable {
    return this.#events.on(event, listener);
  }

  /** The local replica's state: the shared state as of the last exchange, with this process's counts since. */
  state(): BudgetState {
    return this.#local.state();
  }

  /** Replaces the local replica's state; the next exchange replaces it again with the fleet's. */
  restore(state: BudgetState): void {
    this.#local.restore(state);
  }
}

function emptyBatch(): BudgetBatch {
  return {
    requests: 0,
    failures: 0,
    successes: 0,
    demand: 0,
    target: 0,
    keep: 0,
    returned: 0,
    revoked: 0,
    spent: 0,
    leaseMark: Number.NEGATIVE_INFINITY,
  };
}

/**
 * A retry budget to share among calls: `retry(op, { budget })`. With `maxTokens` and `tokenRatio`, the
 * token flavour (gRPC); otherwise ratio and floor over a window (Finagle).
 *
 * With a `store` (and a `key`), the budget is the fleet's: every process that names the same store and key
 * draws on one budget (see `SharingOptions`).
 *
 * @example
 * const budget = retryBudget({ ratio: 0.1, minPerSecond: 5 }); // retries at most 10% of calls, plus 5/s
 * await retry(op, { budget, maxRetries: 3 });
 * const fleetBudget = retryBudget({ ratio: 0.1, store: redisStore(), key: "payments" });
 */
export function retryBudget(options: RatioBudgetOptions | TokenBudgetOptions = {}): RetryBudget {
  const tokens =
    options !== null && typeof options === "object" && ("maxTokens" in options || "tokenRatio" in options);
  if (tokens) knownKeys("retryBudget", options, ["maxTokens", "tokenRatio", "clock", ...SHARING_KEYS]);
  else knownKeys("retryBudget", options, ["ratio", "minPerSecond", "ttl", "clock", ...SHARING_KEYS]);
  const sharing = sharingOptions("retryBudget", options);
  const clock = options.clock ?? systemClock;
  if (typeof clock?.now !== "function" || typeof clock?.setTimer !== "function") {
    throw new OptionError("retryBudget: clock", clock, "a Clock with now() and setTimer(ms, callback)");
  }
  const make = tokens
    ? () => new TokenBudget(options as TokenBudgetOptions)
    : (at: Clock) => new RatioBudget({ ...(options as RatioBudgetOptions), clock: at });
  if (sharing === undefined) return make(clock);
  return new SharedBudget(tokens ? "tokens" : "ratio", make, sharing, clock);
}
