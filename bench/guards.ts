/**
 * What a retry budget check and a closed circuit breaker cost a call: the decisions alone, and a `retry`
 * call that succeeds at once with each, against the same call without. Run with `npm run bench` (last) or
 * `node --import tsx bench/guards.ts`; measures the compiled `dist/`.
 */
import { resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const lib = (await import(
  pathToFileURL(resolve(root, "dist", "index.js")).href
)) as typeof import("../src/index.js");

function best(n: number, run: () => unknown): number {
  let ns = Number.POSITIVE_INFINITY;
  for (let round = 0; round < 5; round++) {
    const start = process.hrtime.bigint();
    for (let i = 0; i < n; i++) run();
    ns = Math.min(ns, Number(process.hrtime.bigint() - start) / n);
  }
  return ns;
}

async function bestAwaited(n: number, run: () => Promise<unknown>): Promise<number> {
  let ns = Number.POSITIVE_INFINITY;
  for (let round = 0; round < 5; round++) {
    const start = process.hrtime.bigint();
    for (let i = 0; i < n; i++) await run();
    ns = Math.min(ns, Number(process.hrtime.bigint() - start) / n);
  }
  return ns;
}

const ratio = lib.retryBudget({ ratio: 0.2, minPerSecond: 10 });
const tokens = lib.retryBudget({ maxTokens: 100, tokenRatio: 0.1 });
const breaker = lib.circuitBreaker({ consecutiveFailures: 5 });
const ratioBreaker = lib.circuitBreaker({ failureRatio: 0.5, minimumThroughput: 20 });
const lines = [
  `ratio budget, request() + tryRetry(): ${best(1_000_000, () => {
    ratio.request();
    return ratio.tryRetry();
  }).toFixed(1)} ns`,
  `token budget, failure() + tryRetry() + success(): ${best(1_000_000, () => {
    tokens.failure();
    const granted = tokens.tryRetry();
    tokens.success();
    return granted;
  }).toFixed(1)} ns`,
  `closed breaker (consecutive failures), acquire() + success(): ${best(1_000_000, () => {
    breaker.acquire();
    breaker.success();
  }).toFixed(1)} ns`,
  `closed breaker (failure ratio over a window), acquire() + success(): ${best(1_000_000, () => {
    ratioBreaker.acquire();
    ratioBreaker.success();
  }).toFixed(1)} ns`,
];
const op = async () => 42;
const plain = { maxRetries: 3 };
const withBudget = { maxRetries: 3, budget: lib.retryBudget() };
const withBreaker = { maxRetries: 3, breaker: lib.circuitBreaker() };
const base = await bestAwaited(300_000, () => lib.retry(op, plain));
const budgeted = await bestAwaited(300_000, () => lib.retry(op, withBudget));
const broken = await bestAwaited(300_000, () => lib.retry(op, withBreaker));
lines.push(
  `retry(op) that succeeds at once: ${base.toFixed(0)} ns plain, ${budgeted.toFixed(0)} ns with a ratio budget, ${broken.toFixed(0)} ns with a closed breaker`,
);
process.stdout.write(`${lines.join("\n")}\n`);
