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
import { addCallSite, type CallSite } from "../core/call-site.js";
import type { CancelTimer, Clock } from "../core/clock.js";
import { PermanentError, RetryableResultError, unwrapPermanent } from "../core/errors.js";
import { Eventual, invoke, isThenable, type OutcomeListener, settleWith } from "../core/invoke.js";
import { type GiveUpReason, report } from "../core/report.js";
import type { BudgetClaim, Scope } from "../pipeline/context.js";
import type { Next } from "../pipeline/step.js";
import { firstMatch, RetryState } from "../policy/decide.js";
import { MAX_FREE_RETRIES, type ResolvedRetry } from "../policy/options.js";

/**
 * What a call needs of its retry step: the options and the callbacks that tell of the call. `RetryStep`
 * implements it. The step makes calls and first attempts, so the imports run step.ts → first.ts →
 * call.ts and never back: these see the step through this interface.
 */
export interface RetryCallStep<T> {
  readonly resolved: ResolvedRetry<T>;
  /** The top-level policy's `maxRetries` (Infinity for no limit): `retriesLeft` at the first attempt. */
  readonly maxRetries: number;
  /** Whether a policy has a `maxElapsed`: a decision then depends on when the call began. */
  readonly timeBound: boolean;
  /** Whether the first attempt needs nothing of the step but a context and its outcome. */
  plainFirstAttempt(): boolean;
  /** When `value` ends the call (retryOnResult did not ask for another attempt): tells whoever listens. */
  accepted(value: T, attempt: number, clock: Clock, start: number, idle: number): void;
  /** Before each attempt: `onAttempt` and the `attempt` event. */
  attempting(attempt: number, retries: number, retriesLeft: number, elapsed: number): void;
  /** After every failed attempt: `onError` and the `error` event. */
  failedAttempt(error: unknown, retries: number): void;
  /** Before a backoff sleep: `onRetry` and the `retry` event. */
  retrying(
    error: unknown,
    retries: number,
    delay: number,
    attempt: number,
    elapsed: number,
    policy: number,
  ): void;
  /** When the call stops retrying: `onGiveUp` and the `giveUp` event. */
  gaveUp(
    outcome: unknown,
    reason: GiveUpReason,
    attempts: number,
    elapsed: number,
    idle: number,
    isValue: boolean,
  ): void;
  /**
   * A step like this one made around `resolved`: this step's options with another call's callbacks and
   * predicates (see `withFunctions`), for a call whose first attempt ran on this one's.
   */
  rebound(resolved: ResolvedRetry<T>): RetryCallStep<T>;
}

/**
 * One call: create it, then `begin()` to make the first attempt, or `resume()` to go on from a first
 * attempt that already failed. Its `out` settles exactly once, and it leaves no timer and no hook behind.
 */
export class RetryCall<T> {
  readonly #step: RetryCallStep<T>;
  readonly #options: ResolvedRetry<T>;
  readonly #next: Next<T>;
  readonly #scope: Scope;
  /**
   * When the first attempt began (or, before it, when the call began); NaN until the first failure when the
   * step left the clock unread (see `RetryStep`), and from then on the time of that failure.
   */
  #start: number;
  readonly out: Eventual<T>;
  #retries = 0;
  #state: RetryState | undefined;
  /** The attempt in progress, undefined while sleeping or once settled. */
  #attempt: Scope | undefined;
  /** Cancels the backoff sleep. */
  #cancelTimer: CancelTimer | undefined;
  /** What the backoff timer calls, made at the first sleep. */
  #wakeUp: (() => void) | undefined;
  #unwatch: (() => void) | undefined;
  /** Whether this step reports attempts' outcomes to the budget (no step inside took that over). */
  #claim: BudgetClaim | undefined;
  #done = false;
  /** Milliseconds slept in backoffs (the first delay of `delayFirstAttempt` aside). */
  #idle = 0;
  /** When the backoff sleep in progress began. */
  #sleptFrom: number | undefined;
  /** Sleeping the first delay, before any attempt (`delayFirstAttempt`). */
  #waitingFirst = false;
  /** `onAttempt` and the `attempt` event are being told of the next attempt, which has not started yet. */
  #announcing = false;
  /** Retries `shouldConsumeRetry` made free. */
  #free = 0;
  /** The caller's frames, captured at the first failure when the call is made at a pipeline's edge. */
  #site: CallSite | undefined;

  constructor(step: RetryCallStep<T>, next: Next<T>, scope: Scope, start: number) {
    this.#step = step;
    this.#options = step.resolved;
    this.#next = next;
    this.#scope = scope;
    this.#start = start;
    this.out = new Eventual<T>();
  }

  /** Makes the first attempt, after the first delay with `delayFirstAttempt`. */
  begin(): void {
    this.#claimBudget();
    if (!this.#watch()) return;
    if (!this.#options.delayFirstAttempt) {
      this.#attemptNow();
      return;
    }
    this.#state = new RetryState(this.#options.policies);
    let delay: number;
    try {
      delay = this.#state.firstWait(this.#scope.random);
    } catch (broken) {
      this.#broken(broken);
      return;
    }
    this.#waitingFirst = true;
    this.#cancelTimer = this.#scope.clock.setTimer(delay, () => this.#wakeFirst());
  }

  #wakeFirst(): void {
    this.#cancelTimer = undefined;
    if (this.#done) return;
    this.#waitingFirst = false;
    this.#start = this.#scope.clock.now();
    this.#attemptNow();
  }

  /**
   * Goes on from a first attempt that failed with `error` (made without a scope of its own); `site`, the
   * caller's frames, go on the error the call ends with.
   */
  resume(error: unknown, site?: CallSite): void {
    this.#site = site;
    if (!this.#watch()) return;
    this.#afterFailure(error, 1, undefined);
  }

  /**
   * Goes on from a first attempt (made without a scope of its own) that answered with `value`, which
   * `retryOnResult` answered with `verdict`: true, or a promise.
   */
  resumeJudging(value: T, verdict: unknown): void {
    if (!this.#watch()) return;
    this.#judged(value, 1, verdict, undefined);
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
    if (scope.canAbort) this.#unwatch = scope.onAbort(() => this.#onAbort());
    return true;
  }

  #attemptNow(): void {
    const retries = this.#retries;
    const elapsed = retries === 0 ? 0 : this.#scope.clock.now() - this.#start;
    const budget = this.#options.budget;
    const claim = budget === undefined ? undefined : { budget, inner: false };
    const retriesLeft = this.#state?.retriesLeft() ?? this.#step.maxRetries;
    // While `onAttempt` runs, the attempt has not started: an abort from it counts only those before.
    this.#announcing = true;
    this.#step.attempting(retries + 1, retries, retriesLeft, elapsed);
    this.#announcing = false;
    // A callback may have aborted the caller's signal, which ended the call.
    if (this.#done) return;
    const attempt = this.#scope.child({ attempt: retries + 1, retries, retriesLeft, elapsed, claim });
    attempt.retryAttempt = true;
    this.#attempt = attempt;
    this.#claim = claim;
    let result: T | PromiseLike<T>;
    try {
      result = this.#next(attempt);
    } catch (error) {
      this.#failed(attempt, error);
      return;
    }
    // A step's eventual is heard by one object, where two closures would (and outlive the attempt as long).
    if (result instanceof Eventual) result.listenBy(new AttemptOutcome(this, attempt));
    else
      settleWith(
        result,
        (value) => this.#succeeded(attempt, value),
        (error) => this.#failed(attempt, error),
      );
  }

  /** `attempt` answered with `value` (through `AttemptOutcome`). */
  attemptSucceeded(attempt: Scope, value: T): void {
    this.#succeeded(attempt, value);
  }

  /** `attempt` failed with `error` (through `AttemptOutcome`). */
  attemptFailed(attempt: Scope, error: unknown): void {
    this.#failed(attempt, error);
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
    const reportTo = this.#claim?.inner === false ? this.#options.budget : undefined;
    const bailed = attempt.takeBail();
    if (bailed !== undefined) {
      this.#afterFailure(bailed, attempt.attempt, reportTo);
      return;
    }
    const retryOnResult = this.#options.retryOnResult;
    let verdict: unknown;
    try {
      verdict = retryOnResult?.(value);
    } catch (thrown) {
      // retryOnResult threw: that is this attempt's error.
      this.#afterFailure(thrown, attempt.attempt, reportTo);
      return;
    }
    this.#judged(value, attempt.attempt, verdict, reportTo);
  }

  /**
   * Goes on from `retryOnResult`'s verdict on `value` (waited for when it is a promise): a falsy one ends
   * the call with the value; a truthy one retries it like an error; a rejection is the attempt's error.
   */
  #judged(
    value: T,
    attemptNumber: number,
    verdict: unknown,
    reportTo: { success(): void; failure(): void } | undefined,
  ): void {
    if (isThenable(verdict)) {
      // The caller's abort may end the call while the verdict is pending.
      settleWith(
        verdict,
        (answer) => {
          if (!this.#done) this.#judged(value, attemptNumber, Boolean(answer), reportTo);
        },
        (thrown) => {
          if (!this.#done) this.#afterFailure(thrown, attemptNumber, reportTo);
        },
      );
      return;
    }
    if (verdict) {
      this.#afterFailure(new RetryableResultError(value), attemptNumber, reportTo);
      return;
    }
    this.#step.accepted(value, attemptNumber, this.#scope.clock, this.#start, this.#idle);
    reportTo?.success();
    this.#finish();
    this.out.resolve(value);
  }

  #failed(attempt: Scope, error: unknown): void {
    if (!this.#end(attempt)) return;
    this.#afterFailure(
      attempt.takeBail() ?? error,
      attempt.attempt,
      this.#claim?.inner === false ? this.#options.budget : undefined,
    );
  }

  /** `reportTo`: the budget to tell of the failure, when this step is the one that tells it. */
  #afterFailure(error: unknown, attemptNumber: number, reportTo: { failure(): void } | undefined): void {
    const options = this.#options;
    const scope = this.#scope;
    const clock = scope.clock;
    if (Number.isNaN(this.#start)) this.#start = clock.now();
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
    firstMatch(
      options.policies,
      error,
      (index) => this.#matched(error, attemptNumber, index),
      (broken) => this.#broken(broken),
    );
  }

  /** Once the error is known to fall to policy `index` (-1: none): asks `shouldConsumeRetry`, if given. */
  #matched(error: unknown, attemptNumber: number, index: number): void {
    const ask = this.#options.shouldConsumeRetry;
    if (index < 0 || ask === undefined || this.#free >= MAX_FREE_RETRIES) {
      this.#decide(error, attemptNumber, index, false);
      return;
    }
    invoke(
      () => ask(error),
      (consume) => this.#decide(error, attemptNumber, index, !consume),
      (broken) => this.#broken(broken),
    );
  }

  /** A matcher or a custom strategy threw (or a strategy returned no number): the call ends with that error rather than hang. */
  #broken(error: unknown): void {
    if (this.#done) return;
    this.#finish();
    this.out.reject(error);
  }

  /** Decides on a retry (a `free` one or not) once the error is known to fall to policy `index` (-1: none). */
  #decide(error: unknown, attemptNumber: number, index: number, free: boolean): void {
    // The caller's abort may have ended the call while an async predicate was pending.
    if (this.#done) return;
    const options = this.#options;
    const scope = this.#scope;
    const clock = scope.clock;
    const elapsed = clock.now() - this.#start;
    this.#state ??= new RetryState(options.policies);
    let decision: ReturnType<RetryState["decide"]>;
    try {
      decision = this.#state.decide(
        index,
        error,
        { attempt: attemptNumber, retries: this.#retries, elapsed },
        scope.random,
        free,
      );
    } catch (broken) {
      this.#broken(broken);
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
    if (free) this.#free += 1;
    const { delay } = decision;
    this.#step.retrying(error, this.#retries, delay, attemptNumber, elapsed, decision.policy);
    // A callback may have aborted the caller's signal: stop before sleeping.
    if (this.#done) return;
    if (scope.aborted) {
      this.#finish();
      this.#giveUpAborted(attemptNumber);
      return;
    }
    this.#sleptFrom = clock.now();
    // Made at the first sleep, not with the call: most calls never sleep.
    this.#wakeUp ??= () => this.#wake();
    this.#cancelTimer = clock.setTimer(delay, this.#wakeUp);
  }

  /** Adds the backoff sleep in progress, if any, to the time slept. */
  #woke(): void {
    if (this.#sleptFrom === undefined) return;
    this.#idle += this.#scope.clock.now() - this.#sleptFrom;
    this.#sleptFrom = undefined;
  }

  #wake(): void {
    this.#cancelTimer = undefined;
    if (this.#done) return;
    this.#woke();
    this.#retries += 1;
    this.#attemptNow();
  }

  #onAbort(): void {
    if (this.#done) return;
    this.#unwatch = undefined;
    // The attempt's scope aborts with this one, right after.
    this.#attempt = undefined;
    this.#finish();
    this.#giveUpAborted(this.#waitingFirst ? 0 : this.#retries + (this.#announcing ? 0 : 1));
  }

  #giveUpAborted(attempts: number): void {
    if (Number.isNaN(this.#start)) this.#start = this.#scope.clock.now();
    this.#woke();
    const reason = this.#scope.reason;
    this.#step.gaveUp(reason, "aborted", attempts, this.#scope.clock.now() - this.#start, this.#idle, false);
    this.out.reject(reason);
  }

  /** Ends the call with the last outcome: the value `retryOnResult` kept rejecting, or the error as it was. */
  #giveUp(error: unknown, reason: GiveUpReason, attempts: number, elapsed: number): void {
    this.#finish();
    if (error instanceof RetryableResultError) {
      this.#step.gaveUp(error.value, reason, attempts, elapsed, this.#idle, true);
      this.out.resolve(error.value as T);
      return;
    }
    const final = unwrapPermanent(error);
    report(final, { reason, attempts, elapsed, idle: this.#idle });
    addCallSite(final, this.#site);
    this.#step.gaveUp(final, reason, attempts, elapsed, this.#idle, false);
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

/** What hears one attempt's outcome for its call. */
class AttemptOutcome<T> implements OutcomeListener<T> {
  readonly #call: RetryCall<T>;
  readonly #attempt: Scope;

  constructor(call: RetryCall<T>, attempt: Scope) {
    this.#call = call;
    this.#attempt = attempt;
  }

  heard(value: T): void {
    this.#call.attemptSucceeded(this.#attempt, value);
  }

  failed(error: unknown): void {
    this.#call.attemptFailed(this.#attempt, error);
  }
}
