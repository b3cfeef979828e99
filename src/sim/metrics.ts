/**
 * What a simulated run records: per-second series (what the server was offered, what came back, how
 * long it took) and per-run totals, and the summary figures computed from them.
 */

/** Latencies go into log-spaced buckets: bucket i holds [GROWTH^i − 1, GROWTH^(i+1) − 1) ms (5% wide). */
const GROWTH = 1.05;
const BUCKETS = 480; // up to about 1.4 × 10^10 ms
const LOG_GROWTH = Math.log(GROWTH);
/** The fine series' resolution: goodput and concurrency are also kept per 100 ms, to time recovery. */
export const FINE_MS = 100;
const FINE_PER_SECOND = 1000 / FINE_MS;

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
  /** Successes per 100 ms (`FINE_MS`). */
  readonly fineSuccesses: Uint32Array;
  /** Requests inside the server at the end of each 100 ms. */
  readonly fineConcurrency: Float64Array;
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
    this.fineSuccesses = new Uint32Array(this.seconds * FINE_PER_SECOND);
    this.fineConcurrency = new Float64Array(this.seconds * FINE_PER_SECOND);
  }

  #fine(now: number): number {
    const i = Math.floor(now / FINE_MS);
    return i < this.fineSuccesses.length ? i : this.fineSuccesses.length - 1;
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
    if (ok) bump(this.fineSuccesses, this.#fine(now));
    bump(this.#latency, s * BUCKETS + bucketOf(latency));
  }

  timedOut(now: number): void {
    bump(this.timeouts, this.#index(now));
  }

  sampleConcurrency(now: number, value: number): void {
    this.concurrency[this.#index(now)] = value;
    this.fineConcurrency[this.#fine(now)] = value;
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

/** How long after an outage its effects lasted, by three signals (see `recoverySignals`); times in ms. */
export interface RecoverySignals {
  /** Until goodput was back at 95% of its pre-outage level, and stayed; null if it never was. */
  readonly goodput: number | null;
  /** Until the requests inside the server were back at their pre-outage level, and stayed; null if never. */
  readonly inFlight: number | null;
  /** How long after the outage the server held more requests than its knee; null when it has none. */
  readonly aboveKnee: number | null;
}

/**
 * The end (a bin index, exclusive) of the first 1 s window at or after `from` whose mean `reached` accepts,
 * after which every 10 s window's mean `holds` to; a failing 10 s window starts the search again.
 */
function settledAt(
  bins: ArrayLike<number>,
  from: number,
  reached: (mean: number) => boolean,
  holds: (mean: number) => boolean,
): number | null {
  const prefix = new Float64Array(bins.length + 1);
  for (let i = 0; i < bins.length; i++) prefix[i + 1] = (prefix[i] as number) + (bins[i] as number);
  const mean = (start: number, end: number) =>
    ((prefix[end] as number) - (prefix[start] as number)) / (end - start);
  const short = FINE_PER_SECOND;
  const long = 10 * FINE_PER_SECOND;
  let at: number | null = null;
  for (let end = from + short; end <= bins.length; end++) {
    if (at === null) {
      if (reached(mean(end - short, end))) at = end;
    } else if (end - at >= long && !holds(mean(end - long, end))) {
      at = null;
    }
  }
  return at;
}

/** The mean and standard deviation of the 1 s means of `bins` from `start` to `end` (bin indices). */
function secondMeans(bins: ArrayLike<number>, start: number, end: number): { mean: number; sd: number } {
  const means: number[] = [];
  for (let s = start; s + FINE_PER_SECOND <= end; s += FINE_PER_SECOND) {
    let sum = 0;
    for (let i = s; i < s + FINE_PER_SECOND; i++) sum += bins[i] as number;
    means.push(sum / FINE_PER_SECOND);
  }
  if (means.length === 0) return { mean: 0, sd: 0 };
  const mean = means.reduce((a, b) => a + b, 0) / means.length;
  const variance = means.reduce((a, b) => a + (b - mean) ** 2, 0) / means.length;
  return { mean, sd: Math.sqrt(variance) };
}

/**
 * How long an outage's effects lasted, at 100 ms resolution, from the fine series of `recorder`:
 *
 * - goodput: the successes of the last 1 s, looked at every 100 ms, back at `RECOVERY.level` (95%) of the
 *   pre-outage mean B (from `warmupMs` to the outage), after which no 10 s mean drops more than three
 *   standard deviations of Poisson noise (3 × sqrt(B / 10)) below that level;
 * - in flight: the mean number of requests inside the server (abandoned ones too) over the last 1 s back
 *   at or below its pre-outage 1 s mean plus three standard deviations of those means, after which no
 *   10 s mean is above that;
 * - above the knee: the time after the outage during which the server held more than `knee` requests
 *   (the concurrency at which its service time exceeds the clients' timeout), counted per 100 ms.
 *
 * The times run from the outage's end to the end of the first window that qualifies, so a signal that
 * is back at once reads 1 s (one window).
 */
export function recoverySignals(
  recorder: Pick<Recorder, "fineSuccesses" | "fineConcurrency">,
  warmupMs: number,
  outage: { readonly start: number; readonly end: number },
  knee: number | null,
  rule: RecoveryRule = RECOVERY,
): RecoverySignals {
  const warm = Math.floor(warmupMs / FINE_MS);
  const start = Math.floor(outage.start / FINE_MS);
  const end = Math.ceil(outage.end / FINE_MS);
  const since = (bin: number | null) => (bin === null ? null : bin * FINE_MS - outage.end);
  const good = secondMeans(recorder.fineSuccesses, warm, start);
  const perSecond = good.mean * FINE_PER_SECOND;
  const target = rule.level * perSecond;
  const floor = target - 3 * Math.sqrt(perSecond / rule.window);
  const goodput =
    perSecond === 0
      ? null
      : settledAt(
          recorder.fineSuccesses,
          end,
          (m) => m * FINE_PER_SECOND >= target,
          (m) => m * FINE_PER_SECOND >= floor,
        );
  const busy = secondMeans(recorder.fineConcurrency, warm, start);
  const ceiling = busy.mean + 3 * busy.sd;
  const inFlight = settledAt(
    recorder.fineConcurrency,
    end,
    (m) => m <= ceiling,
    (m) => m <= ceiling,
  );
  let above = 0;
  if (knee !== null) {
    for (let i = end; i < recorder.fineConcurrency.length; i++) {
      if ((recorder.fineConcurrency[i] as number) > knee) above += FINE_MS;
    }
  }
  return { goodput: since(goodput), inFlight: since(inFlight), aboveKnee: knee === null ? null : above };
}
