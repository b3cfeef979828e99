/**
 * The retry strategies the built-in scenarios compare, each written with robustly's own strategy objects
 * so that a simulated client runs exactly what `retry` would run with the same options.
 */
import { ResponsiveBackoff } from "../adaptive/responsive.js";
import { backoff } from "../backoff/index.js";
import { type CircuitBreaker, circuitBreaker } from "../breaker/circuit-breaker.js";
import { type RetryBudget, retryBudget } from "../budget/retry-budget.js";
import type { Clock } from "../core/clock.js";
import type { Random } from "../core/random.js";
import { jitter } from "../jitter/index.js";
import type { Jitter } from "../jitter/types.js";
import { DEFAULTS, type RetryPolicy } from "../policy/options.js";
import type { SharingOptions } from "../store/replica.js";

/** A named retry policy and where its numbers come from. */
export interface Strategy {
  readonly name: string;
  readonly description: string;
  /** Where the policy comes from (an experiment, a library's documented defaults). */
  readonly source: string;
  readonly policy: RetryPolicy;
  /**
   * A controller that all clients of one run share (made afresh for each run): it is the policy's backoff,
   * and each client also waits its current delay after a success, as the shared pacing controller's workers do.
   */
  readonly shared?: (clock: Clock, random: Random) => ResponsiveBackoff;
  /** A retry budget or a circuit breaker that all clients of one run share (made afresh for each run). */
  readonly guards?: (clock: Clock, random: Random) => { budget?: RetryBudget; breaker?: CircuitBreaker };
}

/**
 * The budget the scenarios compare: retries at most 10% of requests, plus 1 per second (Finagle's form);
 * with `sharing`, kept in a store (the fleet scenario).
 */
export const tenPercent = (clock: Clock, _random?: Random, sharing?: SharingOptions) => ({
  budget: retryBudget({ ratio: 0.1, minPerSecond: 1, window: 10_000, clock, ...sharing }),
});
/** The breaker they compare: opens at half the calls failing (20 or more in 10 s), open 1 s, then longer. */
export const halfFailing = (clock: Clock, random: Random, sharing?: SharingOptions) => ({
  breaker: circuitBreaker({
    ...sharing,
    failureRatio: 0.5,
    minimumThroughput: 20,
    window: 10_000,
    openFor: backoff.exponential({ base: 1000, max: 30_000 }),
    clock,
    random,
  }),
});

/** `strategy` with a shared budget, and with a shared breaker. */
function guarded(strategy: Strategy): Strategy[] {
  return [
    {
      ...strategy,
      name: `${strategy.name}-budget`,
      description: `${strategy.description}; a shared retry budget: retries at most 10% of requests + 1/s`,
      guards: tenPercent,
    },
    {
      ...strategy,
      name: `${strategy.name}-breaker`,
      description: `${strategy.description}; a shared circuit breaker: opens at 50% failures (≥ 20 calls in 10 s), for 1 s, then longer`,
      guards: halfFailing,
    },
  ];
}

/**
 * node-retry's `randomize` (used by async-retry, on by default there): the delay times a uniform draw in
 * [1, 2). robustly has no built-in jitter for it; a custom jitter object expresses it.
 */
const multiplyByOneToTwo: Jitter = {
  name: "times-uniform-1-2",
  apply: ({ backoff: b, retries, random }) => b.delay(retries, random) * (1 + random()),
};

export const OUTAGE_STRATEGIES: readonly Strategy[] = [
  {
    name: "fixed",
    description: "retry every 100 ms, forever",
    source: "the overload experiment's reference client: its simple backoff delay of 100 ms",
    policy: { maxRetries: -1, backoff: backoff.constant({ base: 100 }), jitter: jitter.none() },
  },
  {
    name: "exponential",
    description: "exponential from 100 ms, factor e, cap 5 min, normal jitter 0.1 s, forever",
    source:
      "the overload experiment's exponential client (min 100 ms, max 5 min, factor 2.71828, jitter N(0, 0.1 s))",
    policy: {
      maxRetries: -1,
      backoff: backoff.exponential({ base: 100, max: 300_000, multiplier: Math.E }),
      jitter: jitter.normal({ stddev: 100 }),
    },
  },
  {
    name: "robustly",
    description: "robustly's defaults: 3 retries, exponential 1 s to 30 s, full jitter",
    source: "robustly's DEFAULTS",
    policy: {
      maxRetries: DEFAULTS.maxRetries,
      backoff: backoff.exponential({ base: DEFAULTS.backoffBase, max: DEFAULTS.backoffMax }),
      jitter: jitter.full(),
    },
  },
  {
    name: "p-retry",
    description: "10 retries, exponential from 1 s, factor 2, no cap, no jitter",
    source:
      "p-retry 7 README and index.js: retries 10, factor 2, minTimeout 1000, maxTimeout Infinity, randomize false",
    policy: {
      maxRetries: 10,
      backoff: backoff.exponential({ base: 1000, multiplier: 2 }),
      jitter: jitter.none(),
    },
  },
  {
    name: "async-retry",
    description: "10 retries, exponential from 1 s, factor 2, no cap, delay × uniform [1, 2)",
    source:
      "async-retry 1.3 README (randomize defaults to true) over node-retry 0.13: retries 10, factor 2, minTimeout 1000, maxTimeout Infinity",
    policy: {
      maxRetries: 10,
      backoff: backoff.exponential({ base: 1000, multiplier: 2 }),
      jitter: multiplyByOneToTwo,
    },
  },
  {
    name: "exponential-backoff",
    description: "10 attempts (9 retries), exponential from 100 ms, factor 2, no cap, no jitter",
    source:
      "exponential-backoff 3 README: numOfAttempts 10, startingDelay 100, timeMultiple 2, maxDelay Infinity, jitter none, delayFirstAttempt false",
    policy: {
      maxRetries: 9,
      backoff: backoff.exponential({ base: 100, multiplier: 2 }),
      jitter: jitter.none(),
    },
  },
  {
    name: "cockatiel",
    description: "retry(handleAll) as it comes: no backoff, no attempt limit",
    source: "cockatiel 3 Policy.retry: backoff defaults to ConstantBackoff(0), maxAttempts to Infinity",
    policy: { maxRetries: -1, backoff: backoff.none(), jitter: jitter.none() },
  },
];

/** The outage scenario's strategies, with the budget and breaker variants of robustly's defaults. */
export const OUTAGE_WITH_GUARDS: readonly Strategy[] = [
  ...OUTAGE_STRATEGIES,
  ...guarded(OUTAGE_STRATEGIES.find((s) => s.name === "robustly") as Strategy),
];

/** AWS's experiment ("Exponential Backoff And Jitter", 2015): base 5 ms, cap 2 s, retries until the write lands. */
const contention = (b: RetryPolicy["backoff"], j: RetryPolicy["jitter"]): RetryPolicy => ({
  maxRetries: -1,
  backoff: b,
  jitter: j,
});
const exp5 = backoff.exponential({ base: 5, max: 2000 });
const awsSource = 'AWS Architecture Blog, "Exponential Backoff And Jitter" (2015): base 5 ms, cap 2 s';

export const CONTENTION_STRATEGIES: readonly Strategy[] = [
  {
    name: "no-backoff",
    description: "retry at once",
    source: awsSource,
    policy: contention(backoff.none(), jitter.none()),
  },
  {
    name: "exponential",
    description: "exponential from 5 ms, cap 2 s, no jitter",
    source: awsSource,
    policy: contention(exp5, jitter.none()),
  },
  {
    name: "full-jitter",
    description: "exponential, full jitter: uniform(0, b)",
    source: awsSource,
    policy: contention(exp5, jitter.full()),
  },
  {
    name: "equal-jitter",
    description: "exponential, equal jitter: b/2 + uniform(0, b/2)",
    source: awsSource,
    policy: contention(exp5, jitter.equal()),
  },
  {
    name: "decorrelated-jitter",
    description: "exponential, robustly's decorrelated jitter: x reset to 0 half the time",
    source: "robustly's jitter.decorrelated()",
    policy: contention(exp5, jitter.decorrelated()),
  },
  {
    name: "decorrelated-aws-jitter",
    description: "AWS's decorrelated jitter: min(cap, uniform(base, 3 × previous))",
    source: awsSource,
    policy: contention(exp5, jitter.decorrelatedAws()),
  },
  {
    name: "decorrelated-polly-jitter",
    description: "Polly's decorrelated jitter (V2): median 5 ms, doubling per retry, cap 2 s",
    source: "Polly.Contrib.WaitAndRetry's DecorrelatedJitterBackoffV2, cockatiel's default",
    policy: contention(exp5, jitter.decorrelatedPolly()),
  },
];

const AMPLIFICATION_BASE: readonly Strategy[] = [
  {
    name: "no-retries",
    description: "one attempt per request",
    source: "a baseline",
    policy: { maxRetries: 0 },
  },
  {
    name: "3-retries",
    description: "robustly's defaults: 3 retries, exponential 1 s to 30 s, full jitter",
    source: "robustly's DEFAULTS",
    policy: {
      maxRetries: 3,
      backoff: backoff.exponential({ base: DEFAULTS.backoffBase, max: DEFAULTS.backoffMax }),
      jitter: jitter.full(),
    },
  },
];

export const AMPLIFICATION_STRATEGIES: readonly Strategy[] = [
  ...AMPLIFICATION_BASE,
  ...guarded(AMPLIFICATION_BASE[1] as Strategy),
];

const retryOnce: Strategy = {
  name: "retry-once",
  description: "one retry after a 1 s timeout, no backoff",
  source: "the metastability setup (Bronson et al., HotOS 2021)",
  policy: { maxRetries: 1, backoff: backoff.none(), jitter: jitter.none() },
};

export const METASTABLE_STRATEGIES: readonly Strategy[] = [
  {
    name: "no-retries",
    description: "one attempt per request",
    source: "a baseline",
    policy: { maxRetries: 0 },
  },
  retryOnce,
  ...guarded(retryOnce),
];

export const THROTTLED_STRATEGIES: readonly Strategy[] = [
  {
    name: "exponential-full-jitter",
    description:
      "each call backs off on its own: exponential from 25 ms, cap 5 s, full jitter, until the write lands",
    source: 'AWS Architecture Blog, "Exponential Backoff And Jitter" (2015): full jitter',
    policy: { maxRetries: -1, backoff: backoff.exponential({ base: 25, max: 5000 }), jitter: jitter.full() },
  },
  {
    name: "responsive",
    description:
      "one ResponsiveBackoff shared by every worker, without coalesce (its defaults, initial 10 ms): every failure raises the delay; a worker waits the delay after each write",
    source: "the shared pacing controller: one adaptive delay for every worker",
    policy: { maxRetries: -1, jitter: jitter.none() },
    shared: (clock, random) => new ResponsiveBackoff({ clock, random, base: 10 }),
  },
  {
    name: "responsive-coalesced",
    description:
      "the same, with coalesce: the failures of one burst (within the current delay of the last raise) raise the delay once",
    source: "the shared pacing controller, plus robustly's coalesce option",
    policy: { maxRetries: -1, jitter: jitter.none() },
    shared: (clock, random) => new ResponsiveBackoff({ clock, random, base: 10, coalesce: true }),
  },
];
