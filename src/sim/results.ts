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
  /** ms from the end of the outage to recovery (mean over the seeds that recovered); null if none did. */
  readonly recoveryTime: number | null;
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

const mean = (values: readonly number[]) => values.reduce((a, b) => a + b, 0) / values.length;

/** The figures of `singles`, one per seed, as one result. */
export function summarize(
  strategy: Strategy,
  clients: number,
  failureProbability: number | null,
  seeds: readonly number[],
  singles: readonly Single[],
): RunResult {
  const first = singles[0] as Single;
  const per = (f: (s: Single) => number) => mean(singles.map(f));
  const finished = (s: Single) => s.recorder.succeeded + s.recorder.failed;
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
    peakConcurrency: per((s) => s.recorder.peakConcurrency),
    amplification: per((s) => (s.recorder.started === 0 ? 0 : s.recorder.attempts / s.recorder.started)),
    successRate: per((s) => (s.recorder.started === 0 ? 0 : s.recorder.succeeded / s.recorder.started)),
    unfinished: per((s) => s.recorder.started - finished(s)),
    work: per((s) => s.recorder.work),
    completionTime:
      withFinished.length === 0
        ? null
        : mean(withFinished.map((s) => s.recorder.completionTotal / finished(s))),
    makespan: singles.every((s) => s.makespan !== null) ? per((s) => s.makespan as number) : null,
    logicalRequests: per((s) => s.recorder.started),
    attempts: per((s) => s.recorder.attempts),
    baseline: first.baseline === null ? null : per((s) => s.baseline as number),
    events: per((s) => s.events),
    batchTime: singles.every((s) => s.batchTime !== null) ? per((s) => s.batchTime as number) : null,
    rejected: per((s) => s.recorder.errors.reduce((a, b) => a + b, 0)),
    capacityUse: first.capacityUse === null ? null : per((s) => s.capacityUse ?? 0),
    series: first.recorder.series(),
  };
}
