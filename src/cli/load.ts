/**
 * `robustly load`: the overload experiment's reference client, for real. N clients each wait an exponentially distributed think time,
 * then make one request through robustly's own `retry` with a named policy and a per-attempt timeout, and
 * start over. Every attempt is an HTTP GET to a loopback URL, and never leaves loopback: a redirect is
 * followed only to another loopback URL, and one anywhere else stops the load with an error. It counts
 * successful attempts, failed ones and timed-out ones, and prints their rates every interval, as the
 * reference client does.
 */
import { setMaxListeners } from "node:events";
import { parseArgs } from "node:util";
import { systemClock } from "../core/clock.js";
import { OptionError, TimeoutError } from "../core/errors.js";
import { type Random, systemRandom } from "../core/random.js";
import type { AdaptiveLimit } from "../limit/adaptive-limit.js";
import type { RetryOptions, RetryPolicy } from "../policy/options.js";
import { retry } from "../retry/retry.js";
import { ADAPTIVE_STRATEGIES, budgetOption, OUTAGE_STRATEGIES } from "../sim/strategies.js";
import { duration, integer, oneOf, UsageError } from "./args.js";
import { commandProgress } from "./progress.js";
import { isLoopback } from "./serve.js";

/** The most clients one load generator runs. */
export const MAX_CLIENTS = 10_000;
/** The most redirects one attempt follows, each to a loopback URL; one more is a failed attempt. */
export const MAX_REDIRECTS = 5;

/** The strategies `--strategy` names: the outage's clients, and robustly's defaults with an adaptive limit. */
const LOAD_STRATEGIES = [...OUTAGE_STRATEGIES, ...ADAPTIVE_STRATEGIES];
const STRATEGY_NAMES = LOAD_STRATEGIES.map((s) => s.name);

export const LOAD_HELP = `robustly load: clients that think, call and retry with robustly, for real

Usage: robustly load [options]

Durations take a unit (1.5s, 200ms, 2m); a bare number is in ms.

  --url URL        the server, on a loopback address (default http://127.0.0.1:8070/)
  --clients N      clients, 1 to ${MAX_CLIENTS} (default 1000)
  --strategy NAME  retry policy (default fixed): ${STRATEGY_NAMES.join(", ")}
  --think D        mean think time between a client's requests (default 10s)
  --timeout D      per-attempt timeout (default 2s)
  --duration D     stop after this long (default: run until SIGINT or SIGTERM)
  --interval D     how often to print the rates (default 5s)
  --quiet          no progress bar on stderr (it shows only on a terminal: the time run, against
                   --duration when given, and the requests in flight)
  -h, --help       this help

Strategies:
${LOAD_STRATEGIES.map((s) => `  ${s.name.padEnd(20)} ${s.description}`).join("\n")}

Every interval it prints the attempts per second that succeeded (OK), failed (errors) and timed out.
It never leaves loopback: it follows a redirect (at most ${MAX_REDIRECTS} per attempt) only to another
loopback URL, and a redirect anywhere else stops it with an error (exit status 1). It also exits with
status 1 when no attempt got an HTTP answer (nothing listens at --url, say).
`;

/** What `startLoad` takes. Times are in ms. */
export interface LoadOptions {
  /** The server's URL, on a loopback address. */
  url: string;
  /** 1 to 10,000. Default 1000. */
  clients?: number;
  /** A named strategy of `OUTAGE_STRATEGIES` (default "fixed"), or a policy of your own. */
  strategy?: string;
  /** A retry policy; overrides `strategy`. */
  policy?: RetryPolicy;
  /** Mean think time. Default 10,000. */
  think?: number;
  /** Per-attempt timeout. Default 2000. */
  timeout?: number;
  /** Randomness for think times and jitter. Default `Math.random`. */
  random?: Random;
}

/** Attempts so far, by outcome, and the calls in flight now. */
export interface Counts {
  /** Attempts that succeeded. */
  ok: number;
  /** Attempts that failed, timeouts not included. */
  errors: number;
  /** Attempts that hit the per-attempt timeout. */
  timedOut: number;
  /** Attempts that got an HTTP answer, whatever its status (part of ok and errors). */
  answered: number;
  /** Logical requests started (a request is one `retry` call, however many attempts it takes). */
  requests: number;
  /** Requests in progress now (attempting or backing off). */
  inFlight: number;
}

export interface Summary extends Counts {
  /** How long the load ran, ms. */
  elapsed: number;
  /** Requests still in progress when the load was stopped (their calls were aborted). */
  stopped: number;
}

export interface RunningLoad {
  /** The counts so far (cumulative). */
  snapshot(): Counts;
  /** Resolves if the load stops on its own: a redirect off loopback (a `LeftLoopbackError`). */
  readonly failed: Promise<Error>;
  /** Aborts every call in flight, clears every timer, waits for every client to end. */
  stop(): Promise<Summary>;
}

/** An answer outside 2xx. */
export class HttpStatusError extends Error {
  override readonly name = "HttpStatusError";
  readonly status: number;
  constructor(status: number) {
    super(`the server answered ${status}`);
    this.status = status;
  }
}

/** The server redirected off loopback: the load stops rather than follow it. */
export class LeftLoopbackError extends Error {
  override readonly name = "LeftLoopbackError";
  /** Where the redirect pointed. */
  readonly location: string;
  constructor(from: string, location: string) {
    super(
      `${from} redirected to ${location}, which is not on a loopback address: robustly load never leaves loopback`,
    );
    this.location = location;
  }
}

/** The loopback URL in `text`, or undefined when it is not an http(s) URL on a loopback address. */
export function loopbackUrl(text: string): URL | undefined {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return undefined;
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return undefined;
  return isLoopback(url.hostname) ? url : undefined;
}

/**
 * A named strategy's policy: the `robustly` row's draws on the default budget as `retry` does, the others
 * (the clients of the experiments and the peers' defaults) run without one, as those clients do.
 */
function policyFor(name: string): (RetryPolicy & { budget?: false }) | undefined {
  const strategy = LOAD_STRATEGIES.find((s) => s.name === name);
  return strategy === undefined ? undefined : { ...budgetOption(strategy), ...strategy.policy };
}

interface Resolved {
  url: string;
  clients: number;
  policy: RetryPolicy & { budget?: false };
  /** The strategy's adaptive concurrency limit, shared by the clients (the robustly-<algorithm> rows). */
  limit: AdaptiveLimit | undefined;
  think: number;
  timeout: number;
  random: Random;
}

function resolveLoadOptions(o: LoadOptions): Resolved {
  const url = typeof o?.url === "string" ? loopbackUrl(o.url) : undefined;
  if (url === undefined)
    throw new OptionError(
      "url",
      o?.url,
      "an http:// URL on a loopback address (127.x.x.x, [::1], localhost)",
    );
  const clients = o.clients ?? 1000;
  if (!(Number.isInteger(clients) && clients >= 1 && clients <= MAX_CLIENTS))
    throw new OptionError("clients", clients, `an integer in [1, ${MAX_CLIENTS}]`);
  let policy = o.policy;
  let limit: AdaptiveLimit | undefined;
  if (policy === undefined) {
    const name = o.strategy ?? "fixed";
    policy = policyFor(name);
    limit = LOAD_STRATEGIES.find((s) => s.name === name)?.limit?.(systemClock);
    if (policy === undefined) throw new OptionError("strategy", name, `one of ${STRATEGY_NAMES.join(", ")}`);
  } else if (typeof policy !== "object" || policy === null) {
    throw new OptionError("policy", policy, "a retry policy object");
  }
  const think = o.think ?? 10_000;
  if (!(Number.isFinite(think) && think > 0 && think <= 86_400_000))
    throw new OptionError("think", think, "a number of ms in (0, 86400000]");
  const timeout = o.timeout ?? 2000;
  if (!(Number.isFinite(timeout) && timeout > 0 && timeout <= 3_600_000))
    throw new OptionError("timeout", timeout, "a number of ms in (0, 3600000]");
  const random = o.random ?? systemRandom;
  if (typeof random !== "function") throw new OptionError("random", random, "a function returning [0, 1)");
  return { url: url.href, clients, policy, limit, think, timeout, random };
}

/** Waits an exponentially distributed time of mean `mean` ms, or until `signal` aborts. */
function thinkTime(random: () => number, mean: number, signal: AbortSignal): Promise<void> {
  return new Promise<void>((resolve) => {
    if (signal.aborted) {
      resolve();
      return;
    }
    const ms = -Math.log(1 - random()) * mean;
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done);
  });
}

/** Starts the clients at once; each begins with a think time. */
export function startLoad(options: LoadOptions): RunningLoad {
  const o = resolveLoadOptions(options);
  const controller = new AbortController();
  const signal = controller.signal;
  // Every call and every think time listens on this one signal.
  setMaxListeners(0, signal);
  const started = performance.now();
  let stoppedAt: number | undefined;
  const counts: Counts = { ok: 0, errors: 0, timedOut: 0, answered: 0, requests: 0, inFlight: 0 };
  let fail: (error: Error) => void = () => {};
  const failed = new Promise<Error>((resolve) => {
    fail = (error) => {
      // Every client stops: not one more request goes anywhere.
      controller.abort(error);
      resolve(error);
    };
  });

  const retryOptions: RetryOptions<void> = {
    ...o.policy,
    timeout: o.timeout,
    signal,
    random: o.random,
    onSuccess: () => {
      counts.ok += 1;
    },
    onError: (error) => {
      // The stop's abort is no attempt's outcome.
      if (signal.aborted) return;
      if (error instanceof TimeoutError) counts.timedOut += 1;
      else counts.errors += 1;
    },
  };

  const attempt = async ({ signal: attemptSignal }: { signal: AbortSignal }): Promise<void> => {
    let url = o.url;
    for (let redirects = 0; ; redirects++) {
      // Redirects are followed here, where their target can be checked, never by fetch.
      const response = await fetch(url, { signal: attemptSignal, redirect: "manual" });
      // Read the body, so the connection can be reused.
      await response.arrayBuffer();
      if (redirects === 0) counts.answered += 1;
      const location = response.status >= 300 && response.status < 400 && response.headers.get("location");
      if (!location) {
        if (!response.ok) throw new HttpStatusError(response.status);
        return;
      }
      const next = URL.canParse(location, url) ? new URL(location, url).href : location;
      if (loopbackUrl(next) === undefined) {
        const error = new LeftLoopbackError(url, next);
        fail(error);
        throw error;
      }
      if (redirects === MAX_REDIRECTS) throw new HttpStatusError(response.status);
      url = next;
    }
  };

  // Under a strategy's adaptive limit, each attempt takes a place first (or is refused, and retried after
  // its backoff); its timeout is a drop.
  const limit = o.limit;
  const limited =
    limit === undefined
      ? attempt
      : (context: { signal: AbortSignal }) => limit.execute(() => attempt(context), context.signal);

  const think = () => thinkTime(o.random, o.think, signal);

  const client = async (): Promise<void> => {
    while (!signal.aborted) {
      await think();
      if (signal.aborted) return;
      counts.requests += 1;
      counts.inFlight += 1;
      try {
        await retry(limited, retryOptions);
      } catch {
        // Gave up (a policy with a retry limit) or stopped: either way, on to the next request.
      } finally {
        counts.inFlight -= 1;
      }
    }
  };

  const clients = Array.from({ length: o.clients }, client);
  let stopping: Promise<Summary> | undefined;
  return {
    snapshot: () => ({ ...counts }),
    failed,
    stop() {
      stopping ??= (async () => {
        const stopped = counts.inFlight;
        controller.abort(new Error("the load was stopped"));
        await Promise.all(clients);
        stoppedAt ??= performance.now();
        return { ...counts, elapsed: stoppedAt - started, stopped };
      })();
      return stopping;
    },
  };
}

/** What the progress bar of a load shows: the time run (of `duration`, when given) and the requests. */
export function loadProgress(
  counts: Counts,
  elapsed: number,
  duration: number | undefined,
): { fraction: number | undefined; label: string } {
  const s = (ms: number) => `${Math.floor(ms / 1000)} s`;
  const time = duration === undefined ? s(elapsed) : `${s(elapsed)} of ${s(duration)}`;
  return {
    fraction: duration === undefined ? undefined : elapsed / duration,
    label: `${time}, ${counts.requests} requests, ${counts.inFlight} in flight`,
  };
}

/** `OK: 98.00 req/sec, errors: 0.00 req/sec, timedout: 0.00 req/sec`, as the reference client prints. */
export function rateLine(from: Counts, to: Counts, ms: number): string {
  const rate = (n: number) => (ms > 0 ? (n * 1000) / ms : 0).toFixed(2);
  return `OK: ${rate(to.ok - from.ok)} req/sec, errors: ${rate(to.errors - from.errors)} req/sec, timedout: ${rate(to.timedOut - from.timedOut)} req/sec`;
}

function parse(argv: readonly string[]) {
  const text = { type: "string" } as const;
  try {
    return parseArgs({
      args: [...argv],
      strict: true,
      allowPositionals: false,
      options: {
        url: text,
        clients: text,
        strategy: text,
        think: text,
        timeout: text,
        duration: text,
        interval: text,
        quiet: { type: "boolean" },
        help: { type: "boolean", short: "h" },
      },
    });
  } catch (error) {
    throw new UsageError(`${(error as Error).message}\n\nRun robustly load --help for the options.`);
  }
}

/** Turns the command line into `startLoad` options. Throws a UsageError naming the flag. */
export function loadOptions(argv: readonly string[]): {
  options: LoadOptions;
  duration: number | undefined;
  interval: number;
  help: boolean;
  quiet: boolean;
} {
  const v = parse(argv).values;
  const url = v.url ?? "http://127.0.0.1:8070/";
  if (loopbackUrl(url) === undefined) {
    throw new UsageError(
      `--url must be an http:// URL on a loopback address (127.x.x.x, [::1] or localhost): the load is for local servers only; got "${url}"`,
    );
  }
  const options: LoadOptions = { url };
  if (v.clients !== undefined) {
    options.clients = integer("clients", v.clients, 1, MAX_CLIENTS);
    if (options.clients > MAX_CLIENTS)
      throw new UsageError(`--clients must be an integer in [1, ${MAX_CLIENTS}]; got "${v.clients}"`);
  }
  if (v.strategy !== undefined) options.strategy = oneOf("strategy", v.strategy, STRATEGY_NAMES);
  const within = (flag: string, raw: string, ms: number, min: number, max: number, allowed: string) => {
    if (!(ms >= min && ms <= max)) throw new UsageError(`--${flag} must be ${allowed}; got "${raw}"`);
    return ms;
  };
  if (v.think !== undefined)
    options.think = within(
      "think",
      v.think,
      duration("think", v.think),
      1,
      86_400_000,
      "between 1ms and 24h",
    );
  if (v.timeout !== undefined)
    options.timeout = within(
      "timeout",
      v.timeout,
      duration("timeout", v.timeout),
      1,
      3_600_000,
      "between 1ms and 1h",
    );
  const runFor =
    v.duration === undefined
      ? undefined
      : within(
          "duration",
          v.duration,
          duration("duration", v.duration),
          1,
          2_147_483_647,
          "between 1ms and 24 days",
        );
  const interval =
    v.interval === undefined
      ? 5000
      : within(
          "interval",
          v.interval,
          duration("interval", v.interval),
          100,
          86_400_000,
          "between 100ms and 24h",
        );
  return { options, duration: runFor, interval, help: v.help === true, quiet: v.quiet === true };
}

/**
 * Runs `robustly load` until --duration or SIGINT/SIGTERM, or until a redirect off loopback stops it.
 * Returns the exit status: 1 when a redirect was refused or no attempt got an HTTP answer, else 0.
 */
export async function runLoad(
  argv: readonly string[],
  out: NodeJS.WritableStream = process.stdout,
  errors: NodeJS.WriteStream = process.stderr,
): Promise<number> {
  const { options, duration: runFor, interval, help, quiet } = loadOptions(argv);
  if (help) {
    out.write(LOAD_HELP);
    return 0;
  }
  const load = startLoad(options);
  const startedAt = performance.now();
  let last = load.snapshot();
  let lastAt = startedAt;
  const bar = commandProgress(errors, quiet);
  const ticker = setInterval(() => {
    const { fraction, label } = loadProgress(load.snapshot(), performance.now() - startedAt, runFor);
    bar.update(fraction, label);
  }, 250);
  const printer = setInterval(() => {
    const now = performance.now();
    const counts = load.snapshot();
    // The bar's line is cleared first: the rates may go to the same terminal.
    bar.done();
    out.write(`${rateLine(last, counts, now - lastAt)}\n`);
    last = counts;
    lastAt = now;
  }, interval);
  let deadline: NodeJS.Timeout | undefined;
  let failure: Error | undefined;
  await new Promise<void>((resolve) => {
    const stop = () => {
      process.off("SIGINT", stop);
      process.off("SIGTERM", stop);
      resolve();
    };
    process.on("SIGINT", stop);
    process.on("SIGTERM", stop);
    if (runFor !== undefined) deadline = setTimeout(stop, runFor);
    void load.failed.then((error) => {
      failure = error;
      stop();
    });
  });
  clearTimeout(deadline);
  clearInterval(printer);
  clearInterval(ticker);
  bar.done();
  const summary = await load.stop();
  const seconds = summary.elapsed / 1000;
  const none = { ok: 0, errors: 0, timedOut: 0, answered: 0, requests: 0, inFlight: 0 };
  out.write(
    `total: ${summary.requests} requests in ${seconds.toFixed(1)} s (${summary.stopped} still in progress when it stopped); attempts: ${summary.ok} OK, ${summary.errors} errors, ${summary.timedOut} timed out; ${rateLine(none, summary, summary.elapsed)}\n`,
  );
  if (failure !== undefined) {
    errors.write(`robustly: ${failure.message}\n`);
    return 1;
  }
  if (summary.answered === 0) {
    const attempts = summary.ok + summary.errors + summary.timedOut;
    errors.write(
      `robustly: nothing answered at ${options.url}: ${attempts} attempt${attempts === 1 ? "" : "s"}, none got an HTTP answer\n`,
    );
    return 1;
  }
  return 0;
}
