/**
 * Seed 002's experiment for real, over loopback HTTP: `robustly serve` runs the seed's server model in a
 * child process (a SIGSTOP must pause the server only, not the clients), and 200 clients in this process
 * (`startLoad`) call it through robustly's `retry`. After a few steady seconds the server is stopped with
 * SIGSTOP for 3 s, then resumed. With a fixed 100 ms retry interval the requests that piled up during the
 * pause (the listen queue, then every client retrying every 500 ms) push the server's service time beyond
 * the clients' timeout and it never comes back; with exponential backoff it recovers within seconds.
 *
 * The server runs the seed's model unscaled (100 ms up to 30 concurrent requests, ×1.05 per 15 above,
 * checked every 50 ms). The clients are scaled to fit a test: 200 clients thinking 1 s on average (the
 * seed: 1000 clients, 10 s) with a 400 ms timeout (the seed: 2 s), retrying with the seed's own policies
 * (`fixed`, `exponential` of OUTAGE_STRATEGIES).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { connect } from "node:net";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { type Counts, loadOptions, type RunningLoad, startLoad } from "../src/cli/load.js";
import { type RunningServer, serveOptions, startServer } from "../src/cli/serve.js";
import { LatencyServer } from "../src/sim/servers.js";
import { within } from "./support/drive.js";

const root = fileURLToPath(new URL("..", import.meta.url));
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** A `robustly` command run as a child process, with its output collected. */
interface Cli {
  readonly child: ChildProcess;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stdout: string;
  stderr: string;
}

const children = new Set<Cli>();
const loads = new Set<RunningLoad>();
const servers = new Set<RunningServer>();

function cli(args: readonly string[]): Cli {
  const child = spawn(process.execPath, ["--import", "tsx", "src/cli/main.ts", ...args], {
    cwd: root,
    stdio: ["ignore", "pipe", "pipe"],
  });
  const run: Cli = {
    child,
    stdout: "",
    stderr: "",
    exited: new Promise((resolve) => child.on("exit", (code, signal) => resolve({ code, signal }))),
  };
  child.stdout?.setEncoding("utf8").on("data", (text: string) => {
    run.stdout += text;
  });
  child.stderr?.setEncoding("utf8").on("data", (text: string) => {
    run.stderr += text;
  });
  children.add(run);
  return run;
}

const running = (child: ChildProcess) => child.exitCode === null && child.signalCode === null;

afterEach(async () => {
  // Whatever happened, leave nothing behind: a stopped child is resumed first, so that it can die.
  await Promise.all([...loads].map((load) => load.stop()));
  loads.clear();
  await Promise.all([...servers].map((server) => server.close()));
  servers.clear();
  for (const run of children) {
    if (running(run.child)) {
      run.child.kill("SIGCONT");
      run.child.kill("SIGKILL");
    }
  }
  for (const run of children) {
    await within(10_000, "a child's exit", run.exited);
    expect(running(run.child)).toBe(false);
  }
  children.clear();
});

/** Starts `robustly serve` in a child process and reads its port from the first line. */
async function serveInChild(args: readonly string[]): Promise<Cli & { url: string }> {
  const run = cli(["serve", "--port", "0", ...args]);
  const url = await within(
    20_000,
    "robustly serve's first line",
    new Promise<string>((resolve, reject) => {
      const look = () => {
        const match = /^listening on (http:\/\/127\.0\.0\.1:(\d+)\/)\n/.exec(run.stdout);
        if (match !== null) resolve(match[1] as string);
      };
      run.child.stdout?.on("data", look);
      run.exited.then(({ code }) => reject(new Error(`robustly serve exited (${code}): ${run.stderr}`)));
    }),
  );
  return Object.assign(run, { url });
}

/** Stops a child with SIGTERM, as a user would, and returns its exit. */
async function terminate(run: Cli): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  run.child.kill("SIGCONT");
  run.child.kill("SIGTERM");
  return within(10_000, "robustly serve's exit after SIGTERM", run.exited);
}

interface Rates {
  ok: number;
  errors: number;
  timedOut: number;
}

/** Attempts per second between two snapshots. */
function rates(from: { counts: Counts; at: number }, to: { counts: Counts; at: number }): Rates {
  const seconds = (to.at - from.at) / 1000;
  const per = (key: "ok" | "errors" | "timedOut") =>
    Math.round((to.counts[key] - from.counts[key]) / seconds);
  return { ok: per("ok"), errors: per("errors"), timedOut: per("timedOut") };
}

/** The server's concurrency in its last report line. */
function lastConcurrency(stdout: string): number {
  const all = [...stdout.matchAll(/concurrency: +(\d+), last delay: /g)];
  const last = all.at(-1);
  return last === undefined ? Number.NaN : Number(last[1]);
}

interface Outage {
  before: Rates;
  during: Rates;
  after: Rates;
  /** The server's concurrency at its last report. */
  concurrency: number;
}

const CLIENTS = 200;
const THINK = 1000;
// Node's listen queue holds 511 connections: on SIGCONT they are accepted at once, and at that
// concurrency the seed's formula gives about 470 ms of service, which must be clearly past the timeout.
const TIMEOUT = 400;
const PAUSE = 3000;

/**
 * Steady for 3 s (rates measured over the last 1.5 s), SIGSTOP for 3 s (rates over its last 2 s),
 * SIGCONT, then rates over 3 to 5 s after the resume.
 */
async function outage(strategy: "fixed" | "exponential"): Promise<Outage> {
  const server = await serveInChild([]);
  const load = startLoad({ url: server.url, clients: CLIENTS, think: THINK, timeout: TIMEOUT, strategy });
  loads.add(load);
  const mark = () => ({ counts: load.snapshot(), at: performance.now() });
  await sleep(1500);
  const steady = mark();
  await sleep(1500);
  const stop = mark();
  server.child.kill("SIGSTOP");
  await sleep(PAUSE - 2000);
  const stopped = mark();
  await sleep(2000);
  const resume = mark();
  server.child.kill("SIGCONT");
  await sleep(3000);
  const settled = mark();
  await sleep(2000);
  const end = mark();
  const concurrency = lastConcurrency(server.stdout);
  await load.stop();
  loads.delete(load);
  const exit = await terminate(server);
  expect(exit).toEqual({ code: 0, signal: null });
  const result = {
    before: rates(steady, stop),
    during: rates(stopped, resume),
    after: rates(settled, end),
    concurrency,
  };
  return result;
}

describe("seed 002 for real: a server paused with SIGSTOP, 200 clients over loopback", () => {
  it("retrying every 100 ms keeps the server overloaded after it resumes", { timeout: 60_000 }, async () => {
    const { before, during, after, concurrency } = await outage("fixed");
    // Steady: about one request per client per think time, all answered.
    expect(before.ok).toBeGreaterThan(100);
    expect(before.timedOut).toBeLessThan(before.ok * 0.05);
    // Paused: nothing answered, every client timing out and retrying.
    expect(during.ok).toBeLessThan(before.ok * 0.1);
    expect(during.timedOut).toBeGreaterThan(before.ok * 0.5);
    // Resumed, seconds later: still nothing but timeouts; the requests pile up inside the server.
    expect(after.ok).toBeLessThan(before.ok * 0.2);
    expect(after.timedOut).toBeGreaterThan(after.ok * 5);
    expect(after.timedOut).toBeGreaterThan(before.ok);
    expect(concurrency).toBeGreaterThan(300);
  });

  it("exponential backoff lets it recover", { timeout: 60_000 }, async () => {
    const { before, during, after, concurrency } = await outage("exponential");
    expect(before.ok).toBeGreaterThan(100);
    expect(before.timedOut).toBeLessThan(before.ok * 0.05);
    expect(during.ok).toBeLessThan(before.ok * 0.1);
    expect(during.timedOut).toBeGreaterThan(before.ok * 0.2);
    // Resumed, seconds later: back to the steady rate, hardly a timeout.
    expect(after.ok).toBeGreaterThan(before.ok * 0.7);
    expect(after.timedOut).toBeLessThan(before.ok * 0.1);
    expect(concurrency).toBeLessThan(100);
  });
});

describe("startServer", () => {
  async function server(options: Parameters<typeof startServer>[0]): Promise<RunningServer> {
    const s = await startServer(options);
    servers.add(s);
    return s;
  }

  async function timed(url: string, signal?: AbortSignal): Promise<{ text: string; ms: number }> {
    const start = performance.now();
    const response = await fetch(url, { signal });
    const text = await response.text();
    expect(response.status).toBe(200);
    return { text, ms: performance.now() - start };
  }

  it("answers OK on 127.0.0.1 after the minimum delay", async () => {
    const s = await server({ minDelay: 30, tick: 5 });
    expect(s.url).toBe(`http://127.0.0.1:${s.port}/`);
    const { text, ms } = await timed(s.url);
    expect(text).toBe("OK");
    expect(ms).toBeGreaterThanOrEqual(29);
    expect(ms).toBeLessThan(1000);
    expect(s.concurrency()).toBe(0);
    await s.close();
    await s.close();
  });

  it("takes longer the more requests it serves at once: seed 002's formula", async () => {
    const options = { minDelay: 50, limit: 0, factor: 1.5, k: 1, tick: 5 };
    const s = await server(options);
    const alone = await timed(s.url);
    const n = 6;
    const together = Promise.all(Array.from({ length: n }, () => timed(s.url)));
    await sleep(40);
    expect(s.concurrency()).toBe(n);
    const answers = await together;
    expect(alone.ms).toBeGreaterThanOrEqual(LatencyServer.serviceTime(1, options) - 1);
    expect(alone.ms).toBeLessThan(LatencyServer.serviceTime(3, options));
    for (const { text, ms } of answers) {
      expect(text).toBe("OK");
      // 50 × 1.5^6 ≈ 570 ms: every one was in service while six were.
      expect(ms).toBeGreaterThanOrEqual(LatencyServer.serviceTime(n, options) - 20);
    }
    expect(s.concurrency()).toBe(0);
  });

  it("still serves, and counts, a request whose client went away", async () => {
    const s = await server({ minDelay: 200, tick: 5 });
    await expect(timed(s.url, AbortSignal.timeout(50))).rejects.toThrow();
    expect(s.concurrency()).toBe(1);
    await sleep(300);
    expect(s.concurrency()).toBe(0);
    expect(s.served()).toEqual({ answered: 1, abandoned: 1, refused: 0 });
  });

  it("admits under an adaptive limit (--strategy aimd): the rest get 503 at once, and abandoned requests bring the limit down", async () => {
    // A second's service time: a refusal, answered at once, comes well before it.
    const s = await server({ minDelay: 1000, tick: 5, strategy: "aimd" });
    expect(s.limit()).toBe(20);
    const start = performance.now();
    const statuses = await Promise.all(
      Array.from({ length: 50 }, async () => {
        const response = await fetch(s.url);
        await response.text();
        return { status: response.status, ms: performance.now() - start };
      }),
    );
    const ok = statuses.filter((a) => a.status === 200);
    const refused = statuses.filter((a) => a.status === 503);
    expect(ok.length + refused.length).toBe(50);
    expect(ok.length).toBeLessThanOrEqual(20);
    expect(refused.length).toBeGreaterThanOrEqual(30);
    for (const r of refused) expect(r.ms).toBeLessThan(999);
    for (const a of ok) expect(a.ms).toBeGreaterThanOrEqual(999);
    expect(s.served().refused).toBe(refused.length);
    const grown = s.limit() as number;
    expect(grown).toBeGreaterThanOrEqual(20);
    // Clients that give up before their answer: drops, and the limit comes down.
    await Promise.all(
      Array.from({ length: 5 }, () => fetch(s.url, { signal: AbortSignal.timeout(20) }).catch(() => {})),
    );
    await sleep(1300);
    expect(s.served().abandoned).toBe(5);
    expect(s.limit()).toBeLessThan(grown);
    expect(s.concurrency()).toBe(0);
  });

  it("admits --rate requests a second with --strategy rate, and answers the rest 429 with a Retry-After", async () => {
    const s = await server({ minDelay: 5, tick: 5, strategy: "rate", rate: 5 });
    expect(s.limit()).toBeUndefined();
    const answers = await Promise.all(
      Array.from({ length: 12 }, async () => {
        const response = await fetch(s.url);
        await response.text();
        return { status: response.status, retryAfter: response.headers.get("retry-after") };
      }),
    );
    expect(answers.filter((a) => a.status === 200)).toHaveLength(5);
    const limited = answers.filter((a) => a.status === 429);
    expect(limited).toHaveLength(7);
    for (const a of limited) expect(Number(a.retryAfter)).toBeGreaterThanOrEqual(1);
    expect(s.served().refused).toBe(7);
  });

  it("starts on the command line's defaults, which give no --rate (robustly serve with no flags)", async () => {
    const s = await server({ ...serveOptions([]).options, port: 0 });
    expect(s.limit()).toBeUndefined();
    const limited = await server({ ...serveOptions(["--strategy", "rate"]).options, port: 0 });
    expect(limited.served().refused).toBe(0);
  });

  it("names a wrong strategy or rate", async () => {
    await expect(startServer({ strategy: "fast" as "none" })).rejects.toThrow(
      /strategy must be one of none, aimd, gradient2, vegas, rate; got "fast"/,
    );
    await expect(startServer({ rate: 5 })).rejects.toThrow(/rate must be given only with strategy "rate"/);
    await expect(startServer({ strategy: "rate", rate: Number.NaN })).rejects.toThrow(/rate must be/);
    expect(() => serveOptions(["--rate", "5"])).toThrow(/--rate is for --strategy rate; got --strategy none/);
    expect(() => serveOptions(["--strategy", "gradient3"])).toThrow(/--strategy must be one of.*gradient2/);
    expect(() => serveOptions(["--strategy", "rate", "--rate", "0"])).toThrow(
      /--rate must be a number of requests a second in \(0, 1000000\]; got "0"/,
    );
    expect(serveOptions(["--strategy", "rate", "--rate", "2.5"]).options).toMatchObject({
      strategy: "rate",
      rate: 2.5,
    });
  });

  it("regression: answers a pipelined request, and does not count it abandoned (its response has no socket until the one ahead is answered)", async () => {
    const server = await startServer({ port: 0, minDelay: 50, strategy: "aimd" });
    servers.add(server);
    const socket = connect(server.port, "127.0.0.1");
    let text = "";
    socket.setEncoding("utf8");
    socket.on("data", (chunk: string) => {
      text += chunk;
    });
    await new Promise((resolve) => socket.once("connect", resolve));
    // Two requests back to back on one connection (HTTP/1.1 pipelining; autocannon -p, wrk scripts).
    socket.write("GET / HTTP/1.1\r\nHost: x\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n");
    await new Promise((resolve) => setTimeout(resolve, 1000));
    socket.destroy();
    expect(text.match(/HTTP\/1\.1 200/g)?.length).toBe(2);
    expect(server.served().abandoned).toBe(0);
  });

  it("refuses anything but a loopback address", async () => {
    await expect(startServer({ host: "0.0.0.0" })).rejects.toThrow(/host must be a loopback address/);
    await expect(startServer({ host: "10.0.0.1" })).rejects.toThrow(/host/);
  });
});

describe("startLoad", () => {
  it("runs robustly's defaults under an adaptive limit (--strategy robustly-aimd): timeouts bring it down, attempts over it are refused", async () => {
    const fast = await startServer({ minDelay: 5, tick: 5 });
    servers.add(fast);
    const load = startLoad({
      url: fast.url,
      clients: 20,
      think: 20,
      timeout: 1000,
      strategy: "robustly-aimd",
    });
    loads.add(load);
    await sleep(500);
    const summary = await load.stop();
    expect(summary.ok).toBeGreaterThan(50);
    expect(summary.timedOut).toBe(0);
    expect(summary.inFlight).toBe(0);
    // A slow server's timeouts are drops: the limit comes down, and attempts over it are refused at once
    // (ConcurrencyLimitError, counted among the errors).
    const slow = await startServer({ minDelay: 500, tick: 5 });
    servers.add(slow);
    const late = startLoad({ url: slow.url, clients: 30, think: 1, timeout: 50, strategy: "robustly-aimd" });
    loads.add(late);
    await sleep(400);
    const limited = await late.stop();
    expect(limited.ok).toBe(0);
    expect(limited.timedOut).toBeGreaterThan(0);
    expect(limited.errors).toBeGreaterThan(0);
    expect(limited.inFlight).toBe(0);
  });

  it("counts successes, errors and timeouts, and stops everything", async () => {
    const fast = await startServer({ minDelay: 5, tick: 5 });
    servers.add(fast);
    const load = startLoad({ url: fast.url, clients: 20, think: 20, timeout: 1000, strategy: "fixed" });
    loads.add(load);
    await sleep(500);
    const summary = await load.stop();
    expect(summary.ok).toBeGreaterThan(50);
    expect(summary.errors).toBe(0);
    expect(summary.timedOut).toBe(0);
    expect(summary.inFlight).toBe(0);

    // A server slower than the timeout: every attempt times out.
    const slow = await startServer({ minDelay: 500, tick: 5 });
    servers.add(slow);
    const late = startLoad({ url: slow.url, clients: 5, think: 1, timeout: 50, strategy: "fixed" });
    loads.add(late);
    await sleep(400);
    const stuck = await late.stop();
    expect(stuck.ok).toBe(0);
    expect(stuck.timedOut).toBeGreaterThan(5);
    expect(stuck.inFlight).toBe(0);

    // Nothing listening: connection errors, not timeouts.
    const port = fast.port;
    await fast.close();
    const refused = startLoad({
      url: `http://127.0.0.1:${port}/`,
      clients: 2,
      think: 1,
      timeout: 1000,
      strategy: "fixed",
    });
    loads.add(refused);
    await sleep(300);
    const errors = await refused.stop();
    expect(errors.errors).toBeGreaterThan(0);
    expect(errors.ok).toBe(0);
  });

  it("refuses a URL off the loopback and too many clients", () => {
    expect(() => startLoad({ url: "http://example.com/" })).toThrow(/url/);
    expect(() => startLoad({ url: "http://127.0.0.1:1/", clients: 10_001 })).toThrow(/clients/);
  });
});

describe("the command line", () => {
  it("serve --host 10.0.0.1 and load --url http://example.com/ exit with status 2, naming the flag", async () => {
    const host = cli(["serve", "--host", "10.0.0.1"]);
    const url = cli(["load", "--url", "http://example.com/"]);
    const clients = cli(["load", "--clients", "20000"]);
    const unknown = cli(["serve", "--bogus"]);
    const [h, u, c, x] = await Promise.all(
      [host, url, clients, unknown].map((run) => within(20_000, "the command's exit", run.exited)),
    );
    expect(h?.code).toBe(2);
    expect(host.stderr).toMatch(/--host must be a loopback address.*"10\.0\.0\.1"/);
    expect(u?.code).toBe(2);
    expect(url.stderr).toMatch(
      /--url must be an http:\/\/ URL on a loopback address.*"http:\/\/example\.com\/"/,
    );
    expect(c?.code).toBe(2);
    expect(clients.stderr).toMatch(/--clients must be an integer in \[1, 10000\]; got "20000"/);
    expect(x?.code).toBe(2);
    expect(unknown.stderr).toMatch(/--bogus/);
  });

  it("parses the flags, naming the flag, the value and what is allowed", () => {
    expect(
      serveOptions(["--min-delay", "20ms", "--limit", "10", "--k", "5", "--tick", "10ms"]).options,
    ).toMatchObject({ minDelay: 20, limit: 10, k: 5, tick: 10, host: "127.0.0.1", port: 8070 });
    expect(serveOptions(["--host", "::1", "--port", "0", "--quiet"])).toMatchObject({
      options: { host: "::1", port: 0 },
      quiet: true,
    });
    expect(() => serveOptions(["--port", "70000"])).toThrow(
      /--port must be an integer in \[0, 65535\].*"70000"/,
    );
    expect(() => serveOptions(["--factor", "0.5"])).toThrow(/--factor/);
    expect(() => serveOptions(["--tick", "0"])).toThrow(/--tick/);
    expect(loadOptions(["--strategy", "exponential", "--think", "2s", "--timeout", "300"])).toMatchObject({
      options: { strategy: "exponential", think: 2000, timeout: 300 },
      interval: 5000,
      duration: undefined,
    });
    expect(() => loadOptions(["--strategy", "nope"])).toThrow(/--strategy must be one of fixed, exponential/);
    expect(() => loadOptions(["--url", "http://10.1.2.3:8070/"])).toThrow(/--url/);
    expect(() => loadOptions(["--think", "0"])).toThrow(/--think/);
    expect(() => loadOptions(["--interval", "1ms"])).toThrow(/--interval/);
  });
});
