/**
 * What the shared responsive backoff costs a call: `success()` and `failure()` on one shared instance,
 * and a `retry` call that succeeds at once with it as the backoff, against the same call with a pure
 * backoff. Run with `npm run bench` (after the other benchmarks) or `node --import tsx bench/responsive.ts`;
 * measures the compiled `dist/`.
 */
import { resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const lib = (await import(
  pathToFileURL(resolve(root, "dist", "index.js")).href
)) as typeof import("../src/index.js");

function perCall(label: string, n: number, run: () => unknown): number {
  let best = Number.POSITIVE_INFINITY;
  for (let round = 0; round < 5; round++) {
    const start = process.hrtime.bigint();
    for (let i = 0; i < n; i++) run();
    best = Math.min(best, Number(process.hrtime.bigint() - start) / n);
  }
  process.stderr.write(`${label}: ${best.toFixed(1)} ns\n`);
  return best;
}

async function perAwaitedCall(label: string, n: number, run: () => Promise<unknown>): Promise<number> {
  let best = Number.POSITIVE_INFINITY;
  for (let round = 0; round < 5; round++) {
    const start = process.hrtime.bigint();
    for (let i = 0; i < n; i++) await run();
    best = Math.min(best, Number(process.hrtime.bigint() - start) / n);
  }
  process.stderr.write(`${label}: ${best.toFixed(1)} ns\n`);
  return best;
}

const shared = new lib.ResponsiveBackoff({ random: lib.seededRandom(1) });
const lines: string[] = [];
let k = 0;
lines.push(
  `shared.success() while the delay is 0 (the common case once the pace is found): ${perCall("success", 2_000_000, () => shared.success()).toFixed(1)} ns per call (best of 5 rounds)`,
);
lines.push(
  `shared.failure() then success() in turn: ${perCall("failure/success", 2_000_000, () => (k++ % 2 === 0 ? shared.failure() : shared.success())).toFixed(1)} ns per call`,
);
const op = async () => 42;
const withShared = { backoff: new lib.ResponsiveBackoff(), jitter: lib.jitter.none() };
const withPure = { backoff: lib.backoff.exponential({ base: 500 }), jitter: lib.jitter.none() };
const pure = await perAwaitedCall("retry pure", 300_000, () => lib.retry(op, withPure));
const responsive = await perAwaitedCall("retry responsive", 300_000, () => lib.retry(op, withShared));
lines.push(
  `retry(op) that succeeds at once: ${responsive.toFixed(0)} ns with the shared responsive backoff, ${pure.toFixed(0)} ns with a pure exponential one (the success is reported to the shared controller)`,
);
process.stdout.write(`${lines.join("\n")}\n`);
