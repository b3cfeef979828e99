/**
 * The rate limit step: each run of what is inside it takes a token of a rate limiter, waits its turn for
 * one, or is refused with `RateLimitedError`. A run that waits and whose context aborts leaves the queue
 * at once and fails with the abort's reason. Outside a retry step it limits calls; inside, attempts (each
 * retry takes a token again, after waiting the error's `retryAfter` when it was refused).
 */
import { Eventual, invoke } from "../core/invoke.js";
import { type ExecutionContext, toRootScope } from "../pipeline/context.js";
import type { Next, Step } from "../pipeline/step.js";
import { checkRateLimiterOptions, RateLimiter, type RateLimiterOptions } from "./rate-limiter.js";

export class RateLimitStep implements Step {
  /** The limiter it draws on (shared, if it was given one). */
  readonly limiter: RateLimiter;

  constructor(limiter: RateLimiter) {
    this.limiter = limiter;
  }

  execute<T>(next: Next<T>, context: ExecutionContext): T | PromiseLike<T> {
    const scope = toRootScope(context);
    if (scope.aborted) throw scope.reason;
    let out: Eventual<T> | undefined;
    let started = false;
    let unhook: () => void = noop;
    // Refused: RateLimitedError, thrown before anything runs.
    const leave = this.limiter.acquire(
      () => {
        started = true;
        unhook();
        if (out === undefined) return;
        const waiting = out;
        invoke(
          () => next(scope),
          (value) => waiting.resolve(value),
          (error) => waiting.reject(error),
        );
      },
      (error) => {
        // A shared limiter's wait that ran past maxWait.
        unhook();
        out?.reject(error);
      },
    );
    // A token at once: what is inside runs now, as if the step were not there.
    if (started) return next(scope);
    out = new Eventual<T>();
    const waiting = out;
    if (scope.aborted) {
      // Aborted while it joined the queue (by a listener of the limiter's events).
      leave();
      waiting.reject(scope.reason);
      return waiting;
    }
    unhook = scope.onAbort(() => {
      if (started) return;
      leave();
      waiting.reject(scope.reason);
    });
    return waiting;
  }
}

function noop(): void {}

/**
 * A rate limit step: `steps.rateLimit({ rate, per, burst, queue })` makes a limiter of its own;
 * `steps.rateLimit(limiter)` shares one made with `rateLimiter()`.
 *
 * @example
 * const p = pipeline(steps.retry({ maxRetries: 3 }), steps.rateLimit({ rate: 50, queue: 100 }));
 */
export function rateLimitStep(options: RateLimiterOptions | RateLimiter): RateLimitStep {
  if (options instanceof RateLimiter) return new RateLimitStep(options);
  checkRateLimiterOptions("steps.rateLimit", options);
  return new RateLimitStep(new RateLimiter(options));
}
