/**
 * Retry budgets: retries allowed only while they stay a fraction of the traffic, so that under a long
 * outage retries cannot multiply the load on the failing resource (seed 000's conclusion, after Marc
 * Brooker: backoff spreads retries out but does not reduce them). Two flavours:
 *
 * - ratio and floor over a window (Finagle's RetryBudget): within the last `window` ms, retries may be at
 *   most `ratio` × requests + `minPerSecond` × window / 1000;
 * - tokens (gRPC's retry throttling): a bucket starts full at `maxTokens`; each failed attempt takes 1, each
 *   success gives back `tokenRatio`; no retry while the tokens are at or below half the bucket.
 */
import { type Clock, systemClock } from "../core/clock.js";
import { OptionError } from "../core/errors.js";
import { type Disposable, Events } from "../core/events.js";
import { finiteAbove, finiteAtLeast, knownKeys } from "../core/validate.js";
import {
  forEachRun,
  Replica,
  SHARING_KEYS,
  type SharingOptions,
  sharingOptions,
  storeClock,
} from "../store/replica.js";

export interface RatioBudgetOptions extends SharingOptions {
  /** Retries allowed per request, in [0, 1000]. Default 0.2 (Finagle's default percentCanRetry). */
  ratio?: number;
  /** Retries allowed per second whatever the traffic, >= 0. Default 10 (Finagle's minRetriesPerSec). */
  minPerSecond?: number;
  /** The window, ms, > 0. Default 10,000 (Finagle's ttl). */
  window?: number;
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
  success(): void;
  /** An attempt failed. */
  failure(): void;
  /** May one more retry happen now? If so it is counted; if not, a `refused` event says so. */
  tryRetry(): boolean;
  /** Whether a retry would be allowed now, without taking it. */
  readonly available: boolean;
  on<K extends keyof BudgetEvents>(event: K, listener: (payload: BudgetEvents[K]) => void): Disposable;
  snapshot(): BudgetState;
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
  // The window as BUCKETS buckets of window / BUCKETS ms; index = bucket number mod BUCKETS.
  #requests = new Array<number>(BUCKETS).fill(0);
  #retries = new Array<number>(BUCKETS).fill(0);
  #bucket: number;

  constructor(options: RatioBudgetOptions) {
    this.#ratio = finiteAtLeast("retryBudget: ratio", options.ratio ?? 0.2, 0, 1000);
    const minPerSecond = finiteAtLeast("retryBudget: minPerSecond", options.minPerSecond ?? 10, 0);
    const window = finiteAbove("retryBudget: window", options.window ?? 10_000, 0);
    this.#floor = (minPerSecond * window) / 1000;
    this.#width = window / BUCKETS;
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

  /** Shared mode: counts `retries` in bucket number `bucket`, if it is in the window. */
  addAt(bucket: number, retries: number): void {
    this.#advance();
    if (retries <= 0 || bucket > this.#bucket || bucket <= this.#bucket - BUCKETS) return;
    const i = ((bucket % BUCKETS) + BUCKETS) % BUCKETS;
    this.#retries[i] = (this.#retries[i] as number) + retries;
  }

  /**
   * Shared mode: the room and the capacity of the window as it will be in the next bucket, without the
   * oldest bucket's requests and retries (requests made meanwhile only add to it).
   */
  next(): { room: number; capacity: number } {
    this.#advance();
    const oldest = (((this.#bucket + 1) % BUCKETS) + BUCKETS) % BUCKETS;
    const requests = this.#requests.reduce((a, b) => a + b, 0) - (this.#requests[oldest] as number);
    const retries = this.#retries.reduce((a, b) => a + b, 0) - (this.#retries[oldest] as number);
    const capacity = Math.floor(this.#ratio * requests + this.#floor);
    return { room: capacity - retries, capacity };
  }

  /** Shared mode: counts `requests` in bucket number `bucket`, if it is in the window. */
  addRequestsAt(bucket: number, requests: number): void {
    this.#advance();
    if (requests <= 0 || bucket > this.#bucket || bucket <= this.#bucket - BUCKETS) return;
    const i = ((bucket % BUCKETS) + BUCKETS) % BUCKETS;
    this.#requests[i] = (this.#requests[i] as number) + requests;
  }

  /** Shared mode: the retries the window allows in all, spent or not. */
  capacity(): number {
    this.#advance();
    const requests = this.#requests.reduce((a, b) => a + b, 0);
    return Math.floor(this.#ratio * requests + this.#floor);
  }

  /** The current bucket's number as of the last count or check, without reading the clock again. */
  get lastBucket(): number {
    return this.#bucket;
  }

  /** A bucket's width, ms. */
  get width(): number {
    return this.#width;
  }

  /** The current bucket's number. */
  get bucket(): number {
    this.#advance();
    return this.#bucket;
  }

  success(): void {}

  failure(): void {}

  get available(): boolean {
    this.#advance();
    const requests = this.#requests.reduce((a, b) => a + b, 0);
    const retries = this.#retries.reduce((a, b) => a + b, 0);
    return retries + 1 <= this.#ratio * requests + this.#floor;
  }

  tryRetry(): boolean {
    if (!this.available) {
      this.#events.emit("refused", { state: this.snapshot() });
      return false;
    }
    const i = this.#advance();
    this.#retries[i] = (this.#retries[i] as number) + 1;
    return true;
  }

  on<K extends keyof BudgetEvents>(event: K, listener: (payload: BudgetEvents[K]) => void): Disposable {
    return this.#events.on(event, listener);
  }

  snapshot(): BudgetState {
    this.#advance();
    return {
      kind: "ratio",
      requests: [...this.#requests],
      retries: [...this.#retries],
      bucketAt: this.#bucket,
    };
  }

  restore(state: BudgetState): void {
    const count = (n: unknown) => typeof n === "number" && Number.isFinite(n) && n >= 0;
    if (
      state?.kind !== "ratio" ||
      !Array.isArray(state.requests) ||
      !Array.isArray(state.retries) ||
      state.requests.length !== BUCKETS ||
      state.retries.length !== BUCKETS ||
      !state.requests.every(count) ||
      !state.retries.every(count) ||
      typeof state.bucketAt !== "number" ||
      !Number.isFinite(state.bucketAt)
    ) {
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

  get tokenRatio(): number {
    return this.#ratio;
  }

  /** Shared mode: `successes`, then `failures`, at once. */
  apply(successes: number, failures: number): void {
    this.#tokens = Math.max(0, Math.min(this.#max, this.#tokens + successes * this.#ratio) - failures);
  }

  get maxTokens(): number {
    return this.#max;
  }

  request(): void {}

  success(): void {
    this.#tokens = Math.min(this.#max, this.#tokens + this.#ratio);
  }

  failure(): void {
    this.#tokens = Math.max(0, this.#tokens - 1);
  }

  get available(): boolean {
    return this.#tokens > this.#max / 2;
  }

  tryRetry(): boolean {
    if (this.available) return true;
    this.#events.emit("refused", { state: this.snapshot() });
    return false;
  }

  on<K extends keyof BudgetEvents>(event: K, listener: (payload: BudgetEvents[K]) => void): Disposable {
    return this.#events.on(event, listener);
  }

  snapshot(): BudgetState {
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
  /** Ratio: requests by the bucket they were made in, [bucket, count, …]. */
  requests: number[];
  failures: number;
  successes: number;
  /** Tokens: failures of an exchange whose write was lost unseen, counted even when recovering. */
  owed: number;
  /** Retries asked for (taken or refused) since the last exchange. */
  demand: number;
  /** The lease the process wants until the next exchange: twice its demand, or one while idle, 0 when closing. */
  target: number;
  /** The part of its lease the process keeps (and may still spend) while the exchange is under way. */
  keep: number;
  /** The part it hands back: no longer spendable from the moment the batch is taken. */
  returned: number;
  /** Lease taken back by the last exchange, handed back now. */
  revoked: number;
  /** Tokens: retries spent from the lease since the last exchange. */
  spent: number;
  /** Ratio: retries spent in the bucket after the lease's, [bucket, count, …], to move there. */
  moved: number[];
  /** The bucket the lease is counted (ratio) or held (tokens) in; -Infinity: unknown, never taken from. */
  leaseMark: number;
}

/** The token flavour's shared state: the tokens one bucket fed every outcome would hold, and the leases' holds. */
interface SharedTokens {
  readonly kind: "tokens";
  readonly tokens: number;
  /** Tokens held back for the processes' leases, as [bucket, tokens] by when they were last renewed. */
  readonly holds: readonly (readonly [number, number])[];
}

type LocalBudget = RatioBudget | TokenBudget;

/** Buckets of a token hold's life: a hold not renewed for this many buckets is released (its holder is gone). */
const HOLD_BUCKETS = 10;

/**
 * A budget the fleet shares. A process may retry only on a lease: retries reserved for it in the shared
 * budget (counted as retries in the ratio window, or held back from the tokens). At each exchange it keeps
 * what it expects to need until the next (twice what it asked for since the last), hands back the rest,
 * and is topped up from what is left (at most half of it, so that one busy process cannot take it all).
 * An idle process keeps a standing lease of one retry, so that its next retry need not wait, but only
 * while less than half of the budget is used: under pressure, idle processes hand theirs back. When the
 * budget has shrunk below what is leased, the exchange takes leases back.
 *
 * Ratio: requests are counted in the buckets they were made in, a lease is counted before it can be
 * spent, and it is good in the bucket it was reckoned for and the next, having been reckoned against both
 * windows (the window only grows within a bucket); a retry spent in the next bucket is moved there at the
 * next exchange. So the fleet never retries more in any window than one budget fed every request and
 * retry would allow.
 *
 * Tokens: the shared state keeps the tokens as one bucket fed every process's outcomes would (each
 * exchange's successes before its failures), and the tokens held for leases apart, renewed at each
 * exchange and released when not renewed for max(10 × syncEvery, 10 s). A lease taken while the tokens
 * allowed it may still be spent after failures elsewhere drain them, until the holder's next exchange
 * takes it back: the fleet can exceed one bucket's refusals by at most the leases outstanding.
 */
class SharedBudget implements RetryBudget {
  readonly kind: "ratio" | "tokens";
  readonly #events = new Events<BudgetEvents>();
  readonly #make: (clock: Clock) => LocalBudget;
  readonly #local: LocalBudget;
  readonly #replica: Replica<BudgetBatch>;
  /** Tokens: the width of a hold's bucket, ms. */
  readonly #holdWidth: number;
  #batch: BudgetBatch = emptyBatch();
  /** Retries this process may spend now (ratio: only in bucket `#leaseMark`). */
  #lease = 0;
  #leaseMark = Number.NEGATIVE_INFINITY;
  #spent = 0;
  #owed = 0;
  /** Ratio: retries spent in the bucket after the lease's, [bucket, count, …]. */
  #moved: number[] = [];
  /** Retries asked for per ms, smoothed over the exchanges: what sizes the lease. */
  #rate = 0;
  #lastDetach: number;
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
    this.#holdWidth = Math.max(10 * sharing.syncEvery, 10_000) / HOLD_BUCKETS;
    this.#lastDetach = clock.now();
    this.#local = make(storeClock(() => this.#replica, clock));
    this.#replica = new Replica<BudgetBatch>(`budget-${kind}`, sharing, clock, {
      detach: (final) => {
        const demand = this.#batch.demand;
        // The lease should last until the next exchange: twice the demand since the last one, or three
        // times what the smoothed rate of demand asks for in syncEvery (arrivals come in bursts), whichever
        // is more, and at least one. The last exchange hands the whole lease back and takes none.
        const now = clock.now();
        // An exchange asked for early (a refusal) must not make a short interval look like a high rate.
        const sample = demand / Math.max(sharing.syncEvery, now - this.#lastDetach);
        this.#lastDetach = now;
        this.#rate = this.#rate === 0 ? sample : (this.#rate + sample) / 2;
        const target = final ? 0 : Math.max(1, 2 * demand, Math.ceil(3 * this.#rate * sharing.syncEvery));
        const keep = Math.min(this.#lease, target);
        const batch = {
          ...this.#batch,
          owed: this.#owed,
          target,
          keep,
          returned: this.#lease - keep,
          revoked: this.#revoked,
          spent: this.#spent,
          moved: this.#moved,
          leaseMark: this.#leaseMark,
        };
        this.#lease = keep;
        this.#spent = 0;
        this.#moved = [];
        this.#owed = 0;
        this.#revoked = 0;
        this.#batch = emptyBatch();
        return batch;
      },
      reattach: (batch) => {
        // Nothing reached the store: the counts wait for the next exchange, and the lease handed back is still ours.
        const b = this.#batch;
        b.requests = batch.requests.concat(b.requests);
        b.failures += batch.failures;
        b.successes += batch.successes;
        b.demand += batch.demand;
        this.#owed += batch.owed;
        this.#lease += batch.returned;
        this.#revoked += batch.revoked;
        this.#spent += batch.spent;
        this.#moved = batch.moved.concat(this.#moved);
      },
      dropped: (batch) => {
        // The write may or may not have landed. It is settled so as to err towards fewer retries: the
        // failures are counted again (twice, if it landed), the requests and successes are not (lost, if it
        // did not), and nothing is ever taken from the lease's old bucket: the ratio lease is spent no more,
        // and a token hold left there is released when it is not renewed.
        this.#owed += batch.owed + batch.failures;
        this.#moved = batch.moved.concat(this.#moved);
        this.#leaseMark = Number.NEGATIVE_INFINITY;
      },
      merge: (shared, batch, now, recovering) =>
        this.kind === "ratio"
          ? this.#mergeRatio(shared, batch, now, recovering)
          : this.#mergeTokens(shared, batch, now, recovering),
      adopt: (shared) => this.#adopt(shared),
      down: (error) => this.#events.emit("store-down", { error }),
      up: (downFor) => this.#events.emit("store-up", { downFor }),
    });
  }

  /** The store-time bucket now (ratio). */
  #bucketNow(): number {
    return Math.floor(this.#replica.now() / (this.#local as RatioBudget).width);
  }

  /** How much to take back and to top up, given the room left after the kept lease is counted. */
  #settle(batch: BudgetBatch, room: number, capacity: number): { revoke: number; topUp: number } {
    const idle = batch.demand === 0 && batch.target <= 1;
    let revoke = 0;
    // More is leased than the budget allows (failures elsewhere, the window sliding): take back what this
    // process kept, as far as it has not spent it by the time the exchange is over.
    if (room < 0) revoke = Math.min(batch.keep, -room);
    // Under pressure, an idle process hands back its standing lease.
    else if (idle && room < capacity / 2) revoke = batch.keep;
    let topUp = 0;
    if (room > 0 && batch.target > batch.keep) {
      topUp = idle
        ? room - 1 >= capacity / 2
          ? 1
          : 0
        : Math.min(batch.target - batch.keep, room, Math.max(1, Math.floor(room / 2)));
    }
    return { revoke, topUp };
  }

  #mergeRatio(shared: unknown, batch: BudgetBatch, now: number, recovering: boolean): BudgetState {
    let scratch = this.#make({ now: () => now, setTimer: () => () => {} }) as RatioBudget;
    if (shared !== undefined) {
      try {
        scratch.restore(shared as BudgetState);
      } catch {
        // Not a state of this kind of budget (another version wrote it): start afresh.
        scratch = this.#make({ now: () => now, setTimer: () => () => {} }) as RatioBudget;
      }
    }
    if (!recovering) forEachRun(batch.requests, (bucket, count) => scratch.addRequestsAt(bucket, count));
    // Retries spent in the bucket after their lease's go to that bucket, so they stay in the window as
    // long as they should.
    forEachRun(batch.moved, (bucket, count) => {
      scratch.unretry(count, batch.leaseMark);
      scratch.addAt(bucket, count);
    });
    // The unspent lease leaves the bucket it was counted in; the part kept is counted again now.
    scratch.unretry(batch.keep + batch.returned + batch.revoked, batch.leaseMark);
    scratch.add(0, batch.keep);
    // A lease is good in this bucket and the next: it must fit both windows.
    const next = scratch.next();
    const { revoke, topUp } = this.#settle(
      batch,
      Math.min(scratch.room(), next.room),
      Math.min(scratch.capacity(), next.capacity),
    );
    scratch.add(0, topUp);
    this.#granted = { lease: topUp, revoke, mark: scratch.bucket };
    return scratch.snapshot();
  }

  #mergeTokens(shared: unknown, batch: BudgetBatch, now: number, recovering: boolean): SharedTokens {
    const local = this.#local as TokenBudget;
    const max = local.maxTokens;
    const found = shared as Partial<SharedTokens> | undefined;
    const valid =
      found?.kind === "tokens" &&
      typeof found.tokens === "number" &&
      Number.isFinite(found.tokens) &&
      Array.isArray(found.holds);
    let tokens = valid ? Math.min(max, Math.max(0, found.tokens as number)) : max;
    const bucket = Math.floor(now / this.#holdWidth);
    // Holds not renewed for HOLD_BUCKETS buckets are released: their holder is gone, or lost a write.
    const holds = new Map<number, number>();
    for (const hold of valid ? (found.holds as unknown[]) : []) {
      if (!Array.isArray(hold) || typeof hold[0] !== "number" || typeof hold[1] !== "number") continue;
      if (hold[0] > bucket - HOLD_BUCKETS && hold[1] > 0)
        holds.set(hold[0], (holds.get(hold[0]) ?? 0) + hold[1]);
    }
    // This process's hold is released whole (the retries spent have their failures counted below) and
    // what it keeps is held again now.
    const mine = holds.get(batch.leaseMark);
    if (mine !== undefined) {
      const left = mine - (batch.keep + batch.returned + batch.revoked + batch.spent);
      if (left > 0) holds.set(batch.leaseMark, left);
      else holds.delete(batch.leaseMark);
    }
    // Successes first, then failures: of all orders, the one that leaves the fewest tokens.
    const successes = recovering ? 0 : batch.successes;
    const failures = (recovering ? 0 : batch.failures) + batch.owed;
    tokens = Math.max(0, Math.min(max, tokens + successes * local.tokenRatio) - failures);
    holds.set(bucket, (holds.get(bucket) ?? 0) + batch.keep);
    let held = 0;
    for (const n of holds.values()) held += n;
    const capacity = Math.ceil(tokens - max / 2 - 1);
    const { revoke, topUp } = this.#settle(batch, capacity - held, capacity);
    holds.set(bucket, (holds.get(bucket) ?? 0) + topUp);
    this.#granted = { lease: topUp, revoke, mark: bucket };
    return { kind: "tokens", tokens, holds: [...holds].filter(([, n]) => n > 0) };
  }

  #adopt(shared: unknown): void {
    // The local copy: the fleet's state, with what this process saw since the exchange began.
    if (this.#local instanceof RatioBudget) {
      const local = this.#local;
      local.restore(shared as BudgetState);
      forEachRun(this.#batch.requests, (bucket, count) => local.addRequestsAt(bucket, count));
    } else {
      this.#local.restore({ kind: "tokens", tokens: (shared as SharedTokens).tokens });
      this.#local.apply(this.#batch.successes, this.#batch.failures + this.#owed);
    }
    this.#lease += this.#granted.lease;
    const revoked = Math.min(this.#lease, this.#granted.revoke);
    this.#lease -= revoked;
    this.#revoked += revoked;
    this.#leaseMark = this.#granted.mark;
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
    if (this.#local instanceof RatioBudget) addToRuns(this.#batch.requests, this.#local.lastBucket);
  }

  success(): void {
    this.#local.success();
    this.#batch.successes += 1;
  }

  failure(): void {
    this.#local.failure();
    this.#batch.failures += 1;
  }

  /** A lease is there to spend now (ratio: reckoned for this bucket or the one before). */
  #leased(): boolean {
    if (this.#lease <= 0) return false;
    if (this.kind !== "ratio") return true;
    const bucket = this.#bucketNow();
    return bucket === this.#leaseMark || bucket === this.#leaseMark + 1;
  }

  get available(): boolean {
    if (this.#replica.refusing) return false;
    return this.#replica.shared ? this.#leased() : this.#local.available;
  }

  tryRetry(): boolean {
    let ok: boolean;
    if (this.#replica.refusing) ok = false;
    else if (!this.#replica.shared) ok = this.#local.tryRetry();
    else {
      this.#batch.demand += 1;
      ok = this.#leased();
      if (ok) {
        this.#lease -= 1;
        this.#spent += 1;
        if (this.kind === "ratio") {
          const bucket = this.#bucketNow();
          if (bucket !== this.#leaseMark) addToRuns(this.#moved, bucket);
        }
      } else this.#replica.soon();
    }
    if (!ok) this.#events.emit("refused", { state: this.snapshot() });
    return ok;
  }

  on<K extends keyof BudgetEvents>(event: K, listener: (payload: BudgetEvents[K]) => void): Disposable {
    return this.#events.on(event, listener);
  }

  /** The local copy's state: the fleet's as of the last exchange, with this process's counts since (leases count as spent). */
  snapshot(): BudgetState {
    return this.#local.snapshot();
  }

  /** Replaces the local copy's state, which decides while the store is down; the next exchange replaces it again. */
  restore(state: BudgetState): void {
    this.#local.restore(state);
  }
}

/** Counts one more in `runs` ([bucket, count, …]) for `bucket`. */
function addToRuns(runs: number[], bucket: number): void {
  if (runs.length >= 2 && runs[runs.length - 2] === bucket)
    runs[runs.length - 1] = (runs.at(-1) as number) + 1;
  else runs.push(bucket, 1);
}

function emptyBatch(): BudgetBatch {
  return {
    requests: [],
    failures: 0,
    successes: 0,
    owed: 0,
    demand: 0,
    target: 0,
    keep: 0,
    returned: 0,
    revoked: 0,
    spent: 0,
    moved: [],
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
  else knownKeys("retryBudget", options, ["ratio", "minPerSecond", "window", "clock", ...SHARING_KEYS]);
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
