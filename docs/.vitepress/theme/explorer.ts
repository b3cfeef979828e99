/**
 * What the policy explorer computes, with robustly itself: a policy written as JSON (the form of
 * `fromConfig`, config files and the command line), the delays it sleeps before each retry, and what it
 * does to a server that pauses, on the overload simulator's pieces (`robustly/sim`) in virtual time.
 * Nothing here touches the page: the component draws what these functions return, and a test runs them
 * outside the browser.
 */
import {
  adaptiveLimit,
  defaultBudget,
  delays,
  fromConfig,
  jitter,
  OptionError,
  pipeline,
  type RetryOptions,
  retry,
  type Step,
  seededRandom,
  steps,
} from "robustly";
import { LatencyServer, Recorder, recovery, Simulation } from "robustly/sim";

/** The backoffs and jitters the explorer offers, by their JSON names. */
export const BACKOFFS = [
  "exponential",
  "linear",
  "fibonacci",
  "polynomial",
  "constant",
  "random",
  "none",
] as const;
export const JITTERS = [
  "none",
  "full",
  "equal",
  "decorrelated",
  "decorrelatedAws",
  "normal",
  "proportional",
] as const;

/** What the reader picks. Times in ms; `max` negative for none. */
export interface Choice {
  backoff: (typeof BACKOFFS)[number];
  jitter: (typeof JITTERS)[number];
  maxRetries: number;
  base: number;
  max: number;
  seed: number;
  /** Whether the calls draw on the default retry budget, as `retry` does unless given `budget: false`. */
  budget: boolean;
  /** An adaptive concurrency limit the clients share, or none. */
  limit: (typeof LIMITS)[number];
}

/** The adaptive concurrency limits the explorer offers. */
export const LIMITS = ["none", "aimd", "vegas", "gradient2"] as const;

export const INITIAL: Choice = {
  backoff: "exponential",
  jitter: "full",
  maxRetries: 8,
  base: 100,
  max: 10_000,
  seed: 1,
  budget: true,
  limit: "none",
};

/** The most retries the delay table shows (a policy without a limit retries for ever). */
export const SHOWN_RETRIES = 20;

/** The policy as JSON, as `fromConfig`, a config file and `robustly --config` take it. */
export function policyJson(choice: Choice): Record<string, unknown> {
  const backoff: Record<string, unknown> = { name: choice.backoff };
  if (choice.backoff !== "none") backoff.base = choice.base;
  const capped = choice.backoff !== "none" && choice.backoff !== "constant";
  // A negative max is "none": JSON spells no cap "Infinity" (left out, a named backoff takes 30 s).
  if (capped && choice.max >= 0) backoff.max = choice.max;
  else if (capped && choice.backoff !== "random") backoff.max = "Infinity";
  return { maxRetries: choice.maxRetries, backoff, jitter: choice.jitter };
}

export interface Row {
  /** Retries so far: 0 before the first retry. */
  x: number;
  /** The backoff's delay, before jitter. */
  backoff: number;
  /** The delay slept, jittered. */
  delay: number;
  /** The delays slept so far. */
  total: number;
}

export type Checked = { ok: true; options: RetryOptions; rows: Row[] } | { ok: false; error: string };

/**
 * The policy's options, checked by `fromConfig` (a bad choice comes back as the OptionError's message),
 * and the first retries' delays: the backoff alone and jittered with `seededRandom(seed)`.
 */
export function schedule(choice: Choice): Checked {
  let options: RetryOptions;
  let raw: number[];
  let jittered: number[];
  const limit = choice.maxRetries < 0 ? SHOWN_RETRIES : Math.min(choice.maxRetries, SHOWN_RETRIES);
  try {
    options = fromConfig(policyJson(choice));
    // The budget is no part of the JSON form: it is the default, or `budget: false` in the code.
    if (!choice.budget) options = { ...options, budget: false };
    raw = delays({ ...options, jitter: jitter.none(), random: seededRandom(choice.seed) }, limit);
    jittered = delays({ ...options, random: seededRandom(choice.seed) }, limit);
  } catch (error) {
    if (error instanceof OptionError) return { ok: false, error: error.message };
    throw error;
  }
  let total = 0;
  const rows = jittered.map((delay, x) => {
    total += delay;
    return { x, backoff: raw[x] as number, delay, total };
  });
  return { ok: true, options, rows };
}

/** The outage the explorer simulates: the overload simulator's outage scenario, shortened. */
export const OUTAGE = {
  clients: 1000,
  /** Mean think time after each request ends, ms. */
  think: 10_000,
  /** Each attempt's timeout, ms. */
  timeout: 2_000,
  duration: 120_000,
  pause: { start: 20_000, end: 50_000 },
  server: { minDelay: 100, limit: 30, factor: 1.05, k: 15, tick: 50, backlog: 512 },
} as const;

export interface OutageResult {
  /** Successful attempts in each second. */
  goodput: number[];
  recovered: boolean;
  /** From the end of the pause, ms; null when it never recovered. */
  recoveryTime: number | null;
  /** Attempts per request. */
  amplification: number;
  peakConcurrency: number;
  /** Of the requests that ended, the share that succeeded. */
  successRate: number;
  /** With an adaptive limit, the limit at the end of each second. */
  limits?: number[];
}

/**
 * Closed-loop clients, each thinking an exponentially distributed time after its previous request ends,
 * calling `retry` with the policy against the overload experiment's slow-under-load server, which stops
 * answering for the pause. The server settles each attempt synchronously on the simulation's clock, so
 * the whole run, retry loops included, happens in virtual time before this returns.
 */
export function simulateOutage(
  options: RetryOptions,
  seed: number,
  limit: Choice["limit"] = "none",
): OutageResult {
  const sim = new Simulation(seed);
  const recorder = new Recorder(OUTAGE.duration);
  const server = new LatencyServer(sim, recorder, OUTAGE.timeout, { ...OUTAGE.server, pause: OUTAGE.pause });
  const think = () => -Math.log(1 - sim.random()) * OUTAGE.think;
  const operation = () => {
    recorder.attempts += 1;
    return server.request();
  };
  const callbacks = (next: () => void) => ({
    onSuccess: () => {
      recorder.succeeded += 1;
      next();
    },
    onGiveUp: () => {
      recorder.failed += 1;
      next();
    },
  });
  // With a limit, the clients' calls are a pipeline: the retry step, the limit they share, and the
  // timeout inside it, so that the limit hears each timeout as a drop.
  const shared = limit === "none" ? undefined : adaptiveLimit({ algorithm: limit, clock: sim.clock });
  const limits: number[] = [];
  if (shared !== undefined) {
    const sample = () => {
      limits.push(shared.limit);
      if (limits.length < OUTAGE.duration / 1000) sim.after(1000, sample);
    };
    sim.after(1000, sample);
  }
  // Made once: the retry options, with the default budget `retry` would draw on (the clock's) shared by
  // every client as there, and the limit and timeout steps.
  let inner: { retry: RetryOptions; steps: Step[] } | undefined;
  if (shared !== undefined) {
    const { clock: _clock, random: _random, timeout: _timeout, signal: _signal, ...rest } = options;
    inner = {
      retry: { ...rest, budget: rest.budget ?? defaultBudget(sim.clock) },
      steps: [steps.adaptiveLimit(shared), steps.timeout(OUTAGE.timeout)],
    };
  }
  const request = () => {
    recorder.started += 1;
    const next = () => sim.after(think(), request);
    if (inner !== undefined) {
      // Each request's own retry step (it holds the request's callbacks), over the steps all share.
      pipeline(steps.retry({ ...inner.retry, ...callbacks(next) }), ...inner.steps)
        .execute(operation, { clock: sim.clock, random: sim.random })
        .catch(() => {});
      return;
    }
    retry(operation, {
      ...options,
      timeout: OUTAGE.timeout,
      clock: sim.clock,
      random: sim.random,
      ...callbacks(next),
    }).catch(() => {});
  };
  for (let i = 0; i < OUTAGE.clients; i++) sim.after(think(), request);
  sim.run(OUTAGE.duration);
  const [start, end] = [OUTAGE.pause.start / 1000, OUTAGE.pause.end / 1000];
  // Goodput before the pause is the level to come back to, past a warm-up as simulate() judges it.
  const judged = recovery(recorder.successes, Math.min(10, Math.floor(start / 2)), start, end);
  const ended = recorder.succeeded + recorder.failed;
  return {
    goodput: [...recorder.successes],
    recovered: judged.recovered,
    recoveryTime: judged.recoveryTimeMs,
    amplification: recorder.attempts / recorder.started,
    peakConcurrency: recorder.peakConcurrency,
    successRate: ended === 0 ? 0 : recorder.succeeded / ended,
    ...(shared === undefined ? {} : { limits }),
  };
}
