/**
 * One call of the retry loop, the access wrapper's hot path: make an attempt (under its time limit, while
 * the caller still wants it), classify the outcome, ask the policy, compute the delay, sleep on the clock,
 * again. `retry(op, options)` runs it directly; a pipeline's retry step runs it in the step's scope.
 *
 * Written with callbacks rather than `await`, because the same loop must run in two worlds: under a real
 * or virtual clock with promises, and in the simulator, whose operations settle synchronously on its own
 * event queue. Nothing here waits for a microtask, so the simulator runs this very code, event by event.
 *
 * Each attempt's context is a small object (`Attempt`) whose signal is made only when read. A step or a
 * pipeline the operation passes it to makes a scope of that attempt (see pipeline/link.ts), so that a call
 * that runs no step inside its attempts carries no scope code.
 */

import { BrokenCircuitError } from "../breaker/errors.js";
import { type DefaultBudget, type DefaultBudgets, processBudgets } from "../budget/default.js";
import { type AbortWatcher, unwatch, watch } from "../core/abort.js";
import { addCallSite, type CallSite, callSite } from "../core/call-site.js";
import {
  type CancelTimer,
  type Clock,
  deadlinesOf,
  sharedStart,
  sharedStartFits,
  startWasReal,
  systemClock,
  unrefClock,
} from "../core/clock.js";
import type { Deadline, DeadlineQueue } from "../core/deadlines.js";
import { atEdge } from "../core/edge.js";
import {
  PermanentError,
  RetryableResultError,
  TimeoutError,
  unwrapPermanent,
  withoutStack,
} from "../core/errors.js";
import { type Events, safeCall } from "../core/events.js";
import { Eventual, invoke, isThenable, settleWith } from "../core/invoke.js";
import type { Random } from "../core/random.js";
import { type GiveUpReason, type RetryStats, report } from "../core/report.js";
import type { ExecutionContext, Scope } from "../pipeline/context.js";
import {
  type AbortKind,
  type BudgetClaim,
  LINKED,
  type LinkedAttempt,
  type LinkedScope,
} from "../pipeline/link.js";
import type { Next } from "../pipeline/step.js";
import { firstMatch, RetryState } from "../policy/decide.js";
import type { AttemptEvent, GiveUpEvent } from "../policy/events.js";
import { MAX_FREE_RETRIES, type ResolvedRetry, type RetryEvent } from "../policy/options.js";

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

/** A per-attempt time limit the loop keeps itself: `retry`'s `timeout`, or a pipeline's timeout step. */
export interface TimeLimit {
  /** The limit in ms, finite and >= 0. */
  readonly ms: number;
  /** Told when the limit ran out on `attempt` (a timeout step's listeners). */
  timedOut?(attempt: number): void;
}

/** Where a call settles: an `Eventual` (inside a pipeline) or the caller's promise. */
interface Out<T> {
  resolve(value: T): void;
  reject(error: unknown): void;
}

/** The call `capture` hands the resolving functions of a new promise to (no closure per call). */
let capturing: RetryCall<unknown> | undefined;
function capture(resolve: (value: unknown) => void, reject: (error: unknown) => void): void {
  (capturing as RetryCall<unknown>).out = { resolve, reject };
}

/**
 * One call: made with the options, the events to tell (a retry step's; none for `retry`'s), what to run
 * for each attempt, and what may end it early: the scope of the retry step (`outer`), or the caller's
 * signal. `run()` (at the caller's edge) or `start()` (inside a pipeline) makes the first attempt. The
 * outcome settles exactly once, and the call leaves no timer, deadline or listener behind.
 */
export class RetryCall<T> implements AbortWatcher {
  /** Its options, resolved: the policies, and the callbacks and predicates the call tells and asks. */
  readonly options: ResolvedRetry<T>;
  readonly #events: Events<RetryEvents<T>> | undefined;
  readonly #operation: Next<T>;
  readonly clock: Clock;
  readonly random: Random;
  /** The scope of the retry step that runs this call; undefined for `retry`'s own calls. */
  readonly outer: Scope | undefined;
  readonly #callerSignal: AbortSignal | undefined;
  readonly limit: TimeLimit | undefined;
  /** The clock's shared deadline queue, for a time limit above 0 on a clock that has one. */
  readonly queue: DeadlineQueue | undefined;
  /** Where the outcome goes; set when the call is made to settle through the loop. */
  declare out: Out<T> | undefined;
  /** When the first attempt began. */
  #startedAt = 0;
  /**
   * Whether `startedAt` is a shared reading of the real clock (see `sharedStart`), and whether that clock was
   * the one in place; undefined once the start was checked against a replaced clock (or was read directly).
   */
  declare private real: boolean | undefined;
  #retried = 0;
  /** The attempt in progress; undefined while sleeping or once settled. */
  current: Attempt<T> | undefined = undefined;
  #settled = false;
  // Set only once a call needs them, so that one whose first attempt succeeds at once sets none of them.
  declare private state: RetryState | undefined;
  declare private cancelTimer: CancelTimer | undefined;
  /** What the backoff timer calls, made at the first sleep. */
  declare private wakeUp: (() => void) | undefined;
  /** Stops hearing of the retry step's scope's abort. */
  declare private unwatchOuter: (() => void) | undefined;
  /** Whether the caller's signal is watched. */
  declare private watching: boolean | undefined;
  /** When the backoff sleep in progress began. */
  declare private sleptFrom: number | undefined;
  /** Sleeping the first delay, before any attempt (`delayFirstAttempt`). */
  declare private waitingFirst: boolean | undefined;
  /** `onAttempt` and the `attempt` event are being told of the next attempt, which has not started yet. */
  declare private announcing: boolean | undefined;
  /** The caller's frames, captured at the first failure when the call is made at the caller's edge. */
  declare private site: CallSite | undefined;
  /** What the first attempt made by `direct` answered, when it was no native promise. */
  declare private pending: unknown;
  /** Whether the last attempt answered a value, not a thenable nor a throw. */
  declare private answeredValue: boolean | undefined;
  /** Milliseconds slept in backoffs (the first delay of `delayFirstAttempt` aside). */
  #idle = 0;
  /** Retries `shouldConsumeRetry` made free. */
  #free = 0;
  /** The target's default budget on this call's clock, when the options name no budget (nor `false`). */
  readonly #defaultBudget: DefaultBudget | undefined;

  constructor(
    options: ResolvedRetry<T>,
    events: Events<RetryEvents<T>> | undefined,
    next: Next<T>,
    clock: Clock,
    random: Random,
    outer: Scope | undefined,
    signal: AbortSignal | undefined,
    limit: TimeLimit | undefined,
    budgets: DefaultBudgets = processBudgets,
  ) {
    this.options = options;
    this.#events = events;
    this.#operation = next;
    this.clock = clock;
    this.random = random;
    this.outer = outer;
    this.#callerSignal = signal;
    this.limit = limit;
    this.queue = limit !== undefined && limit.ms > 0 ? deadlinesOf(clock) : undefined;
    this.#defaultBudget = options.defaultBudget ? budgets.of(clock) : undefined;
  }

  /**
   * Runs the call for a caller who awaits it: its promise. When nothing can end the call before its first
   * attempt answers (no signal, no time limit, nothing to tell before or after it), the promise is that
   * attempt's own, chained once: almost every call succeeds at once, and pays for nothing else.
   */
  run(): Promise<T> {
    const signal = this.#callerSignal;
    if (signal?.aborted) return Promise.reject(signal.reason);
    this.#begin();
    if (signal === undefined && this.limit === undefined && this.#plainFirst()) {
      const chained = this.#direct();
      if (chained !== undefined) return chained;
    }
    capturing = this as RetryCall<unknown>;
    const promise = new Promise<T>(
      capture as (resolve: (v: T) => void, reject: (e: unknown) => void) => void,
    );
    capturing = undefined;
    this.#go();
    // A reaction to a promise the caller awaits: the caller's frames go on an error the call ends with.
    return promise.then(undefined, atEdge);
  }

  /**
   * Runs the call inside a pipeline (in `outer`): an `Eventual` of its outcome, or, when nothing can end the
   * call before its first attempt answers with a promise, that promise chained once.
   */
  start(): T | PromiseLike<T> {
    this.#begin();
    const outer = this.outer;
    if ((outer === undefined || !outer.canAbort) && this.limit === undefined && this.#plainFirst()) {
      const chained = this.#direct();
      if (chained !== undefined) return chained;
    }
    const out = new Eventual<T>();
    this.out = out;
    this.#go();
    // A value the operation answered synchronously, accepted, is the step's answer as it is; a thenable's
    // (one that settled synchronously, as in the simulator) stays in the `Eventual`.
    return out.fulfilled && this.answeredValue ? (out.value as T) : out;
  }

  /**
   * Goes on once the outcome has somewhere to go: hears the first attempt `direct` made, when it answered
   * no promise, or watches what may end the call early and makes the first attempt.
   */
  #go(): void {
    const made = this.current;
    if (made === undefined) {
      if (this.#watch()) this.#firstAttempt();
      return;
    }
    const pending = this.pending;
    this.pending = undefined;
    this.answeredValue = !(pending instanceof Thrown) && !isThenable(pending);
    made.listen(pending);
  }

  /** Reads the start: shared between calls made close together when nothing depends on its precision. */
  #begin(): void {
    const clock = this.clock;
    const options = this.options;
    if (
      (clock === systemClock || clock === unrefClock) &&
      !options.timeBound &&
      this.options.onSuccess === undefined
    ) {
      this.#startedAt = sharedStart();
      this.real = startWasReal;
    } else this.#startedAt = clock.now();
    // The default budget counts the call as traffic, at the time it began on the budget's clock.
    this.#defaultBudget?.request(this.#startedAt);
  }

  /** Whether the first attempt needs nothing of the loop but a context and its outcome. */
  #plainFirst(): boolean {
    const options = this.options;
    return (
      options.plainPolicy &&
      options.onAttempt === undefined &&
      options.retryOnResult === undefined &&
      options.onSuccess === undefined &&
      (this.#events === undefined || !this.#events.any())
    );
  }

  /**
   * Makes the first attempt with nothing around it, for a call nothing can end before it answers. A native
   * promise is chained (its value is the call's, its failure goes on in the loop); anything else is left
   * in `pending` for `go`, and undefined returned.
   */
  #direct(): Promise<T> | undefined {
    const attempt = new Attempt<T>(this, 1, 0, this.options.maxRetries, 0, this.#defaultBudget?.claim);
    this.current = attempt;
    let result: T | PromiseLike<T>;
    try {
      result = this.#operation(attempt);
    } catch (error) {
      this.pending = new Thrown(error);
      return undefined;
    }
    // A native promise only: a subclass's `then` may answer anything, and is heard as any thenable is.
    if (!(result instanceof Promise) || result.constructor !== Promise) {
      this.pending = result;
      return undefined;
    }
    const failed = (error: unknown): PromiseLike<T> => this.#directFailed(attempt, error, callSite(failed));
    try {
      return result.then((value: T) => this.#directValue(attempt, value, failed), failed);
    } catch (error) {
      // A promise whose `then` throws (a hostile subclass's): that is the attempt's error, as `await` has it.
      this.pending = new Thrown(error);
      return undefined;
    }
  }

  /** The first attempt, made by `direct`, answered `value`: the call's, unless it bailed. */
  #directValue(
    attempt: Attempt<T>,
    value: T,
    failed: (error: unknown) => PromiseLike<T>,
  ): T | PromiseLike<T> {
    if (attempt.bailed !== undefined || attempt.scope !== undefined) {
      const bailed = attempt.takeBail();
      if (bailed !== undefined) return failed(bailed);
    }
    return this.#directAccepted(attempt, value);
  }

  /** The first attempt, made by `direct`, answered `value`, which ends the call. */
  #directAccepted(attempt: Attempt<T>, value: T): T {
    this.current = undefined;
    // Made without a time limit: only a scope made of it is to let go. The call's scope cannot abort (or
    // there is none), so nothing outside would abort it once the call has answered: it is not kept.
    attempt.scope?.release();
    this.#settled = true;
    // A listener that came while it ran hears of it.
    if (this.#events?.any() === true) this.#accepted(value, 1);
    return value;
  }

  /**
   * The first attempt, made by `direct`, failed: the loop goes on from it, in a promise the caller's
   * chains on (the error it may end with carries the caller's frames, `site`).
   */
  #directFailed(attempt: Attempt<T>, error: unknown, site: CallSite | undefined): PromiseLike<T> {
    this.site = site;
    const out = new Eventual<T>();
    this.out = out;
    attempt.failed(error);
    return out;
  }

  /** Starts watching what may end the call early; false, with the call ended, when it has already. */
  #watch(): boolean {
    const outer = this.outer;
    if (outer !== undefined) {
      if (outer.aborted) {
        this.#finish();
        this.#giveUpAborted(outer.reason, 0);
        return false;
      }
      if (outer.canAbort)
        this.unwatchOuter = outer.onAbort(() => this.#abortedBy(outer.reason, outer.abortKind ?? "caller"));
    }
    const signal = this.#callerSignal;
    if (signal !== undefined) {
      watch(signal, this);
      this.watching = true;
    }
    return true;
  }

  /** The caller's signal aborted. */
  signalAborted(): void {
    this.watching = false;
    this.#abortedBy((this.#callerSignal as AbortSignal).reason, "caller");
  }

  /** Whether what may end the call early has: the retry step's scope, or the caller's signal. */
  #isAborted(): boolean {
    return this.outer?.aborted === true || this.#callerSignal?.aborted === true;
  }

  /** Why it did. */
  #abortReason(): unknown {
    const outer = this.outer;
    return outer?.aborted === true ? outer.reason : this.#callerSignal?.reason;
  }

  /** Makes the first attempt, after the first delay with `delayFirstAttempt`. */
  #firstAttempt(): void {
    this.#claimBudget();
    const options = this.options;
    if (!options.delayFirstAttempt) {
      this.#attemptNow();
      return;
    }
    this.state = new RetryState(options.policies);
    let delay: number;
    try {
      delay = this.state.firstWait(this.random);
    } catch (broken) {
      this.#broken(broken);
      return;
    }
    this.waitingFirst = true;
    this.cancelTimer = this.clock.setTimer(delay, () => this.#wakeFirst());
  }

  #wakeFirst(): void {
    this.cancelTimer = undefined;
    if (this.#settled) return;
    this.waitingFirst = false;
    this.#startedAt = this.clock.now();
    this.real = undefined;
    this.#attemptNow();
  }

  /**
   * The budget hears of this execution once: a step outside that uses it already counted the request,
   * and then this call reports the attempts' outcomes in its place.
   */
  #claimBudget(): void {
    const budget = this.options.budget;
    if (budget === undefined) return;
    const outer = this.outer?.findClaim(budget);
    if (outer === undefined) budget.request();
    else outer.inner = true;
  }

  /** Milliseconds since the first attempt began. */
  #elapsedNow(): number {
    const real = this.real;
    if (real !== undefined) {
      // A shared reading of a clock replaced since (fake timers) cannot be compared with it: from now on.
      if (!sharedStartFits(real)) this.#startedAt = this.clock.now();
      this.real = undefined;
    }
    return this.clock.now() - this.#startedAt;
  }

  #attemptNow(): void {
    const retries = this.#retried;
    const elapsed = retries === 0 ? 0 : this.#elapsedNow();
    const budget = this.options.budget;
    const claim = budget === undefined ? this.#defaultBudget?.claim : { budget, inner: false };
    const retriesLeft = this.state?.retriesLeft() ?? this.options.maxRetries;
    this.#attempting(retries + 1, retries, retriesLeft, elapsed);
    // A callback may have aborted the caller's signal, which ended the call.
    if (this.#settled) return;
    const limit = this.limit;
    let attempt: Attempt<T>;
    if (limit === undefined)
      attempt = new Attempt<T>(this, retries + 1, retries, retriesLeft, elapsed, claim);
    else {
      const timed = new TimedAttempt<T>(this, retries + 1, retries, retriesLeft, elapsed, claim);
      const queue = this.queue;
      if (queue !== undefined) queue.add(timed, limit.ms);
      else timed.cancel = this.clock.setTimer(limit.ms, () => timed.expire());
      attempt = timed;
    }
    this.current = attempt;
    let result: T | PromiseLike<T>;
    try {
      result = this.#operation(attempt);
    } catch (error) {
      attempt.failed(error);
      return;
    }
    // Written only for what is no promise: a promise's outcome is never the step's answer at once.
    if (!(result instanceof Promise)) this.answeredValue = !isThenable(result);
    attempt.listen(result);
  }

  /** `attempt` answered with `value`. */
  succeeded(attempt: Attempt<T>, value: T): void {
    if (!this.#endAttempt(attempt)) return;
    const reportTo = attempt.claim?.inner === false ? this.options.budget : undefined;
    const bailed = attempt.takeBail();
    if (bailed !== undefined) {
      this.#afterFailure(bailed, attempt.attempt, reportTo);
      return;
    }
    const retryOnResult = this.options.retryOnResult;
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

  /** `attempt` failed with `error`. */
  failed(attempt: Attempt<T>, error: unknown): void {
    if (!this.#endAttempt(attempt)) return;
    this.#afterFailure(
      attempt.takeBail() ?? error,
      attempt.attempt,
      attempt.claim?.inner === false ? this.options.budget : undefined,
    );
  }

  /** Ends `attempt` if it is still the one in progress; false for a late or repeated outcome. */
  #endAttempt(attempt: Attempt<T>): boolean {
    if (this.current !== attempt) return false;
    this.current = undefined;
    attempt.end();
    return true;
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
          if (!this.#settled) this.#judged(value, attemptNumber, Boolean(answer), reportTo);
        },
        (thrown) => {
          if (!this.#settled) this.#afterFailure(thrown, attemptNumber, reportTo);
        },
      );
      return;
    }
    if (verdict) {
      this.#afterFailure(new RetryableResultError(value), attemptNumber, reportTo);
      return;
    }
    // Settled before anyone is told: a callback that aborts the caller's signal cannot undo the success.
    this.#finish();
    this.#accepted(value, attemptNumber);
    reportTo?.success();
    (this.out as Out<T>).resolve(value);
  }

  /** `reportTo`: the budget to tell of the failure, when this call is the one that tells it. */
  #afterFailure(error: unknown, attemptNumber: number, reportTo: { failure(): void } | undefined): void {
    if (this.#isAborted()) {
      this.#finish();
      this.#giveUpAborted(this.#abortReason(), attemptNumber);
      return;
    }
    if (error instanceof BrokenCircuitError) {
      // A breaker inside refused the attempt: nothing reached the service, and retrying into an open
      // circuit only adds load; the call ends with the breaker's error.
      this.#giveUp(error, "breaker", attemptNumber - 1, this.#elapsedNow());
      return;
    }
    reportTo?.failure();
    this.#failedAttempt(error, this.#retried);
    // A callback may have aborted the caller's signal, which ended the call.
    if (this.#settled) return;
    if (error instanceof PermanentError) {
      this.#giveUp(error, "permanent", attemptNumber, this.#elapsedNow());
      return;
    }
    firstMatch(
      this.options.policies,
      error,
      (index) => this.#matched(error, attemptNumber, index),
      (broken) => this.#broken(broken),
    );
  }

  /** Once the error is known to fall to policy `index` (-1: none): asks `shouldConsumeRetry`, if given. */
  #matched(error: unknown, attemptNumber: number, index: number): void {
    // The caller's abort may have ended the call while an async `retryOn` was pending.
    if (this.#settled) return;
    const ask = this.options.shouldConsumeRetry;
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
    if (this.#settled) return;
    this.#finish();
    (this.out as Out<T>).reject(error);
  }

  /** Decides on a retry (a `free` one or not) once the error is known to fall to policy `index` (-1: none). */
  #decide(error: unknown, attemptNumber: number, index: number, free: boolean): void {
    // The caller's abort may have ended the call while an async predicate was pending.
    if (this.#settled) return;
    const options = this.options;
    const elapsed = this.#elapsedNow();
    this.state ??= new RetryState(options.policies);
    let decision: ReturnType<RetryState["decide"]>;
    try {
      decision = this.state.decide(
        index,
        error,
        { attempt: attemptNumber, retries: this.#retried, elapsed },
        this.random,
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
    const budget = options.budget ?? this.#defaultBudget;
    if (budget !== undefined && !budget.tryRetry()) {
      this.#giveUp(error, "budget", attemptNumber, elapsed);
      return;
    }
    if (free) this.#free += 1;
    const { delay } = decision;
    this.#retrying(error, this.#retried, delay, attemptNumber, elapsed, decision.policy);
    // A callback may have aborted the caller's signal: stop before sleeping.
    if (this.#settled) return;
    if (this.#isAborted()) {
      this.#finish();
      this.#giveUpAborted(this.#abortReason(), attemptNumber);
      return;
    }
    const clock = this.clock;
    this.sleptFrom = clock.now();
    // Made at the first sleep, not with the call: most calls never sleep.
    this.wakeUp ??= () => this.#wake();
    this.cancelTimer = clock.setTimer(delay, this.wakeUp);
  }

  /** Adds the backoff sleep in progress, if any, to the time slept. */
  #woke(): void {
    if (this.sleptFrom === undefined) return;
    this.#idle += this.clock.now() - this.sleptFrom;
    this.sleptFrom = undefined;
  }

  #wake(): void {
    this.cancelTimer = undefined;
    if (this.#settled) return;
    this.#woke();
    this.#retried += 1;
    this.#attemptNow();
  }

  /**
   * The retry step's scope or the caller's signal aborted: the call ends at once with `reason`, and the
   * attempt in progress, if any, is aborted with it.
   */
  #abortedBy(reason: unknown, kind: AbortKind): void {
    if (this.#settled) return;
    const attempt = this.current;
    this.current = undefined;
    this.#finish();
    this.#giveUpAborted(reason, this.waitingFirst ? 0 : this.#retried + (this.announcing ? 0 : 1));
    if (attempt !== undefined) {
      attempt.abort(reason, kind);
      attempt.end();
    }
  }

  #giveUpAborted(reason: unknown, attempts: number): void {
    this.#woke();
    this.#gaveUp(reason, "aborted", attempts, this.#elapsedNow(), this.#idle, false);
    (this.out as Out<T>).reject(reason);
  }

  /** Ends the call with the last outcome: the value `retryOnResult` kept rejecting, or the error as it was. */
  #giveUp(error: unknown, reason: GiveUpReason, attempts: number, elapsed: number): void {
    this.#finish();
    if (error instanceof RetryableResultError) {
      this.#gaveUp(error.value, reason, attempts, elapsed, this.#idle, true);
      (this.out as Out<T>).resolve(error.value as T);
      return;
    }
    const final = unwrapPermanent(error);
    report(final, { reason, attempts, elapsed, idle: this.#idle });
    addCallSite(final, this.site);
    this.#gaveUp(final, reason, attempts, elapsed, this.#idle, false);
    (this.out as Out<T>).reject(final);
  }

  /** Marks the call settled and removes its timer and its hooks. */
  #finish(): void {
    this.#settled = true;
    this.cancelTimer?.();
    this.cancelTimer = undefined;
    this.unwatchOuter?.();
    this.unwatchOuter = undefined;
    if (this.watching) {
      this.watching = false;
      unwatch(this.#callerSignal as AbortSignal, this);
    }
  }

  // What the call tells its callbacks and the retry step's listeners. A callback or listener that throws
  // is reported to `onCallbackError` and never changes the call.

  /** When `value` ends the call (retryOnResult did not ask for another attempt). */
  #accepted(value: T, attempt: number): void {
    const options = this.options;
    // Stateful backoffs (a shared ResponsiveBackoff) learn of the success first.
    const hooks = options.successHooks;
    for (let i = 0; i < hooks.length; i++) hooks[i]?.success?.();
    const onSuccess = this.options.onSuccess;
    const events = this.#events;
    const listened = events?.any() === true && events.has("success");
    if (onSuccess === undefined && !listened) return;
    const elapsed = this.#elapsedNow();
    const idle = this.#idle;
    if (onSuccess !== undefined) {
      const stats: RetryStats = { attempts: attempt, elapsed, idle };
      safeCall(this.options.onCallbackError, "onSuccess", () => onSuccess(value, stats));
    }
    if (listened) events?.emit("success", { value, attempt, elapsed, idle });
  }

  /** Before each attempt: `onAttempt` and the `attempt` event. */
  #attempting(attempt: number, retries: number, retriesLeft: number, elapsed: number): void {
    const onAttempt = this.options.onAttempt;
    const events = this.#events;
    const listened = events?.any() === true && events.has("attempt");
    if (onAttempt === undefined && !listened) return;
    const event: AttemptEvent = { attempt, retries, retriesLeft, elapsed };
    // While they are told, the attempt has not started: an abort from them counts only those before.
    this.announcing = true;
    if (onAttempt !== undefined) safeCall(this.options.onCallbackError, "onAttempt", () => onAttempt(event));
    if (listened) events?.emit("attempt", event);
    this.announcing = false;
  }

  /** After every failed attempt: `onError` and the `error` event. */
  #failedAttempt(error: unknown, retries: number): void {
    const onError = this.options.onError;
    if (onError !== undefined)
      safeCall(this.options.onCallbackError, "onError", () => onError(error, retries));
    const events = this.#events;
    if (events?.any() === true && events.has("error")) events.emit("error", { error, retries });
  }

  /** Before a backoff sleep: `onRetry` and the `retry` event. */
  #retrying(
    error: unknown,
    retries: number,
    delay: number,
    attempt: number,
    elapsed: number,
    policy: number,
  ): void {
    const onRetry = this.options.onRetry;
    const events = this.#events;
    const listened = events?.any() === true && events.has("retry");
    if (onRetry === undefined && !listened) return;
    const last = this.options.policies.length - 1;
    const event: RetryEvent = {
      error,
      retries,
      delay,
      attempt,
      elapsed,
      rule: policy === last ? -1 : policy,
    };
    if (onRetry !== undefined) safeCall(this.options.onCallbackError, "onRetry", () => onRetry(event));
    if (listened) events?.emit("retry", event);
  }

  /** When the call stops retrying: `onGiveUp` and the `giveUp` event. */
  #gaveUp(
    outcome: unknown,
    reason: GiveUpReason,
    attempts: number,
    elapsed: number,
    idle: number,
    isValue: boolean,
  ): void {
    const onGiveUp = this.options.onGiveUp;
    const events = this.#events;
    const listened = events?.any() === true && events.has("giveUp");
    if (onGiveUp === undefined && !listened) return;
    const event: GiveUpEvent = { reason, outcome, isValue, attempts, elapsed, idle };
    if (onGiveUp !== undefined) safeCall(this.options.onCallbackError, "onGiveUp", () => onGiveUp(event));
    if (listened) events?.emit("giveUp", event);
  }
}

/** A first attempt's throw, kept for `go` (see `direct`). */
class Thrown {
  readonly error: unknown;
  constructor(error: unknown) {
    this.error = error;
  }
}

/**
 * One attempt's context: the fields the operation reads, a signal made only when read, and `bail`. It hears
 * the attempt's outcome for its call.
 */
class Attempt<T> implements ExecutionContext, LinkedAttempt {
  protected readonly call: RetryCall<T>;
  readonly attempt: number;
  readonly retries: number;
  readonly retriesLeft: number;
  readonly elapsed: number;
  readonly claim: BudgetClaim | undefined;
  // Set only once an attempt needs them, so that one that answers at once sets none of them.
  /** Why it was aborted, and how (`kind` undefined while it was not). */
  declare reason: unknown;
  declare kind: AbortKind | undefined;
  /** The scope a step or pipeline made of it (see pipeline/link.ts). */
  scope: LinkedScope | undefined = undefined;
  /** What `bail` left, for the call to end with. */
  bailed: PermanentError | undefined = undefined;
  declare private controller: AbortController | undefined;
  declare private bailer: ((error?: unknown) => void) | undefined;

  constructor(
    call: RetryCall<T>,
    attempt: number,
    retries: number,
    retriesLeft: number,
    elapsed: number,
    claim: BudgetClaim | undefined,
  ) {
    this.call = call;
    this.attempt = attempt;
    this.retries = retries;
    this.retriesLeft = retriesLeft;
    this.elapsed = elapsed;
    this.claim = claim;
  }

  get [LINKED](): true {
    return true;
  }

  get timeout(): number {
    const call = this.call;
    return call.limit?.ms ?? call.outer?.timeout ?? Number.POSITIVE_INFINITY;
  }

  get hedge(): number {
    return this.call.outer?.hedge ?? 1;
  }

  get clock(): Clock {
    return this.call.clock;
  }

  get random(): Random {
    return this.call.random;
  }

  get parent(): Scope | undefined {
    return this.call.outer;
  }

  get signal(): AbortSignal {
    if (this.controller === undefined) {
      this.controller = new AbortController();
      if (this.kind !== undefined) this.controller.abort(this.reason);
    }
    return this.controller.signal;
  }

  get bail(): (error?: unknown) => void {
    this.bailer ??= (error?: unknown) => {
      this.bailed ??= error instanceof PermanentError ? error : new PermanentError(error);
    };
    return this.bailer;
  }

  /** What `bail` left, on this context or on its scope, taken off it; undefined when it was not called. */
  takeBail(): PermanentError | undefined {
    const bailed = this.bailed ?? (this.scope?.takeBail() as PermanentError | undefined);
    this.bailed = undefined;
    return bailed;
  }

  /** Hears of `result`, what the attempt answered: a value, a promise, an `Eventual` or another thenable. */
  listen(result: unknown): void {
    if (result instanceof Thrown) {
      this.failed(result.error);
      return;
    }
    if (result instanceof Promise) {
      try {
        result.then(
          (value: T) => this.answered(value),
          (error: unknown) => this.failed(error),
        );
      } catch (error) {
        // A promise whose `then` throws (a hostile subclass's): that is the attempt's error.
        this.failed(error);
      }
      return;
    }
    settleWith(
      result as T | PromiseLike<T>,
      (value) => this.answered(value),
      (error) => this.failed(error),
    );
  }

  answered(value: T): void {
    this.call.succeeded(this, value);
  }

  failed(error: unknown): void {
    this.call.failed(this, error);
  }

  /** Aborts its signal and its scope, once. */
  abort(reason: unknown, kind: AbortKind): void {
    if (this.kind !== undefined) return;
    this.reason = reason;
    this.kind = kind;
    this.controller?.abort(reason);
    this.scope?.abort(reason, kind);
  }

  /**
   * The attempt is over: its scope, if one was made, lets go of the one outside, which keeps the attempt in
   * place of the one before (see `Scope.keepAnswered`): should its outcome end the call, a timeout step's
   * `abortOnReturn` outside aborts it once the call has answered.
   */
  end(): void {
    this.scope?.release();
    this.call.outer?.keepAnswered(this);
  }
}

/**
 * An attempt under a time limit: it is itself the deadline in the clock's shared queue (or, on a clock
 * without one, a timer's callback).
 */
class TimedAttempt<T> extends Attempt<T> implements Deadline {
  at = 0;
  prev: Deadline | undefined = undefined;
  next: Deadline | undefined = undefined;
  lane: Deadline["lane"] = undefined;
  /** Cancels its time limit's timer, on a clock without a deadline queue. */
  cancel: CancelTimer | undefined = undefined;

  /** Its time ran out: its signal aborts, then it fails with a `TimeoutError`. */
  expire(): void {
    const call = this.call;
    if (call.current !== this) return;
    const limit = call.limit as TimeLimit;
    // Made in a timer callback, where a stack says nothing about the caller: none is captured.
    const error = withoutStack(() => new TimeoutError(limit.ms));
    // Aborted while the caller's signal is still watched: a caller's abort that the attempt's signal sets
    // off ends the call first (and then the listeners hear of the time).
    this.abort(error, "timeout");
    limit.timedOut?.(this.attempt);
    this.failed(error);
  }

  /** The attempt is over: its time limit goes, and its scope lets go of the one outside. */
  override end(): void {
    if (this.lane !== undefined) this.call.queue?.remove(this);
    this.cancel?.();
    super.end();
  }
}
