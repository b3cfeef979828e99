/**
 * `robustly schedule`: what a policy sleeps before each retry (the raw backoff, the jittered delay, the
 * final delay and the running total), and the "Total Delays" comparison of six common retry strategies.
 */
import { toBackoff } from "../backoff/common.js";
import { backoff as backoffs } from "../backoff/index.js";
import type { Backoff } from "../backoff/types.js";
import { toJitter } from "../jitter/common.js";
import { jitter as jitters } from "../jitter/index.js";
import type { Jitter } from "../jitter/types.js";
import { DEFAULTS, type RetryOptions, resolveOptions } from "../policy/options.js";
import { delays } from "../retry/delays.js";
import { integer, list, parseCommand } from "./args.js";
import { POLICY_FLAGS, POLICY_HELP, policyOptions } from "./policy-flags.js";

/** The most retries a schedule lists. */
export const MAX_SCHEDULED_RETRIES = 10_000;

/** The six retry strategies of the Total Delays comparison, with its parameters (it counts in seconds). */
export const SEED_001_STRATEGIES: readonly { readonly name: string; readonly backoff: Backoff }[] = [
  { name: "Constant", backoff: backoffs.constant({ base: 1000 }) },
  { name: "Linear", backoff: backoffs.linear({ base: 0, interval: 1000 }) },
  { name: "Fibonacci", backoff: backoffs.fibonacci({ base: 0, step: 1000 }) },
  { name: "Quadratic", backoff: backoffs.polynomial({ base: 0, exponents: [2], step: 1000 }) },
  { name: "Exponential", backoff: backoffs.exponential({ base: 1000, multiplier: 2 }) },
  { name: "Polynomial", backoff: backoffs.polynomial({ base: 0, exponents: [3], step: 1000 }) },
];

export const SCHEDULE_HELP = `robustly schedule: the delays a retry policy sleeps

Usage: robustly schedule [policy flags] [--retries N] [--json]
       robustly schedule --totals [--retries 1,3,5,10,20] [policy flags] [--json]

  --retries N        how many retries to show, at most ${MAX_SCHEDULED_RETRIES} (default 10); the policy's --max-retries does not cut it
  --totals           the Total Delays of ${SEED_001_STRATEGIES.map((s) => s.name.toLowerCase()).join(", ")} backoff
                     (or of the policy given by flags)
  --json             print JSON: { "delays": [...], "total": ... } in ms (--totals: every strategy's totals)
  -h, --help         this help

${POLICY_HELP}`;

/** One row of the schedule. */
export interface ScheduleRow {
  /** Retries so far, the backoff's x (a decorrelated jitter may have reset the x it used). */
  readonly x: number;
  /** v_x as the backoff computed it, ms; null when the jitter did not ask the backoff (decorrelatedAws). */
  readonly backoff: number | null;
  readonly jittered: number;
  readonly delay: number;
  readonly total: number;
}

/**
 * The schedule of `options`: the same final delays as `delays(options, count)`, with the raw backoff and
 * the jittered delay behind each. Both strategies are wrapped to record what they return, so the
 * randomness is drawn exactly as `delays` draws it.
 */
export function schedule(options: RetryOptions, count: number): ScheduleRow[] {
  const inner = toBackoff(
    options.backoff ?? backoffs.exponential({ base: DEFAULTS.backoffBase, max: DEFAULTS.backoffMax }),
  );
  const innerJitter = toJitter(options.jitter ?? jitters.full());
  let raw: number | null = null;
  let usedX = 0;
  const recordingBackoff: Backoff = {
    name: inner.name,
    base: inner.base,
    max: inner.max,
    delay(x, random) {
      raw = inner.delay(x, random);
      return raw;
    },
  };
  const jittered: number[] = [];
  const xs: number[] = [];
  const raws: (number | null)[] = [];
  const recordingJitter: Jitter = {
    name: innerJitter.name,
    apply(input) {
      raw = null;
      usedX = input.retries;
      const answer = innerJitter.apply(input);
      const value = typeof answer === "number" ? answer : answer.delay;
      if (typeof answer !== "number") usedX = answer.retries;
      jittered.push(value);
      xs.push(usedX);
      raws.push(raw);
      return answer;
    },
  };
  const finals = delays(
    { ...options, backoff: recordingBackoff, jitter: recordingJitter, rules: undefined },
    count,
  );
  let total = 0;
  return finals.map((delay, i) => {
    total += delay;
    return { x: xs[i] as number, backoff: raws[i] ?? null, jittered: jittered[i] as number, delay, total };
  });
}

/**
 * How many of `rows` the policy sleeps before `maxElapsed` stops it, when every attempt fails at once
 * (the schedule's assumption): the same test as the retry loop's, on the time gone (and, when
 * `maxElapsedCountsWait`, the wait too). Undefined when the limit stops none of them.
 */
export function withinMaxElapsed(
  options: RetryOptions,
  rows: readonly ScheduleRow[],
): { at: number; why: string } | undefined {
  const policy = resolveOptions(options).retry.policies.at(-1);
  if (policy === undefined || !Number.isFinite(policy.maxElapsed)) return undefined;
  const spent = (row: ScheduleRow) => (policy.maxElapsedCountsWait ? row.total : row.total - row.delay);
  const at = rows.findIndex((row) => spent(row) > policy.maxElapsed);
  if (at === -1) return undefined;
  const row = rows[at] as ScheduleRow;
  const past = policy.maxElapsedCountsWait
    ? `the next wait would end at ${human(spent(row))}`
    : `${human(spent(row))} gone`;
  return { at, why: `maxElapsed ${human(policy.maxElapsed)} (${past}, attempts taken as instant)` };
}

/** A duration for people: ms below a second, else seconds. */
export function human(ms: number): string {
  if (ms < 1000) return `${Number(ms.toFixed(1))} ms`;
  return `${Number((ms / 1000).toFixed(3))} s`;
}

function scheduleTable(rows: readonly ScheduleRow[], stop?: { at: number; why: string }): string {
  const header = ["x", "backoff", "jittered", "delay", "total"];
  const cells = rows.map((r) => [
    String(r.x),
    r.backoff === null ? "—" : human(r.backoff),
    human(r.jittered),
    human(r.delay),
    human(r.total),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((c) => (c[i] as string).length)));
  const line = (c: readonly string[]) => c.map((v, i) => v.padStart(widths[i] as number)).join("  ");
  const lines = cells.map(line);
  if (stop !== undefined) lines.splice(stop.at, 0, `-- the policy stops here: ${stop.why} --`);
  return [line(header), widths.map((w) => "-".repeat(w)).join("  "), ...lines].join("\n");
}

/** Runs `robustly schedule` with `argv`. */
export async function runSchedule(
  argv: readonly string[],
  out: NodeJS.WritableStream = process.stdout,
): Promise<number> {
  const parsed = parse(argv);
  const v = parsed.values;
  if (v.help === true) {
    out.write(SCHEDULE_HELP);
    return 0;
  }
  const options = policyOptions(v);
  const flags = v as Readonly<Record<string, unknown>>;
  const policyGiven = flags.backoff !== undefined || flags.config !== undefined;
  if (v.totals === true) {
    const counts = list("retries", v.retries ?? "1,3,5,10,20", (n) =>
      integer("retries", n, 0, MAX_SCHEDULED_RETRIES),
    );
    const strategies = policyGiven
      ? [{ name: `${String(toBackoff(options.backoff ?? backoffs.exponential()).name)} (given)`, options }]
      : SEED_001_STRATEGIES.map((s) => ({
          name: s.name,
          options: { ...options, backoff: s.backoff, jitter: options.jitter ?? jitters.none() },
        }));
    const totals = strategies.map((s) => {
      const longest = Math.max(...counts);
      const all = delays(s.options, longest);
      return { name: s.name, totals: counts.map((n) => all.slice(0, n).reduce((a, b) => a + b, 0)) };
    });
    if (v.json === true) {
      out.write(`${JSON.stringify({ retries: counts, strategies: totals })}\n`);
      return 0;
    }
    const blocks = counts.map((n, i) =>
      [
        `Starting experiments with maximum ${n} retries.`,
        ...totals.map(
          (t) =>
            `> ${t.name} Backoff > Total delay: ${Number(((t.totals[i] as number) / 1000).toFixed(3))} seconds.`,
        ),
      ].join("\n"),
    );
    out.write(`${blocks.join("\n\n")}\n`);
    return 0;
  }
  const count = integer("retries", v.retries ?? "10", 0, MAX_SCHEDULED_RETRIES);
  const rows = schedule(options, count);
  // The rows past maxElapsed are shown, marked: the policy never sleeps them.
  const within = withinMaxElapsed(options, rows);
  if (v.json === true) {
    const stop = within === undefined ? {} : { withinMaxElapsed: within.at };
    out.write(
      `${JSON.stringify({ delays: rows.map((r) => r.delay), total: rows.at(-1)?.total ?? 0, ...stop })}\n`,
    );
    return 0;
  }
  out.write(`${scheduleTable(rows, within)}\n`);
  return 0;
}

function parse(argv: readonly string[]) {
  return parseCommand("schedule", {
    args: [...argv],
    strict: true,
    allowPositionals: false,
    options: {
      ...POLICY_FLAGS,
      retries: { type: "string" },
      totals: { type: "boolean" },
      json: { type: "boolean" },
      help: { type: "boolean", short: "h" },
    },
  });
}
