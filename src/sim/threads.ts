/**
 * `simulateInThreads` (Node.js only, from `robustly/sim/threads`): `simulate` with its runs shared among
 * worker threads, one per core by default. Each run (one strategy at one point on one seed) is
 * deterministic on its own, and the result is assembled from the runs in their order, so it is the one
 * `simulate` gives for the same options, whatever the number of threads.
 *
 * Kept apart from `robustly/sim`, which runs wherever JavaScript runs: threads are Node.js's.
 */
import { createRequire } from "node:module";
import { availableParallelism } from "node:os";
import { pathToFileURL } from "node:url";
import { type ResourceLimits, Worker } from "node:worker_threads";
import { OptionError } from "../core/errors.js";
import type { Tally } from "./results.js";
import { plan, type SimulateOptions, type SimulationResult, simulateAsync } from "./simulate.js";

/** The most threads `jobs` may ask for. */
export const MAX_JOBS = 256;

/**
 * The young generation a thread may grow to, in MiB, unless `resourceLimits` says otherwise. A simulated
 * request's objects live for seconds of virtual time, while V8's default young generation fills in a
 * fraction of that, so each is copied again and again before it dies: at 20,000 clients a larger one
 * cut a run's CPU time by about a third (docs/simulator.md).
 */
export const YOUNG_GENERATION_MB = 384;

export interface ThreadOptions {
  /** Worker threads to share the runs among. Default: the cores available (`os.availableParallelism()`). */
  jobs?: number;
  /** Aborting it stops every thread at once; the promise rejects with its reason. */
  signal?: AbortSignal;
  /**
   * Each thread's heap limits (Node.js's `resourceLimits`); a thread that exceeds them fails the call.
   * Default: a young generation of up to `YOUNG_GENERATION_MB` (the rest V8's defaults); given limits
   * replace it.
   */
  resourceLimits?: ResourceLimits;
}

/**
 * What a thread starts with: the options to plan, and whether anyone listens to the progress of a run
 * (a message per slice of a run's virtual time costs more than a small run itself).
 */
export interface ThreadData {
  readonly options: SimulateOptions;
  readonly progress: boolean;
}

/** A message to a thread: run these units, in this order. */
export interface ToThread {
  readonly units: readonly number[];
}

/** A message from a thread: how far a unit has got, or the tallies of a batch of units, in its order. */
export type FromThread =
  | { readonly unit: number; readonly fraction: number }
  | { readonly units: readonly number[]; readonly tallies: readonly Tally[] };

/**
 * How many of the `left` units still to give out the next batch takes, with `jobs` threads: a share of
 * what is left (guided self-scheduling), so that a thread gets large batches while there is much to do
 * (few messages, each thread busy on its own) and single units at the end (no thread left idle while
 * another finishes a big batch).
 */
export function batchSize(left: number, jobs: number): number {
  return Math.max(1, Math.ceil(left / (4 * jobs)));
}

const running = new Set<Worker>();

/** Threads started by `simulateInThreads` that have not exited yet (for diagnostics and tests). */
export function runningThreads(): number {
  return running.size;
}

/** `jobs`, checked, or the number of cores. */
function checkJobs(jobs: unknown): number {
  if (jobs === undefined) return availableParallelism();
  if (!(typeof jobs === "number" && Number.isInteger(jobs) && jobs >= 1 && jobs <= MAX_JOBS)) {
    throw new OptionError("jobs", jobs, `an integer in [1, ${MAX_JOBS}]`);
  }
  return jobs;
}

/**
 * Starts the worker script: the compiled one beside this module, or, when this module runs from its
 * TypeScript source (tests, `tsx`), the source through tsx's loader.
 */
function startThread(
  options: SimulateOptions,
  progress: boolean,
  resourceLimits: ResourceLimits | undefined,
): Worker {
  const settings = {
    workerData: { options, progress } satisfies ThreadData,
    ...(resourceLimits === undefined ? {} : { resourceLimits }),
  };
  if (!import.meta.url.endsWith(".ts")) {
    return new Worker(new URL("./thread-worker.js", import.meta.url), settings);
  }
  // tsx's ESM API, as an `import` finds it (a CommonJS `require` finds another file).
  const tsxPackage = createRequire(import.meta.url).resolve("tsx/package.json");
  const { exports } = createRequire(import.meta.url)(tsxPackage) as {
    exports: Record<string, { import: { default: string } }>;
  };
  const api = new URL(
    (exports["./esm/api"] as { import: { default: string } }).import.default,
    pathToFileURL(tsxPackage),
  ).href;
  const script = new URL("./thread-worker.ts", import.meta.url).href;
  return new Worker(
    `import(${JSON.stringify(api)}).then((tsx) => tsx.register()).then(() => import(${JSON.stringify(script)}));`,
    { eval: true, ...settings },
  );
}

/**
 * Runs `simulate(options)` with its runs shared among `jobs` worker threads and resolves with the same
 * result. Bad options reject at once, before any thread starts. Every thread is ended when the result is
 * in, when a run fails, and when `signal` aborts.
 *
 * @example
 * const { runs } = await simulateInThreads({ scenario: "contention", clients: [10, 50, 100], runs: 100 }, { jobs: 2 });
 */
export async function simulateInThreads(
  options: SimulateOptions = {},
  threadOptions: ThreadOptions = {},
): Promise<SimulationResult> {
  const jobs = checkJobs(threadOptions.jobs);
  const signal = threadOptions.signal;
  const planned = plan(options);
  signal?.throwIfAborted();
  const { onProgress, ...data } = options;
  const total = planned.total;
  if (jobs === 1 || total === 1) return simulateAsync(options);
  // The largest runs first, so that no thread is left with a big one at the end; they go out in batches
  // (see `batchSize`), a message each way per batch rather than per run.
  const order = Array.from({ length: total }, (_, unit) => unit).sort(
    (a, b) => planned.clientsOf(b) - planned.clientsOf(a) || a - b,
  );
  const tallies: Tally[] = new Array(total);
  const fractions = new Map<number, number>();
  let next = 0;
  let done = 0;
  const threads: Worker[] = [];
  let onAbort: (() => void) | undefined;
  try {
    await new Promise<void>((resolve, reject) => {
      const fail = (error: unknown) => reject(error);
      onAbort = () => fail(signal?.reason);
      signal?.addEventListener("abort", onAbort, { once: true });
      // The runs in flight count by how far each has got.
      const progress = () => {
        let partial = 0;
        for (const fraction of fractions.values()) partial += fraction;
        onProgress?.(done, total, partial);
      };
      const give = (thread: Worker) => {
        if (next >= total) return;
        const units = order.slice(next, next + batchSize(total - next, jobs));
        next += units.length;
        thread.postMessage({ units } satisfies ToThread);
      };
      for (let i = 0; i < Math.min(jobs, total); i++) {
        const thread = startThread(
          data,
          onProgress !== undefined,
          threadOptions.resourceLimits ?? { maxYoungGenerationSizeMb: YOUNG_GENERATION_MB },
        );
        threads.push(thread);
        running.add(thread);
        thread.once("exit", () => running.delete(thread));
        thread.on("error", fail);
        thread.on("exit", (code) => {
          if (done < total)
            fail(new Error(`a simulation thread exited (code ${code}) before the runs were done`));
        });
        thread.on("message", (message: FromThread) => {
          if ("fraction" in message) {
            fractions.set(message.unit, message.fraction);
            progress();
            return;
          }
          message.units.forEach((unit, i) => {
            tallies[unit] = message.tallies[i] as Tally;
            fractions.delete(unit);
          });
          done += message.units.length;
          progress();
          if (done === total) resolve();
          else give(thread);
        });
        give(thread);
      }
    });
  } finally {
    if (onAbort !== undefined) signal?.removeEventListener("abort", onAbort);
    await Promise.all(threads.map((thread) => thread.terminate()));
  }
  return planned.assemble(tallies);
}
