/**
 * What sharing a policy's state costs a call: decisions per second and the latency a call adds with the
 * state in this process only, in a `memoryStore()`, and in a `redisStore()` on a real redis-server started
 * on a free loopback port; and, for scale, what a design that asked Redis on every decision would pay (one
 * round trip). Run with `npm run bench` or `node --import tsx bench/store.ts` (after `npm run build`);
 * measures the compiled `dist/`. Needs redis-server (Debian: apt-get install -y redis-server).
 */
import { resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { Redis } from "ioredis";
import { haveRedisServer, startRedisServer } from "../test/support/redis-server.js";

const root = fileURLToPath(new URL("..", import.meta.url));
const lib = (await import(
  pathToFileURL(resolve(root, "dist", "index.js")).href
)) as typeof import("../src/index.js");
const { redisStore } = (await import(
  pathToFileURL(resolve(root, "dist", "store", "redis.js")).href
)) as typeof import("../src/store/redis.js");

if (!haveRedisServer()) {
  process.stdout.write("bench/store.ts: redis-server is not installed; skipped\n");
  process.exit(0);
}

const server = await startRedisServer();
const client = new Redis(server.url);
const yieldToIo = () => new Promise((resolve) => setImmediate(resolve));

type Where = "local" | "memory" | "redis";
const stores = {
  local: undefined,
  memory: lib.memoryStore(),
  redis: redisStore({ client, prefix: "bench:" }),
} as const;

function sharing(where: Where, key: string) {
  const store = stores[where];
  return store === undefined ? {} : { store, key };
}

/**
 * Decisions per second over about `ms` of work, in slices of 2,000 decisions with the event loop let go
 * between slices, so that the background exchanges with the store run (and are paid for) as they would.
 */
async function perSecond(ms: number, decide: () => unknown): Promise<number> {
  let done = 0;
  const start = process.hrtime.bigint();
  const end = start + BigInt(ms) * 1_000_000n;
  while (process.hrtime.bigint() < end) {
    for (let i = 0; i < 2000; i++) decide();
    done += 2000;
    await yieldToIo();
  }
  return done / (Number(process.hrtime.bigint() - start) / 1e9);
}

/** Median and 99th percentile, in µs, of `n` awaited calls. */
async function latency(n: number, call: () => Promise<unknown>): Promise<[number, number]> {
  const times: number[] = [];
  for (let i = 0; i < n; i++) {
    const start = process.hrtime.bigint();
    await call();
    times.push(Number(process.hrtime.bigint() - start) / 1000);
  }
  times.sort((a, b) => a - b);
  return [times[Math.floor(n / 2)] as number, times[Math.floor(n * 0.99)] as number];
}

const rows: string[][] = [];
const fmt = (n: number) => (n >= 1e6 ? `${(n / 1e6).toFixed(2)} M` : `${(n / 1e3).toFixed(0)} k`);
for (const where of ["local", "memory", "redis"] as const) {
  const budget = lib.retryBudget({ ratio: 0.2, minPerSecond: 10, ...sharing(where, "b") });
  const breaker = lib.circuitBreaker({ failureRatio: 0.5, minimumThroughput: 20, ...sharing(where, "c") });
  const pace = new lib.ResponsiveBackoff({ base: 10, ...sharing(where, "r") });
  await Promise.all([budget.ready(), breaker.ready(), pace.ready()]);
  const budgetRate = await perSecond(1500, () => {
    budget.request();
    budget.success();
  });
  const breakerRate = await perSecond(1500, () => {
    breaker.acquire();
    breaker.success();
  });
  const paceRate = await perSecond(1500, () => pace.success());
  const op = async () => 42;
  const options = { maxRetries: 3, budget, breaker };
  // Warm up, then time whole calls through `retry` with both guards.
  await latency(20_000, () => lib.retry(op, options));
  const [p50, p99] = await latency(100_000, () => lib.retry(op, options));
  const shared = budget.shared && breaker.shared && pace.shared;
  rows.push([
    where === "local" ? "in this process (no store)" : `${where}Store (shared: ${shared})`,
    fmt(budgetRate),
    fmt(breakerRate),
    fmt(paceRate),
    `${p50.toFixed(2)} / ${p99.toFixed(2)}`,
  ]);
  await Promise.all([budget.close(), breaker.close(), pace.close()]);
}

// For scale: one Redis round trip per decision (what a policy that asked the store every time would pay).
const redis = stores.redis;
const [rt50, rt99] = await latency(20_000, () => redis.read("budget-ratio:b"));
const [cas50, cas99] = await latency(20_000, async () => {
  const entry = await redis.read("bench-cas");
  await redis.write("bench-cas", entry.version, { n: entry.version }, 60_000);
});

const header = [
  "state",
  "budget request+success/s",
  "breaker acquire+success/s",
  "responsive success()/s",
  "retry(op) p50 / p99 µs",
];
const table = [header, ...rows];
const widths = header.map((_, i) => Math.max(...table.map((r) => (r[i] as string).length)));
const line = (r: string[]) => r.map((c, i) => c.padEnd(widths[i] as number)).join("  ");
process.stdout.write(`${table.map(line).join("\n")}\n`);
process.stdout.write(
  `one Redis round trip (read): p50 ${rt50.toFixed(0)} µs, p99 ${rt99.toFixed(0)} µs, about ${fmt(1e6 / rt50)} decisions/s if each decision waited for one\n` +
    `one exchange's read and compare-and-set: p50 ${cas50.toFixed(0)} µs, p99 ${cas99.toFixed(0)} µs\n`,
);
await client.quit();
await server.stop();
