/**
 * `robustly simulate`: runs a scenario of the simulator and prints a comparison table (or the full
 * results as JSON), optionally with charts.
 */

import { availableParallelism } from "node:os";
import { OptionError } from "../core/errors.js";
import { SIM_LIMITS } from "../sim/schema.js";
import {
  plan,
  type RunResult,
  SCENARIOS,
  type ScenarioName,
  type SimulateOptions,
  type SimulationResult,
} from "../sim/simulate.js";
import { MAX_JOBS, simulateInThreads } from "../sim/threads.js";
import {
  duration,
  integer,
  kebabName,
  list,
  named,
  number,
  oneOf,
  parseCommand,
  seed,
  UsageError,
  withFlags,
} from "./args.js";
import { checkOutDir, writingTo } from "./out-files.js";
import { commandProgress } from "./progress.js";

/** What each column of the table means, in the words `--help` prints (the report pages say more). */
export const TABLE_COLUMNS: Readonly<Record<string, string>> = {
  strategy: "the retry strategy (listed below)",
  clients: "simulated clients (or workers) at the same time",
  "p(fail)": "amplification: the chance the server fails any one request",
  backlog: "outage: the requests the paused server's listen queue holds",
  recovered: "outage: whether successful answers per second came back to their level before the outage",
  recovery: "seconds from the end of the outage until they did (to 100 ms)",
  "in flight": "seconds until the requests inside the server were back to their level before the outage",
  "over knee": "seconds after the outage the server held more requests than it can answer within the timeout",
  "peak conc.": "the most requests inside the server at one moment, abandoned ones included",
  "attempts/req": "tries per request, the first included (1.00: no retries)",
  success: "the share of requests that finally succeeded",
  "server work": "requests the server accepted and worked on, retries included",
  writes: "contention: writes the store handled, failed ones included (the AWS study's calls)",
  completion: "the mean time from a request's start to its end, retries and waits included",
  makespan: "contention: when the last client's write landed (the AWS study's time)",
  refused: "throttled-store: writes the store refused",
  "batch time": "throttled-store: how long the batch took",
  "capacity use": "throttled-store: the share of the store's capacity the writes used",
};

export const SIMULATE_HELP = `robustly simulate: what each retry strategy does to a struggling server

Usage: robustly simulate [options]

Durations take a unit (1.5s, 200ms, 2m); a bare number is in ms. Names are in kebab-case (camelCase works too).

  --scenario NAME            outage (default), contention, amplification, throttled-store, metastable or fleet
  --strategies a,b           strategies to compare (default: all of the scenario's; contention: the AWS
                             study's five, no-backoff and aws-*)
  --clients N[,N…]           client counts, each at most ${SIM_LIMITS.clients}, or ranges FROM:TO[:STEP] (defaults: outage 1000, contention 10,50,100, amplification 100,
                             throttled-store 50 workers, fleet 50 per process)
  --processes N              fleet: processes, each with its own budget and breaker, at most ${SIM_LIMITS.processes} (default 20)
  --batch N                  throttled-store: writes to make, at most ${SIM_LIMITS.batch} (default 20000)
  --failure-probability P,…  amplification: failure probabilities (default 0,0.1,…,1)
  --seed S                   seed of the run (default 1); the same seed gives the same numbers
  --runs K                   average K runs, on seeds S, S+1, …, S+K−1; K at most ${SIM_LIMITS.runs} (default 1; contention 100)
  --jobs N                   worker threads to share the runs among, at most ${MAX_JOBS} (default: the cores, here ${availableParallelism()});
                             the results are the same for any N
  --duration D               virtual duration (default outage 300s, amplification 60s, fleet 120s)
  --outage START:LENGTH      the server's pause (default 20s:30s); "none" for none
  --think D                  mean think time between a client's requests (default 10s; amplification 100ms)
  --timeout D                per-attempt timeout (default 2s)
  --server NAME              outage: latency (slow under load, default), flaky or capacity
  --min-delay D --limit N --factor F --k K --tick D --backlog N   the latency server (100ms, 30, 1.05, 15, 50ms, 512)
  --backlog N[,N…]           outage: listen-queue sizes to sweep, one run of each strategy per size; a range
                             FROM:TO doubles (128:2048), FROM:TO:STEP adds STEP
  --failure P --latency D    the flaky server (0.1, 10ms)
  --capacity N               the capacity server: requests per second (100); latency from --latency (100ms)
  --json                     print the full results as JSON
  --report DIR               write SVG charts and an HTML page to DIR (checked before the run)
  --quiet                    no progress bar and no list of files written on stderr (the bar shows
                             only on a terminal, for runs over a second)
  -h, --help                 this help

Columns of the table:
${Object.entries(TABLE_COLUMNS)
  .map(([name, meaning]) => `  ${name.padEnd(14)}${meaning}`)
  .join("\n")}

Strategies:
${Object.entries(SCENARIOS)
  .map(([name, strategies]) => `  ${name}: ${strategies.map((s) => s.name).join(", ")}`)
  .join("\n")}
`;

/** Turns the command line into `simulate` options. Throws a UsageError naming the flag. */
export function simulateOptions(argv: readonly string[]): {
  options: SimulateOptions;
  jobs: number;
  json: boolean;
  report: string | undefined;
  help: boolean;
  quiet: boolean;
} {
  const parsed = parse(argv);
  const v = parsed.values;
  const scenario = oneOf("scenario", v.scenario ?? "outage", Object.keys(SCENARIOS) as ScenarioName[]);
  const options: SimulateOptions = { scenario };
  if (v.strategies !== undefined) {
    const known = SCENARIOS[scenario].map((s) => s.name);
    options.strategies = list("strategies", v.strategies, (name) =>
      named(
        name,
        known,
        (all) => `--strategies: "${name}" is not a strategy of the ${scenario} scenario; it has ${all}.`,
      ),
    );
  }
  if (v.clients !== undefined) options.clients = counts("clients", v.clients, 1, SIM_LIMITS.clients);
  if (v["failure-probability"] !== undefined) {
    if (scenario !== "amplification")
      throw new UsageError("--failure-probability is for --scenario amplification");
    options.failureProbability = list("failure-probability", v["failure-probability"], (p) =>
      number("failure-probability", p, (n) => n >= 0 && n <= 1, "a number in [0, 1]"),
    );
  }
  if (v.seed !== undefined) options.seed = seed(v.seed);
  if (v.runs !== undefined) options.runs = integer("runs", v.runs, 1, SIM_LIMITS.runs);
  if (v.duration !== undefined) {
    options.duration = duration("duration", v.duration);
    if (!(options.duration > 0)) throw new UsageError(`--duration must be > 0; got "${v.duration}"`);
  }
  if (v.outage !== undefined) {
    if (scenario !== "outage" && scenario !== "metastable" && scenario !== "fleet") {
      throw new UsageError("--outage is for --scenario outage, metastable or fleet");
    }
    if (v.outage === "none") options.outage = null;
    else {
      const [start, length, extra] = v.outage.split(":");
      if (start === undefined || length === undefined || extra !== undefined) {
        throw new UsageError(`--outage must be START:LENGTH (e.g. 20s:30s) or none; got "${v.outage}"`);
      }
      options.outage = { start: duration("outage", start), length: duration("outage", length) };
    }
  }
  if (v.think !== undefined) options.think = duration("think", v.think);
  if (v.timeout !== undefined) options.timeout = duration("timeout", v.timeout);
  if (v.server !== undefined)
    options.server = oneOf("server", v.server, ["latency", "flaky", "capacity"] as const);
  const latency: NonNullable<SimulateOptions["latencyServer"]> = {};
  if (v["min-delay"] !== undefined) latency.minDelay = duration("min-delay", v["min-delay"]);
  if (v.limit !== undefined) latency.limit = integer("limit", v.limit, 0);
  if (v.factor !== undefined) latency.factor = number("factor", v.factor, (n) => n >= 1, "a number >= 1");
  if (v.k !== undefined) latency.k = number("k", v.k, (n) => n > 0, "a number > 0");
  if (v.tick !== undefined) latency.tick = duration("tick", v.tick);
  if (v.backlog !== undefined) {
    const backlogs = counts("backlog", v.backlog, 0, SIM_LIMITS.clients);
    if (backlogs.length === 1) latency.backlog = backlogs[0] as number;
    else options.backlogs = backlogs;
  }
  if (Object.keys(latency).length > 0) options.latencyServer = latency;
  if (v.failure !== undefined) {
    options.flakyServer = {
      failureProbability: number("failure", v.failure, (n) => n >= 0 && n <= 1, "a number in [0, 1]"),
    };
  }
  if (v.latency !== undefined) {
    const ms = duration("latency", v.latency);
    options.flakyServer = { ...options.flakyServer, latency: ms };
    options.capacityServer = { latency: ms };
  }
  if (v.batch !== undefined) {
    if (scenario !== "throttled-store") throw new UsageError("--batch is for --scenario throttled-store");
    options.batch = integer("batch", v.batch, 1, SIM_LIMITS.batch);
  }
  if (v.capacity !== undefined) {
    options.capacityServer = {
      ...options.capacityServer,
      capacity: number("capacity", v.capacity, (n) => n > 0, "a number > 0"),
    };
  }
  if (v.processes !== undefined) {
    if (scenario !== "fleet") throw new UsageError("--processes is for --scenario fleet");
    options.processes = integer("processes", v.processes, 1, SIM_LIMITS.processes);
  }
  const jobs = v.jobs === undefined ? availableParallelism() : integer("jobs", v.jobs, 1, MAX_JOBS);
  checkPlan(options, v);
  return {
    options,
    jobs,
    json: v.json === true,
    report: v.report,
    help: v.help === true,
    quiet: v.quiet === true,
  };
}

/** The flags whose option has another name (the library's path → the flag). */
const FLAG_OF_OPTION: Readonly<Record<string, string>> = {
  "latencyServer.minDelay": "min-delay",
  "flakyServer.failureProbability": "failure",
  "flakyServer.latency": "latency",
  "capacityServer.latency": "latency",
  failureProbability: "failure-probability",
};

const asTime = (ms: number) => (ms % 1000 === 0 ? `${ms / 1000}s` : `${ms}ms`);

/**
 * Checks the options as the simulation will, before any work, saying a mistake with the flags given:
 * "think must be …" becomes "--think must be …", and an outage that does not fit the duration names
 * `--outage` and `--duration` and the ways out (the outage the user never gave is the scenario's default).
 */
function checkPlan(
  options: SimulateOptions,
  v: Readonly<Record<string, string | boolean | undefined>>,
): void {
  try {
    withFlags(
      () => plan(options),
      (option) => {
        if (option === "outage") return undefined;
        const flag = FLAG_OF_OPTION[option] ?? kebabName(option.slice(option.lastIndexOf(".") + 1));
        return v[flag] === undefined ? undefined : flag;
      },
    );
  } catch (error) {
    if (error instanceof OptionError && error.option === "outage") throw outageError(error, v);
    throw error;
  }
}

/** The outage that does not fit the duration, said with the flags. */
function outageError(error: OptionError, v: Readonly<Record<string, string | boolean | undefined>>): Error {
  const outage = error.value as { start: number; length: number };
  const end = outage.start + outage.length;
  const within = /within the duration \((\d+) ms\)/.exec(error.message)?.[1];
  const duration = Number(within);
  const bare = typeof v.duration === "string" && /^\s*\d+(\.\d*)?\s*$/.test(v.duration);
  const hint = bare ? ` (a bare number is ms; did you mean ${String(v.duration).trim()}s?)` : "";
  if (typeof v.outage !== "string") {
    const given =
      typeof v.duration === "string" ? `--duration ${v.duration} (${duration} ms)` : "the duration";
    return new UsageError(
      `${given} ends before the default outage ${asTime(outage.start)}:${asTime(outage.length)} ` +
        `ends (at ${end} ms)${hint}: pass --outage none, an --outage START:LENGTH within it, or a longer --duration`,
    );
  }
  return new UsageError(
    `--outage ${v.outage} must end within --duration (${duration} ms)${hint}; ` +
      `it ends at ${end} ms: pass a longer --duration or an earlier, shorter --outage`,
  );
}

/**
 * A list of counts (`--clients`, `--backlog`): counts separated by commas, each a count or a range:
 * FROM:TO:STEP adds STEP (10:190:10 is 10, 20, …, 190), FROM:TO doubles (128:2048 is 128, 256, …, 2048).
 */
function counts(flag: string, text: string, min: number, max: number): number[] {
  const values = list(flag, text, (part) => {
    const bounds = part.split(":");
    if (bounds.length === 1) return [integer(flag, part, min, max)];
    const [from, to, step] = bounds;
    if (bounds.length > 3 || from === undefined || to === undefined)
      throw new UsageError(`--${flag}: a range is FROM:TO (doubling) or FROM:TO:STEP; got "${part}"`);
    const first = integer(flag, from, step === undefined ? Math.max(1, min) : min, max);
    const last = integer(flag, to, first, max);
    const next =
      step === undefined
        ? (n: number) => n * 2
        : (
            (by) => (n: number) =>
              n + by
          )(integer(flag, step, 1));
    const range: number[] = [];
    for (let n = first; n <= last; n = next(n)) {
      range.push(n);
      if (range.length > SIM_LIMITS.points)
        throw new UsageError(`--${flag}: "${part}" makes more than ${SIM_LIMITS.points} values`);
    }
    return range;
  }).flat();
  if (values.length > SIM_LIMITS.points)
    throw new UsageError(`--${flag}: at most ${SIM_LIMITS.points} values; got ${values.length}`);
  return values;
}

function parse(argv: readonly string[]) {
  const text = { type: "string" } as const;
  return parseCommand("simulate", {
    args: [...argv],
    strict: true,
    allowPositionals: false,
    options: {
      scenario: text,
      strategies: text,
      clients: text,
      "failure-probability": text,
      seed: text,
      runs: text,
      jobs: text,
      duration: text,
      outage: text,
      think: text,
      timeout: text,
      server: text,
      "min-delay": text,
      limit: text,
      factor: text,
      k: text,
      tick: text,
      backlog: text,
      failure: text,
      latency: text,
      capacity: text,
      batch: text,
      processes: text,
      json: { type: "boolean" },
      report: text,
      quiet: { type: "boolean" },
      help: { type: "boolean", short: "h" },
    },
  });
}

const seconds = (ms: number | null) => (ms === null ? "—" : `${(ms / 1000).toFixed(1)} s`);

/** The comparison table, as plain text. */
export function table(result: SimulationResult): string {
  const amplification = result.scenario === "amplification";
  const outage =
    result.scenario === "outage" || result.scenario === "metastable" || result.scenario === "fleet";
  const contention = result.scenario === "contention";
  const throttled = result.scenario === "throttled-store";
  // The listen queue decides the outage on the latency server: shown when several were swept.
  const backlog = new Set(result.runs.map((r) => r.backlog)).size > 1;
  const header = [
    "strategy",
    "clients",
    ...(amplification ? ["p(fail)"] : []),
    ...(backlog ? ["backlog"] : []),
    ...(outage ? ["recovered", "recovery", "in flight", "over knee"] : []),
    ...(contention ? [] : ["peak conc."]),
    "attempts/req",
    "success",
    contention ? "writes" : "server work",
    "completion",
    ...(contention ? ["makespan"] : []),
    ...(throttled ? ["refused", "batch time", "capacity use"] : []),
  ];
  const rows = result.runs.map((r: RunResult) => [
    r.strategy,
    String(r.clients),
    ...(amplification ? [String(r.failureProbability)] : []),
    ...(backlog ? [String(r.backlog)] : []),
    ...(outage
      ? [
          r.recovered === null ? "—" : r.recovered ? "yes" : "NO",
          seconds(r.recoveryTime),
          seconds(r.inFlightRecoveryTime),
          seconds(r.aboveKneeTime),
        ]
      : []),
    ...(contention ? [] : [String(Math.round(r.peakConcurrency))]),
    r.amplification.toFixed(2),
    `${(r.successRate * 100).toFixed(1)}%`,
    String(Math.round(r.work)),
    r.completionTime === null ? "—" : `${Math.round(r.completionTime)} ms`,
    ...(contention ? [r.makespan === null ? "—" : `${Math.round(r.makespan)} ms`] : []),
    ...(throttled
      ? [
          String(Math.round(r.rejected)),
          seconds(r.batchTime),
          r.capacityUse === null ? "—" : `${(r.capacityUse * 100).toFixed(1)}%`,
        ]
      : []),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => (row[i] as string).length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((c, i) => (i === 0 ? c.padEnd(widths[i] as number) : c.padStart(widths[i] as number)))
      .join("  ");
  return [line(header), widths.map((w) => "-".repeat(w)).join("  "), ...rows.map(line)].join("\n");
}

function describeRun(result: SimulationResult): string {
  const p = result.parameters as {
    duration: number;
    outage: { start: number; length: number } | null;
    server: string;
    runs: number;
    backlogs: readonly number[] | null;
    processes?: number;
  };
  const parts = [
    `scenario ${result.scenario}`,
    p.runs > 1
      ? `seeds ${result.seed}–${result.seed + p.runs - 1} (${p.runs} runs averaged)`
      : `seed ${result.seed}`,
    `${p.duration / 1000} s`,
    `server ${p.server}`,
  ];
  if (p.processes !== undefined) parts.push(`${p.processes} processes`);
  if (p.outage !== null && p.outage !== undefined) {
    parts.push(`outage ${p.outage.start / 1000}–${(p.outage.start + p.outage.length) / 1000} s`);
  }
  if (p.backlogs?.length === 1) parts.push(`backlog ${p.backlogs[0]}`);
  return parts.join(", ");
}

/**
 * Runs `robustly simulate` with `argv`, writing to `out`, the progress bar and the files written to
 * `errors`. Returns the exit status.
 */
export async function runSimulate(
  argv: readonly string[],
  out: NodeJS.WritableStream = process.stdout,
  errors: NodeJS.WriteStream = process.stderr,
): Promise<number> {
  const { options, jobs, json, report, help, quiet } = simulateOptions(argv);
  if (help) {
    out.write(SIMULATE_HELP);
    return 0;
  }
  // Check before a long run that --report can be written.
  if (report !== undefined) await checkOutDir("--report", report, ["index.html"]);
  const reporting = report === undefined ? undefined : await import("./report.js");
  if (reporting !== undefined) await reporting.load("--report");
  const bar = commandProgress(errors, quiet);
  const result = await simulateInThreads(
    {
      ...options,
      onProgress: (done, total, fraction) =>
        bar.update((done + fraction) / total, `run ${Math.min(done + 1, total)} of ${total}`),
    },
    { jobs },
  );
  bar.done();
  if (json) {
    out.write(`${JSON.stringify(result)}\n`);
  } else {
    out.write(`${describeRun(result)}\n\n${table(result)}\n`);
  }
  if (reporting !== undefined && report !== undefined) {
    const files = await writingTo("--report", report, () => reporting.writeReport(result, report));
    if (!quiet) errors.write(`wrote ${files.join(", ")}\n`);
  }
  return 0;
}
