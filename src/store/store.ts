/**
 * Where a stateful policy (retry budget, circuit breaker, responsive backoff) keeps the state that a whole
 * fleet shares. A store holds one JSON value per key with a version number, and changes it only by
 * compare-and-set, so every read-modify-write is atomic whatever the store: the policy reads, merges what
 * its process saw since the last exchange, and writes back only if nobody wrote in between.
 */

/** One key's value as the store holds it. */
export interface StoreEntry {
  /** The value last written (undefined when the key does not exist or has expired). */
  readonly value: unknown;
  /** Changes on every write; 0 when the key does not exist. */
  readonly version: number;
  /** The store's own time, ms since the epoch, when it answered: every process of a fleet reads the same clock. */
  readonly time: number;
  /**
   * Set when the key holds something this store did not write there (a Redis key of another type, a
   * version that is not one, a value that is not JSON or is too long): what was found, and what is wrong
   * with it, each cut to `EXCERPT` characters. `value` is then undefined, and a write at `version`
   * replaces what was found.
   */
  readonly corrupt?: { readonly found: string; readonly reason: string };
}

/** What a compare-and-set returns. */
export interface StoreWrite {
  /** False when the key's version was no longer the one given: nothing was written. */
  readonly written: boolean;
  /** The entry after the write, or as found when nothing was written. */
  readonly entry: StoreEntry;
}

/**
 * A shared store: `memoryStore()` (one process) or `redisStore()` (a fleet). Implement it to keep the
 * state anywhere else that offers an atomic compare-and-set.
 */
export interface Store {
  /** A short name for messages and events ("memory", "redis"). */
  readonly name: string;
  /** Reads `key`. */
  read(key: string): Promise<StoreEntry>;
  /**
   * Writes `value` (JSON-serialisable) at `key` if its version is still `version`, and makes the key
   * expire `expire` ms after this write.
   */
  write(key: string, version: number, value: unknown, expire: number): Promise<StoreWrite>;
  /** Releases what the store opened itself (a connection it made); the store must not be used after. */
  close(): Promise<void>;
}

/** A store operation that did not answer within the policy's `storeTimeout`. */
export class StoreTimeoutError extends Error {
  override readonly name = "StoreTimeoutError";
  readonly timeout: number;
  constructor(store: string, timeout: number) {
    super(`the ${store} store did not answer within ${timeout} ms`);
    this.timeout = timeout;
  }
}

export function isStore(value: unknown): value is Store {
  return (
    typeof value === "object" &&
    value !== null &&
    typeof (value as Store).read === "function" &&
    typeof (value as Store).write === "function"
  );
}

/** The longest text of what was found under a key that a `store-corrupt` event carries, in characters. */
export const EXCERPT = 200;

/** `text` cut to at most `EXCERPT` characters, the last an ellipsis when it is cut. */
export function excerpt(text: string): string {
  return text.length <= EXCERPT ? text : `${text.slice(0, EXCERPT - 1)}…`;
}

/** A value read from a store, written out as JSON and cut to `EXCERPT` characters (a long string or list is cut first). */
export function excerptOf(value: unknown): string {
  const shown =
    (typeof value === "string" || Array.isArray(value)) && value.length > EXCERPT
      ? value.slice(0, EXCERPT)
      : value;
  let text: string;
  try {
    text = JSON.stringify(shown) ?? String(shown);
  } catch {
    text = String(shown);
  }
  return excerpt(text);
}
