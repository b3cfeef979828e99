/**
 * The short form: `retry(op, options)` and `wrap(fn, options)` build a pipeline from one options object,
 * in a fixed order (retry → breaker → timeout → hedge → chaos → operation): the retry step outermost,
 * then for each attempt the breaker, the attempt's timeout, hedging within it, and injected faults.
 */
import { BreakerStep } from "../breaker/step.js";
import { ChaosStep } from "../chaos/chaos.js";
import { OptionError } from "../core/errors.js";
import { type HedgeOptions, HedgeStep, resolveHedge } from "../hedge/hedge.js";
import { RootScope, Scope } from "../pipeline/context.js";
import { type Operation, Pipeline, runAtEdge } from "../pipeline/pipeline.js";
import type { Step } from "../pipeline/step.js";
import {
  type AttemptContext,
  type ResolvedOptions,
  type RetryOptions,
  resolveOptions,
} from "../policy/options.js";
import { TimeoutStep } from "../timeout/step.js";
import { RetryStep } from "./step.js";

/** The short form's options, checked, with the pipeline they build. */
interface Resolution<T> {
  readonly options: ResolvedOptions<T>;
  readonly pipeline: Pipeline;
}

/** The pipeline the short form's options stand for. */
function build<T>(resolved: ResolvedOptions<T>): Resolution<T> {
  const list: Step[] = [new RetryStep(resolved.retry)];
  if (resolved.breaker !== undefined) {
    // A value retryOnResult retries is a failure to the breaker too.
    list.push(
      new BreakerStep(resolved.breaker, {
        handlesResult: resolved.retry.retryOnResult as (value: unknown) => boolean | PromiseLike<boolean>,
      }),
    );
  }
  if (resolved.timeout !== Number.POSITIVE_INFINITY) list.push(new TimeoutStep({ ms: resolved.timeout }));
  if (resolved.hedge !== undefined) {
    // The hedges run on the execution's clock and signal, as every step does.
    const { clock: _clock, random: _random, ...hedging } = resolved.hedge;
    list.push(new HedgeStep(resolveHedge(hedging as HedgeOptions, "hedge")));
  }
  if (resolved.chaos !== undefined) {
    const { clock: _clock, signal: _signal, ...injections } = resolved.chaos;
    list.push(new ChaosStep(injections));
  }
  return { options: resolved, pipeline: new Pipeline(list) };
}

// Calls without options share one resolution of the defaults.
const defaults: Resolution<unknown> = build(resolveOptions(undefined));

/**
 * `retry(op, options)` called again and again with the same options object (the usual way) resolves it
 * once. The cached resolution is used only while the object still holds exactly the keys and values it
 * was resolved from, so changing an option between calls takes effect (and is validated) at the next call.
 * Options with `rules` are not cached: a rule list can change inside the same array.
 */
interface Cached {
  readonly resolution: Resolution<unknown>;
  readonly keys: readonly string[];
  readonly values: readonly unknown[];
}
const resolutions = new WeakMap<object, Cached>();

function unchanged(options: object, seen: Cached): boolean {
  const record = options as Record<string, unknown>;
  let i = 0;
  for (const key in record) {
    if (key !== seen.keys[i] || record[key] !== seen.values[i]) return false;
    i += 1;
  }
  return i === seen.keys.length;
}

function resolveOnce<T>(options: RetryOptions<T> | undefined): Resolution<T> {
  if (options === undefined) return defaults as Resolution<T>;
  const seen = resolutions.get(options);
  if (seen !== undefined && unchanged(options, seen)) return seen.resolution as Resolution<T>;
  const resolution = build(resolveOptions(options));
  if (options.rules === undefined) {
    const record = options as Record<string, unknown>;
    const keys: string[] = [];
    const values: unknown[] = [];
    for (const key in record) {
      keys.push(key);
      values.push(record[key]);
    }
    resolutions.set(options, { resolution: resolution as Resolution<unknown>, keys, values });
  }
  return resolution;
}

function checkOperation(operation: unknown): void {
  if (typeof operation !== "function") throw new OptionError("operation", operation, "a function");
}

/** Runs `operation` through a resolution's pipeline, on its signal, clock and randomness. */
function run<T>(resolution: Resolution<T>, operation: Operation<T>): Promise<T> {
  const { signal, clock, random } = resolution.options;
  if (signal?.aborted) return Promise.reject(signal.reason);
  const scope = signal === undefined ? new Scope(clock, random) : new RootScope(clock, random, signal);
  return runAtEdge(scope, resolution.pipeline, operation, true);
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
    return run(resolveOnce(options), operation);
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
  // Called bare without arguments (the common case), a call allocates neither an argument list nor a
  // closure.
  const bare = operation as unknown as (context: AttemptContext) => T | PromiseLike<T>;
  const direct = (context: AttemptContext) => bare(context);
  return function wrapped(this: This): Promise<T> {
    // biome-ignore lint/complexity/noArguments: reading `arguments` (not a rest list) keeps the no-argument call free of allocations
    if (arguments.length === 0 && this === undefined) return run(resolution, direct);
    // biome-ignore lint/complexity/noArguments: as above
    const args = Array.prototype.slice.call(arguments) as A;
    return run(resolution, (context) => operation.call(this, context, ...args));
  } as (this: This, ...args: A) => Promise<T>;
}

/**
 * The pipeline `retry` and `wrap` build from `options` (checked at once): to run it yourself, or to use
 * it as a step of a bigger one. The options' `signal`, `clock` and `random` belong to an execution: pass
 * them to `execute`.
 *
 * @example
 * const p = retryPipeline({ maxRetries: 3, timeout: 2000 });
 * await p.execute(op, { signal });
 */
export function retryPipeline<T = unknown>(options?: RetryOptions<T>): Pipeline {
  return build(resolveOptions(options)).pipeline;
}
