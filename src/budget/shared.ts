/**
 * A retry budget of either kind shared by a fleet through a store, on leases: see `SharedBudget`.
 */
import type { Clock } from "../core/clock.js";
import { OptionError } from "../core/errors.js";
import { MAX_SKEW, type Replica, type Sharing } from "../store/replica.js";
import { forEachRun } from "../store/run-log.js";
import { restoreShared } from "../store/shared-policy.js";
import { BudgetBase } from "./base.js";
import { checkRatioState, RatioBudget } from "./ratio.js";
import type { TokenBudget } from "./tokens.js";
import type { BudgetState } from "./types.js";

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
export class SharedBudget extends BudgetBase {
  readonly kind: "ratio" | "tokens";
  readonly #make: (clock: Clock) => LocalBudget;
  readonly #local: LocalBudget;
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
  /** Of the batch's demand, what an exchange that never reached the store handed back: in the rate already. */
  #rated = 0;
  /** Lease taken back at the last exchange, to hand back at the next. */
  #revoked = 0;
  /** What the last merge decided: the top-up, what is taken back, and where the lease is counted. */
  #granted = { lease: 0, revoke: 0, mark: Number.NEGATIVE_INFINITY };

  constructor(kind: "ratio" | "tokens", make: (clock: Clock) => LocalBudget, sharing: Sharing, clock: Clock) {
    super();
    this.kind = kind;
    this.#make = make;
    this.#holdWidth = Math.max(10 * sharing.syncEvery, 10_000) / HOLD_BUCKETS;
    this.#lastDetach = clock.now();
    this.#local = make(this.storeClock(clock));
    this.share<BudgetBatch>(`budget-${kind}`, sharing, clock, this.events, () => ({
      detach: (final) => this.#detach(final, sharing.syncEvery, clock.now()),
      reattach: (batch) => this.#reattach(batch),
      dropped: (batch) => this.#dropped(batch),
      check: kind === "ratio" ? checkRatioState : checkSharedTokens,
      merge: (shared, batch, now, recovering) =>
        this.kind === "ratio"
          ? this.#mergeRatio(shared, batch, now, recovering)
          : this.#mergeTokens(shared, batch, now, recovering),
      adopt: (shared) => this.#adopt(shared),
    }));
  }

  /** The local replica of the shared state (there is one from the constructor on). */
  get #replica(): Replica<unknown> {
    return this.replica as Replica<unknown>;
  }

  /** Takes what the process saw since the last exchange, and sizes the lease it asks for (none when `final`). */
  #detach(final: boolean, syncEvery: number, now: number): BudgetBatch {
    const demand = this.#batch.demand;
    // The lease should last until the next exchange: twice the demand since the last one, or three
    // times what the smoothed rate of demand asks for in syncEvery (arrivals come in bursts), whichever
    // is more, and at least one. The last exchange hands the whole lease back and takes none.
    // An exchange asked for early (a refusal) must not make a short interval look like a high rate.
    const sample = (demand - this.#rated) / Math.max(syncEvery, now - this.#lastDetach);
    this.#rated = 0;
    this.#lastDetach = now;
    this.#rate = this.#rate === 0 ? sample : (this.#rate + sample) / 2;
    const target = final ? 0 : Math.max(1, 2 * demand, Math.ceil(3 * this.#rate * syncEvery));
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
  }

  #reattach(batch: BudgetBatch): void {
    // Nothing reached the store: the counts wait for the next exchange, and the lease handed back is still ours.
    const b = this.#batch;
    b.requests = batch.requests.concat(b.requests);
    b.failures += batch.failures;
    b.successes += batch.successes;
    b.demand += batch.demand;
    this.#rated += batch.demand;
    this.#owed += batch.owed;
    this.#lease += batch.returned;
    this.#revoked += batch.revoked;
    this.#spent += batch.spent;
    this.#moved = batch.moved.concat(this.#moved);
  }

  #dropped(batch: BudgetBatch): void {
    // The write may or may not have landed. It is settled so as to err towards fewer retries: the
    // failures are counted again (twice, if it landed), the requests and successes are not (lost, if it
    // did not), and nothing is ever taken from the lease's old bucket: the ratio lease is spent no more,
    // and a token hold left there is released when it is not renewed.
    this.#owed += batch.owed + batch.failures;
    this.#moved = batch.moved.concat(this.#moved);
    this.#leaseMark = Number.NEGATIVE_INFINITY;
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
    const at = { now: () => now, setTimer: () => () => {} };
    const scratch = this.#make(at) as RatioBudget;
    // A state that fails its check is not loaded at all (the ratio budget checks it whole first), so
    // the scratch budget stays empty.
    restoreShared(shared, (state) => scratch.restore(state as BudgetState));
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
    // Checked by the replica: a state of the token kind, or undefined.
    const found = shared as SharedTokens | undefined;
    let tokens = found === undefined ? max : Math.min(max, found.tokens);
    const bucket = Math.floor(now / this.#holdWidth);
    // Holds not renewed for HOLD_BUCKETS buckets are released: their holder is gone, or lost a write. A
    // hold dated later than now (and MAX_SKEW) is taken as dated then, and none holds more than the bucket.
    const latest = Math.floor((now + MAX_SKEW) / this.#holdWidth);
    const holds = new Map<number, number>();
    for (const [dated, n] of found?.holds ?? []) {
      const at = Math.min(dated, latest);
      if (at > bucket - HOLD_BUCKETS && n > 0) holds.set(at, Math.min(max, (holds.get(at) ?? 0) + n));
    }
    // This process's hold is released whole (the retries spent have their failures counted below) and
    // what it keeps is held again now.
    const left =
      (holds.get(batch.leaseMark) ?? 0) - (batch.keep + batch.returned + batch.revoked + batch.spent);
    if (left > 0) holds.set(batch.leaseMark, left);
    else holds.delete(batch.leaseMark);
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
    // The local copy: the fleet's state, with what this process saw since the exchange began. (Nothing
    // is owed here: the exchange took what was, and only a failed exchange owes more.)
    if (this.#local instanceof RatioBudget) {
      const local = this.#local;
      local.restore(shared as BudgetState);
      forEachRun(this.#batch.requests, (bucket, count) => local.addRequestsAt(bucket, count));
    } else {
      this.#local.restore({ kind: "tokens", tokens: (shared as SharedTokens).tokens });
      this.#local.apply(this.#batch.successes, this.#batch.failures);
    }
    this.#lease += this.#granted.lease;
    const revoked = Math.min(this.#lease, this.#granted.revoke);
    this.#lease -= revoked;
    this.#revoked += revoked;
    this.#leaseMark = this.#granted.mark;
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
    return ok || this.refuse();
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

/** Checks a token budget's shared state as read from the store; throws when it is not one. */
function checkSharedTokens(shared: unknown): void {
  const found = shared as Partial<SharedTokens> | undefined;
  const finite = (n: unknown) => typeof n === "number" && Number.isFinite(n);
  if (
    found?.kind !== "tokens" ||
    !finite(found.tokens) ||
    (found.tokens as number) < 0 ||
    !Array.isArray(found.holds) ||
    !found.holds.every((hold) => Array.isArray(hold) && hold.length === 2 && hold.every(finite))
  ) {
    throw new OptionError(
      "retryBudget: shared state",
      shared,
      'the state of a token budget ({ kind: "tokens", tokens, holds: [[bucket, tokens], …] })',
    );
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
