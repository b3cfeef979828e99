/**
 * The breaker step: each run of what is inside it passes the circuit breaker, which hears of its outcome
 * exactly once: a success, a failure (`handles` decides which count), or nothing at all when the caller
 * aborted it or another hedge won (a probe's place is given back). Outside a retry step it counts calls;
 * inside, attempts.
 */
import { OptionError } from "../core/errors.js";
import { Eventual, invoke } from "../core/invoke.js";
import { knownKeys, optionalFunction } from "../core/validate.js";
import { type ExecutionContext, toRootScope } from "../pipeline/context.js";
import type { Next, Step } from "../pipeline/step.js";

/** `steps.breaker`'s options beside the breaker. */
export interface BreakerStepOptions<R = unknown> {
  /**
   * Which values count as failures of the service (an HTTP 503 answered as a value, say). Default: none.
   * The short form passes its `retryOnResult`. One that throws or rejects is reported to the breaker's
   * `onCallbackError`, and the value counts as a success.
   */
  handlesResult?: (value: R) => boolean | PromiseLike<boolean>;
}

/**
 * What the step asks of its breaker: a `CircuitBreaker`'s gate (declared here, not imported, because the
 * breaker makes its own step for `retry`'s `breaker` option).
 */
export interface BreakerGate {
  /** Lets a call through (the time it read), or throws `BrokenCircuitError`. */
  acquire(): number;
  /** Gives a probe's place back, counting nothing. */
  release(): void;
  /** Counts an outcome (`failed`: an error), then calls `then`. */
  settle(outcome: unknown, failed: boolean, then?: () => void, started?: number): void;
  /** Counts a value, a failure when `handles` says so, then calls `then`. */
  settleResult(
    value: unknown,
    handles: ((value: unknown) => boolean | PromiseLike<boolean>) | undefined,
    then?: () => void,
    started?: number,
  ): void;
}

export class BreakerStep<B extends BreakerGate = BreakerGate> implements Step {
  readonly breaker: B;
  readonly #handlesResult: ((value: unknown) => boolean | PromiseLike<boolean>) | undefined;

  constructor(breaker: B, options?: BreakerStepOptions) {
    this.breaker = breaker;
    this.#handlesResult = options?.handlesResult;
  }

  execute<T>(next: Next<T>, context: ExecutionContext): T | PromiseLike<T> {
    const scope = toRootScope(context);
    if (scope.aborted) throw scope.reason;
    const breaker = this.breaker;
    // Refused: BrokenCircuitError, thrown before anything runs.
    const started = breaker.acquire();
    const out = new Eventual<T>();
    let done = false;
    const unwatch = scope.onAbort(() => {
      if (done) return;
      done = true;
      // A timeout outside ran out on this call: the service was too slow, which counts (if `handles`
      // says so). The caller's abort and a lost hedge say nothing of the service.
      if (scope.abortKind === "timeout")
        breaker.settle(scope.reason, true, () => out.reject(scope.reason), started);
      else {
        breaker.release();
        out.reject(scope.reason);
      }
    });
    invoke(
      () => next(scope),
      (value) => {
        if (done) return;
        done = true;
        unwatch();
        breaker.settleResult(value, this.#handlesResult, () => out.resolve(value), started);
      },
      (error) => {
        if (done) return;
        done = true;
        unwatch();
        breaker.settle(error, true, () => out.reject(error), started);
      },
    );
    return out;
  }
}

/**
 * A breaker step over `breaker` (from `circuitBreaker()`), which many pipelines may share. It keeps its
 * own clock, if it was built with one.
 *
 * @example
 * const breaker = circuitBreaker({ consecutiveFailures: 5 });
 * const perAttempt = pipeline(steps.retry({ maxRetries: 3 }), steps.breaker(breaker));
 */
export function breakerStep<B extends BreakerGate, R = unknown>(
  breaker: B,
  options?: BreakerStepOptions<R>,
): BreakerStep<B> {
  const gate = breaker as Partial<BreakerGate> | null;
  if (
    typeof gate !== "object" ||
    typeof gate?.acquire !== "function" ||
    typeof gate.release !== "function" ||
    typeof gate.settle !== "function" ||
    typeof gate.settleResult !== "function"
  ) {
    throw new OptionError("steps.breaker: breaker", breaker, "a circuit breaker (from circuitBreaker())");
  }
  knownKeys("steps.breaker", options, ["handlesResult"]);
  optionalFunction("steps.breaker: handlesResult", options?.handlesResult);
  return new BreakerStep(breaker, options as BreakerStepOptions);
}
