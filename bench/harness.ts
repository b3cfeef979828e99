/**
 * A small latency harness: each case is an async call that is awaited in a plain loop, one call at a
 * time, so the time per iteration is the latency of one call (plus the loop's own `await`, which the
 * baseline case measures too).
 *
 * Method: warm every case up, size each case's batch so one batch lasts about `roundMs`, then run the
 * rounds round-robin (every case once per round, in a rotated order) so that slow drift of the machine
 * spreads over all cases instead of landing on whichever ran last. A full GC runs before each batch when
 * `--expose-gc` is on. The result of a case is the median ns/call over its rounds, in two clocks: the wall
 * clock, and the CPU time of the process (`process.cpuUsage()`, user + system, every thread of the process,
 * so the collector's helper threads count too). On a machine shared with other work, the wall clock also
 * counts the time the process waited for a core; the CPU time does not, and is the steadier measure of the
 * work a call does. Waiting (a timer) shows only on the wall clock.
 */

export interface Case {
  /** A short key, used to find the case when computing ratios. */
  readonly id: string;
  readonly library: string;
  /** How the call is made, as shown in the table. */
  readonly call: string;
  /** The per-attempt timeout, as shown in the table ("none" when the call has none). */
  readonly timeout: string;
  /** One call. It must resolve; the harness checks that it resolves to `expected` before measuring. */
  readonly run: () => Promise<unknown>;
}

export interface Settings {
  readonly rounds: number;
  readonly roundMs: number;
  readonly warmupMs: number;
}

export interface Result {
  readonly case: Case;
  /** Calls per round. */
  readonly iterations: number;
  /** Wall-clock ns/call of each round, in the order they ran. */
  readonly samples: readonly number[];
  readonly median: number;
  readonly min: number;
  readonly max: number;
  /** CPU ns/call of each round, and their median, least and greatest. */
  readonly cpu: {
    readonly samples: readonly number[];
    readonly median: number;
    readonly min: number;
    readonly max: number;
  };
}

const collect: () => void = typeof globalThis.gc === "function" ? globalThis.gc : () => {};

/** Whether a full GC runs before each batch (needs `node --expose-gc`). */
export const gcBetweenBatches = typeof globalThis.gc === "function";

/** Awaits `run()` `n` times in a row and returns the elapsed nanoseconds. */
async function batch(run: () => Promise<unknown>, n: number): Promise<number> {
  return (await timedBatch(run, n)).wall;
}

/** Awaits `run()` `n` times in a row; the elapsed wall-clock and CPU nanoseconds. */
async function timedBatch(run: () => Promise<unknown>, n: number): Promise<{ wall: number; cpu: number }> {
  const cpu = process.cpuUsage();
  const start = process.hrtime.bigint();
  for (let i = 0; i < n; i++) await run();
  const wall = Number(process.hrtime.bigint() - start);
  const used = process.cpuUsage(cpu);
  return { wall, cpu: (used.user + used.system) * 1000 };
}

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  const upper = sorted[mid] ?? Number.NaN;
  if (sorted.length % 2 === 1) return upper;
  return ((sorted[mid - 1] ?? Number.NaN) + upper) / 2;
}

/**
 * Runs `run` in growing batches for at least `warmupMs` (so the JIT has settled) and returns the
 * ns/call of the last, largest batch.
 */
async function warmUp(run: () => Promise<unknown>, warmupMs: number): Promise<number> {
  const budget = warmupMs * 1e6;
  let spent = 0;
  let n = 100;
  let perCall = Number.POSITIVE_INFINITY;
  while (spent < budget) {
    const elapsed = await batch(run, n);
    spent += elapsed;
    perCall = elapsed / n;
    n = Math.min(n * 2, 1_000_000);
  }
  return perCall;
}

/** Checks that every case resolves to `expected`, so a broken case fails loudly instead of measuring. */
export async function verify(cases: readonly Case[], expected: unknown): Promise<void> {
  for (const c of cases) {
    const value = await c.run();
    if (value !== expected) {
      throw new Error(`case ${c.id} resolved to ${String(value)}, expected ${String(expected)}`);
    }
  }
}

/** Measures every case; `onProgress` hears about each phase. */
export async function measure(
  cases: readonly Case[],
  settings: Settings,
  onProgress: (message: string) => void = () => {},
): Promise<Result[]> {
  const iterations: number[] = [];
  for (const c of cases) {
    const perCall = await warmUp(c.run, settings.warmupMs);
    iterations.push(Math.max(1000, Math.round((settings.roundMs * 1e6) / perCall)));
  }
  onProgress(`warmed up ${cases.length} cases`);

  const samples: number[][] = cases.map(() => []);
  const cpuSamples: number[][] = cases.map(() => []);
  for (let round = 0; round < settings.rounds; round++) {
    for (let k = 0; k < cases.length; k++) {
      const index = (k + round) % cases.length;
      const c = cases[index];
      const n = iterations[index];
      const own = samples[index];
      if (c === undefined || n === undefined || own === undefined) continue;
      collect();
      const { wall, cpu } = await timedBatch(c.run, n);
      own.push(wall / n);
      cpuSamples[index]?.push(cpu / n);
    }
    onProgress(`round ${round + 1}/${settings.rounds} done`);
  }

  return cases.map((c, index) => {
    const own = samples[index] ?? [];
    const cpu = cpuSamples[index] ?? [];
    return {
      cpu: { samples: cpu, median: median(cpu), min: Math.min(...cpu), max: Math.max(...cpu) },
      case: c,
      iterations: iterations[index] ?? 0,
      samples: own,
      median: median(own),
      min: Math.min(...own),
      max: Math.max(...own),
    };
  });
}
