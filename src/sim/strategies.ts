/**
 * The retry strategies the built-in scenarios compare, each written with robustly's own strategy objects
 * so that a simulated client runs exactly what `retry` would run with the same options.
 */
import { ResponsiveBackoff } from "../adaptive/responsive.js";
import { backoff } from "../backoff/index.js";
import { type CircuitBreaker, circuitBreaker } from "../breaker/circuit-breaker.js";
import { type RetryBudget, retryBudget } from "../budget/retry-budget.js";
import type { Clock } from "../core/clock.js";
import { TimeoutError } from "../core/errors.js";
import type { Random } from "../core/random.js";
import { jitter } from "../jitter/index.js";
import type { Jitter } from "../jitter/types.js";
import { type AdaptiveLimit, adaptiveLimit } from "../limit/adaptive-limit.js";
import { DEFAULTS, type RetryPolicy } from "../policy/options.js";
import { type RateLimiter, rateLimiter } from "../ratelimit/rate-limiter.js";
import type { SharingOptions } from "../store/replica.js";
import { retryBreaker } from "./retry-breaker.js";
import { isSimulatedTimeout } from "./timeout.js";

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
  /**
   * The policy of a request made after `think` ms of thinking, for a strategy whose backoff starts from
   * the think time; `policy` (which it should equal in form) otherwise.
   */
  readonly afterThink?: (think: number) => RetryPolicy;
  /**
   * Whether the clients draw on the library's default retry budget, as `retry` does (one per run, the
   * clients being the callers of one pipeline). The other rows run without a budget (`budget: false`):
   * the libraries and experiments they stand for have none.
   */
  readonly defaultBudget?: true;
  /**
   * An adaptive concurrency limit that all clients of one run share (made afresh for each run), between
   * the retry step and the per-attempt timeout: it hears each attempt's latency, and a timeout as a drop.
   */
  readonly limit?: (clock: Clock) => AdaptiveLimit;
  /** A rate limiter that all clients of one run share (made afresh for each run), outside the adaptive limit. */
  readonly rateLimit?: (clock: Clock) => RateLimiter;
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

/**
 * The retry breaker they compare: the same threshold (half the attempts failing, 20 or more in 10 s),
 * applied to retries only.
 */
const halfFailingRetries = (clock: Clock) => ({
  budget: retryBreaker({ failureRatio: 0.5, minimumThroughput: 20, window: 10_000, clock }),
});

/** `strategy` with a shared budget, with a shared breaker, and with a shared retry breaker. */
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
      description: `${strategy.description}; a shared circuit breaker: opens at 50% failures (≥ 20 calls in 10 s), for 1 s, then longer, and while open refuses every call, first attempts too`,
      guards: halfFailing,
    },
    {
      ...strategy,
      name: `${strategy.name}-retry-breaker`,
      description: `${strategy.description}; a shared retry breaker: no call retries while 50% of attempts fail (≥ 20 in 10 s), but every call still makes its first attempt`,
      source:
        'Marc Brooker, "Fixing retries with token buckets and circuit breakers" (2022): a breaker that stops retries only',
      guards: halfFailingRetries,
    },
  ];
}

/** What a run's pipeline is given for `budget`: nothing (the default budget) or `false`. */
export function budgetOption(strategy: Strategy): { budget?: false } {
  return strategy.defaultBudget === true ? {} : { budget: false };
}

/**
 * node-retry's `randomize` (used by async-retry, on by default there): the delay times a uniform draw in
 * [1, 2). robustly has no built-in jitter for it; a custom jitter object expresses it.
 */
const multiplyByOneToTwo: Jitter = {
  name: "times-uniform-1-2",
  apply: ({ backoff: b, retries, random }) => b.delay(retries, random) * (1 + random()),
};

/** The overload experiment's exponential client, its first backoff the think time that preceded the request. */
function afterThink(think: number): RetryPolicy {
  return {
    maxRetries: -1,
    backoff: backoff.exponential({ base: Math.min(think, 300_000), max: 300_000, multiplier: Math.E }),
    jitter: jitter.normal({ stddev: 100 }),
  };
}

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
    name: "exponential-after-think",
    description:
      "the same exponential client with one delay for thinking and backing off: the first retry waits the think time before the request (mean 10 s), then × e per retry, cap 5 min, normal jitter 0.1 s, forever",
    source:
      "the overload experiment's exponential client as its code runs: the delay it backs off from is the one it last thought for",
    policy: afterThink(10_000),
    afterThink,
  },
  {
    name: "robustly",
    description:
      "robustly's defaults: 3 retries, exponential 1 s to 30 s, full jitter, the default retry budget (20% of the calls of the last 10 s + 10/s)",
    source: "robustly's DEFAULTS",
    policy: {
      maxRetries: DEFAULTS.maxRetries,
      backoff: backoff.exponential({ base: DEFAULTS.backoffBase, max: DEFAULTS.backoffMax }),
      jitter: jitter.full(),
    },
    defaultBudget: true,
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
    description:
      "retry(handleAll, { backoff: new ExponentialBackoff() }): no attempt limit, exponential from 128 ms, × 2, cap 30 s, Polly's decorrelated jitter",
    source:
      "cockatiel 3.2, ExponentialBackoff's documented defaults (its type docs): initialDelay 128, maxDelay 30000, exponent 2, generator decorrelatedJitterGenerator (robustly's jitter.decorrelatedPolly()); retry's maxAttempts defaults to Infinity",
    policy: {
      maxRetries: -1,
      backoff: backoff.exponential({ base: 128, max: 30_000 }),
      jitter: jitter.decorrelatedPolly(),
    },
  },
];

const robustlyDefaults = OUTAGE_STRATEGIES.find((s) => s.name === "robustly") as Strategy;

/**
 * The outage scenario's strategies, with robustly's defaults without their budget (`budget: false`), and
 * with a shared budget and breaker of their own.
 */
export const OUTAGE_WITH_GUARDS: readonly Strategy[] = [
  ...OUTAGE_STRATEGIES,
  {
    name: "robustly-no-budget",
    description: "robustly's defaults with budget: false: 3 retries, exponential 1 s to 30 s, full jitter",
    source: "robustly's DEFAULTS, the default budget turned off",
    policy: robustlyDefaults.policy,
  },
  ...guarded(robustlyDefaults),
];

/** A simulated attempt's timeout, or the library's: a drop to an adaptive limit. */
const timedOut = (error: unknown) => isSimulatedTimeout(error) || error instanceof TimeoutError;

/**
 * robustly's defaults (their budget too) with an adaptive concurrency limit of each algorithm, shared by the
 * clients (the limit's defaults: from 20, within [1, 1000], no queue: a call over the limit is refused at
 * once, and its retry waits its backoff).
 */
export const ADAPTIVE_STRATEGIES: readonly Strategy[] = (["gradient2", "vegas", "aimd"] as const).map(
  (algorithm) => ({
    ...robustlyDefaults,
    name: `robustly-${algorithm}`,
    description: `${robustlyDefaults.description}; an adaptive concurrency limit (${algorithm}) shared by the clients, a timeout its drop`,
    source: "robustly's adaptiveLimit() with its defaults",
    limit: (clock: Clock) => adaptiveLimit({ algorithm, clock, isDrop: timedOut }),
  }),
);

/**
 * robustly's defaults (their budget too) with a rate limiter shared by the clients: 100 calls a second
 * (the rate the 1,000 clients send at before the outage, each thinking 10 s on average), a burst of 100,
 * no queue: an attempt over the rate is refused, and its retry waits the `retryAfter` and its backoff.
 */
export const RATE_LIMITED: Strategy = {
  ...robustlyDefaults,
  name: "robustly-rate",
  description: `${robustlyDefaults.description}; a rate limiter of 100 attempts a second (burst 100) shared by the clients`,
  source: "robustly's rateLimiter({ rate: 100, burst: 100 })",
  rateLimit: (clock: Clock) => rateLimiter({ rate: 100, burst: 100, clock }),
};

/** Every strategy of the outage scenario: those it runs by default, the adaptive limits and the rate limiter. */
export const OUTAGE_ALL: readonly Strategy[] = [...OUTAGE_WITH_GUARDS, ...ADAPTIVE_STRATEGIES, RATE_LIMITED];

/** AWS's experiment ("Exponential Backoff And Jitter", 2015): base 5 ms, cap 2 s, retries until the write lands. */
const contention = (b: RetryPolicy["backoff"], j: RetryPolicy["jitter"]): RetryPolicy => ({
  maxRetries: -1,
  backoff: b,
  jitter: j,
});
const exp5 = backoff.exponential({ base: 5, max: 2000 });
/**
 * The study's exponential: its simulator counts attempts from 1 at the first failure, so its first sleep
 * is 2¹ × 5 ms; robustly counts retries from 0. min(2 s, 5 × 2^(x+1)) is min(2 s, 10 × 2^x).
 */
const awsExp = backoff.exponential({ base: 10, max: 2000 });
/**
 * The study's decorrelated jitter: its sleep starts at base, so even the first sleep is
 * uniform(base, 3 × base), where robustly's `jitter.decorrelatedAws()` starts at base itself.
 */
const awsDecorrelatedRule = jitter.decorrelatedAws();
const awsDecorrelated: Jitter = {
  name: "decorrelated-aws-study",
  apply: (input) => awsDecorrelatedRule.apply({ ...input, previous: input.previous ?? input.backoff.base }),
};
const awsSource = 'AWS Architecture Blog, "Exponential Backoff And Jitter" (2015): base 5 ms, cap 2 s';
const awsStudy = (what: string) =>
  `${awsSource}; ${what}, as the study's simulator (aws-samples/aws-arch-backoff-simulator) computes it`;

export const CONTENTION_STRATEGIES: readonly Strategy[] = [
  {
    name: "no-backoff",
    description: 'retry at once (the study\'s "None")',
    source: awsStudy("no backoff"),
    policy: contention(backoff.none(), jitter.none()),
  },
  {
    name: "aws-exponential",
    description: "the study's exponential: min(2 s, 5 ms × 2^n), n = 1 at the first failure, no jitter",
    source: awsStudy("exponential"),
    policy: contention(awsExp, jitter.none()),
  },
  {
    name: "aws-full-jitter",
    description: "the study's full jitter: uniform(0, min(2 s, 5 ms × 2^n)), n = 1 at the first failure",
    source: awsStudy("full jitter"),
    policy: contention(awsExp, jitter.full()),
  },
  {
    name: "aws-equal-jitter",
    description:
      "the study's equal jitter: v/2 + uniform(0, v/2), v = min(2 s, 5 ms × 2^n), n = 1 at the first failure",
    source: awsStudy("equal jitter"),
    policy: contention(awsExp, jitter.equal()),
  },
  {
    name: "aws-decorrelated-jitter",
    description:
      "the study's decorrelated jitter: sleep = min(2 s, uniform(5 ms, 3 × previous sleep)), the previous sleep starting at 5 ms",
    source: awsStudy("decorrelated jitter"),
    policy: contention(exp5, awsDecorrelated),
  },
  {
    name: "exponential",
    description:
      "robustly's exponential from 5 ms (x = 0 at the first retry: half the study's first sleep), cap 2 s, no jitter",
    source: "robustly's backoff.exponential({ base: 5, max: 2000 })",
    policy: contention(exp5, jitter.none()),
  },
  {
    name: "full-jitter",
    description: "robustly's exponential from 5 ms, full jitter: uniform(0, v)",
    source: "robustly's jitter.full()",
    policy: contention(exp5, jitter.full()),
  },
  {
    name: "equal-jitter",
    description: "robustly's exponential from 5 ms, equal jitter: v/2 + uniform(0, v/2)",
    source: "robustly's jitter.equal()",
    policy: contention(exp5, jitter.equal()),
  },
  {
    name: "decorrelated-choice-jitter",
    description:
      "robustly's exponential from 5 ms with its decorrelated jitter: x = random_choice(0, x) before each retry, so the backoff restarts half the time",
    source: "robustly's jitter.decorrelated(), the design note's decorrelated jitter",
    policy: contention(exp5, jitter.decorrelated()),
  },
  {
    name: "decorrelated-aws-jitter",
    description:
      "robustly's jitter.decorrelatedAws(): min(2 s, uniform(5 ms, 3 × previous)), its first sleep 5 ms itself",
    source: "robustly's jitter.decorrelatedAws()",
    policy: contention(exp5, jitter.decorrelatedAws()),
  },
  {
    name: "decorrelated-polly-jitter",
    description: "Polly's decorrelated jitter (V2): median 5 ms, doubling per retry, cap 2 s",
    source: "Polly.Contrib.WaitAndRetry's DecorrelatedJitterBackoffV2, cockatiel's default",
    policy: contention(exp5, jitter.decorrelatedPolly()),
  },
];

/** The contention scenario's default rows: the study's five strategies. */
export const AWS_STUDY_STRATEGIES: readonly string[] = [
  "no-backoff",
  "aws-exponential",
  "aws-full-jitter",
  "aws-equal-jitter",
  "aws-decorrelated-jitter",
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
  ...(["aimd", "gradient2"] as const).map(
    (algorithm): Strategy => ({
      ...retryOnce,
      name: `retry-once-${algorithm}`,
      description: `${retryOnce.description}; an adaptive concurrency limit (${algorithm}) shared by the clients, a timeout its drop`,
      source: "the metastability setup, with robustly's adaptiveLimit() on its defaults",
      limit: (clock: Clock) => adaptiveLimit({ algorithm, clock, isDrop: timedOut }),
    }),
  ),
  {
    ...retryOnce,
    name: "retry-once-rate",
    description: `${retryOnce.description}; a rate limiter of 300 attempts a second (the server's capacity, burst 300) shared by the clients`,
    source: "the metastability setup, with robustly's rateLimiter({ rate: 300, burst: 300 })",
    rateLimit: (clock: Clock) => rateLimiter({ rate: 300, burst: 300, clock }),
  },
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
  {
    name: "exponential-full-jitter-aimd",
    description:
      "the same calls (exponential from 25 ms, cap 5 s, full jitter, until the write lands) under an adaptive concurrency limit (aimd) the workers share; a throttled write is its drop",
    source: 'robustly\'s adaptiveLimit({ algorithm: "aimd", isDrop: throttled })',
    policy: { maxRetries: -1, backoff: backoff.exponential({ base: 25, max: 5000 }), jitter: jitter.full() },
    limit: (clock: Clock) =>
      adaptiveLimit({
        algorithm: "aimd",
        clock,
        isDrop: (e) => (e as { name?: unknown })?.name === "ThrottledError",
      }),
  },
];
