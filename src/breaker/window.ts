/**
 * A breaker's sliding window of calls and failures, kept as `BUCKETS` buckets of window / BUCKETS ms each:
 * [clock time of the bucket, calls, failures] for each bucket still in the window.
 */

/** [clock time of the bucket, calls, failures]. */
export type Bucket = [number, number, number];

/** How many buckets the window is kept in. */
export const BUCKETS = 10;

/** Counts `n` calls (failures, if `failed`) at clock time `now` in `window`, of buckets `width` ms wide. */
export function countInWindow(
  window: Bucket[],
  now: number,
  width: number,
  failed: boolean,
  n: number,
): void {
  const bucket = Math.floor(now / width) * width;
  const oldest = bucket - (BUCKETS - 1) * width;
  while (window.length > 0 && (window[0] as Bucket)[0] < oldest) window.shift();
  let last = window.at(-1);
  if (last === undefined || last[0] !== bucket) {
    last = [bucket, 0, 0];
    window.push(last);
  }
  last[1] += n;
  if (failed) last[2] += n;
}

/** The calls and the failures the window holds. */
export function windowTotals(window: readonly (readonly [number, number, number])[]): {
  calls: number;
  failed: number;
} {
  let calls = 0;
  let failed = 0;
  for (const [, c, f] of window) {
    calls += c;
    failed += f;
  }
  return { calls, failed };
}
