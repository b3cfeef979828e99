import { markFactories } from "./common.js";
import type { Jitter } from "./types.js";

/**
 * No jitter: the delay is the backoff.
 *
 * @example
 * jitter.none();
 */
export function none(): Jitter {
  return { name: "none", apply: ({ backoff, retries, random }) => backoff.delay(retries, random) };
}

// Passed uncalled (`backoff: backoff.exponential`), a factory fails at once, naming the fix.
markFactories(none);
