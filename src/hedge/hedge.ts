/**
 * Hedged requests (Dean and Barroso, "The Tail at Scale", CACM 2013; Polly v8's hedging strategy): start
 * an attempt; if it has not answered within the hedging delay, start another beside it, up to `maxHedges`
 * more; the first success wins and every other attempt is aborted through its signal. Where `retry` waits
 * for an attempt to fail before trying again, `hedge` spends a little extra load to cut the latency tail.
 *
 * Written with callbacks rather than `await`, like the retry loop, so that nothing waits for a microtask
 * between an outcome and the decision it causes.
 */

import type { DefaultBudget } from "../budget/default.js";
import type { RetryBudget } from "../budget/retry-budget.js";
import { isBudgetLike } from "../core/budget-like.js";
import { type Clock, clockOption } from "../core/clock.js";
import { edgeError } from "../core/edge.js";
import { OptionError } from "../core/errors.js";
import { type CallbackErrorHandler, type Disposable, Events, warnOnce } from "../core/events.js";
import type { Eventual } from "../core/invoke.js";
import { type Random, systemRandom } from "../core/random.js";
import { keysOf, read } from "../core/schema.js";
import { boolean, finiteAtLeast, integerAtLeast, knownKeys, optionalFunction } from "../core/validate.js";
import { type ExecutionContext, RootScope, toRootScope } from "../pipeline/context.js";
import { type Next, STEP_KIND, type Step } from "../pipeline/step.js";
import { HedgedCall, type HedgeEvents } from "./call.js";
import { HEDGE_CHECKS } from "./checks.js";
import { HedgeLostError } from "./errors.js";
import type { LatencyTracker } from "./latency-tracker.js";
import type { HedgeDelay, HedgeEvent, HedgeTrigger, PercentileDelay, ResolvedHedge } from "./types.js";

export type { HedgeDelay, HedgeEvent, HedgeEvents, HedgeTrigger, PercentileDelay, ResolvedHedge };
export { HedgeLostError };

/** What each attempt of a hedged call receives. */
export interface HedgeContext {
  /** 1 for the first attempt, 2 for the first hedge, and so on. */
  readonly attempt: number;
  /** This attempt's own signal: aborted when another attempt wins, or when the caller aborts. */
  readonly signal: AbortSignal;
}

export interface HedgeOptions {
  /**
   * How long an attempt may go unanswered before the next one starts, in ms (a finite number >= 0), or
   * `{ percentile, of, fallback }` to read it from a `latencyTracker()`. Each hedge starts this long after
   * the attempt before it started. Required.
   */
  delay: HedgeDelay;
  /** Hedges at most, besides the first attempt (an integer >= 0). Default 1: at most 2 attempts. */
  maxHedges?: number;
  /**
   * Whether an attempt's failure starts the next hedge at once, rather than at the end of the delay (as
   * Polly's hedging does). Default true. When false, failures never start a hedge, and the call rejects as
   * soon as every attempt started so far has failed.
   */
  hedgeOnFailure?: boolean;
  /**
   * A retry budget shared with other calls: the call counts as one request, and each hedge must be
   * granted by `tryRetry()`. A refused hedge does not start, nor does any later one of the same call.
   * Failed attempts report `failure()`, the winner `success()`.
   */
  budget?: RetryBudget | DefaultBudget;
  /** Aborts the call: every attempt is aborted with the signal's reason, and the call rejects with it. */
  signal?: AbortSignal;
  /** Called as each hedge starts; the `hedge` event's short form. */
  onHedge?: (event: HedgeEvent) => void;
  /** Receives what `onHedge` or a listener threw (or rejected with). Default: one warning line. */
  onCallbackError?: CallbackErrorHandler;
  /** Default `systemClock`. */
  clock?: Clock;
  /** Not drawn from today; accepted so that hedge takes the same services as every other policy. */
  random?: Random;
}

/** `steps.hedge`'s options: `hedge()`'s, without what the execution provides (signal, clock, random). */
export type HedgeStepOptions = Omit<HedgeOptions, "signal" | "clock" | "random">;

const KNOWN = keysOf(HEDGE_CHECKS);

const STEP_OWNED: readonly string[] = ["signal", "clock", "random"];

function resolveDelay(delay: unknown): { delay: HedgeDelay; tracker: LatencyTracker | undefined } {
  if (typeof delay === "number") {
    return { delay: finiteAtLeast("hedge: delay", delay, 0), tracker: undefined };
  }
  if (delay === null || typeof delay !== "object" || Array.isArray(delay)) {
    throw new OptionError("hedge: delay", delay, "a number of ms >= 0 or { percentile, of, fallback }");
  }
  knownKeys("hedge: delay", delay, ["percentile", "of", "fallback", "minSamples", "record"]);
  const d = delay as Partial<PercentileDelay>;
  finiteAtLeast("hedge: delay.percentile", d.percentile, 0, 1);
  const of = d.of as Partial<LatencyTracker> | undefined;
  if (
    of === null ||
    typeof of !== "object" ||
    typeof of.percentile !== "function" ||
    typeof of.record !== "function"
  ) {
    throw new OptionError("hedge: delay.of", d.of, "a latency tracker (from latencyTracker())");
  }
  finiteAtLeast("hedge: delay.fallback", d.fallback, 0);
  integerAtLeast("hedge: delay.minSamples", d.minSamples ?? 1, 1);
  const record = boolean("hedge: delay.record", d.record ?? true);
  return { delay: delay as PercentileDelay, tracker: record ? (of as LatencyTracker) : undefined };
}

export function resolveHedge(options: HedgeOptions, where = "hedge"): ResolvedHedge {
  if (options === null || typeof options !== "object" || Array.isArray(options)) {
    throw new OptionError(`${where}: options`, options, "an object with at least a delay");
  }
  // A step runs on its execution's signal, clock and randomness.
  knownKeys(where, options, where === "hedge" ? KNOWN : KNOWN.filter((k) => !STEP_OWNED.includes(k)));
  const { delay, tracker } = resolveDelay(options.delay);
  const budget = options.budget;
  if (budget !== undefined && !isBudgetLike(budget)) {
    throw new OptionError("hedge: budget", budget, "a retry budget (from retryBudget())");
  }
  const signal = options.signal;
  if (signal !== undefined && !(signal instanceof AbortSignal)) {
    throw new OptionError("hedge: signal", signal, "an AbortSignal");
  }
  optionalFunction("hedge: onHedge", options.onHedge);
  optionalFunction("hedge: onCallbackError", options.onCallbackError);
  const clock = clockOption("hedge: clock", options.clock, "a Clock ({ now, setTimer })");
  optionalFunction("hedge: random", options.random);
  return {
    delay,
    maxHedges: integerAtLeast("hedge: maxHedges", options.maxHedges ?? 1, 0),
    hedgeOnFailure: read<boolean | undefined>(HEDGE_CHECKS, "hedgeOnFailure", options.hedgeOnFailure) ?? true,
    budget,
    signal,
    onHedge: options.onHedge,
    onCallbackError: options.onCallbackError ?? warnOnce,
    clock,
    random: options.random,
    tracker,
  };
}

/** The hedge step: each run of what is inside it is hedged. */
export class HedgeStep implements Step {
  readonly #options: ResolvedHedge;
  readonly #events: Events<HedgeEvents>;
  /** What `retry`'s `hedge` option takes (set in the constructor: a class with a computed key is kept by bundlers). */
  declare readonly [STEP_KIND]: "hedge";

  constructor(options: ResolvedHedge) {
    this[STEP_KIND] = "hedge";
    this.#options = options;
    this.#events = new Events<HedgeEvents>(options.onCallbackError);
    if (options.onHedge !== undefined) this.#events.on("hedge", options.onHedge);
  }

  on<K extends keyof HedgeEvents>(event: K, listener: (payload: HedgeEvents[K]) => unknown): Disposable {
    return this.#events.on(event, listener);
  }

  execute<T>(next: Next<T>, context: ExecutionContext): T | PromiseLike<T> {
    const call = new HedgedCall(next, this.#options, toRootScope(context), this.#events);
    call.begin();
    return call.out;
  }
}

/**
 * A hedge step: within each run, another starts beside the first if it has not answered within `delay`
 * (at most `maxHedges` more); the first success wins and the others are aborted. Its clock is the
 * execution's. Only idempotent operations should be hedged.
 *
 * @example
 * const p = pipeline(steps.retry({ maxRetries: 2 }), steps.hedge({ delay: 200 }));
 */
export function hedgeStep(options: HedgeStepOptions): HedgeStep {
  return new HedgeStep(resolveHedge(options as HedgeOptions, "steps.hedge"));
}

/**
 * Runs `operation`, and starts it again beside itself each time the attempts so far have gone unanswered
 * for `delay` ms (at most `maxHedges` times, default 1); resolves with the first success and aborts the
 * other attempts (their signals abort with a `HedgeLostError`). Rejects with the last error only when
 * every attempt failed, or at once with the cause of a `PermanentError`. Options are checked at once: a
 * bad one rejects before any attempt. Only idempotent operations should be hedged.
 *
 * @example
 * const latencies = latencyTracker();
 * const body = await hedge(async ({ signal }) => (await fetch(url, { signal })).text(), {
 *   delay: { percentile: 0.95, of: latencies, fallback: 100 },
 *   maxHedges: 2,
 * });
 */
export function hedge<T>(
  operation: (context: HedgeContext) => T | PromiseLike<T>,
  options: HedgeOptions,
): Promise<T> {
  try {
    if (typeof operation !== "function") throw new OptionError("hedge: operation", operation, "a function");
    const resolved = resolveHedge(options);
    const signal = resolved.signal;
    if (signal?.aborted) return Promise.reject(signal.reason);
    const scope = new RootScope(resolved.clock, resolved.random ?? systemRandom, signal);
    const step = new HedgeStep(resolved);
    return new Promise<T>((resolve, reject) => {
      const out = step.execute<T>(
        (context) => operation({ attempt: context.hedge, signal: context.signal }),
        scope,
      ) as Eventual<T>;
      out.listen(
        (value) => {
          scope.close();
          resolve(value);
        },
        (error) => {
          scope.close();
          reject(edgeError(error));
        },
      );
    });
  } catch (error) {
    return Promise.reject(error);
  }
}
