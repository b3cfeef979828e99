/**
 * The retry step: runs the rest of the pipeline again while a policy allows, sleeping the backoff between
 * attempts. `retry(op, options)` is this step at the head of a pipeline built from the options.
 */
import type { Backoff } from "../backoff/types.js";
import { callSite } from "../core/call-site.js";
import {
  type Clock,
  sharedStart,
  sharedStartFits,
  startWasReal,
  systemClock,
  unrefClock,
} from "../core/clock.js";
import { type Disposable, Events, safeCall } from "../core/events.js";
import { isThenable } from "../core/invoke.js";
import { systemRandom } from "../core/random.js";
import type { GiveUpReason } from "../core/report.js";
import { type ExecutionContext, Scope, toRootScope } from "../pipeline/context.js";
import { FINAL_AT_EDGE, type Next, type Step } from "../pipeline/step.js";
import type { AttemptEvent, GiveUpEvent } from "../policy/events.js";
import {
  type ResolvedPolicy,
  type ResolvedRetry,
  type RetryEvent,
  type RetryStepOptions,
  resolveRetry,
} from "../policy/options.js";
import { TimeoutStep } from "../timeout/step.js";
import { RetryCall, type RetryCallStep } from "./call.js";
import { FirstPlan } from "./first.js";

// The payloads the options' callbacks receive too, declared with the options (see src/policy/events.ts).
export type { AttemptEvent, GiveUpEvent } from "../policy/events.js";

/** What the `success` event receives. */
export interface SuccessEvent<T = unknown> {
  readonly value: T;
  /** The attempt that succeeded, 1-based. */
  readonly attempt: number;
  /** Milliseconds from the first attempt. */
  readonly elapsed: number;
  /** Of `elapsed`, the milliseconds slept in backoffs. */
  readonly idle: number;
}

/** What the `error` event receives after every failed attempt. */
export interface AttemptErrorEvent {
  readonly error: unknown;
  /** Retries so far (the failed attempt's number − 1). */
  readonly retries: number;
}

/** The retry step's events. */
export interface RetryEvents<T = unknown> extends Record<string, unknown> {
  /** Before each attempt, the first too. */
  attempt: AttemptEvent;
  /** Before each backoff sleep. */
  retry: RetryEvent;
  /** When it stops retrying, for whatever reason (never on success). */
  giveUp: GiveUpEvent;
  /** When an attempt succeeds (and `retryOnResult` accepts its value). */
  success: SuccessEvent<T>;
  /** After every failed attempt, the last one too. */
  error: AttemptErrorEvent;
}

export class RetryStep<T = unknown> implements Step, RetryCallStep<T> {
  readonly [FINAL_AT_EDGE] = true;
  readonly resolved: ResolvedRetry<T>;
  /** The top-level policy's `maxRetries` (Infinity for no limit): `retriesLeft` at the first attempt. */
  readonly maxRetries: number;
  readonly #events: Events<RetryEvents<T>>;
  /** Whether a success has someone to tell beside listeners: `onSuccess`, or a backoff's `success` hook. */
  readonly #hearsSuccess: boolean;
  /** Whether a policy has a `maxElapsed`: a decision then depends on when the call began. */
  readonly timeBound: boolean;
  /** Whether a first attempt needs nothing but a context and its outcome (see `plainFirstAttempt`). */
  readonly #plain: boolean;

  constructor(resolved: ResolvedRetry<T>) {
    this.resolved = resolved;
    this.maxRetries = (resolved.policies[resolved.policies.length - 1] as ResolvedPolicy).maxRetries;
    this.#events = new Events<RetryEvents<T>>(resolved.onCallbackError);
    this.#hearsSuccess = resolved.onSuccess !== undefined || resolved.successHooks.length > 0;
    this.timeBound = resolved.policies.some((policy) => policy.maxElapsed !== Number.POSITIVE_INFINITY);
    this.#plain = plainFirst(resolved);
  }

  rebound(resolved: ResolvedRetry<T>): RetryStep<T> {
    return new RetryStep(resolved);
  }

  /**
   * Whether the first attempt needs nothing of this step but a context and its outcome: no budget, first
   * delay, `onAttempt`, `retryOnResult`, success hook or listener. Then a short form may make it without
   * a scope (see `runFirst`).
   */
  plainFirstAttempt(): boolean {
    return this.#plain && !this.#events.any();
  }

  /**
   * For a pipeline whose steps are this one and `rest` (nothing, or one timeout step): what lets an
   * execution on the system clock make its first attempt without the pipeline's machinery, as `retry`
   * does. Undefined for any other pipeline.
   */
  planFirst(rest: readonly Step[]): FirstPlan<T> | undefined {
    const limit = rest[0];
    if (rest.length > 1 || (limit !== undefined && !(limit instanceof TimeoutStep))) return undefined;
    return new FirstPlan(this, limit, systemClock, systemRandom);
  }

  /** Listens to `attempt`, `retry`, `giveUp`, `success` or `error` until the handle is disposed. */
  on<K extends keyof RetryEvents<T>>(
    event: K,
    listener: (payload: RetryEvents<T>[K]) => unknown,
  ): Disposable {
    return this.#events.on(event, listener);
  }

  execute<R>(next: Next<R>, context: ExecutionContext): R | PromiseLike<R> {
    const step = this as unknown as RetryStep<R>;
    const scope = context instanceof Scope ? context : toRootScope(context);
    if (
      scope.canAbort ||
      this.resolved.budget !== undefined ||
      this.resolved.delayFirstAttempt ||
      scope.attempt !== 1 ||
      scope.retries !== 0 ||
      scope.elapsed !== 0
    ) {
      const call = new RetryCall(step, next, scope, scope.clock.now());
      call.begin();
      return call.out;
    }
    const clock = scope.clock;
    const listened = this.#events.any();
    // When the call began, so that the elapsed time in a report always includes the first attempt (a first
    // attempt that hangs for minutes must show): on a real clock, when no limit or success statistics
    // depend on it, the reading shared by calls made close together (see `sharedStart`).
    const shared = !this.timeBound && !this.#hearsSuccess && (clock === systemClock || clock === unrefClock);
    const start = shared ? sharedStart() : clock.now();
    const real = startWasReal;
    // Nothing can abort this call and no budget counts it: the first attempt runs here, in the scope it was
    // given, so that a call that succeeds at once (almost every call) costs one `then` on its promise.
    const resume = (error: unknown): PromiseLike<R> => {
      const call = new RetryCall(step, next, scope, startFit(shared, real, start, clock));
      // The first failure: called synchronously by the caller, or in a reaction to the operation's
      // promise whose own promise the caller awaits. Either way the caller's frames are on this stack.
      call.resume(scope.takeBail() ?? error, callSite(resume));
      return call.out;
    };
    const settle = (value: R): R | PromiseLike<R> => {
      if (scope.bailed !== undefined) return resume(undefined);
      const retryOnResult = step.resolved.retryOnResult;
      if (retryOnResult !== undefined) {
        let verdict: unknown;
        try {
          verdict = retryOnResult(value);
        } catch (thrown) {
          // retryOnResult threw: that is this attempt's error, as in the loop.
          return resume(thrown);
        }
        if (verdict) {
          // A value to retry, or a verdict to wait for: through the loop.
          const call = new RetryCall(step, next, scope, startFit(shared, real, start, clock));
          call.resumeJudging(value, verdict);
          return call.out;
        }
      }
      // A shared reading of a clock replaced since cannot be compared with it (see `startFit`).
      if (step.#hearsSuccess || step.#events.any())
        step.accepted(value, 1, clock, startFit(shared, real, start, clock), 0);
      return value;
    };
    let result: R | PromiseLike<R>;
    scope.retriesLeft = this.maxRetries;
    scope.retryAttempt = true;
    if (listened || this.resolved.onAttempt !== undefined) this.attempting(1, 0, this.maxRetries, 0);
    try {
      result = next(scope);
    } catch (error) {
      return resume(error);
    }
    if (result instanceof Promise) {
      try {
        return result.then(settle, resume);
      } catch (error) {
        // A promise whose `then` throws (a hostile subclass's): that is the attempt's error, as `await` has it.
        return resume(error);
      }
    }
    if (!isThenable(result)) return settle(result);
    // A thenable of another kind (one that settles synchronously, say): through the loop, which does not
    // wait for a microtask.
    const call = new RetryCall(step, next, scope, startFit(shared, real, start, clock));
    call.adopt(scope, result);
    return call.out;
  }

  /** When `value` ends the call (retryOnResult did not ask for another attempt): tells whoever listens. */
  accepted(value: T, attempt: number, clock: Clock, start: number, idle: number): void {
    const options = this.resolved;
    // Stateful backoffs (a shared ResponsiveBackoff) learn of the success first.
    const hooks = options.successHooks;
    for (let i = 0; i < hooks.length; i++) (hooks[i] as Backoff).success?.();
    const onSuccess = options.onSuccess;
    const listened = this.#events.any() && this.#events.has("success");
    if (onSuccess === undefined && !listened) return;
    // NaN: the clock was left unread (see `#startOf`), and a listener came during the first attempt.
    const elapsed = Number.isNaN(start) ? 0 : clock.now() - start;
    if (onSuccess !== undefined) {
      const stats = { attempts: attempt, elapsed, idle };
      safeCall(options.onCallbackError, "onSuccess", () => onSuccess(value, stats));
    }
    if (listened) this.#events.emit("success", { value, attempt, elapsed, idle });
  }

  /** Before each attempt: `onAttempt` and the `attempt` event. */
  attempting(attempt: number, retries: number, retriesLeft: number, elapsed: number): void {
    const onAttempt = this.resolved.onAttempt;
    const listened = this.#events.any() && this.#events.has("attempt");
    if (onAttempt === undefined && !listened) return;
    const event: AttemptEvent = { attempt, retries, retriesLeft, elapsed };
    if (onAttempt !== undefined) safeCall(this.resolved.onCallbackError, "onAttempt", () => onAttempt(event));
    if (listened) this.#events.emit("attempt", event);
  }

  /** After every failed attempt: `onError` and the `error` event. */
  failedAttempt(error: unknown, retries: number): void {
    const onError = this.resolved.onError;
    if (onError !== undefined)
      safeCall(this.resolved.onCallbackError, "onError", () => onError(error, retries));
    if (this.#events.has("error")) this.#events.emit("error", { error, retries });
  }

  /** Before a backoff sleep: `onRetry` and the `retry` event. */
  retrying(
    error: unknown,
    retries: number,
    delay: number,
    attempt: number,
    elapsed: number,
    policy: number,
  ): void {
    const onRetry = this.resolved.onRetry;
    if (onRetry === undefined && !this.#events.has("retry")) return;
    const last = this.resolved.policies.length - 1;
    const event: RetryEvent = {
      error,
      retries,
      delay,
      attempt,
      elapsed,
      rule: policy === last ? -1 : policy,
    };
    if (onRetry !== undefined) safeCall(this.resolved.onCallbackError, "onRetry", () => onRetry(event));
    this.#events.emit("retry", event);
  }

  /** When the call stops retrying: `onGiveUp` and the `giveUp` event. */
  gaveUp(
    outcome: unknown,
    reason: GiveUpReason,
    attempts: number,
    elapsed: number,
    idle: number,
    isValue: boolean,
  ): void {
    const onGiveUp = this.resolved.onGiveUp;
    if (onGiveUp === undefined && !this.#events.has("giveUp")) return;
    const event: GiveUpEvent = { reason, outcome, isValue, attempts, elapsed, idle };
    if (onGiveUp !== undefined) safeCall(this.resolved.onCallbackError, "onGiveUp", () => onGiveUp(event));
    this.#events.emit("giveUp", event);
  }
}

/**
 * Whether options resolved as `resolved` make a first attempt that needs nothing but a context and its
 * outcome (see `RetryStep.plainFirstAttempt`), listeners aside.
 */
export function plainFirst<T>(resolved: ResolvedRetry<T>): boolean {
  return (
    resolved.onSuccess === undefined &&
    resolved.successHooks.length === 0 &&
    resolved.budget === undefined &&
    !resolved.delayFirstAttempt &&
    resolved.onAttempt === undefined &&
    resolved.retryOnResult === undefined
  );
}

/**
 * The start a call's loop goes on from: `start`, or now when it is a shared reading (`shared`) of a clock
 * replaced since (fake timers), which cannot be compared with the clock's readings now.
 */
function startFit(shared: boolean, real: boolean, start: number, clock: Clock): number {
  return !shared || sharedStartFits(real) ? start : clock.now();
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
