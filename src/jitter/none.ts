import type { Jitter } from "./types.js";

/**
 * No jitter, seed 000: jittered_backoff = backoff.
 *
 * @example
 * jitter.none();
 */
export function none(): Jitter {
  return { name: "none", apply: ({ backoff, retries, random }) => backoff.delay(retries, random) };
}
