/**
 * What a simulated run records: per-second series (what the server was offered, what came back, how
 * long it took) and per-run totals, and the summary figures computed from them.
 */

/** Latencies go into log-spaced buckets: bucket i holds [GROWTH^i − 1, GROWTH^(i+1) − 1) ms (5% wide). */
const GROWTH = 1.05;
const BUCKETS = 480; // up to about 1.4 × 10^10 ms
const LOG_GROWTH = Math.log(GROWTH);

function bump(counts: Uint32Array, i: number): void {
  counts[i] = (counts[i] as number) + 1;
}

function bucketOf(ms: number): number {
  const i = Math.floor(Math.log1p(Math.max(ms, 0)) / LOG_GROWTH);
  return i < BUCKETS ? i : BUCKETS - 1;
}

/** The middle of bucket i, in ms. */
function bucketValue(i: number): number {
  return (GROWTH ** i + GROWTH ** (i + 1)) / 2 - 1;
}

/** One second of a run. */
export interface Second {
  /** The second's start, in s since the run began. */
  readonly t: number;
  /** Attempts that reached the server. */
  readonly offered: number;
  /** Attempts answered with success before their timeout. */
  readonly successes: number;
  /** Attempts answered with an error before their timeout. */
  readonly errors: number;
  /** Attempts whose timeout elapsed first. */
  readonly timeouts: number;
  /** Requests inside the server at the end of the second (abandoned ones included). */
  readonly concurrency: number;
  /** Latency of the attempts answered in time, as the client saw it, in ms; null when none was. */
  readonly p50: number | null;
  readonly p99: number | null;
  /** The store's provisioned capacity at the end of the second, requests per second (throttled-store only). */
  readonly capacity?: number;
}

export class Recorder {
  readonly seconds: number;
  readonly offered: Uint32Array;
  readonly successes: Uint32Array;
  readonly errors: Uint32Array;
  readonly timeouts: Uint32Array;
  readonly concurrency: Float64Array;
  /** Provisioned capacity per second, when the server has one (NaN otherwise). */
  readonly capacity: Float64Array;
  readonly #latency: Uint32Array;
  /** Logical requests (calls of the retry loop). */
  started = 0;
  succeeded = 0;
  failed = 0;
  /** Total time of the logical requests that finished, in ms. */
  completionTotal = 0;
  /** When the last logical request finished, ms (0 before any has). */
  lastFinished = 0;
  /** Attempts made by all logical requests. */
  attempts = 0;
  /** Requests the server accepted (for the contention scenario: writes). */
  work = 0;
  peakConcurrency = 0;

  constructor(durationMs: number) {
    this.seconds = Math.max(1, Math.ceil(durationMs / 1000));
    this.offered = new Uint32Array(this.seconds);
    this.successes = new Uint32Array(this.seconds);
    this.errors = new Uint32Array(this.seconds);
    this.timeouts = new Uint32Array(this.seconds);
    this.concurrency = new Float64Array(this.seconds);
    this.capacity = new Float64Array(this.seconds).fill(Number.NaN);
    this.#latency = new Uint32Array(this.seconds * BUCKETS);
  }

  #index(now: number): number {
    const s = Math.floor(now / 1000);
    return s < this.seconds ? s : this.seconds - 1;
  }

  offer(now: number): void {
    bump(this.offered, this.#index(now));
  }

  answered(now: number, ok: boolean, latency: number): void {
    const s = this.#index(now);
    bump(ok ? this.successes : this.errors, s);
    bump(this.#latency, s * BUCKETS + bucketOf(latency));
  }

  timedOut(now: number): void {
    bump(this.timeouts, this.#index(now));
  }

  sampleConcurrency(now: number, value: number): void {
    this.concurrency[this.#index(now)] = value;
  }

  sampleCapacity(now: number, value: number): void {
    this.capacity[this.#index(now)] = value;
  }

  /** The latency quantile q of second s, or null when no attempt was answered in it. */
  quantile(s: number, q: number): number | null {
    const base = s * BUCKETS;
    let total = 0;
    for (let i = 0; i < BUCKETS; i++) total += this.#latency[base + i] as number;
    if (total === 0) return null;
    const rank = q * total;
    let seen = 0;
    for (let i = 0; i < BUCKETS; i++) {
      seen += this.#latency[base + i] as number;
      if (seen >= rank && seen > 0) return bucketValue(i);
    }
    return bucketValue(BUCKETS - 1);
  }

  series(): Second[] {
    const out: Second[] = [];
    for (let s = 0; s < this.seconds; s++) {
      out.push({
        t: s,
        offered: this.offered[s] as number,
        successes: this.successes[s] as number,
        errors: this.errors[s] as number,
        timeouts: this.timeouts[s] as number,
        concurrency: this.concurrency[s] as number,
        p50: this.quantile(s, 0.5),
        p99: this.quantile(s, 0.99),
        ...(Number.isNaN(this.capacity[s] as number) ? {} : { capacity: this.capacity[s] as number }),
      });
    }
    return out;
  }
}

/** How recovery after an outage is judged (see `recovery`). */
export interface RecoveryRule {
  /** The fraction of the pre-outage goodput that counts as recovered. Default 0.95. */
  readonly level: number;
  /** The window, in s, over which goodput is averaged. Default 10. */
  readonly window: number;
}

export const RECOVERY: RecoveryRule = { level: 0.95, window: 10 };

/**
 * When goodput (successes per second) came back after an outage, and whether it stayed.
 *
 * The pre-outage level B is the mean goodput from the end of the warm-up to the outage. Goodput is a
 * count of random arrivals, so a single second is noisy (at 100 per second its standard deviation is 10):
 * it is averaged over windows of `window` s after the outage ends. Recovered at the start T of the first
 * window whose average reaches `level` × B, and it stays recovered if afterwards the average never
 * drops more than three standard deviations of Poisson noise below that level (3 × sqrt(B / window)).
 * A dip deeper than that starts the search again. Returns null for the time when it never recovers.
 */
export function recovery(
  successes: ArrayLike<number>,
  warmupS: number,
  outageStartS: number,
  outageEndS: number,
  rule: RecoveryRule = RECOVERY,
): { baseline: number; recovered: boolean; recoveryTimeMs: number | null } {
  let sum = 0;
  let n = 0;
  for (let s = warmupS; s < outageStartS && s < successes.length; s++) {
    sum += successes[s] as number;
    n += 1;
  }
  const baseline = n === 0 ? 0 : sum / n;
  if (baseline === 0) return { baseline, recovered: false, recoveryTimeMs: null };
  const target = rule.level * baseline;
  const floor = target - 3 * Math.sqrt(baseline / rule.window);
  const averageAt = (s: number) => {
    let total = 0;
    let count = 0;
    for (let i = Math.max(outageEndS, s - rule.window + 1); i <= s; i++) {
      total += successes[i] as number;
      count += 1;
    }
    return total / count;
  };
  let recoveredAt: number | null = null;
  // Judge only full windows after the outage, so the first window does not average in outage seconds.
  for (let s = outageEndS + rule.window - 1; s < successes.length; s++) {
    const average = averageAt(s);
    if (recoveredAt === null) {
      if (average >= target) recoveredAt = s - rule.window + 1;
    } else if (average < floor) {
      recoveredAt = null;
    }
  }
  if (recoveredAt === null) return { baseline, recovered: false, recoveryTimeMs: null };
  return { baseline, recovered: true, recoveryTimeMs: Math.max(0, recoveredAt - outageEndS) * 1000 };
}
