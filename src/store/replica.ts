/**
 * How a policy shares its state through a store without making any call wait on it: the policy decides
 * on a local replica of the shared state, synchronously, as it would alone; in the background, every
 * `syncEvery` ms (and at once after something the fleet must learn quickly, such as a breaker opening),
 * it merges what its process saw since the last exchange into the shared state by compare-and-set, and
 * adopts the result. A call on the hot path never waits for the store; the price is that a process learns
 * of the others' doings up to one exchange late, which each policy bounds in its own way (the retry budget
 * with leases, so that the fleet can never overspend it).
 *
 * When the store fails or an operation does not answer within `storeTimeout`, the policy goes on alone on
 * its replica (or, with `whenStoreDown: "closed"`, refuses), says so with a `store-down` event, tries the
 * store again with a pause that doubles up to max(1 s, syncEvery), and says `store-up` when it shares
 * again. What the process saw while alone is not replayed into the shared state: the fleet's state wins.
 *
 * What is read is checked by the policy before it is taken. A key that holds something else (another
 * program's value, garbage, a Redis key of another type) is reported with a `store-corrupt` event and
 * overwritten with a fresh state by the same compare-and-set; while it keeps being found, the exchanges
 * slow down as while the store is down, so that no two programs fight over a key at full speed.
 */

import { type CancelTimer, type Clock, setBackgroundTimer } from "../core/clock.js";
import { OptionError } from "../core/errors.js";
import { messageOf } from "../core/events.js";
import { read } from "../core/schema.js";
import { SHARING_SCHEMA_CHECKS } from "./checks.js";
import { excerpt, excerptOf, isStore, type Store, type StoreEntry, StoreTimeoutError } from "./store.js";

/** The options that put a policy's state in a shared store. */
export interface SharingOptions {
  /** Where the state is shared: `redisStore()` for a fleet, `memoryStore()` within one process. Default: none (the state is this object's alone). */
  store?: Store;
  /** The name the fleet shares the state under (required with `store`). */
  key?: string;
  /** Exchange with the store every this many ms. Default 100. */
  syncEvery?: number;
  /** Each store operation of an exchange (a read, a compare-and-set) that takes longer fails, and the policy goes on alone. Default 250 ms. */
  storeTimeout?: number;
  /** While the store is down: decide alone on the local replica ("local", the default) or refuse ("closed"). */
  whenStoreDown?: "local" | "closed";
  /** The key expires this long after the last write, ms. Default 86,400,000 (a day). */
  expire?: number;
}

export const SHARING_KEYS = ["store", "key", "syncEvery", "storeTimeout", "whenStoreDown", "expire"] as const;

/** Sharing options, checked. */
export interface Sharing {
  readonly store: Store;
  readonly key: string;
  readonly syncEvery: number;
  readonly storeTimeout: number;
  readonly whenStoreDown: "local" | "closed";
  readonly expire: number;
}

/** Checks the sharing options of the policy `name`; undefined when no store is given. */
export function sharingOptions(name: string, options: SharingOptions): Sharing | undefined {
  if (options.store === undefined) {
    for (const key of SHARING_KEYS) {
      if (options[key] !== undefined)
        throw new OptionError(`${name}: ${key}`, options[key], "given only with a store");
    }
    return undefined;
  }
  if (!isStore(options.store)) {
    throw new OptionError(`${name}: store`, options.store, "a Store (memoryStore() or redisStore())");
  }
  const key = options.key;
  if (typeof key !== "string" || key.length === 0) {
    throw new OptionError(`${name}: key`, key, "a non-empty string naming the shared state");
  }
  const field = <V>(option: keyof SharingOptions, fallback: V): V =>
    read<V | undefined>(SHARING_SCHEMA_CHECKS, option, options[option], `${name}: ${option}`) ?? fallback;
  return {
    store: options.store,
    key,
    syncEvery: field("syncEvery", 100),
    storeTimeout: field("storeTimeout", 250),
    whenStoreDown: field<"local" | "closed">("whenStoreDown", "local"),
    expire: field("expire", 86_400_000),
  };
}

/** What the replica needs from its policy. */
export interface ReplicaHooks<B> {
  /** Takes what the process saw since the last exchange; `final` for the last exchange, made by `close()`. */
  detach(final: boolean): B;
  /** Gives it back: the exchange failed before anything was written. */
  reattach(batch: B): void;
  /** The exchange failed after a write was sent, which may yet land: the batch is dropped, not given back. */
  dropped?(batch: B): void;
  /**
   * Checks `shared`, a value read from the store: throws when it is not a state of this policy (another
   * program's value, or garbage), which is then reported and replaced with a fresh state.
   */
  check(shared: unknown): void;
  /**
   * The new shared state: `shared` (as read and checked; undefined for a new key or one that held
   * something else) with `batch` merged in, at store time `now`. `recovering`: the store was down until
   * now, and the batch holds what the process saw alone, which is not replayed.
   */
  merge(shared: unknown, batch: B, now: number, recovering: boolean): unknown;
  /** The local replica becomes `shared` (as just written). */
  adopt(shared: unknown): void;
  /** The store failed: the policy is alone from now on. */
  down(error: unknown): void;
  /** The store answers again, after `downFor` ms. */
  up(downFor: number): void;
  /** The key held something that is not this policy's state (`found`, cut short): it is overwritten. */
  corrupt(found: string, reason: string): void;
}

/** The longest expiry, ms (about 31 years): longer ones would not survive the trip to Redis as integers. */
const _MAX_EXPIRE = 1e12;

/**
 * How far ahead of this process's reckoning of the store's time another process's may be, ms (each
 * reckons it from the store's answers, to within half a round trip). A time read from the store later than
 * now plus this was written by no process of the fleet: it is taken as now plus this.
 */
export const MAX_SKEW = 1000;

/** After this many compare-and-set conflicts in a row, an exchange gives up and tries again later. */
const MAX_CONFLICTS = 8;
/** The longest pause between tries while the store is down, ms. */
const MAX_RECONNECT = 1000;

export class Replica<B> {
  readonly #sharing: Sharing;
  readonly #fullKey: string;
  readonly #clock: Clock;
  readonly #hooks: ReplicaHooks<B>;
  /** Store time minus clock time, from the last answer. */
  #offset = 0;
  #offsetKnown = false;
  #state: "starting" | "up" | "down" = "starting";
  #downSince = 0;
  #failures = 0;
  /** Exchanges in a row that found something else under the key: the exchanges slow down meanwhile. */
  #corruptions = 0;
  #last: StoreEntry | undefined;
  #inFlight: Promise<void> | undefined;
  #again = false;
  #cancel: CancelTimer | undefined;
  /** When the scheduled exchange is due (clock time). */
  #dueAt = Number.POSITIVE_INFINITY;
  #lastStart = Number.NEGATIVE_INFINITY;
  #closed = false;
  #closing: Promise<void> | undefined;
  /** The latest store time handed out: store time never goes back, whatever the offset does. */
  #lastNow = Number.NEGATIVE_INFINITY;
  readonly #ready: Promise<void>;

  constructor(kind: string, sharing: Sharing, clock: Clock, hooks: ReplicaHooks<B>) {
    this.#sharing = sharing;
    this.#fullKey = `${kind}:${sharing.key}`;
    this.#clock = clock;
    this.#hooks = hooks;
    this.#ready = this.sync();
  }

  /** The store's time now, as this process reckons it. */
  now(): number {
    // Before the store's first answer there is no store time to keep from going back: the clock's own.
    if (!this.#offsetKnown) return this.#clock.now();
    const now = Math.max(this.#lastNow, this.#clock.now() + this.#offset);
    this.#lastNow = now;
    return now;
  }

  /** A clock on the store's time (for the local replica's windows and deadlines). */
  get clock(): Clock {
    return { now: () => this.now(), setTimer: (ms, callback) => this.#clock.setTimer(ms, callback) };
  }

  /** Whether the state is shared now (false while the store is down, and after `close()`). */
  get shared(): boolean {
    return this.#state !== "down" && !this.#closed;
  }

  /** True while the store is down and the policy was told to refuse then. */
  get refusing(): boolean {
    return this.#state === "down" && !this.#closed && this.#sharing.whenStoreDown === "closed";
  }

  /** Resolves when the first exchange is over, whether or not it reached the store. */
  ready(): Promise<void> {
    return this.#ready;
  }

  /** Asks for an exchange as soon as may be (a change the fleet should learn of quickly). */
  soon(): void {
    if (this.#closed || this.#state === "down") return;
    if (this.#inFlight !== undefined) {
      this.#again = true;
      return;
    }
    // At most ten exchanges per syncEvery, however often it is asked (and no more often than the pause
    // while the key keeps being found corrupt).
    const now = this.#clock.now();
    const at = Math.max(
      now,
      this.#lastStart +
        (this.#corruptions > 0 ? this.#pause(this.#corruptions) : this.#sharing.syncEvery / 10),
    );
    if (this.#cancel !== undefined && this.#dueAt <= at) return;
    this.#schedule(at - now);
  }

  /** One exchange now (after the one in progress, if any). Never rejects. */
  async sync(): Promise<void> {
    while (this.#inFlight !== undefined) await this.#inFlight;
    if (this.#closed) return;
    this.#cancel?.();
    this.#cancel = undefined;
    const run = this.#exchange();
    this.#inFlight = run;
    await run;
    this.#inFlight = undefined;
    if (this.#closed) return;
    if (this.#again && this.#state !== "down") {
      this.#again = false;
      // Asked for while this one ran: as soon as the limit of ten exchanges per syncEvery allows.
      this.#schedule(Math.max(0, this.#lastStart + this.#sharing.syncEvery / 10 - this.#clock.now()));
    } else {
      this.#schedule(
        this.#state === "down"
          ? this.#pause(this.#failures + 1)
          : this.#corruptions > 0
            ? this.#pause(this.#corruptions)
            : this.#sharing.syncEvery,
      );
    }
  }

  /** The pause after `n` failed (or corrupt) exchanges in a row: syncEvery, doubling up to max(1 s, syncEvery). */
  #pause(n: number): number {
    const { syncEvery } = this.#sharing;
    return Math.min(syncEvery * 2 ** Math.min(n - 1, 20), Math.max(MAX_RECONNECT, syncEvery));
  }

  /** Stops the exchanges after a last one that hands over what this process saw. The policy then decides alone. */
  close(): Promise<void> {
    this.#closing ??= this.#close();
    return this.#closing;
  }

  async #close(): Promise<void> {
    this.#closed = true;
    this.#cancel?.();
    this.#cancel = undefined;
    while (this.#inFlight !== undefined) await this.#inFlight;
    if (this.#state === "down") return;
    const last = this.#exchange(true);
    this.#inFlight = last;
    await last;
    this.#inFlight = undefined;
  }

  #schedule(ms: number): void {
    if (this.#closed) return;
    this.#cancel?.();
    this.#dueAt = this.#clock.now() + ms;
    this.#cancel = setBackgroundTimer(this.#clock, ms, () => {
      this.#cancel = undefined;
      void this.sync();
    });
  }

  async #exchange(final = false): Promise<void> {
    this.#lastStart = this.#clock.now();
    const recovering = this.#state === "down";
    const batch = this.#hooks.detach(final);
    const { store, expire } = this.#sharing;
    let writing = false;
    let corrupt = false;
    try {
      let entry = this.#last;
      if (entry === undefined) entry = await this.#timed(() => store.read(this.#fullKey));
      for (let conflicts = 0; conflicts < MAX_CONFLICTS; conflicts++) {
        const found = this.#corruption(entry);
        // Reported once an exchange, and replaced with a fresh state by this very write.
        if (found !== undefined && !corrupt) this.#hooks.corrupt(found.found, found.reason);
        corrupt ||= found !== undefined;
        const shared = found === undefined ? entry.value : undefined;
        const value = this.#hooks.merge(shared, batch, this.now(), recovering);
        writing = true;
        const result = await this.#timed(() =>
          store.write(this.#fullKey, entry?.version ?? 0, value, expire),
        );
        if (result.written) {
          this.#last = result.entry;
          this.#corruptions = corrupt ? this.#corruptions + 1 : 0;
          this.#hooks.adopt(result.entry.value);
          this.#markUp();
          return;
        }
        writing = false;
        entry = result.entry;
      }
      // The others kept writing first: try again at the next exchange (still recovering, if it was).
      this.#last = undefined;
      if (corrupt) this.#corruptions += 1;
      this.#hooks.reattach(batch);
      if (!recovering) this.#markUp();
    } catch (error) {
      this.#last = undefined;
      // A write that timed out may still land: its batch is dropped rather than risk counting it twice.
      if (writing) this.#hooks.dropped?.(batch);
      else this.#hooks.reattach(batch);
      this.#markDown(error);
    }
  }

  /** What `entry` holds if it is not this policy's state (nor nothing): what was found, and why it is not. */
  #corruption(entry: StoreEntry): { found: string; reason: string } | undefined {
    if (entry.corrupt !== undefined) {
      return { found: excerpt(String(entry.corrupt.found)), reason: excerpt(String(entry.corrupt.reason)) };
    }
    if (entry.value === undefined) return undefined;
    try {
      this.#hooks.check(entry.value);
      return undefined;
    } catch (error) {
      return { found: excerptOf(entry.value), reason: excerpt(messageOf(error)) };
    }
  }

  /** Runs a store operation under `storeTimeout` on the clock, and learns the store's time from its answer. */
  #timed<T extends StoreEntry | { entry: StoreEntry }>(operation: () => Promise<T>): Promise<T> {
    const { storeTimeout, store } = this.#sharing;
    const sent = this.#clock.now();
    return new Promise<T>((resolve, reject) => {
      let settled = false;
      const cancel = setBackgroundTimer(this.#clock, storeTimeout, () => {
        if (settled) return;
        settled = true;
        reject(new StoreTimeoutError(store.name, storeTimeout));
      });
      let pending: Promise<T>;
      try {
        pending = operation();
      } catch (error) {
        pending = Promise.reject(error);
      }
      pending.then(
        (answer) => {
          if (settled) return;
          settled = true;
          cancel();
          const entry = (
            typeof answer === "object" && answer !== null && "entry" in answer ? answer.entry : answer
          ) as StoreEntry | undefined;
          if (typeof entry !== "object" || entry === null || typeof entry.version !== "number") {
            reject(new TypeError(`the ${store.name} store answered ${String(answer)}, not an entry`));
            return;
          }
          // A version no write could be made at would make every exchange a run of conflicts.
          if (!Number.isSafeInteger(entry.version) || entry.version < 0) {
            reject(new TypeError(`the ${store.name} store answered version ${entry.version}, not a version`));
            return;
          }
          if (Number.isFinite(entry.time)) {
            this.#offset = entry.time - (sent + this.#clock.now()) / 2;
            this.#offsetKnown = true;
          }
          resolve(answer);
        },
        (error: unknown) => {
          if (settled) return;
          settled = true;
          cancel();
          reject(error);
        },
      );
    });
  }

  #markUp(): void {
    this.#failures = 0;
    const was = this.#state;
    this.#state = "up";
    if (was === "down") this.#hooks.up(this.#clock.now() - this.#downSince);
  }

  #markDown(error: unknown): void {
    this.#failures += 1;
    if (this.#state === "down") return;
    this.#state = "down";
    this.#downSince = this.#clock.now();
    this.#hooks.down(error);
  }
}

/** A policy's options for a scratch copy that merges at store time `now`: the same rules, sharing nothing. */
export function scratchOptions<T extends SharingOptions>(options: T | undefined, now: number): T {
  const copy = { ...options, clock: { now: () => now, setTimer: () => () => {} } } as unknown as T;
  for (const key of SHARING_KEYS) delete copy[key];
  return copy;
}

/** The clock of a shared policy: the store's time (once known), and `clock`'s timers. */
export function storeClock(replica: () => Replica<unknown> | undefined, clock: Clock): Clock {
  return {
    now: () => replica()?.now() ?? clock.now(),
    setTimer: (ms, callback) => clock.setTimer(ms, callback),
  };
}
