/**
 * `pipeline(...steps)`: the one way robustly runs an operation. Steps are listed outermost first; each
 * runs the rest through `next`, the last one the operation. A pipeline is itself a step.
 */

import { type Clock, systemClock } from "../core/clock.js";
import { atEdge, edgeError } from "../core/edge.js";
import { OptionError } from "../core/errors.js";
import { isThenable, settleWith } from "../core/invoke.js";
import { checkedRandom, type Random, systemRandom } from "../core/random.js";
import { knownKeys } from "../core/validate.js";
import { type ExecutionContext, RootScope, Scope, scopeOf, toScope } from "./context.js";
import { FINAL_AT_EDGE, isStep, type Next, type Step } from "./step.js";

/** What `Pipeline.execute` takes beside the operation. */
export interface ExecuteOptions {
  /** The caller's signal: aborting it stops every step at once, and the call rejects with its reason. */
  signal?: AbortSignal;
  /** The clock every step of this execution reads and sleeps on (a stateful guard built with its own keeps it). Default: the system clock. */
  clock?: Clock;
  /** The randomness every step of this execution draws from. Default `Math.random`. */
  random?: Random;
}

/** The operation a pipeline runs: it receives the execution context of its attempt. */
export type Operation<T> = (context: ExecutionContext) => T | PromiseLike<T>;

/** What runs an execution's first attempt without the steps' machinery, when it can (see `Pipeline`). */
interface FirstAttemptRunner {
  run<T>(operation: Next<T>, signal?: AbortSignal): Promise<T> | undefined;
}

export class Pipeline implements Step {
  /** The steps, outermost first. */
  readonly steps: readonly Step[];
  readonly #finalAtEdge: boolean;
  /**
   * When the steps are a retry step and at most a timeout: what runs an execution's first attempt
   * without the machinery of the steps, on the system clock (see the retry step's `planFirst`).
   */
  readonly #first: FirstAttemptRunner | undefined;

  constructor(steps: readonly Step[]) {
    steps.forEach((step, i) => {
      if (!isStep(step)) {
        throw new OptionError(
          `pipeline: steps[${i}]`,
          step,
          "a step (an object with execute(next, context)), e.g. steps.retry({ maxRetries: 3 })",
        );
      }
    });
    this.steps = Object.freeze([...steps]);
    const first = this.steps[0] as (Step & { [FINAL_AT_EDGE]?: boolean }) | undefined;
    this.#finalAtEdge = first?.[FINAL_AT_EDGE] === true;
    const planner = first as
      | { planFirst?: (rest: readonly Step[]) => FirstAttemptRunner | undefined }
      | undefined;
    this.#first =
      typeof planner?.planFirst === "function" ? planner.planFirst(this.steps.slice(1)) : undefined;
  }

  /**
   * Runs `operation` through the steps and resolves with its value, or rejects with the error the
   * outermost step ended with (the cause of a `PermanentError`, unwrapped). Called by an outer pipeline
   * with a context, it runs as a step.
   *
   * @example
   * const value = await p.execute(({ signal }) => fetch(url, { signal }), { signal: request.signal });
   */
  execute<T>(operation: Operation<T>, options?: ExecuteOptions): Promise<T>;
  execute<T>(next: Next<T>, context: ExecutionContext): T | PromiseLike<T>;
  execute<T>(
    operation: Operation<T>,
    options?: ExecuteOptions | ExecutionContext,
  ): Promise<T> | T | PromiseLike<T> {
    if (options instanceof Scope) return this.#run(0, options, operation);
    // An attempt's context of a kind that stands for a scope: run inside that attempt, as with a scope.
    const scope = scopeOf(options);
    if (scope !== undefined) return this.#run(0, scope, operation);
    return this.#edge(operation, options as ExecuteOptions | undefined);
  }

  /** Runs step `index` (or, past the last, the operation) in `scope`. */
  #run<T>(index: number, scope: Scope, last: Next<T>): T | PromiseLike<T> {
    const steps = this.steps;
    if (index === steps.length) return last(scope);
    // The innermost step calls the operation itself.
    const next: Next<T> =
      index + 1 === steps.length ? last : (context) => this.#run(index + 1, toScope(context, scope), last);
    return (steps[index] as Step).execute<T>(next, scope);
  }

  #edge<T>(operation: Operation<T>, options: ExecuteOptions | undefined): Promise<T> {
    const first = this.#first;
    if (first !== undefined && typeof operation === "function") {
      // Without options, or with the caller's signal alone (`execute(op, { signal })`).
      const signal = options === undefined ? undefined : signalAlone(options);
      if (options === undefined || signal !== undefined) {
        const out = first.run(operation as Next<T>, signal);
        if (out !== undefined) return out;
      }
    }
    let scope: Scope;
    try {
      if (typeof operation !== "function") throw new OptionError("operation", operation, "a function");
      const { signal, clock, random } = checkExecuteOptions(options);
      if (signal?.aborted) return Promise.reject(signal.reason);
      scope =
        signal === undefined
          ? new Scope(clock ?? systemClock, random ?? systemRandom)
          : new RootScope(clock ?? systemClock, random ?? systemRandom, signal);
    } catch (error) {
      return Promise.reject(error);
    }
    return runAtEdge(scope, this, operation, this.#finalAtEdge);
  }
}

/**
 * Runs `steps` (a pipeline, or a pipeline's only step) over `operation` in `scope` and turns its answer into
 * the caller's promise: a `PermanentError` unwrapped, the caller's abort rejecting at once (whatever a step
 * does), and the signal's listener removed when it settles.
 */
export function runAtEdge<T>(
  scope: Scope,
  steps: Step,
  operation: Next<T>,
  finalAtEdge: boolean,
): Promise<T> {
  let result: T | PromiseLike<T>;
  try {
    result = steps.execute(operation, scope);
  } catch (error) {
    scope.close();
    return Promise.reject(edgeError(error));
  }
  return guardAtEdge(scope, result, finalAtEdge);
}

/**
 * The caller's promise for what steps answered in `scope`: settled as `settleAtEdge` does, and, for a scope
 * the caller's signal can abort, rejecting at once when it does, with the signal's listener removed when
 * it settles.
 */
export function guardAtEdge<T>(scope: Scope, result: T | PromiseLike<T>, finalAtEdge: boolean): Promise<T> {
  if (!scope.canAbort) return settleAtEdge(result, finalAtEdge);
  return new Promise<T>((resolve, reject) => {
    let done = false;
    const unhook = scope.onAbort(() => {
      if (done) return;
      done = true;
      scope.close();
      reject(scope.reason);
    });
    if (scope.aborted) {
      done = true;
      scope.close();
      reject(scope.reason);
      return;
    }
    settleWith(
      result,
      (value) => {
        if (done) return;
        done = true;
        unhook();
        scope.close();
        resolve(value);
      },
      (error) => {
        if (done) return;
        done = true;
        unhook();
        scope.close();
        reject(error);
      },
    );
  }).then(undefined, atEdge);
}

/**
 * The caller's promise for what a pipeline nothing can abort answered: as it is when it is a promise from a
 * step that settles the caller's promise itself (`finalAtEdge`: a retry step outermost), otherwise through
 * `atEdge`.
 */
export function settleAtEdge<T>(result: T | PromiseLike<T>, finalAtEdge: boolean): Promise<T> {
  if (finalAtEdge && result instanceof Promise) return result;
  if (result instanceof Promise) return result.then(undefined, atEdge);
  if (!isThenable(result)) return Promise.resolve(result);
  // A rejection reaches the caller through `atEdge`, a reaction to a promise it awaits.
  return new Promise<T>((resolve, reject) => settleWith(result, resolve, reject)).then(undefined, atEdge);
}

/** The signal of execute options that hold an AbortSignal and nothing else; undefined for any others. */
function signalAlone(options: ExecuteOptions): AbortSignal | undefined {
  if (options === null || typeof options !== "object") return undefined;
  for (const key in options) if (key !== "signal") return undefined;
  const signal = options.signal;
  return signal instanceof AbortSignal ? signal : undefined;
}

function checkExecuteOptions(options: ExecuteOptions | undefined): ExecuteOptions {
  if (options === undefined) return {};
  knownKeys("execute", options, ["signal", "clock", "random"]);
  const { signal, clock, random } = options;
  if (signal !== undefined && !(signal instanceof AbortSignal)) {
    throw new OptionError("execute: signal", signal, "an AbortSignal");
  }
  if (clock !== undefined && (typeof clock?.now !== "function" || typeof clock?.setTimer !== "function")) {
    throw new OptionError("execute: clock", clock, "a Clock with now() and setTimer(ms, callback) methods");
  }
  if (random !== undefined && typeof random !== "function") {
    throw new OptionError("execute: random", random, "a function returning numbers in [0, 1)");
  }
  return random === undefined ? options : { signal, clock, random: checkedRandom(random, "execute: random") };
}

/**
 * A pipeline of steps, outermost first.
 *
 * @example
 * const p = pipeline(steps.timeout(10_000), steps.retry({ maxRetries: 5 }), steps.breaker(breaker), steps.timeout(2000));
 * const body = await p.execute(async ({ signal }) => (await fetch(url, { signal })).text());
 */
export function pipeline(...steps: Step[]): Pipeline {
  return new Pipeline(steps);
}
