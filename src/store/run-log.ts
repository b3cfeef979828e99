/**
 * What a policy that shares its state as a log of outcomes (the circuit breaker, the responsive backoff)
 * hands over at each exchange with the store: runs of alike outcomes, and the random draws made meanwhile.
 */
/** What a `RunLog` hands over at an exchange. */
export interface RunBatch {
  /** [code, count, code, count, …] */
  readonly runs: number[];
  /** The random draws made while the outcomes were seen, in order, so that a replay draws the same. */
  readonly draws: number[];
}

/**
 * Runs of alike outcomes seen between two exchanges, as [code, count, code, count, …], so that a million
 * successes in a row take two numbers, and the random draws made meanwhile. Beyond `MAX_RUNS` runs, the
 * oldest half is forgotten (and the draws with them: a replay then draws afresh).
 */
export class RunLog {
  static readonly MAX_RUNS = 10_000;
  #runs: number[] = [];
  #draws: number[] = [];

  /** The runs not yet handed over. */
  get runs(): readonly number[] {
    return this.#runs;
  }

  /** The draws not yet handed over. */
  get draws(): readonly number[] {
    return this.#draws;
  }

  record(code: number): void {
    const runs = this.#runs;
    const last = runs.length - 2;
    if (last >= 0 && runs[last] === code) {
      runs[last + 1] = (runs[last + 1] as number) + 1;
      return;
    }
    if (runs.length >= 2 * RunLog.MAX_RUNS) {
      this.#runs = runs.slice(RunLog.MAX_RUNS);
      this.#draws = [];
    }
    this.#runs.push(code, 1);
  }

  /** Notes a random draw (kept only while there are runs to replay it with). */
  drew(value: number): void {
    if (this.#draws.length < 4 * RunLog.MAX_RUNS) this.#draws.push(value);
  }

  /** Takes every run and draw for an exchange. */
  take(): RunBatch {
    const batch = { runs: this.#runs, draws: this.#draws };
    this.#runs = [];
    this.#draws = [];
    return batch;
  }

  /** Puts back what an exchange that failed took, before what was seen since. */
  putBack(batch: RunBatch): void {
    const runs = batch.runs.concat(this.#runs);
    this.#runs = runs.slice(-2 * RunLog.MAX_RUNS);
    this.#draws = runs.length === this.#runs.length ? batch.draws.concat(this.#draws) : [];
  }
}

/** A `Random` that gives `draws` in order, then `fallback`'s. */
export function replayingRandom(draws: readonly number[], fallback: () => number): () => number {
  let next = 0;
  return () => (next < draws.length ? (draws[next++] as number) : fallback());
}

/** Calls `apply` with each run's code and count, in order. */
export function forEachRun(runs: readonly number[], apply: (code: number, count: number) => void): void {
  for (let r = 0; r + 1 < runs.length; r += 2) apply(runs[r] as number, runs[r + 1] as number);
}
