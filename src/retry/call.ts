/**
 * One call of the retry step (the access wrapper's loop), written with callbacks rather than
 * `await`: run the rest of the pipeline for an attempt, classify the outcome, ask the policy, compute the
 * delay, sleep on the clock, again.
 *
 * Callbacks, not an `async` function, because the same loop must run in two worlds: under a real or
 * virtual clock with promises, and in the simulator, whose operations settle synchronously on its own
 * event queue. Nothing here waits for a microtask, so the simulator runs this very code, event by event.
 */

import { BrokenCircuitError } from "../breaker/errors.js";
import type { CancelTimer } from "../core/clock.js";
import { PermanentError, RetryableResultError, unwrapPermanent } from "../core/errors.js";
import { Eventual, invoke, settleWith } from "../core/invoke.js";
import { type GiveUpReason, report } from "../core/report.js";
import type { BudgetClaim, Scope } from "../pipeline/context.js";
import type { Next } from "../pipeline/step.js";
import { RetryState } from "../policy/decide.js";
import type { ResolvedRetry } from "../policy/options.js";
import type { RetryStep } from "./step.js";

/**
 * One call: create it, then `begin()` to make the first attempt, or `resume()` to go on from a first
 * attempt that already failed. Its `out` settles exactly once, and it leaves no timer and no hook behind.
 */
export class RetryCall<T> {
  readonly #step: RetryStep<T>;
  readonly #options: ResolvedRetry<T>;
  readonly #next: Next<T>;
  readonly #scope: Scope;
  readonly #start: number;
  readonly out: Eventual<T>;
  #retries = 0;
  #state: RetryState | undefined;
  /** The attempt in progress, undefined while sleeping or once settled. */
  #attempt: Scope | undefined;
  /** Cancels the backoff sleep. */
  #cancelTimer: CancelTimer | undefined;
  #unwatch: (() => void) | undefined;
  /** Whether this step reports attempts' outcomes to the budget (no step inside took that over). */
  #claim: BudgetClaim | undefined;
  #done = false;

  constructor(step: RetryStep<T>, next: Next<T>, scope: Scope, start: number) {
    this.#step = step;
    this.#options = step.resolved;
    this.#next = next;
    this.#scope = scope;
    this.#start = start;
    this.out = new Eventual<T>();
  }

  /** Makes the first attempt. */
  begin(): void {
    this.#claimBudget();
    if (this.#watch()) this.#attemptNow();
  }

  /** Goes on from a first attempt that failed with `error` (made without a scope of its own). */
  resume(error: unknown): void {
    if (!this.#watch()) return;
    this.#afterFailure(error, 1, undefined);
  }

  /**
   * The budget hears of this execution once: a step outside that uses it already counted the request,
   * and then this step reports the attempts' outcomes in its place.
   */
  #claimBudget(): void {
    const budget = this.#options.budget;
    if (budget === undefined) return;
    const outer = this.#scope.findClaim(budget);
    if (outer === undefined) budget.request();
    else outer.inner = true;
  }

  /**
   * Goes on from a first attempt already running in `attempt` (the step's own scope, which nothing can
   * abort) that answered with `result`.
   */
  adopt(attempt: Scope, result: PromiseLike<T>): void {
    this.#attempt = attempt;
    settleWith(
      result,
      (value) => this.#succeeded(attempt, value),
      (error) => this.#failed(attempt, error),
    );
  }

  /** Starts watching the scope's abort; false, with the call ended, when it has aborted already. */
  #watch(): boolean {
    const scope = this.#scope;
    if (scope.aborted) {
      this.#finish();
      this.#giveUpAborted(this.#retries);
      return false;
    }
    if (scope.canAbort) this.#unwatch = scope.onAbort(this.#onAbort);
    return true;
  }

  #attemptNow(): void {
    const retries = this.#retries;
    const elapsed = retries === 0 ? 0 : this.#scope.clock.now() - this.#start;
    const budget = this.#options.budget;
    const claim = budget === undefined ? undefined : { budget, inner: false };
    const attempt = this.#scope.child({ attempt: retries + 1, retries, elapsed, claim });
    this.#attempt = attempt;
    this.#claim = claim;
    invoke(
      () => this.#next(attempt),
      (value) => this.#succeeded(attempt, value),
      (error) => this.#failed(attempt, error),
    );
  }

  /** Ends `attempt` if it is still the one in progress; false for a late or repeated outcome. */
  #end(attempt: Scope): boolean {
    if (this.#attempt !== attempt) return false;
    this.#attempt = undefined;
    attempt.release();
    return true;
  }

  #succeeded(attempt: Scope, value: T): void {
    if (!this.#end(attempt)) return;
    let error: unknown;
    try {
      if (this.#step.accepted(value, attempt.attempt, this.#scope.clock, this.#start)) {
        if (this.#claim?.inner === false) this.#options.budget?.success();
        this.#finish();
        this.out.resolve(value);
        return;
      }
      error = new RetryableResultError(value);
    } catch (thrown) {
      // retryOnResult threw: that is this attempt's error.
      error = thrown;
    }
    this.#afterFailure(
      error,
      attempt.attempt,
      this.#claim?.inner === false ? this.#options.budget : undefined,
    );
  }

  #failed(attempt: Scope, error: unknown): void {
    if (!this.#end(attempt)) return;
    this.#afterFailure(
      error,
      attempt.attempt,
      this.#claim?.inner === false ? this.#options.budget : undefined,
    );
  }

  /** `reportTo`: the budget to tell of the failure, when this step is the one that tells it. */
  #afterFailure(error: unknown, attemptNumber: number, reportTo: { failure(): void } | undefined): void {
    const options = this.#options;
    const scope = this.#scope;
    const clock = scope.clock;
    if (scope.aborted) {
      this.#finish();
      this.#giveUpAborted(attemptNumber);
      return;
    }
    if (error instanceof BrokenCircuitError) {
      // A breaker inside refused the attempt: nothing reached the service, and retrying into an open
      // circuit only adds load; the call ends with the breaker's error.
      this.#giveUp(error, "breaker", attemptNumber - 1, clock.now() - this.#start);
      return;
    }
    reportTo?.failure();
    this.#step.failedAttempt(error, this.#retries);
    // A callback may have aborted the caller's signal, which ended the call.
    if (this.#done) return;
    if (error instanceof PermanentError) {
      this.#giveUp(error, "permanent", attemptNumber, clock.now() - this.#start);
      return;
    }
    const elapsed = clock.now() - this.#start;
    this.#state ??= new RetryState(options.policies);
    let decision: ReturnType<RetryState["decide"]>;
    try {
      decision = this.#state.decide(error, elapsed, scope.random);
    } catch (broken) {
      // A matcher or a custom strategy threw (or a strategy returned no number): end the call with that
      // error rather than leave it hanging.
      this.#finish();
      this.out.reject(broken);
      return;
    }
    if (typeof decision === "string") {
      this.#giveUp(error, decision, attemptNumber, elapsed);
      return;
    }
    if (options.budget !== undefined && !options.budget.tryRetry()) {
      this.#giveUp(error, "budget", attemptNumber, elapsed);
      return;
    }
    const { delay } = decision;
    this.#step.retrying(error, this.#retries, delay, attemptNumber, elapsed, decision.policy);
    // A callback may have aborted the caller's signal: stop before sleeping.
    if (this.#done) return;
    if (scope.aborted) {
      this.#finish();
      this.#giveUpAborted(attemptNumber);
      return;
    }
    this.#cancelTimer = clock.setTimer(delay, this.#wake);
  }

  readonly #wake = (): void => {
    this.#cancelTimer = undefined;
    if (this.#done) return;
    this.#retries += 1;
    this.#attemptNow();
  };

  readonly #onAbort = (): void => {
    if (this.#done) return;
    this.#unwatch = undefined;
    // The attempt's scope aborts with this one, right after.
    this.#attempt = undefined;
    this.#finish();
    this.#giveUpAborted(this.#retries + 1);
  };

  #giveUpAborted(attempts: number): void {
    const reason = this.#scope.reason;
    this.#step.gaveUp(reason, "aborted", attempts, this.#scope.clock.now() - this.#start, false);
    this.out.reject(reason);
  }

  /** Ends the call with the last outcome: the value `retryOnResult` kept rejecting, or the error as it was. */
  #giveUp(error: unknown, reason: GiveUpReason, attempts: number, elapsed: number): void {
    this.#finish();
    if (error instanceof RetryableResultError) {
      this.#step.gaveUp(error.value, reason, attempts, elapsed, true);
      this.out.resolve(error.value as T);
      return;
    }
    const final = unwrapPermanent(error);
    report(final, { reason, attempts, elapsed });
    this.#step.gaveUp(final, reason, attempts, elapsed, false);
    this.out.reject(final);
  }

  /** Marks the call settled and removes its timer and its hook. */
  #finish(): void {
    this.#done = true;
    this.#cancelTimer?.();
    this.#cancelTimer = undefined;
    this.#unwatch?.();
    this.#unwatch = undefined;
  }
}
