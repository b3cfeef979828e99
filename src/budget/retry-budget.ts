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

  /** Shared mode: the retries the window allows now. */
  room(): number {
    this.#advance();
    const requests = this.#requests.reduce((a, b) => a + b, 0);
    const retries = this.#retries.reduce((a, b) => a + b, 0);
    return Math.max(0, Math.floor(this.#ratio * requests + this.#floor - retries));
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

  /** Shared mode: retries that the tokens allow before they fall to half the bucket (each retry follows a failure, which takes one). */
  room(): number {
    return Math.max(0, Math.ceil(this.#tokens - this.#max / 2 - 1));
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
  /** Retries taken beyond the lease (during the last exchange): counted now. */
  debt: number;
  /** Retries asked for (taken or refused) since the last exchange: the next lease's size. */
  demand: number;
  /** The lease held when the batch was taken, handed back (ratio) or released (tokens). */
  lease: number;
  /** Ratio: the bucket the lease was counted in. Tokens: the tokens the lease reserved. */
  leaseMark: number;
}

type LocalBudget = RatioBudget | TokenBudget;

/**
 * A budget the fleet shares. A process may retry only on a lease: retries it took from the shared budget
 * at its last exchange, sized to what it asked for then (at least one, at most half of what is left), and
 * handed back unused at the next. The leases of all processes never exceed the budget, so the fleet
 * cannot overspend it however many processes there are; a process that runs out of its lease before the
 * next exchange refuses (and asks for an exchange at once).
 */
class SharedBudget implements RetryBudget {
  readonly kind: "ratio" | "tokens";
  readonly #events = new Events<BudgetEvents>();
  readonly #make: (clock: Clock) => LocalBudget;
  readonly #local: LocalBudget;
  readonly #replica: Replica<BudgetBatch>;
  #batch: BudgetBatch = emptyBatch();
  #lease = 0;
  #leaseMark = 0;
  #leaseAtDetach = 0;
  #granted = { lease: 0, mark: 0 };

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
      detach: () => {
        const batch = { ...this.#batch, lease: this.#lease, leaseMark: this.#leaseMark };
        this.#batch = emptyBatch();
        this.#leaseAtDetach = this.#lease;
        return batch;
      },
      reattach: (batch) => {
        const b = this.#batch;
        b.requests += batch.requests;
        b.failures += batch.failures;
        b.successes += batch.successes;
        b.debt += batch.debt;
        b.demand += batch.demand;
      },
      merge: (shared, batch, now, recovering) => this.#merge(shared, batch, now, recovering),
      adopt: (shared) => {
        this.#local.restore(shared as BudgetState);
        if (this.kind === "ratio") this.#batch.debt += Math.max(0, this.#leaseAtDetach - this.#lease);
        this.#lease = this.#granted.lease;
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
    let room: number;
    if (scratch instanceof RatioBudget) {
      if (!recovering) scratch.add(batch.requests, batch.debt);
      scratch.unretry(batch.lease, batch.leaseMark);
      room = scratch.room();
    } else {
      // The lease reserved tokens; the failures themselves are counted now.
      scratch.take(-batch.leaseMark);
      if (!recovering) scratch.take(batch.failures - batch.successes * scratch.tokenRatio);
      room = scratch.room();
    }
    const want = Math.max(1, 2 * batch.demand);
    const lease = Math.min(want, room, Math.max(1, Math.floor(room / 2)));
    if (scratch instanceof RatioBudget) {
      scratch.add(0, lease);
      this.#granted = { lease, mark: scratch.bucket };
    } else {
      scratch.take(lease);
      this.#granted = { lease, mark: lease };
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
  return { requests: 0, failures: 0, successes: 0, debt: 0, demand: 0, lease: 0, leaseMark: 0 };
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
