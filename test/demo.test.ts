// The demo (examples/demo.ts), run as `npm run demo` would run it, on the virtual clock: its output
// is checked line by line against the policy it claims (base 1 s, cap 32 s, ×2, full jitter, 5 retries).
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { beforeAll, describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("..", import.meta.url));

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function demo(...args: string[]): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", "examples/demo.ts", ...args], {
      cwd: root,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
      stdout += chunk;
    });
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
      stderr += chunk;
    });
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

// The policy the demo runs, as its header says.
const BASE = 1_000;
const CAP = 32_000;
const MAX_RETRIES = 5;
const MAX_DELAY = 60_000;
const VIRTUAL_START = 12 * 3_600_000;

const STAMP = String.raw`\[(\d{2}):(\d{2}):(\d{2})\.(\d{6})\]`;
const ERROR_LINE = new RegExp(`^${STAMP} on_error: attempt (\\d+) failed with: (.+)$`);
const SUCCESS_LINE = new RegExp(`^${STAMP} on_success called$`);
const RESULT_LINE = "Resource accessed successfully";
const FAILURE_LINE = /^Failed to access resource: (.+)$/;
const VALUE_ERROR = "Simulated resource access error";
const TIMEOUT_ERROR = /^The attempt timed out after (\d+) ms$/;

/** ms since midnight from the four captured parts of a stamp. */
function stampMs(match: RegExpMatchArray): number {
  const [h, m, s, micro] = match.slice(1, 5).map(Number) as [number, number, number, number];
  return ((h * 60 + m) * 60 + s) * 1000 + micro / 1000;
}

/** How long the attempt that ended in `message` took: its timeout if it timed out, else no time. */
function attemptDuration(message: string | undefined): number {
  const timedOut = message === undefined ? null : TIMEOUT_ERROR.exec(message);
  return timedOut === null ? 0 : Number(timedOut[1]);
}

interface Parsed {
  errors: { at: number; attempt: number; message: string }[];
  successAt: number | undefined;
  outcome: { ok: true } | { ok: false; message: string };
}

/** Parses the demo's output, failing on any line that is not in the expected format and order. */
function parse(stdout: string): Parsed {
  expect(stdout.endsWith("\n")).toBe(true);
  const lines = stdout.slice(0, -1).split("\n");
  const last = lines.pop() as string;
  const errors: Parsed["errors"] = [];
  let successAt: number | undefined;
  for (const line of lines) {
    const error = ERROR_LINE.exec(line);
    const success = SUCCESS_LINE.exec(line);
    expect(error !== null || success !== null, `unexpected line: ${line}`).toBe(true);
    expect(successAt, "nothing may follow on_success but the result").toBeUndefined();
    if (error !== null) {
      errors.push({ at: stampMs(error), attempt: Number(error[5]), message: error[6] as string });
    } else if (success !== null) {
      successAt = stampMs(success);
    }
  }
  if (last === RESULT_LINE) return { errors, successAt, outcome: { ok: true } };
  const failure = FAILURE_LINE.exec(last);
  expect(failure, `unexpected last line: ${last}`).not.toBeNull();
  return { errors, successAt, outcome: { ok: false, message: (failure as RegExpExecArray)[1] as string } };
}

// Chosen to cover every path: 2 succeeds at once; 1 and 3 after a retry or two; 343 after five
// failures, the most retries allow; 50 and 91 run out of retries, on a value error and on a timeout.
const SEEDS = [1, 2, 3, 50, 91, 343];
const runs = new Map<number, Run>();

beforeAll(async () => {
  const all = await Promise.all(SEEDS.map((seed) => demo("--virtual", "--seed", String(seed))));
  for (const [i, seed] of SEEDS.entries()) runs.set(seed, all[i] as Run);
}, 120_000);

describe("npm run demo -- --virtual --seed N", () => {
  it.each(SEEDS)("seed %i: exits 0 with nothing on stderr", (seed) => {
    const run = runs.get(seed) as Run;
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
  });

  it.each(SEEDS)("seed %i: every line has the expected format, attempts counting up from 0", (seed) => {
    const { errors } = parse((runs.get(seed) as Run).stdout);
    expect(errors.map((e) => e.attempt)).toEqual(errors.map((_, i) => i));
    for (const { message } of errors) {
      expect(message === VALUE_ERROR || TIMEOUT_ERROR.test(message), message).toBe(true);
    }
  });

  it.each(SEEDS)(
    "seed %i: virtual time starts at noon, never goes back, each gap fits the backoff",
    (seed) => {
      const { errors, successAt } = parse((runs.get(seed) as Run).stdout);
      // When each stamped line was printed: at the end of an attempt, which a timeout makes last longer.
      const ends: { at: number; duration: number }[] = [
        ...errors.map((e) => ({ at: e.at, duration: attemptDuration(e.message) })),
        ...(successAt === undefined ? [] : [{ at: successAt, duration: 0 }]),
      ];
      const starts = ends.map((end) => end.at - end.duration);
      // Nothing waits before the first attempt.
      expect(starts[0]).toBeCloseTo(VIRTUAL_START, 3);
      for (let i = 1; i < ends.length; i++) {
        const gap = (ends[i]?.at as number) - (ends[i - 1]?.at as number);
        expect(gap).toBeGreaterThanOrEqual(0);
        expect(gap).toBeLessThanOrEqual(CAP);
        // Between one attempt's end and the next one's start lies the backoff slept after retry i − 1, which
        // full jitter draws from [0, min(cap, base × 2^(i−1))). Stamps are rounded to the microsecond.
        const backoff = (starts[i] as number) - (ends[i - 1]?.at as number);
        expect(backoff).toBeGreaterThanOrEqual(-0.001);
        expect(backoff).toBeLessThanOrEqual(Math.min(CAP, BASE * 2 ** (i - 1)) + 0.001);
      }
      // No retry starts later than maxElapsed after the first attempt.
      expect((starts.at(-1) as number) - VIRTUAL_START).toBeLessThanOrEqual(MAX_DELAY);
    },
  );

  it.each(SEEDS)("seed %i: ends with a result consistent with the errors before it", (seed) => {
    const { errors, successAt, outcome } = parse((runs.get(seed) as Run).stdout);
    if (outcome.ok) {
      // Success: on_success came right after at most MAX_RETRIES failed attempts.
      expect(successAt).toBeDefined();
      expect(errors.length).toBeLessThanOrEqual(MAX_RETRIES);
    } else {
      // Failure: both error kinds are retried, so only the retry limit can end the run, with the last error.
      expect(successAt).toBeUndefined();
      expect(errors).toHaveLength(MAX_RETRIES + 1);
      expect(outcome.message).toBe(errors.at(-1)?.message);
    }
  });

  it("the seeds cover success, failure, and both kinds of error", () => {
    const parsed = SEEDS.map((seed) => parse((runs.get(seed) as Run).stdout));
    const outcomes = parsed.map((p) => p.outcome.ok);
    expect(outcomes).toContain(true);
    expect(outcomes).toContain(false);
    const messages = parsed.flatMap((p) => p.errors.map((e) => e.message));
    expect(messages).toContain(VALUE_ERROR);
    expect(messages.some((m) => TIMEOUT_ERROR.test(m))).toBe(true);
    expect(parsed.some((p) => p.outcome.ok && p.errors.length === MAX_RETRIES)).toBe(true);
  });

  it("the same seed prints the same run", async () => {
    const again = await demo("--virtual", "--seed", "343");
    expect(again.stdout).toBe(runs.get(343)?.stdout);
    const equalsForm = await demo("--seed=343", "--virtual");
    expect(equalsForm.stdout).toBe(runs.get(343)?.stdout);
  });
});

describe("npm run demo -- with bad flags", () => {
  it.each([
    [["--bogus"], 'unknown option "--bogus"'],
    [["--virtual", "extra"], 'unknown option "extra"'],
    [["--seed"], "--seed needs a value"],
    [["--seed", "-1"], '--seed must be an integer in [0, 4294967295]; got "-1"'],
    [["--seed", "1.5"], '--seed must be an integer in [0, 4294967295]; got "1.5"'],
    [["--seed=4294967296"], '--seed must be an integer in [0, 4294967295]; got "4294967296"'],
  ])("%j exits 2 with a message and the usage", async (args, message) => {
    const run = await demo(...args);
    expect(run.code).toBe(2);
    expect(run.stdout).toBe("");
    expect(run.stderr).toContain(`demo: ${message}`);
    expect(run.stderr).toContain("Usage: npm run demo --");
  });

  it("--help prints the usage and exits 0", async () => {
    const run = await demo("--help");
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^Usage: npm run demo -- \[--seed N\] \[--virtual\] \[--help\]/);
    expect(run.stderr).toBe("");
  });
});
