/**
 * A rate limiter's token bucket shared by a fleet through a store, on leases. The store holds one bucket
 * for the fleet, and what each process holds of it; a process spends only tokens it holds (its lease),
 * so a call never waits for the store while the lease lasts. At each exchange a process hands back what
 * it does not expect to need before the next (it keeps up to twice what it asked for since the last),
 * and is topped up from the bucket: at most half of what is there, so that one busy process cannot take
 * it all. The bucket refills at the rate only up to `burst` less what the processes hold, so the fleet
 * together never starts more than `burst + rate × T / per` calls in any T ms.
 *
 * What is read is clamped before it is used: tokens to [0, burst], times to at most `MAX_SKEW` ahead of
 * the store's time, holds to [0, burst]; a value of another shape is not this limiter's state and is
 * replaced (see `Replica`). Holders are kept to `MAX_HOLDERS`.
 */
import { OptionError } from "../core/errors.js";
import { MAX_SKEW } from "../store/replica.js";

/** The bucket as the store holds it. */
export interface SharedRate {
  readonly kind: "rate";
  /** Tokens in the bucket at `at` (store time, ms). */
  readonly tokens: number;
  readonly at: number;
  /** Each process's hold: [its id, tokens it holds, when the hold lapses (store time)]. */
  readonly holders: readonly (readonly [string, number, number])[];
}

/** What one process hands over at an exchange. */
export interface RateBatch {
  /** Tokens asked for since the last exchange (taken or not). */
  demand: number;
  /** Calls waiting in the process's queue now: demand too, though they asked before. */
  waiting: number;
  /** The tokens it wants to hold until the next exchange (0 on the last). */
  target: number;
  /** Tokens of its lease it keeps, and may go on spending while the exchange is under way. */
  keep: number;
  /** Tokens it hands back: no longer spendable from the moment the batch is taken. */
  returned: number;
  /** The last exchange: the process leaves the fleet. */
  final: boolean;
}

/** What the merge granted, for `adopt`. */
export interface RateGrant {
  /** Tokens added to the lease. */
  readonly topUp: number;
  /** Tokens of the lease taken back (the fleet holds more than the bucket allows). */
  readonly revoke: number;
}

/** The most processes the shared state keeps a hold for (the holds that lapse soonest go first). */
export const MAX_HOLDERS = 1000;
/** The longest process id kept, in characters. */
export const MAX_ID = 64;
/** The longest a hold lives without being renewed, ms (10 minutes). */
export const MAX_HOLD_LIFE = 600_000;

/** The bucket's figures, as one process of the fleet has them. */
export interface RateShape {
  readonly burst: number;
  /** Milliseconds per token. */
  readonly interval: number;
}

/** Checks a value read from the store; throws when it is not a shared bucket. */
export function checkSharedRate(shared: unknown): void {
  const found = shared as Partial<SharedRate> | undefined;
  const finite = (n: unknown) => typeof n === "number" && Number.isFinite(n);
  if (
    found?.kind !== "rate" ||
    !finite(found.tokens) ||
    !finite(found.at) ||
    !Array.isArray(found.holders) ||
    found.holders.length > MAX_HOLDERS ||
    !everyHold(found.holders, finite)
  ) {
    throw new OptionError(
      "rateLimiter: shared state",
      shared,
      `a shared bucket ({ kind: "rate", tokens, at, holders: [[id, tokens, until], …] }, at most ${MAX_HOLDERS} holders)`,
    );
  }
}

/** Whether every hold is [id, tokens, until] (an indexed walk: an array with holes has none there). */
function everyHold(holders: readonly unknown[], finite: (n: unknown) => boolean): boolean {
  for (let i = 0; i < holders.length; i++) {
    const hold = holders[i];
    if (
      !Array.isArray(hold) ||
      hold.length !== 3 ||
      typeof hold[0] !== "string" ||
      hold[0].length > MAX_ID ||
      !finite(hold[1]) ||
      !finite(hold[2])
    ) {
      return false;
    }
  }
  return true;
}

/**
 * The fleet's bucket after process `id` hands over `batch` at store time `now` (`shared`: as read and
 * checked, undefined for none), and what it is granted. `life`: how long its hold lasts unrenewed (every
 * process of a fleet should have the same: a hold is taken to last at most this long, and `MAX_SKEW`).
 * `replacing`: the key held something else; the new bucket then starts empty, since what the processes
 * hold of the old one is not known.
 */
export function mergeRate(
  shared: unknown,
  batch: RateBatch,
  now: number,
  id: string,
  life: number,
  shape: RateShape,
  replacing = false,
): { state: SharedRate; grant: RateGrant } {
  const { burst, interval } = shape;
  const found = shared as SharedRate | undefined;
  const clamp = (n: number, max: number) => Math.min(max, Math.max(0, n));
  // A time ahead of the store's (by more than a process of the fleet can be) is taken as that far ahead;
  // the bucket's time never goes back, so no span is refilled twice.
  const at = found === undefined ? now : Math.min(found.at, now + MAX_SKEW);
  let tokens = found === undefined ? (replacing ? 0 : burst) : clamp(found.tokens, burst);
  // The others' holds that have not lapsed, each at most the bucket, lasting no longer than a hold can.
  let others: [string, number, number][] = [];
  // Every hold as read, this process's too: the room the bucket had to refill in since `at`.
  let heldBefore = 0;
  for (const [holder, n, until] of found?.holders ?? []) {
    const hold = Math.floor(clamp(n, burst));
    heldBefore += hold;
    if (holder === id || until < now) continue;
    others.push([holder, hold, Math.min(until, now + life + MAX_SKEW)]);
  }
  if (others.length >= MAX_HOLDERS) {
    others.sort((a, b) => b[2] - a[2]);
    others = others.slice(0, MAX_HOLDERS - 1);
  }
  let held = 0;
  for (const hold of others) held += hold[1];
  // Room for the bucket and this process's hold; a hold past it is taken back (and is lost, since the
  // process may have spent it while the exchange was under way).
  const room = Math.max(0, burst - held);
  const revoke = Math.max(0, batch.keep - room);
  const mine = batch.keep - revoke;
  // Refilled since `at` only within the room there was then: a token held until just now (spent, or
  // handed back) may have been held all along, and its room is free from now on.
  tokens = Math.min(tokens + Math.max(0, now - at) / interval, Math.max(tokens, burst - heldBefore));
  tokens = clamp(tokens + batch.returned, room - mine);
  let topUp = 0;
  const want = batch.target - mine;
  if (!batch.final && want > 0 && tokens >= 1) {
    topUp =
      batch.demand === 0 && batch.waiting === 0
        ? // An idle process keeps one token at hand, while the bucket is more than half full.
          tokens - 1 >= burst / 2
          ? 1
          : 0
        : Math.min(want, Math.floor(tokens), Math.max(1, Math.floor(tokens / 2)));
  }
  tokens -= topUp;
  if (!batch.final) others.push([id, mine + topUp, now + life]);
  return {
    state: { kind: "rate", tokens, at: Math.max(at, now), holders: others },
    grant: { topUp, revoke },
  };
}
