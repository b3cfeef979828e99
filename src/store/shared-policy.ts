/**
 * What every policy whose state a fleet may share through a store has in common (the circuit breaker,
 * the retry budget, the responsive backoff): `shared`, `ready()` and `close()`, the `store-down`,
 * `store-up` and `store-corrupt` events, the clock on the store's time, and, for the policies that hand
 * over a log of outcomes, the log and the quiet replay of their own outcomes on the fleet's state.
 */
import type { Clock } from "../core/clock.js";
import type { Random } from "../core/random.js";
import { Replica, type ReplicaHooks, type Sharing, storeClock } from "./replica.js";
import { type RunBatch, RunLog, replayingRandom } from "./run-log.js";

/** Events every shared policy emits about its store. */
export interface StoreEvents extends Record<string, unknown> {
  /**
   * The shared store failed or timed out: this process decides alone on its replica of the state (or, with
   * `whenStoreDown: "closed"`, takes the careful way: a breaker and a budget refuse, a responsive backoff
   * waits `max`).
   */
  "store-down": { readonly error: unknown };
  /** The shared store answers again: the state is the fleet's again. */
  "store-up": { readonly downFor: number };
  /**
   * The shared key held something that is not this policy's state (another program's value, garbage, a
   * Redis key of another type): it is not taken, and is overwritten with a fresh state. `found` is what
   * was there and `reason` what is wrong with it, each cut to 200 characters. One event per exchange that
   * finds it; while it keeps being found, the exchanges slow down (as while the store is down).
   */
  "store-corrupt": { readonly found: string; readonly reason: string };
}

/** Where a shared policy reports its store. */
export interface StoreEventSink {
  emit<K extends keyof StoreEvents>(event: K, payload: StoreEvents[K]): void;
}

/**
 * The hooks a policy gives its replica; the replica's `down`, `up` and `corrupt` become `store-down`,
 * `store-up` and `store-corrupt`.
 */
export type SharingHooks<B> = Omit<ReplicaHooks<B>, "down" | "up" | "corrupt"> & {
  /** The key held something else, which this exchange replaces (before `merge` is given undefined for it). */
  corrupted?(): void;
};

/**
 * A policy whose state may be shared through a store (`SharingOptions`). Without a store it is the
 * process's alone, and `shared`, `ready()` and `close()` say so at once.
 */
export abstract class SharedPolicy {
  #replica: Replica<unknown> | undefined;

  /** Whether the state is shared through a store now (false without one, and while the store is down). */
  get shared(): boolean {
    return this.#replica?.shared ?? false;
  }

  /** Resolves when the first exchange with the store is over (at once without a store). */
  ready(): Promise<void> {
    return this.#replica?.ready() ?? Promise.resolve();
  }

  /** Hands what this process saw to the store one last time and stops exchanging (nothing without a store). */
  close(): Promise<void> {
    return this.#replica?.close() ?? Promise.resolve();
  }

  /** The local replica of the shared state; undefined without a store. */
  protected get replica(): Replica<unknown> | undefined {
    return this.#replica;
  }

  /**
   * Shares the state through `sharing`'s store under `kind:key` (nothing when `sharing` is undefined):
   * `hooks()` gives what the replica needs, and `events` hears `store-down`, `store-up` and
   * `store-corrupt`. Returns the clock to decide on: the store's time, which the whole fleet shares
   * (`clock` itself without a store).
   */
  protected share<B>(
    kind: string,
    sharing: Sharing | undefined,
    clock: Clock,
    events: StoreEventSink,
    hooks: () => SharingHooks<B>,
  ): Clock {
    if (sharing === undefined) return clock;
    const given = hooks();
    this.#replica = new Replica<B>(kind, sharing, clock, {
      ...given,
      down: (error) => events.emit("store-down", { error }),
      up: (downFor) => events.emit("store-up", { downFor }),
      corrupt: (found, reason) => {
        given.corrupted?.();
        events.emit("store-corrupt", { found, reason });
      },
    }) as Replica<unknown>;
    return this.storeClock(clock);
  }

  /** The store's time (once the store has answered), with `clock`'s timers. */
  protected storeClock(clock: Clock): Clock {
    return storeClock(() => this.#replica, clock);
  }
}

/**
 * Takes `shared`, the state as read from the store, with `restore`, unless there is none yet or it is not
 * this policy's state (another version wrote it): then the policy starts afresh. Says whether it took it.
 */
export function restoreShared(shared: unknown, restore: (state: unknown) => void): boolean {
  if (shared === undefined) return false;
  try {
    restore(shared);
    return true;
  } catch {
    return false;
  }
}

/**
 * The outcomes a shared policy hands over at each exchange, as a `RunLog`, for a policy whose shared state
 * is its own state with every process's outcomes replayed on it by its own rules.
 */
export class SharedRuns {
  readonly #log = new RunLog();
  /** Whether the policy shares its state: only then are outcomes and draws kept. */
  #on = false;
  #quiet = false;
  /** During a replay of this process's own outcomes: the draws it made for them. */
  #drawing: (() => number) | undefined;

  /** True while the policy replays its own outcomes on the fleet's state: nothing recorded, nothing emitted. */
  get quiet(): boolean {
    return this.#quiet;
  }

  /** Notes an outcome for the next exchange (while sharing, and not replaying). */
  record(code: number): void {
    if (this.#on && !this.#quiet) this.#log.record(code);
  }

  /** A draw from `random`, noted so that a replay draws the same; during a replay, the draw noted then. */
  draw(random: Random): number {
    if (this.#drawing !== undefined) return this.#drawing();
    const value = random();
    if (this.#on && !this.#quiet) this.#log.drew(value);
    return value;
  }

  /**
   * The replica's hooks: the log is what each exchange hands over, `check` throws on a value read that is
   * not the policy's state, `merge` replays a batch on the shared state, and `adopt` takes the result. From
   * this call on, outcomes are kept.
   */
  hooks<S>(
    check: (shared: unknown) => void,
    merge: (shared: unknown, batch: RunBatch, now: number, recovering: boolean) => S,
    adopt: (shared: S) => void,
  ): SharingHooks<RunBatch> {
    this.#on = true;
    return {
      detach: () => this.#log.take(),
      reattach: (batch) => this.#log.putBack(batch),
      check,
      merge,
      adopt: (shared) => adopt(shared as S),
    };
  }

  /**
   * Replays, quietly and with the same draws, what this process saw since the exchange began on the state
   * just adopted: it stays in the process's view until the next exchange hands it over.
   */
  replayOwn(random: Random, replay: (runs: readonly number[]) => void): void {
    this.#quiet = true;
    this.#drawing = replayingRandom(this.#log.draws, random);
    try {
      replay(this.#log.runs);
    } finally {
      this.#quiet = false;
      this.#drawing = undefined;
    }
  }
}
