/**
 * `robustly serve`: the slow-under-load server of the overload experiment over real HTTP, on a loopback address only. A request needs
 * `minDelay` while the concurrency c is at most `limit`, and minDelay × factor^((c − limit) / k) above it,
 * judged afresh every `tick` ms from the concurrency at that moment (`LatencyServer.serviceTime`, the same
 * formula the simulator uses). A request whose client went away is still served and still counts until
 * then, as in the experiment's reference server; only the answer is not written.
 *
 * With a `strategy`, the server protects itself as a service in front of such a resource would: it admits
 * requests under an adaptive concurrency limit on its own service times (as Envoy's adaptive concurrency
 * filter does) and answers the rest 503 at once, or under a rate limit, answering the rest 429 with a
 * `Retry-After`. A refused request costs the server nothing.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { isIPv4 } from "node:net";
import { parseArgs } from "node:util";
import { OptionError } from "../core/errors.js";
import { type AdaptiveLimit, adaptiveLimit, type LimitPermit } from "../limit/adaptive-limit.js";
import { type RateLimiter, rateLimiter } from "../ratelimit/rate-limiter.js";
import { LatencyServer } from "../sim/servers.js";
import { duration, integer, number, oneOf, UsageError } from "./args.js";

/** How the server admits requests: all of them, under an adaptive concurrency limit, or under a rate limit. */
export const SERVE_STRATEGIES = ["none", "aimd", "gradient2", "vegas", "rate"] as const;
export type ServeStrategy = (typeof SERVE_STRATEGIES)[number];
/** The highest `--rate`, requests a second. */
export const MAX_SERVE_RATE = 1_000_000;

export const SERVE_HELP = `robustly serve: a slow-under-load server over HTTP, on a loopback address

Usage: robustly serve [options]

  --port P         port to listen on; 0 picks a free one (default 8070)
  --host H         a loopback address: 127.x.x.x, ::1 or localhost (default 127.0.0.1)
  --min-delay D    service time up to the concurrency limit (bare numbers in ms; default 100ms)
  --limit N        concurrency up to which a request takes --min-delay (default 30)
  --factor F       growth of the service time above the limit, >= 1 (default 1.05)
  --k K            requests above the limit that multiply the service time by F (default 15)
  --tick D         how often the server re-checks what it serves (bare numbers in ms; default 50ms)
  --strategy S     how it admits requests (default none): none (all of them); aimd, gradient2 or
                   vegas (an adaptive concurrency limit on its own service times, the rest answered
                   503 at once); rate (--rate requests a second, the rest answered 429 with Retry-After)
  --rate N         requests a second admitted with --strategy rate, in (0, ${MAX_SERVE_RATE}] (default 100)
  --quiet          do not print the concurrency every second
  -h, --help       this help

Every request is answered "OK" once it has been served for minDelay × factor^((c − limit) / k), c being
the concurrency at each check (just minDelay while c <= limit). It prints "listening on URL" once, then
every second the concurrency and the last service time (and, with a strategy, the requests refused
and the limit), until SIGINT or SIGTERM.
`;

/** What `startServer` takes. Times are in ms. */
export interface ServeOptions {
  /** 0 (the default here) picks a free port. */
  port?: number;
  /** A loopback address; default 127.0.0.1. */
  host?: string;
  /** Default 100. */
  minDelay?: number;
  /** Default 30. */
  limit?: number;
  /** Default 1.05. */
  factor?: number;
  /** Default 15. */
  k?: number;
  /** Default 50. */
  tick?: number;
  /** How requests are admitted; default "none" (all of them). */
  strategy?: ServeStrategy;
  /** Requests a second admitted with `strategy: "rate"`; default 100. */
  rate?: number;
}

export interface RunningServer {
  /** The port it listens on. */
  readonly port: number;
  /** Its base URL, e.g. http://127.0.0.1:8070/. */
  readonly url: string;
  /** Requests inside the server now, abandoned ones included. */
  concurrency(): number;
  /** The service time computed at the last check, ms (0 before the first). */
  lastDelay(): number;
  /** Requests answered so far, how many of them had lost their client, and how many were refused (503 or 429). */
  served(): { answered: number; abandoned: number; refused: number };
  /** The adaptive concurrency limit now (undefined without one). */
  limit(): number | undefined;
  /** Stops listening, drops every connection and request, clears every timer. */
  close(): Promise<void>;
}

export const SERVE_DEFAULTS = Object.freeze({
  port: 8070,
  host: "127.0.0.1",
  minDelay: 100,
  limit: 30,
  factor: 1.05,
  k: 15,
  tick: 50,
  strategy: "none" as ServeStrategy,
  rate: 100,
});

const LOOPBACK_NAMES = ["localhost", "::1", "[::1]"];

/** Whether `host` is a loopback address: 127.x.x.x, ::1 or localhost. */
export function isLoopback(host: string): boolean {
  const h = host.toLowerCase();
  return LOOPBACK_NAMES.includes(h) || (isIPv4(h) && h.startsWith("127."));
}

/** Checks the options, throwing an OptionError naming the first bad one. */
function resolveServeOptions(o: ServeOptions): Required<ServeOptions> {
  const d = SERVE_DEFAULTS;
  const r = {
    port: o.port ?? 0,
    host: o.host ?? d.host,
    minDelay: o.minDelay ?? d.minDelay,
    limit: o.limit ?? d.limit,
    factor: o.factor ?? d.factor,
    k: o.k ?? d.k,
    tick: o.tick ?? d.tick,
    strategy: o.strategy ?? d.strategy,
    rate: o.rate ?? d.rate,
  };
  if (typeof r.host !== "string" || !isLoopback(r.host))
    throw new OptionError("host", r.host, "a loopback address (127.x.x.x, ::1 or localhost)");
  if (!Number.isInteger(r.port) || r.port < 0 || r.port > 65535)
    throw new OptionError("port", r.port, "an integer in [0, 65535]");
  if (!(Number.isFinite(r.minDelay) && r.minDelay >= 0 && r.minDelay <= 3_600_000))
    throw new OptionError("minDelay", r.minDelay, "a number of ms in [0, 3600000]");
  if (!(Number.isInteger(r.limit) && r.limit >= 0))
    throw new OptionError("limit", r.limit, "an integer >= 0");
  if (!(Number.isFinite(r.factor) && r.factor >= 1 && r.factor <= 1000))
    throw new OptionError("factor", r.factor, "a number in [1, 1000]");
  if (!(Number.isFinite(r.k) && r.k > 0)) throw new OptionError("k", r.k, "a finite number > 0");
  if (!(Number.isFinite(r.tick) && r.tick >= 1 && r.tick <= 60_000))
    throw new OptionError("tick", r.tick, "a number of ms in [1, 60000]");
  if (!SERVE_STRATEGIES.includes(r.strategy))
    throw new OptionError("strategy", r.strategy, `one of ${SERVE_STRATEGIES.join(", ")}`);
  if (!(Number.isFinite(r.rate) && r.rate > 0 && r.rate <= MAX_SERVE_RATE))
    throw new OptionError("rate", r.rate, `a number of requests a second in (0, ${MAX_SERVE_RATE}]`);
  if (o.rate !== undefined && r.strategy !== "rate")
    throw new OptionError("rate", o.rate, 'given only with strategy "rate"');
  return r;
}

interface Pending {
  readonly start: number;
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  /** Its place under the adaptive limit, if any: told when it is answered. */
  readonly permit: LimitPermit | undefined;
}

/**
 * The requests in service, oldest first. All are judged against the same delay at a check, so the
 * answered ones are always a prefix.
 */
class Service {
  readonly #model: { minDelay: number; limit: number; factor: number; k: number };
  readonly #tick: number;
  #pending: Pending[] = [];
  #head = 0;
  #ticker: NodeJS.Timeout | undefined;
  #closed = false;
  concurrency = 0;
  lastDelay = 0;
  answered = 0;
  abandoned = 0;
  refused = 0;
  readonly admission: AdaptiveLimit | undefined;
  readonly #rate: RateLimiter | undefined;

  constructor(o: Required<ServeOptions>) {
    this.#model = { minDelay: o.minDelay, limit: o.limit, factor: o.factor, k: o.k };
    this.#tick = o.tick;
    if (o.strategy === "rate") this.#rate = rateLimiter({ rate: o.rate });
    else if (o.strategy !== "none") {
      // A request whose client went away before its answer is a drop (the client timed out); every
      // other answer is a latency sample.
      this.admission = adaptiveLimit({ algorithm: o.strategy, isDrop: (error) => error === ABANDONED });
    }
  }

  /** A request arrives. */
  handle(req: IncomingMessage, res: ServerResponse): void {
    // Read (and drop) any body, so the request can end.
    req.resume();
    if (this.#closed) {
      res.destroy();
      return;
    }
    let permit: LimitPermit | undefined;
    try {
      if (this.admission !== undefined) this.admission.acquire((p) => (permit = p));
      else this.#rate?.acquire(noop);
    } catch (error) {
      this.#refuse(res, error);
      return;
    }
    this.concurrency += 1;
    this.#pending.push({ start: performance.now(), req, res, permit });
    this.#ticker ??= setInterval(() => this.#check(), this.#tick);
  }

  /** Answers a request the strategy did not admit: 429 with Retry-After for the rate, 503 for the limit. */
  #refuse(res: ServerResponse, error: unknown): void {
    this.refused += 1;
    const retryAfter = (error as { retryAfter?: unknown }).retryAfter;
    if (typeof retryAfter === "number") {
      res.writeHead(429, {
        "content-type": "text/plain",
        "retry-after": String(Math.max(1, Math.ceil(retryAfter / 1000))),
      });
      res.end("rate limited");
    } else {
      res.writeHead(503, { "content-type": "text/plain" });
      res.end("over the concurrency limit");
    }
  }

  /** Answers every request served long enough at the delay the concurrency gives now. */
  #check(): void {
    const now = performance.now();
    const delay = LatencyServer.serviceTime(this.concurrency, this.#model);
    this.lastDelay = delay;
    const pending = this.#pending;
    while (this.#head < pending.length && now - (pending[this.#head] as Pending).start >= delay) {
      const { req, res, permit } = pending[this.#head] as Pending;
      pending[this.#head] = undefined as unknown as Pending;
      this.#head += 1;
      this.concurrency -= 1;
      this.answered += 1;
      // The client went away: its connection is gone. (A pipelined request's response has no socket
      // until the one ahead of it is answered: its request's socket says.)
      if (res.destroyed || req.socket.destroyed) {
        this.abandoned += 1;
        permit?.failure(ABANDONED);
      } else {
        permit?.success();
        res.writeHead(200, { "content-type": "text/plain" });
        res.end("OK");
      }
    }
    if (this.#head > 1024 && this.#head * 2 > pending.length) {
      this.#pending = pending.slice(this.#head);
      this.#head = 0;
    }
    if (this.#head >= this.#pending.length) {
      this.#pending = [];
      this.#head = 0;
      clearInterval(this.#ticker);
      this.#ticker = undefined;
    }
  }

  /** Takes no more requests and drops those in service. */
  close(): void {
    this.#closed = true;
    clearInterval(this.#ticker);
    this.#ticker = undefined;
    for (let i = this.#head; i < this.#pending.length; i += 1) {
      this.#pending[i]?.res.destroy();
      this.#pending[i]?.permit?.ignore();
    }
    this.#pending = [];
    this.#head = 0;
    this.concurrency = 0;
  }
}

/** Starts the slow-under-load server. Resolves once it listens. */
export function startServer(options: ServeOptions = {}): Promise<RunningServer> {
  let o: Required<ServeOptions>;
  try {
    o = resolveServeOptions(options);
  } catch (error) {
    return Promise.reject(error);
  }
  const service = new Service(o);
  const server = createServer({ keepAliveTimeout: 5000 }, (req, res) => service.handle(req, res));
  // A client that goes away mid-request is expected; do not let its socket error escape.
  server.on("clientError", (_error, socket) => socket.destroy());

  return new Promise<RunningServer>((resolve, reject) => {
    const onError = (error: Error) => reject(error);
    server.once("error", onError);
    server.listen(o.port, o.host, () => {
      server.off("error", onError);
      // Once listening, an error (running out of file descriptors under a pile of requests, say) is
      // reported, not fatal: the server goes on with the requests it has.
      let reported = false;
      server.on("error", (error) => {
        if (reported) return;
        reported = true;
        process.emitWarning(`robustly serve: ${error.message}`, { type: "RobustlyServeWarning" });
      });
      const address = server.address();
      const port = typeof address === "object" && address !== null ? address.port : o.port;
      const host = o.host.includes(":") && !o.host.startsWith("[") ? `[${o.host}]` : o.host;
      let closing: Promise<void> | undefined;
      resolve({
        port,
        url: `http://${host}:${port}/`,
        concurrency: () => service.concurrency,
        lastDelay: () => service.lastDelay,
        served: () => ({
          answered: service.answered,
          abandoned: service.abandoned,
          refused: service.refused,
        }),
        limit: () => service.admission?.limit,
        close() {
          closing ??= new Promise<void>((done) => {
            service.close();
            server.close(() => done());
            server.closeAllConnections();
          });
          return closing;
        },
      });
    });
  });
}

function noop(): void {}

/** What an abandoned request tells the adaptive limit: a drop. */
const ABANDONED = Symbol("abandoned");

/** "123ms", "2.671s", "2m8.6s": like the reference server's Go durations, roughly. */
export function formatDelay(ms: number): string {
  if (!Number.isFinite(ms)) return "forever";
  if (ms < 1000) return `${Math.round(ms)}ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(3)}s`;
  if (ms < 3_600_000) return `${Math.floor(ms / 60_000)}m${((ms % 60_000) / 1000).toFixed(1)}s`;
  return `${(ms / 3_600_000).toFixed(1)}h`;
}

/** HH:MM:SS.mmm, local time. */
export function clockTime(date: Date): string {
  const two = (n: number) => String(n).padStart(2, "0");
  return `${two(date.getHours())}:${two(date.getMinutes())}:${two(date.getSeconds())}.${String(date.getMilliseconds()).padStart(3, "0")}`;
}

function parse(argv: readonly string[]) {
  const text = { type: "string" } as const;
  try {
    return parseArgs({
      args: [...argv],
      strict: true,
      allowPositionals: false,
      options: {
        port: text,
        host: text,
        "min-delay": text,
        limit: text,
        factor: text,
        k: text,
        tick: text,
        strategy: text,
        rate: text,
        quiet: { type: "boolean" },
        help: { type: "boolean", short: "h" },
      },
    });
  } catch (error) {
    throw new UsageError(`${(error as Error).message}\n\nRun robustly serve --help for the options.`);
  }
}

/** Turns the command line into `startServer` options. Throws a UsageError naming the flag. */
export function serveOptions(argv: readonly string[]): {
  /** Every option but `rate`, which is there with `--strategy rate` only. */
  options: ServeOptions;
  quiet: boolean;
  help: boolean;
} {
  const v = parse(argv).values;
  const { rate: _rate, ...defaults } = SERVE_DEFAULTS;
  const options: ServeOptions = { ...defaults };
  if (v.port !== undefined)
    options.port = number(
      "port",
      v.port,
      (n) => Number.isInteger(n) && n >= 0 && n <= 65535,
      "an integer in [0, 65535] (0 picks a free port)",
    );
  if (v.host !== undefined) {
    if (!isLoopback(v.host)) {
      throw new UsageError(
        `--host must be a loopback address (127.x.x.x, ::1 or localhost): this server is for local experiments only; got "${v.host}"`,
      );
    }
    options.host = v.host;
  }
  if (v["min-delay"] !== undefined) {
    options.minDelay = duration("min-delay", v["min-delay"]);
    if (!(options.minDelay >= 0 && options.minDelay <= 3_600_000))
      throw new UsageError(`--min-delay must be between 0 and 1h; got "${v["min-delay"]}"`);
  }
  if (v.limit !== undefined) options.limit = integer("limit", v.limit, 0);
  if (v.factor !== undefined)
    options.factor = number("factor", v.factor, (n) => n >= 1 && n <= 1000, "a number in [1, 1000]");
  if (v.k !== undefined) options.k = number("k", v.k, (n) => n > 0, "a number > 0");
  if (v.tick !== undefined) {
    options.tick = duration("tick", v.tick);
    if (!(options.tick >= 1 && options.tick <= 60_000))
      throw new UsageError(`--tick must be between 1ms and 60s; got "${v.tick}"`);
  }
  if (v.strategy !== undefined) options.strategy = oneOf("strategy", v.strategy, SERVE_STRATEGIES);
  if (v.rate !== undefined) {
    if (options.strategy !== "rate")
      throw new UsageError(`--rate is for --strategy rate; got --strategy ${options.strategy}`);
    options.rate = number(
      "rate",
      v.rate,
      (n) => n > 0 && n <= MAX_SERVE_RATE,
      `a number of requests a second in (0, ${MAX_SERVE_RATE}]`,
    );
  }
  return { options, quiet: v.quiet === true, help: v.help === true };
}

/** Runs `robustly serve` until SIGINT or SIGTERM. Returns the exit status. */
export async function runServe(
  argv: readonly string[],
  out: NodeJS.WritableStream = process.stdout,
): Promise<number> {
  const { options, quiet, help } = serveOptions(argv);
  if (help) {
    out.write(SERVE_HELP);
    return 0;
  }
  const server = await startServer(options);
  out.write(`listening on ${server.url}\n`);
  const reporter = quiet
    ? undefined
    : setInterval(() => {
        const limit = server.limit();
        const admission =
          options.strategy === "none"
            ? ""
            : `, refused: ${server.served().refused}${limit === undefined ? "" : `, limit: ${limit}`}`;
        out.write(
          `${clockTime(new Date())}: concurrency: ${String(server.concurrency()).padStart(4)}, last delay: ${formatDelay(server.lastDelay())}${admission}\n`,
        );
      }, 1000);
  await new Promise<void>((resolve) => {
    const stop = () => {
      process.off("SIGINT", stop);
      process.off("SIGTERM", stop);
      resolve();
    };
    process.on("SIGINT", stop);
    process.on("SIGTERM", stop);
  });
  clearInterval(reporter);
  await server.close();
  return 0;
}
