/**
 * The retry step: runs the rest of the pipeline again while a policy allows, sleeping the backoff between
 * attempts. It runs the loop `retry(op, options)` runs (./call.ts), in the pipeline's scope, and tells its
 * listeners what the loop tells the options' callbacks.
 */
import { DefaultBudgets } from "../budget/default.js";
import { systemClock } from "../core/clock.js";
import { type Disposable, Events } from "../core/events.js";
import { systemRandom } from "../core/random.js";
import { type ExecutionContext, toRootScope } from "../pipeline/context.js";
import { FINAL_AT_EDGE, type Next, type Step } from "../pipeline/step.js";
import { type ResolvedRetry, type RetryStepOptions, resolveRetry } from "../policy/options.js";
import { TimeoutStep } from "../timeout/step.js";
import { RetryCall, type RetryEvents } from "./call.js";

// The payloads the options' callbacks receive too, declared with the options (see src/policy/events.ts).
export type { AttemptEvent, GiveUpEvent } from "../policy/events.js";
export type { AttemptErrorEvent, RetryEvents, SuccessEvent } from "./call.js";

/** What runs an execution of a pipeline at its edge without the pipeline's machinery (see `planFirst`). */
interface EdgeRunner {
  run<R>(operation: Next<R>, signal?: AbortSignal): Promise<R>;
}

export class RetryStep<T = unknown> implements Step {
  readonly [FINAL_AT_EDGE] = true;
  readonly resolved: ResolvedRetry<T>;
  /** The top-level policy's `maxRetries` (Infinity for no limit): `retriesLeft` at the first attempt. */
  readonly maxRetries: number;
  readonly #events: Events<RetryEvents<T>>;
  /** The step's default budgets (one per clock), drawn on when its options name no budget. */
  readonly #budgets = new DefaultBudgets();

  constructor(resolved: ResolvedRetry<T>) {
    this.resolved = resolved;
    this.maxRetries = resolved.maxRetries;
    this.#events = new Events<RetryEvents<T>>(resolved.onCallbackError);
  }

  /**
   * For a pipeline whose steps are this one and `rest` (nothing, or one timeout step that neither waits
   * for what it limits nor aborts it on return): what runs an execution at the pipeline's edge on the
   * system clock as `retry` runs a call, the loop keeping the time limit itself. Undefined for any other
   * pipeline.
   */
  planFirst(rest: readonly Step[]): EdgeRunner | undefined {
    const limit = rest[0];
    if (rest.length > 1) return undefined;
    if (limit !== undefined && (!(limit instanceof TimeoutStep) || limit.cooperative || limit.abortOnReturn))
      return undefined;
    const timed = limit === undefined || limit.ms === Number.POSITIVE_INFINITY ? undefined : limit;
    const events = this.#events;
    const resolved = this.resolved;
    const budgets = this.#budgets;
    return {
      run: <R>(operation: Next<R>, signal?: AbortSignal): Promise<R> =>
        new RetryCall<R>(
          resolved as unknown as ResolvedRetry<R>,
          events as unknown as Events<RetryEvents<R>>,
          operation,
          systemClock,
          systemRandom,
          undefined,
          signal,
          timed,
          budgets,
        ).run(),
    };
  }

  /** Listens to `attempt`, `retry`, `giveUp`, `success` or `error` until the handle is disposed. */
  on<K extends keyof RetryEvents<T>>(
    event: K,
    listener: (payload: RetryEvents<T>[K]) => unknown,
  ): Disposable {
    return this.#events.on(event, listener);
  }

  execute<R>(next: Next<R>, context: ExecutionContext): R | PromiseLike<R> {
    const scope = toRootScope(context);
    return new RetryCall<R>(
      this.resolved as unknown as ResolvedRetry<R>,
      this.#events as unknown as Events<RetryEvents<R>>,
      next,
      scope.clock,
      scope.random,
      scope,
      undefined,
      undefined,
      this.#budgets,
    ).start();
  }
}

/**
 * A retry step: runs the steps inside it (and the operation) again while its policy allows.
 *
 * @example
 * const p = pipeline(steps.retry({ maxRetries: 5, retryOn: "ECONNRESET" }), steps.timeout(2000));
 */
export function retryStep<T = unknown>(options?: RetryStepOptions<T>): RetryStep<T> {
  return new RetryStep(resolveRetry(options));
}
