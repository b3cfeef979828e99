/**
 * What `simulate` reports of one strategy at one parameter point: the figures of its runs (one per random
 * seed), averaged.
 */
import type { Second } from "./metrics.js";
import type { Single } from "./scenarios/scenario.js";
import type { Strategy } from "./strategies.js";

/** One strategy at one parameter point (averaged over the seeds when there are several). */
export interface RunResult {
  readonly strategy: string;
  readonly description: string;
  readonly source: string;
  readonly clients: number;
  readonly failureProbability: number | null;
  /** The latency server's listen queue (outage on the latency server); null for other servers. */
  readonly backlog: number | null;
  readonly seeds: readonly number[];
  /** Whether goodput came back after the outage and stayed (majority of seeds); null without an outage. */
  readonly recovered: boolean | null;
  /**
   * ms from the end of the outage until goodput was back at 95% of its pre-outage level, judged every
   * 100 ms over the last second (see `recoverySignals`; mean over the seeds that recovered); null if none did.
   */
  readonly recoveryTime: number | null;
  /** ms until the requests inside the server were back at their pre-outage level (mean over the seeds that were); null if none was or without an outage. */
  readonly inFlightRecoveryTime: number | null;
  /** ms after the outage during which the server held more requests than its knee (mean over the seeds); null without an outage or a knee. */
  readonly aboveKneeTime: number | null;
  readonly peakConcurrency: number;
  /** Attempts per logical request. */
  readonly amplification: number;
  /** Logical requests that succeeded, of all that started (those still unfinished at the end count as not). */
  readonly successRate: number;
  /** Logical requests still unfinished when the run ended. */
  readonly unfinished: number;
  /** Requests the server handled; for contention, writes. */
  readonly work: number;
  /** Mean ms for a logical request to finish; null when none finished. */
  readonly completionTime: number | null;
  /**
   * contention: ms from the start until the last client's write landed (the AWS study's "time"), mean
   * over the seeds; null for other scenarios, or when a client never finished.
   */
  readonly makespan: number | null;
  readonly logicalRequests: number;
  readonly attempts: number;
  /** The pre-outage goodput, successes per second; null without an outage. */
  readonly baseline: number | null;
  /** Engine events processed. */
  readonly events: number;
  /** throttled-store: ms until the whole batch was written (mean over seeds); null if it never was. */
  readonly batchTime: number | null;
  /** Attempts the server refused or failed (throttled writes, errors). */
  readonly rejected: number;
  /**
   * throttled-store: how closely the write rate followed the capacity, the writes accepted over the
   * capacity offered, summed over the seconds until the batch was done; null for other scenarios.
   */
  readonly capacityUse: number | null;
  /** Per-second figures of the first seed. */
  readonly series: readonly Second[];
}

/**
 * The figures of one run that its point's result is made of: plain data, so that a run made in another
 * thread can send them back.
 */
export interface Tally {
  readonly started: number;
  readonly succeeded: number;
  readonly failed: number;
  readonly completionTotal: number;
  readonly attempts: number;
  readonly work: number;
  readonly peakConcurrency: number;
  readonly rejected: number;
  readonly events: number;
  readonly recovered: boolean | null;
  readonly recoveryTime: number | null;
  readonly inFlightRecoveryTime: number | null;
  readonly aboveKneeTime: number | null;
  readonly makespan: number | null;
  readonly baseline: number | null;
  readonly batchTime: number | null;
  readonly capacityUse: number | null;
  /** The per-second figures, kept for the first seed of a point only (the result reports those). */
  readonly series: readonly Second[] | null;
}

/** What `summarize` needs of `single`, with its per-second series when `withSeries`. */
export function tally(single: Single, withSeries: boolean): Tally {
  const r = single.recorder;
  return {
    started: r.started,
    succeeded: r.succeeded,
    failed: r.failed,
    completionTotal: r.completionTotal,
    attempts: r.attempts,
    work: r.work,
    peakConcurrency: r.peakConcurrency,
    rejected: r.errors.reduce((a, b) => a + b, 0),
    events: single.events,
    recovered: single.recovered,
    recoveryTime: single.recoveryTime,
    inFlightRecoveryTime: single.inFlightRecoveryTime ?? null,
    aboveKneeTime: single.aboveKneeTime ?? null,
    makespan: single.makespan ?? null,
    baseline: single.baseline,
    batchTime: single.batchTime,
    capacityUse: single.capacityUse,
    series: withSeries ? r.series() : null,
  };
}

const mean = (values: readonly number[]) => values.reduce((a, b) => a + b, 0) / values.length;
/** The mean of the values that are not null; null if all are. */
const meanOf = (values: readonly (number | null)[]) => {
  const present = values.filter((v): v is number => v !== null);
  return present.length === 0 ? null : mean(present);
};

/** The figures of `singles`, one per seed (the first with its series), as one result. */
export function summarize(
  strategy: Strategy,
  clients: number,
  failureProbability: number | null,
  seeds: readonly number[],
  singles: readonly Tally[],
): RunResult {
  const first = singles[0] as Tally;
  const per = (f: (s: Tally) => number) => mean(singles.map(f));
  const finished = (s: Tally) => s.succeeded + s.failed;
  const withFinished = singles.filter((s) => finished(s) > 0);
  const recoveredSeeds = singles.filter((s) => s.recovered === true);
  return {
    strategy: strategy.name,
    description: strategy.description,
    source: strategy.source,
    clients,
    failureProbability,
    backlog: null,
    seeds,
    recovered: first.recovered === null ? null : recoveredSeeds.length * 2 > singles.length,
    recoveryTime:
      recoveredSeeds.length === 0 ? null : mean(recoveredSeeds.map((s) => s.recoveryTime as number)),
    inFlightRecoveryTime: meanOf(singles.map((s) => s.inFlightRecoveryTime)),
    aboveKneeTime: singles.some((s) => s.aboveKneeTime === null)
      ? null
      : per((s) => s.aboveKneeTime as number),
    peakConcurrency: per((s) => s.peakConcurrency),
    amplification: per((s) => (s.started === 0 ? 0 : s.attempts / s.started)),
    successRate: per((s) => (s.started === 0 ? 0 : s.succeeded / s.started)),
    unfinished: per((s) => s.started - finished(s)),
    work: per((s) => s.work),
    completionTime:
      withFinished.length === 0 ? null : mean(withFinished.map((s) => s.completionTotal / finished(s))),
    makespan: singles.every((s) => s.makespan !== null) ? per((s) => s.makespan as number) : null,
    logicalRequests: per((s) => s.started),
    attempts: per((s) => s.attempts),
    baseline: first.baseline === null ? null : per((s) => s.baseline as number),
    events: per((s) => s.events),
    batchTime: singles.every((s) => s.batchTime !== null) ? per((s) => s.batchTime as number) : null,
    rejected: per((s) => s.rejected),
    capacityUse: first.capacityUse === null ? null : per((s) => s.capacityUse ?? 0),
    series: first.series ?? [],
  };
}
