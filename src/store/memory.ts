/**
 * The in-process store: the default place of every policy's state, and a shared store for policies in one
 * process (several budgets, breakers or backoffs given the same `memoryStore()` share their state through
 * it exactly as processes share it through Redis, which is how the sharing is tested on a virtual clock).
 */
import { type Clock, systemClock } from "../core/clock.js";
import { OptionError } from "../core/errors.js";
import { knownKeys } from "../core/validate.js";
import type { Store, StoreEntry, StoreWrite } from "./store.js";

export interface MemoryStoreOptions {
  /** Its time and the keys' expiry. Default: the real clock. */
  clock?: Clock;
}

interface Slot {
  json: string;
  version: number;
  expiresAt: number;
}

class MemoryStore implements Store {
  readonly name = "memory";
  readonly #clock: Clock;
  readonly #slots = new Map<string, Slot>();
  /** Versions are never reused, not even by a key made again after it expired. */
  #lastVersion = 0;

  constructor(clock: Clock) {
    this.#clock = clock;
  }

  #entry(key: string): StoreEntry {
    const time = this.#clock.now();
    const slot = this.#slots.get(key);
    if (slot === undefined) return { value: undefined, version: 0, time };
    if (time >= slot.expiresAt) {
      this.#slots.delete(key);
      return { value: undefined, version: 0, time };
    }
    // A copy, as a remote store would give: no caller can change what the store holds.
    return { value: JSON.parse(slot.json), version: slot.version, time };
  }

  read(key: string): Promise<StoreEntry> {
    return Promise.resolve(this.#entry(key));
  }

  write(key: string, version: number, value: unknown, expire: number): Promise<StoreWrite> {
    const found = this.#entry(key);
    if (found.version !== version) return Promise.resolve({ written: false, entry: found });
    const json = JSON.stringify(value);
    this.#lastVersion += 1;
    const next = this.#lastVersion;
    this.#slots.set(key, { json, version: next, expiresAt: found.time + expire });
    return Promise.resolve({
      written: true,
      entry: { value: JSON.parse(json), version: next, time: found.time },
    });
  }

  close(): Promise<void> {
    this.#slots.clear();
    return Promise.resolve();
  }
}

/**
 * A store held in this process's memory.
 *
 * @example
 * const store = memoryStore();
 * const a = retryBudget({ ratio: 0.1, store, key: "api" });
 * const b = retryBudget({ ratio: 0.1, store, key: "api" }); // one budget, seen by both
 */
export function memoryStore(options: MemoryStoreOptions = {}): Store {
  knownKeys("memoryStore", options, ["clock"]);
  const clock = options.clock === undefined ? systemClock : options.clock;
  if (typeof clock?.now !== "function") throw new OptionError("memoryStore: clock", clock, "a Clock");
  return new MemoryStore(clock);
}
