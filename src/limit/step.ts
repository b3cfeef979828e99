/**
 * The adaptive limit step: each run of what is inside it takes a place under an adaptive concurrency limit,
 * waits its turn for one, or is refused with `ConcurrencyLimitError`; its outcome and latency move the
 * limit. Put the timeout step inside it, so that the limit hears of a timeout as a drop. A run that waits
 * and whose context aborts leaves the queue at once; one that runs and whose context aborts frees its
 * place, and is no sample.
 */
import { Eventual, invoke } from "../core/invoke.js";
import { type ExecutionContext, toRootScope } from "../pipeline/context.js";
import type { Next, Step } from "../pipeline/step.js";
import {
  AdaptiveLimit,
  type AdaptiveLimitOptions,
  checkAdaptiveLimitOptions,
  type LimitPermit,
} from "./adaptive-limit.js";

export class AdaptiveLimitStep implements Step {
  /** The limit it draws on (shared, if it was given one). */
  readonly limit: AdaptiveLimit;

  constructor(limit: AdaptiveLimit) {
    this.limit = limit;
  }

  execute<T>(next: Next<T>, context: ExecutionContext): T | PromiseLike<T> {
    const scope = toRootScope(context);
    if (scope.aborted) throw scope.reason;
    const out = new Eventual<T>();
    let done = false;
    let held: LimitPermit | undefined;
    let unhook: () => void = noop;
    const finish = () => {
      done = true;
      unhook();
    };
    // Refused: ConcurrencyLimitError, thrown before anything runs.
    const leave = this.limit.acquire((permit) => {
      held = permit;
      invoke(
        () => next(scope),
        (value) => {
          if (done) return;
          finish();
          permit.success();
          out.resolve(value);
        },
        (error) => {
          if (done) return;
          finish();
          permit.failure(error);
          out.reject(error);
        },
      );
    });
    if (done) return out;
    if (scope.aborted) {
      // Aborted while it took its place or joined the queue (by a listener of the limit's events).
      finish();
      if (held === undefined) leave();
      else held.ignore();
      out.reject(scope.reason);
      return out;
    }
    unhook = scope.onAbort(() => {
      if (done) return;
      finish();
      if (held === undefined) leave();
      else held.ignore();
      out.reject(scope.reason);
    });
    return out;
  }
}

function noop(): void {}

/**
 * An adaptive limit step: `steps.adaptiveLimit({ algorithm, min, max, queue })` makes a limit of its own;
 * `steps.adaptiveLimit(limit)` shares one made with `adaptiveLimit()`.
 *
 * @example
 * const p = pipeline(steps.retry({ maxRetries: 2 }), steps.adaptiveLimit({ algorithm: "vegas" }), steps.timeout(1000));
 */
export function adaptiveLimitStep(options?: AdaptiveLimitOptions | AdaptiveLimit): AdaptiveLimitStep {
  if (options instanceof AdaptiveLimit) return new AdaptiveLimitStep(options);
  checkAdaptiveLimitOptions("steps.adaptiveLimit", options);
  return new AdaptiveLimitStep(new AdaptiveLimit(options));
}
