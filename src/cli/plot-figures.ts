/**
 * The figures `robustly plot` draws: every backoff strategy, every jitter, the two delay curves of the
 * overload experiment, the total delays of the retry strategies compared, and the delays of one policy;
 * each from this library's own strategies.
 */
import { toBackoff } from "../backoff/common.js";
import { backoff as backoffs } from "../backoff/index.js";
import type { Backoff } from "../backoff/types.js";
import { type Random, seededRandom } from "../core/random.js";
import { toJitter } from "../jitter/common.js";
import { jitter as jitters } from "../jitter/index.js";
import type { Jitter } from "../jitter/types.js";
import { DEFAULTS, type RetryOptions } from "../policy/options.js";
import { delays } from "../retry/delays.js";
import { type Chart, jitterSpec, retriesAxis, SECOND, seconds, seriesSpec } from "./plot-charts.js";
import { escapeHtml, symlogScale } from "./render.js";
import { SEED_001_STRATEGIES, schedule } from "./schedule.js";

/** One retry of a plotted policy. */
export interface PlotRow {
  /** Retries so far (the row number); the horizontal axis. */
  readonly retry: number;
  /**
   * v_x, the raw backoff at the x the policy held before the jitter ran, ms (a decorrelated jitter may
   * reset that x: this is what the backoff alone would have asked for).
   */
  readonly raw: number;
  /** What the jitter made of it, ms, before scaling. */
  readonly jittered: number;
  /** The final delay (jittered × scale), ms. */
  readonly delay: number;
  /** The jitter changed the delay: jittered !== raw (for robustly's decorrelated jitter: it reset x). */
  readonly changed: boolean;
}

/** ms with at most three decimals, for the page's tables. */
const fixed = (ms: number) => String(Number(ms.toFixed(3)));

/** The backoff `options` use, with the library's default. */
function backoffOf(options: RetryOptions): Backoff {
  return toBackoff(
    options.backoff ?? backoffs.exponential({ base: DEFAULTS.backoffBase, max: DEFAULTS.backoffMax }),
  );
}

/**
 * The first `count` retries of `options`, from `schedule()` (so the randomness is drawn as `retry` draws
 * it). Where the jitter did not ask the backoff for v_x at the x the policy held (a decorrelated jitter
 * reset x, or AWS's decorrelated jitter never asks), v_x is computed here, drawing on `reference` if the
 * backoff is random.
 */
export function plotRows(
  options: RetryOptions,
  count: number,
  reference: Random = seededRandom(0),
): PlotRow[] {
  const strategy = backoffOf(options);
  const rows = schedule(options, count);
  let held = 0;
  return rows.map((row, retry) => {
    const raw = row.backoff !== null && row.x === held ? row.backoff : strategy.delay(held, reference);
    held = row.x + 1;
    return { retry, raw, jittered: row.jittered, delay: row.delay, changed: row.jittered !== raw };
  });
}

/** The figure of the backoff strategies: v_base 1 s, v_max 60 s, m 2, L 2 s, p1 2. */
export function backoffFigure(n: number, seed: number): Chart {
  const base = SECOND;
  const max = 60 * SECOND;
  const strategies: { name: string; backoff: Backoff }[] = [
    { name: "exponential: 1·2^x", backoff: backoffs.exponential({ base, max, multiplier: 2 }) },
    { name: "linear: 1 + 2x", backoff: backoffs.linear({ base, max, interval: 2 * SECOND }) },
    { name: "fibonacci: 1 + Fib(x)", backoff: backoffs.fibonacci({ base, max }) },
    { name: "polynomial: 1 + x^2", backoff: backoffs.polynomial({ base, max, exponents: [2] }) },
    { name: "random: random(1, 60)", backoff: backoffs.random({ base, max }) },
    { name: "constant: 1", backoff: backoffs.constant({ base }) },
    { name: "none: 0", backoff: backoffs.none() },
  ];
  const points = strategies.flatMap((s) =>
    delays({ backoff: s.backoff, jitter: jitters.none(), random: seededRandom(seed) }, n + 1).map((d, x) => ({
      x,
      y: seconds(d),
      series: s.name,
    })),
  );
  const title = "Backoff strategies";
  return {
    file: "backoff-strategies.svg",
    title,
    about:
      `The backoff v_x that each strategy computes after x retries, without jitter, with ` +
      `v_base = 1 s, v_max = 60 s, multiplier m = 2 (exponential), interval L = 2 s (linear) and exponent ` +
      `p1 = 2 (polynomial); every strategy but constant and none is capped at v_max. Exponential doubles ` +
      `from 1 s and reaches the 60 s cap at x = 6, polynomial (1 + x²) at x = 8 and fibonacci (1 + Fib(x)) ` +
      `at x = 11, while linear grows by 2 s a retry; random draws uniformly between v_base and v_max at ` +
      `every retry (seed ${seed}); constant stays at 1 s and none at 0.`,
    spec: seriesSpec({
      title,
      subtitle: `v_x after x retries, no jitter: v_base = 1 s, v_max = 60 s, m = 2, L = 2 s, p1 = 2`,
      x: retriesAxis("retries so far (x)", 0, n),
      y: { title: "backoff v_x (s)" },
      points,
      series: strategies.map((s) => s.name),
      legendTitle: "backoff strategy",
    }),
  };
}

/** Every jitter of the library, with what each does to v. */
const FIGURE_JITTERS: readonly { name: string; jitter: () => Jitter }[] = [
  { name: "none: v", jitter: () => jitters.none() },
  { name: "full: uniform(0, v)", jitter: () => jitters.full() },
  { name: "full, choice: choice(0, v)", jitter: () => jitters.full({ mode: "choice" }) },
  { name: "equal: v/2 + uniform(0, v/2)", jitter: () => jitters.equal() },
  { name: "equal, choice: v/2 + choice(0, v/2)", jitter: () => jitters.equal({ mode: "choice" }) },
  { name: "decorrelated: x = choice(0, x)", jitter: () => jitters.decorrelated() },
  { name: "decorrelatedAws: uniform(1, 3·prev)", jitter: () => jitters.decorrelatedAws() },
  { name: "decorrelatedPolly: Polly's V2", jitter: () => jitters.decorrelatedPolly() },
  { name: "normal: v + N(0, 0.1·v)", jitter: () => jitters.normal({ sigma: 0.1 }) },
  { name: "proportional: v ± 30%", jitter: () => jitters.proportional() },
];

/** The figure of the jitter algorithms on exponential backoff (v_base 1 s, v_max 60 s, m 2). */
export function jitterFigure(n: number, seed: number): Chart {
  const exponential = backoffs.exponential({ base: SECOND, max: 60 * SECOND, multiplier: 2 });
  const rows = FIGURE_JITTERS.flatMap((j) =>
    plotRows({ backoff: exponential, jitter: j.jitter(), random: seededRandom(seed) }, n + 1).map((r) => ({
      x: r.retry,
      raw: seconds(r.raw),
      delay: seconds(r.delay),
      changed: r.changed,
      panel: j.name,
    })),
  );
  const title = "Jitter algorithms on exponential backoff";
  return {
    file: "jitter-strategies.svg",
    title,
    about:
      `Each jitter applied to exponential backoff with v_base = 1 s, v_max = 60 s and ` +
      `m = 2, one panel per jitter (seed ${seed}). The dashed grey line is the backoff v_x the policy asked ` +
      `for, the blue line the delay after the jitter, and the red points the retries where the jitter ` +
      `changed the delay. The "choice" variants pick one of the two ends at random, the ` +
      `others draw uniformly as AWS does; decorrelated resets x to 0 half of the time (red where it did, ` +
      `and x carries on from there), AWS's decorrelated jitter draws from base to three times the previous ` +
      `delay, Polly's (V2) waits the growth of 2^t × tanh(√(4t)) from t = x − 1 + u to x + u, normal adds a normal draw with a standard deviation of 10% (the overload experiment's Jitter 0.1), and ` +
      `proportional draws within ±30% of the delay. Delays are capped at v_max before the jitter, so ` +
      `normal and proportional may go above 60 s.`,
    spec: jitterSpec({
      title,
      subtitle: `v_base = 1 s, v_max = 60 s, m = 2; red: the retries where the jitter changed the delay`,
      rows,
      n,
      yTitle: "delay (s)",
      labels: ["backoff v_x before the jitter", "delay with the jitter", "the jitter changed the delay"],
      panels: FIGURE_JITTERS.map((j) => j.name),
    }),
  };
}

/** The overload experiment's two delay curves, as `backoff.exponential` with `jitter.normal({ sigma: 0.1 })`. */
export function seed002Figures(n: number, seed: number): Chart[] {
  const curves = [
    {
      name: "MinDelay 100 ms, Factor 2.7, Jitter 0.1, MaxDelay 10 min",
      backoff: backoffs.exponential({ base: 100, max: 10 * 60 * SECOND, multiplier: 2.7 }),
    },
    {
      name: "MinDelay 1 sec, Factor 1.5, Jitter 0.1, MaxDelay 5 min",
      backoff: backoffs.exponential({ base: SECOND, max: 5 * 60 * SECOND, multiplier: 1.5 }),
    },
  ];
  const attempts = Math.max(20, n + 1);
  const points = curves.flatMap((c) =>
    delays(
      { backoff: c.backoff, jitter: jitters.normal({ sigma: 0.1 }), random: seededRandom(seed) },
      attempts,
    ).map((d, i) => ({ x: i + 1, y: seconds(d), series: c.name })),
  );
  const positive = points.every((p) => p.y > 0);
  const about = (scale: string) =>
    `The overload experiment's ${scale}: the delay before the next attempt after attempt 1, 2, … ${attempts} fails, for its ` +
    `two parameter sets: delay = min(MinDelay × Factor^(attempt − 1), MaxDelay) plus a normal draw with a ` +
    `standard deviation of Jitter × delay (seed ${seed}). The blue curve (Factor 2.7) reaches its 10 min ` +
    `cap at attempt 10, the green one (Factor 1.5) its 5 min cap at attempt 16; the jitter keeps the ` +
    `retries of many clients from lining up even once they all sit at the cap.`;
  const chart = (file: string, log: boolean): Chart => {
    const title = log
      ? "The overload experiment's retry delays, log scale"
      : "The overload experiment's retry delays";
    return {
      file,
      title,
      about: about(log ? "graphs on a logarithmic scale" : "graphs"),
      spec: seriesSpec({
        title,
        subtitle: `Exponential backoff with normal jitter (sd 10% of the delay): the delay after each failed attempt${log ? ", log scale" : ""}`,
        x: retriesAxis("attempt number", 1, attempts),
        y: log
          ? positive
            ? {
                title: "delay (s, log scale)",
                scale: { type: "log" },
                axis: { values: [0.1, 1, 10, 100, 1000] },
              }
            : { title: "delay (s, log scale)", ...symlogScale(Math.max(...points.map((p) => p.y))) }
          : { title: "delay (s)" },
        points,
        series: curves.map((c) => c.name),
        colors: ["#1f77b4", "#2ca02c"],
        legendTitle: "parameters",
      }),
    };
  };
  return [chart("overload-delays.svg", false), chart("overload-delays-log.svg", true)];
}

const SEED_001_RETRIES = [1, 3, 5, 10, 20] as const;

/** The Total Delays table of six common retry strategies as a chart (and the table itself, for the page). */
export function seed001Figure(): Chart {
  const totals = SEED_001_STRATEGIES.map((s) => {
    const all = delays({ backoff: s.backoff, jitter: jitters.none() }, Math.max(...SEED_001_RETRIES));
    return {
      name: s.name,
      totals: SEED_001_RETRIES.map((n) => seconds(all.slice(0, n).reduce((a, b) => a + b, 0))),
    };
  });
  const points = totals.flatMap((t) =>
    t.totals.map((y, i) => ({ x: SEED_001_RETRIES[i] as number, y, series: t.name })),
  );
  const maxY = Math.max(...points.map((p) => p.y));
  const e = escapeHtml;
  const format = (s: number) => Number(s.toFixed(3)).toLocaleString("en-US");
  const table = [
    "<table>",
    `<thead><tr><th scope="col">strategy</th>${SEED_001_RETRIES.map((n) => `<th scope="col">${n} ${n === 1 ? "retry" : "retries"}</th>`).join("")}</tr></thead>`,
    "<tbody>",
    ...totals.map(
      (t) => `<tr><td>${e(t.name)}</td>${t.totals.map((s) => `<td>${e(format(s))} s</td>`).join("")}</tr>`,
    ),
    "</tbody>",
    "</table>",
  ].join("\n");
  const title = "Total delays of six retry strategies";
  return {
    file: "total-delays.svg",
    title,
    about:
      `The "Total Delays" table: the total time slept by a request that fails every attempt, for a ` +
      `maximum of 1, 3, 5, 10 and 20 retries, under six common strategies (in seconds: constant 1, linear x, ` +
      `fibonacci Fib(x), quadratic x², exponential 2^x, polynomial x³ for x = 0, 1, …, no cap, no jitter). ` +
      `The vertical scale is logarithmic (log(1 + y), so the zero totals of a single retry stay on the ` +
      `axis): after 20 retries constant has slept 20 s, exponential 1,048,575 s, about 12 days.`,
    extra: table,
    spec: seriesSpec({
      title,
      subtitle: "Total delay slept when every attempt fails, by the maximum number of retries (log scale)",
      x: {
        field: "x",
        type: "quantitative",
        title: "maximum retries",
        scale: { domain: [0, 20], nice: false },
        axis: { values: [...SEED_001_RETRIES], format: "d" } as never,
      },
      y: { title: "total delay (s, log scale)", ...symlogScale(maxY) },
      points,
      series: totals.map((t) => t.name),
      legendTitle: "strategy",
    }),
  };
}

/** The chart of the policy the flags describe. */
export function policyFigure(options: RetryOptions, n: number, config: unknown, seed: number): Chart {
  const rows = plotRows(options, n + 1, seededRandom(seed + 1));
  const strategy = backoffOf(options);
  const jitterName = toJitter(options.jitter ?? jitters.full()).name;
  const largest = Math.max(0, ...rows.flatMap((r) => [r.raw, r.delay]));
  const inSeconds = largest >= 2 * SECOND;
  const unit = (ms: number) => (inSeconds ? seconds(ms) : ms);
  const scaled = (options.scale ?? 1) !== 1;
  const title = `Retry policy: ${strategy.name} backoff, ${jitterName === "none" ? "no" : jitterName} jitter`;
  const changed = rows.filter((r) => r.changed).map((r) => r.retry);
  const e = escapeHtml;
  const table = [
    "<table>",
    '<thead><tr><th scope="col">x</th><th scope="col">backoff v_x (ms)</th><th scope="col">jittered (ms)</th><th scope="col">final delay (ms)</th><th scope="col">jitter changed it</th></tr></thead>',
    "<tbody>",
    ...rows.map(
      (r) =>
        `<tr><td>${r.retry}</td><td>${e(fixed(r.raw))}</td><td>${e(fixed(r.jittered))}</td><td>${e(fixed(r.delay))}</td><td>${r.changed ? "yes" : "no"}</td></tr>`,
    ),
    "</tbody>",
    "</table>",
    `<pre>${e(JSON.stringify(config, null, 2))}</pre>`,
  ].join("\n");
  return {
    file: "policy.svg",
    title,
    about:
      `The policy given on the command line (its JSON form is below): the grey dashed line is the backoff ` +
      `v_x its ${strategy.name} strategy computes after x retries, the blue line the delay actually slept ` +
      `after the ${jitterName} jitter${scaled ? ` and the scale factor ${options.scale}` : ""}, and the red ` +
      `points the retries where the jitter changed the delay (${changed.length === 0 ? "none" : `x = ${changed.join(", ")}`}). ` +
      `Random draws use seed ${seed}; the policy's max retries and max delay do not cut the chart.`,
    extra: table,
    spec: jitterSpec({
      title,
      subtitle: `The delay before each retry, x = 0…${n}; red: the retries where the jitter changed the delay (seed ${seed})`,
      rows: rows.map((r) => ({ x: r.retry, raw: unit(r.raw), delay: unit(r.delay), changed: r.changed })),
      n,
      yTitle: inSeconds ? "delay (s)" : "delay (ms)",
      labels: [
        "backoff v_x",
        scaled ? `final delay (jittered × ${options.scale})` : "final delay",
        "the jitter changed the delay",
      ],
    }),
  };
}
