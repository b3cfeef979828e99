/**
 * The short form: `retry(op, options)` and `wrap(fn, options)` run the retry loop (./call.ts) over the
 * operation, with the per-attempt timeout kept by the loop, and inside each attempt the steps the options
 * name, in a fixed order (breaker → hedge → chaos → operation), each made by its feature's own import.
 */

import { DefaultBudgets, processBudgets } from "../budget/default.js";
import { systemClock } from "../core/clock.js";
import { OptionError } from "../core/errors.js";
import { systemRandom } from "../core/random.js";
import type { ExecutionContext } from "../pipeline/context.js";
import { Pipeline } from "../pipeline/pipeline.js";
import { type Next, SHORT_FORM_STEP, type Step } from "../pipeline/step.js";
import {
  type AttemptContext,
  type ResolvedOptions,
  type RetryOptions,
  resolveOptions,
  resolveShortForm,
  withShortForm,
} from "../policy/options.js";
import { TimeoutStep } from "../timeout/step.js";
import { RetryCall, type TimeLimit } from "./call.js";
import { RetryStep } from "./step.js";

/** The short form's options, checked, and what a call runs on them. */
interface Resolution<T> {
  readonly options: ResolvedOptions<T>;
  /** The per-attempt time limit; undefined for none. */
  readonly limit: TimeLimit | undefined;
  /**
   * The steps inside the retry step, outermost first: the breaker's, then the hedge and chaos steps the
   * options hold; undefined for none (most options).
   */
  readonly inner: readonly Step[] | undefined;
}

/** What a call on `resolved` runs. */
function build<T>(resolved: ResolvedOptions<T>): Resolution<T> {
  return {
    options: resolved,
    limit: timeLimit(resolved.timeout),
    inner: innerOf(resolved),
  };
}

/** The last time limit made: calls one after another with the same timeout share it (it holds only `ms`). */
let lastLimit: TimeLimit = { ms: 0 };

/** The per-attempt time limit of a `timeout` in ms (Infinity: none). */
function timeLimit(ms: number): TimeLimit | undefined {
  if (ms === Number.POSITIVE_INFINITY) return undefined;
  if (lastLimit.ms !== ms) lastLimit = { ms };
  return lastLimit;
}

/** The steps inside the retry step (see `Resolution`); undefined for none. */
function innerOf<T>(resolved: ResolvedOptions<T>): Step[] | undefined {
  const breaker = resolved.breaker;
  if (breaker === undefined && resolved.hedge === undefined && resolved.chaos === undefined) return undefined;
  const inner: Step[] = [];
  // A value retryOnResult retries is a failure to the breaker too.
  if (breaker !== undefined)
    inner.push(
      breaker[SHORT_FORM_STEP](
        resolved.retry.retryOnResult as (value: unknown) => boolean | PromiseLike<boolean>,
      ),
    );
  // Steps the app made with the feature's own function (`steps.hedge(…)`, `steps.chaos(…)`), so that their
  // code reaches only the bundles of apps that use them.
  if (resolved.hedge !== undefined) inner.push(resolved.hedge);
  if (resolved.chaos !== undefined) inner.push(resolved.chaos);
  return inner;
}

// Calls without options share one resolution of the defaults.
const defaults: Resolution<unknown> = build(resolveOptions(undefined));

function checkOperation(operation: unknown): void {
  if (typeof operation !== "function") throw new OptionError("operation", operation, "a function");
}

/** Runs the steps from `steps[index]` on, then `operation`, in `context`. */
function through<T>(
  steps: readonly Step[],
  index: number,
  operation: Next<T>,
  context: ExecutionContext,
): T | PromiseLike<T> {
  const step = steps[index];
  if (step === undefined) return operation(context);
  return step.execute((inner) => through(steps, index + 1, operation, inner), context);
}

/**
 * Runs one call of `operation` on a resolution, watching the caller's signal its options hold, drawing on
 * the default budgets of its target (`budgets`) when the options name no budget.
 */
function run<T>(resolution: Resolution<T>, operation: Next<T>, budgets = processBudgets): Promise<T> {
  const { retry, clock, random, signal } = resolution.options;
  const inner = resolution.inner;
  const next: Next<T> = inner === undefined ? operation : (context) => through(inner, 0, operation, context);
  return new RetryCall(
    retry,
    undefined,
    next,
    clock,
    random,
    undefined,
    signal,
    resolution.limit,
    budgets,
  ).run();
}

/**
 * Calls `operation` until it succeeds or the policy gives up, then resolves with its value or rejects
 * with its last error, unchanged. Options are checked at once: a bad one rejects before any attempt.
 * The short form of `pipeline(steps.retry(…), steps.breaker(…), steps.timeout(…), steps.hedge(…),
 * steps.chaos(…)).execute(operation, { signal, clock, random })`.
 *
 * @example
 * const body = await retry(async ({ signal }) => (await fetch(url, { signal })).text(), { timeout: 2000, maxRetries: 5 });
 */
export function retry<T>(
  operation: (context: AttemptContext) => T | PromiseLike<T>,
  options?: RetryOptions<T>,
): Promise<T> {
  try {
    checkOperation(operation);
    if (options === undefined) return run(defaults as Resolution<T>, operation);
    const read = resolveShortForm(options);
    // Options of the retry step, a signal and a timeout (most): nothing more to check or build.
    if (read.others === undefined) {
      return new RetryCall(
        read.retry,
        undefined,
        operation,
        systemClock,
        systemRandom,
        undefined,
        read.signal,
        timeLimit(read.timeout),
      ).run();
    }
    return run(build(withShortForm(read)), operation);
  } catch (error) {
    return Promise.reject(error);
  }
}

/**
 * The access wrapper: returns a function that calls `operation(context, ...args)` under `options`, with
 * the receiver it was called on: a wrapped method keeps its `this`. The options are checked once, here;
 * a bad one throws at once.
 *
 * @example
 * const getUser = wrap(async ({ signal }, id: string) => fetchUser(id, signal), { timeout: 1000 });
 * const user = await getUser("42");
 */
export function wrap<A extends unknown[], T, This = unknown>(
  operation: (this: This, context: AttemptContext, ...args: A) => T | PromiseLike<T>,
  options?: RetryOptions<T>,
): (this: This, ...args: A) => Promise<T> {
  checkOperation(operation);
  const resolution = build(resolveOptions(options));
  // The wrapped function is a target of its own: its calls share a default budget (per clock).
  const budgets = new DefaultBudgets();
  // Called bare without arguments (the common case), a call allocates neither an argument list nor a
  // closure.
  const bare = operation as unknown as (context: AttemptContext) => T | PromiseLike<T>;
  const direct = (context: AttemptContext) => bare(context);
  return function wrapped(this: This): Promise<T> {
    // biome-ignore lint/complexity/noArguments: reading `arguments` (not a rest list) keeps the no-argument call free of allocations
    if (arguments.length === 0 && this === undefined) return run(resolution, direct, budgets);
    // biome-ignore lint/complexity/noArguments: as above
    const args = Array.prototype.slice.call(arguments) as A;
    return run(resolution, (context: AttemptContext) => operation.call(this, context, ...args), budgets);
  } as (this: This, ...args: A) => Promise<T>;
}

/**
 * The pipeline `retry` and `wrap` stand for, built from `options` (checked at once): to run it yourself,
 * or to use it as a step of a bigger one. The options' `signal`, `clock` and `random` belong to an
 * execution: pass them to `execute`.
 *
 * @example
 * const p = retryPipeline({ maxRetries: 3, timeout: 2000 });
 * await p.execute(op, { signal });
 */
export function retryPipeline<T = unknown>(options?: RetryOptions<T>): Pipeline {
  const resolution = build(resolveOptions(options));
  const resolved = resolution.options;
  const inner = resolution.inner ?? [];
  const steps: Step[] = [new RetryStep(resolved.retry)];
  // The breaker's step, then the time limit, then hedging and faults inside it.
  const breakerSteps = resolved.breaker === undefined ? 0 : 1;
  steps.push(...inner.slice(0, breakerSteps));
  if (resolution.limit !== undefined) steps.push(new TimeoutStep({ ms: resolution.limit.ms }));
  steps.push(...inner.slice(breakerSteps));
  return new Pipeline(steps);
}
