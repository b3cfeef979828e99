/**
 * A first attempt made without the pipeline's machinery around it. Almost every call succeeds at once, so
 * `retry(op, { maxRetries: 3 })` (and the same with `timeout`, and a pipeline of those steps executed
 * without options) runs its first attempt here, in a small context of its own, at the cost of one `then`
 * (three with a timeout). At the first failure the call goes on in the retry step's loop exactly as the
 * pipeline runs it: what a user sees (values, errors, reports, events, the context's fields) is the same
 * either way.
 *
 * Used only when nothing else needs the first attempt: no budget, no first delay, no `onAttempt` or
 * `retryOnResult`, nobody to tell of a success or listening to the retry step, and no step but a retry
 * step and (on the real clocks, for a limit above 0) a per-attempt timeout. The caller's signal is watched
 * by the attempt itself: an abort ends the call at once, as the loop would end it.
 */

import { type AbortWatcher, unwatch, watch } from "../core/abort.js";
import { type CallSite, callSite } from "../core/call-site.js";
import {
  type Clock,
  deadlinesOf,
  sharedStart,
  sharedStartFits,
  startWasReal,
  systemClock,
  unrefClock,
} from "../core/clock.js";
import type { Deadline, DeadlineHost, DeadlineQueue } from "../core/deadlines.js";
import { PermanentError, TimeoutError, withoutStack } from "../core/errors.js";
import { settleWith } from "../core/invoke.js";
import type { Random } from "../core/random.js";
import { type AbortKind, AS_SCOPE, type ExecutionContext, RootScope, Scope } from "../pipeline/context.js";
import { atEdge, guardAtEdge, settleAtEdge } from "../pipeline/pipeline.js";
import type { Next } from "../pipeline/step.js";
import type { ResolvedRetry } from "../policy/options.js";
import type { TimeoutStep } from "../timeout/step.js";
import { RetryCall, type RetryCallStep } from "./call.js";

/**
 * What the first attempts of one short form (or pipeline) share, made once with it: the retry step, the
 * timeout step if any, and the clock and randomness its calls run on.
 */
export class FirstPlan<T> {
  readonly step: RetryCallStep<T>;
  readonly limit: TimeoutStep | undefined;
  readonly clock: Clock;
  readonly random: Random;
  /** The shared deadline queue of the clock, when there is a timeout and the clock has one. */
  readonly queue: DeadlineQueue | undefined;
  /**
   * Whether a call may start from the shared reading of the real clock: a real clock, and no limit that
   * depends on the start (see `sharedStart`).
   */
  readonly sharedStart: boolean;
  /**
   * Whether the timeout step, if any, lets a first attempt run here: one on a clock with a deadline queue,
   * for a limit above 0, neither cooperative nor aborting on return.
   */
  readonly direct: boolean;
  /**
   * A call's own callbacks and predicates, checked, when they are not the step's (a callback written
   * inline; see `bind`): what the call goes on with after its first attempt (see `retryStep`).
   */
  readonly bound: ResolvedRetry<T> | undefined;

  constructor(
    step: RetryCallStep<T>,
    limit: TimeoutStep | undefined,
    clock: Clock,
    random: Random,
    bound?: ResolvedRetry<T>,
  ) {
    this.step = step;
    this.limit = limit;
    this.clock = clock;
    this.random = random;
    this.queue = limit === undefined ? undefined : deadlinesOf(clock);
    this.sharedStart = (clock === systemClock || clock === unrefClock) && !step.timeBound;
    this.direct =
      limit === undefined ||
      (this.queue !== undefined && limit.ms > 0 && !limit.cooperative && !limit.abortOnReturn);
    this.bound = bound;
  }

  /**
   * This plan for one call whose options differ from the step's only in their callbacks and predicates,
   * resolved as `bound`, when its first attempt runs here with them as without them (`direct`, and plain
   * with either): the step around them is made only if the call needs one (see `retryStep`).
   */
  bind(bound: ResolvedRetry<T>): FirstPlan<T> {
    return new FirstPlan(this.step, this.limit, this.clock, this.random, bound);
  }

  /**
   * The retry step a call goes on with once its first attempt failed, or that hears of the caller's abort:
   * `step`, or one made now around `bound`. A first attempt made here uses none of the step's callbacks,
   * so a call that succeeds at once (almost every call) makes no step of its own.
   */
  retryStep(): RetryCallStep<T> {
    const bound = this.bound;
    return bound === undefined ? this.step : this.step.rebound(bound);
  }

  /** Runs a call's first attempt here, on the caller's `signal` if any; undefined when it cannot (see `runFirst`). */
  run(operation: Next<T>, signal?: AbortSignal): Promise<T> | undefined {
    return runFirst(this, operation, signal);
  }

  /** What the retry loop runs for each attempt after the first: the operation, through the timeout step if any. */
  loop(operation: Next<T>): Next<T> {
    const limit = this.limit;
    return limit === undefined ? operation : (scope) => limit.execute(operation, scope);
  }
}

/**
 * The context of a first attempt made here: the fields a pipeline's would have (attempt 1, no retries,
 * the policy's `maxRetries` left), a signal made only when read, and `bail`.
 */
class FirstAttempt<T> implements ExecutionContext {
  readonly plan: FirstPlan<T>;
  readonly operation: Next<T>;
  /** When the call began. */
  start = 0;
  /**
   * Whether the start is a reading of the `performance` there was when robustly loaded (see `sharedStart`);
   * undefined for a start read from a clock directly (a timed attempt keeps the host it read it from).
   */
  real: boolean | undefined = undefined;
  /** What `bail` left, for the loop to end the call with. */
  bailed: PermanentError | undefined = undefined;
  /**
   * What few calls need (a signal, `bail`, a scope for a pipeline or step the context is passed to), made
   * when first asked for.
   */
  extras: { controller?: AbortController; bail?: (error?: unknown) => void; scope?: Scope } | undefined =
    undefined;

  constructor(plan: FirstPlan<T>, operation: Next<T>) {
    this.plan = plan;
    this.operation = operation;
  }

  get attempt(): number {
    return 1;
  }
  get retries(): number {
    return 0;
  }
  get elapsed(): number {
    return 0;
  }
  get hedge(): number {
    return 1;
  }
  get retriesLeft(): number {
    return this.plan.step.maxRetries;
  }
  get timeout(): number {
    return Number.POSITIVE_INFINITY;
  }
  get clock(): Clock {
    return this.plan.clock;
  }
  get random(): Random {
    return this.plan.random;
  }

  get signal(): AbortSignal {
    this.extras ??= {};
    const extras = this.extras;
    extras.controller ??= new AbortController();
    return extras.controller.signal;
  }

  get bail(): (error?: unknown) => void {
    this.extras ??= {};
    const extras = this.extras;
    extras.bail ??= (error?: unknown) => {
      this.bailed ??= error instanceof PermanentError ? error : new PermanentError(error);
    };
    return extras.bail;
  }

  /**
   * The scope a pipeline or step this context is passed to runs in: a scope of this attempt, as a pipeline
   * would have made it (its `bail` stops this call; with a time limit, it aborts when the time runs out).
   */
  [AS_SCOPE](): Scope {
    this.extras ??= {};
    const extras = this.extras;
    if (extras.scope === undefined) {
      const plan = this.plan;
      const scope = new Scope(plan.clock, plan.random).child(
        { retriesLeft: plan.step.maxRetries, timeout: this.timeout },
        this.abortable(),
      );
      scope.retryAttempt = true;
      extras.scope = scope;
    }
    return extras.scope;
  }

  /** What `bail` left, on this context or on its scope; undefined when it was not called. */
  bailedWith(): PermanentError | undefined {
    return this.bailed ?? this.extras?.scope?.bailed;
  }

  /** Whether something may abort the attempt before it answers (a time limit, the caller's signal). */
  protected abortable(): boolean {
    return false;
  }

  /** Goes on in the retry step's loop from this attempt, which failed with `error` (or bailed). */
  resume(error: unknown, site: CallSite | undefined): PromiseLike<T> {
    const plan = this.plan;
    const call = new RetryCall(
      plan.retryStep(),
      plan.loop(this.operation),
      new Scope(plan.clock, plan.random),
      this.began(),
    );
    call.resume(this.bailedWith() ?? error, site);
    return call.out;
  }

  /** The start, or now when it is a reading of a clock replaced since (fake timers), which cannot be compared with it. */
  began(): number {
    const real = this.real;
    return real === undefined || sharedStartFits(real) ? this.start : this.plan.clock.now();
  }

  /** The attempt answered `value`, which ends the call: a listener that came while it ran hears of it. */
  succeeded(value: T): T {
    const step = this.plan.step;
    if (!step.plainFirstAttempt()) step.accepted(value, 1, this.plan.clock, this.began(), 0);
    return value;
  }
}

/**
 * A first attempt the caller's promise may have to end before the operation answers: here, one with a time
 * limit, also its deadline in the clock's shared queue (see `CallerFirstAttempt` for the caller's signal).
 * Its own promise settles when the operation answers or the time runs out, whichever comes first.
 */
class WatchedFirstAttempt<T> extends FirstAttempt<T> implements Deadline {
  at = 0;
  prev: Deadline | undefined = undefined;
  next: Deadline | undefined = undefined;
  lane: Deadline["lane"] = undefined;
  /** The attempt has answered, run out of time or been aborted by the caller. */
  done = false;
  /** Settle the promise the call waits on for this attempt. */
  resolve: ((value: T) => void) | undefined = undefined;
  reject: ((error: unknown) => void) | undefined = undefined;
  /** Why the attempt was aborted (a `TimeoutError`, the caller's reason); undefined while it was not. */
  reason: unknown = undefined;
  /**
   * The operation's answer is being heard while the call is made (a value, or a thenable that settles at
   * once): a failure heard then goes on in the loop at once, as the loop would hear it (see `watched`).
   */
  answering = false;
  /** The attempt failed (or bailed) while the call was made; `failure` is its error. */
  failedAtOnce = false;
  failure: unknown = undefined;
  /** The clock and timers the deadline, and the start, were read from (with a time limit). */
  host: DeadlineHost | undefined = undefined;

  /** The start, or now when the clock was replaced since (fake timers), which cannot be compared with it. */
  override began(): number {
    if (this.host === undefined) return super.began();
    return this.plan.queue?.currentHost(true) === this.host ? this.start : this.plan.clock.now();
  }

  override get timeout(): number {
    return this.plan.limit?.ms ?? Number.POSITIVE_INFINITY;
  }

  protected override abortable(): boolean {
    return true;
  }

  /** Why `reason` aborted the attempt. */
  protected abortKind(): AbortKind {
    return "timeout";
  }

  override [AS_SCOPE](): Scope {
    const scope = super[AS_SCOPE]();
    if (this.reason !== undefined) scope.abort(this.reason, this.abortKind());
    return scope;
  }

  override get signal(): AbortSignal {
    this.extras ??= {};
    const extras = this.extras;
    if (extras.controller === undefined) {
      extras.controller = new AbortController();
      if (this.reason !== undefined) extras.controller.abort(this.reason);
    }
    return extras.controller.signal;
  }

  /** Marks the attempt over, out of the deadline queue. */
  end(): void {
    this.done = true;
    this.plan.queue?.remove(this);
  }

  /**
   * The operation answered in time: the attempt's promise fulfils with the value, or, when the operation
   * bailed, rejects, so that the call goes on in the loop (which ends it with what `bail` left).
   */
  answered(value: T): void {
    if (this.done) return;
    if (this.bailedWith() !== undefined) this.failed(undefined);
    else {
      this.end();
      (this.resolve as (value: T) => void)(this.succeeded(value));
    }
  }

  /** The operation failed in time. */
  failed(error: unknown): void {
    if (this.done) return;
    this.end();
    if (!this.answering) (this.reject as (error: unknown) => void)(error);
    else {
      this.failedAtOnce = true;
      this.failure = error;
    }
  }

  /** Its time ran out: the signal aborts and the attempt fails with a `TimeoutError`. */
  expire(): void {
    if (this.done) return;
    const limit = this.plan.limit as TimeoutStep;
    // Made in a timer callback, where a stack says nothing about the caller: none is captured.
    const error = withoutStack(() => new TimeoutError(limit.ms));
    // Aborted while the caller's signal is still watched, as the loop still watches it then: a caller's
    // abort that the attempt's signal sets off ends the call first (and then the listeners hear of the time).
    this.abortWith(error);
    const aborted = this.done;
    this.end();
    limit.timedOut(1);
    if (!aborted) (this.reject as (error: unknown) => void)(error);
  }

  /** Aborts the attempt's signal (and scope, if made) with `reason`. */
  protected abortWith(reason: unknown): void {
    this.reason = reason;
    this.extras?.controller?.abort(reason);
    this.extras?.scope?.abort(reason, this.abortKind());
  }
}

/**
 * A first attempt the caller's signal may abort (with a time limit too, or not): an abort ends the call
 * at once, as the retry loop would end it; a failure goes on in the loop on a root scope of that signal.
 */
class CallerFirstAttempt<T> extends WatchedFirstAttempt<T> implements AbortWatcher {
  /** The caller's signal, watched while the attempt runs. */
  readonly caller: AbortSignal;
  /** The caller aborted it: its promise rejected with the signal's reason, and `onGiveUp` was told. */
  abortedByCaller = false;
  /** The attempt answered a value that the loop would hear of a microtask later (see `answered`). */
  heardLate = false;

  constructor(plan: FirstPlan<T>, operation: Next<T>, caller: AbortSignal) {
    super(plan, operation);
    this.caller = caller;
  }

  protected override abortKind(): AbortKind {
    return this.abortedByCaller ? "caller" : "timeout";
  }

  /** Marks the attempt over: out of the deadline queue, and the caller's signal no longer watched. */
  override end(): void {
    this.done = true;
    if (this.lane !== undefined) this.plan.queue?.remove(this);
    unwatch(this.caller, this);
  }

  /**
   * The caller aborted: as the retry loop does, `onGiveUp` hears of it first, then the attempt's signal
   * aborts, and the caller's promise rejects at once with the signal's reason.
   */
  signalAborted(): void {
    if (this.done) return;
    this.end();
    const reason = this.caller.reason;
    this.abortedByCaller = true;
    this.giveUpAborted(reason);
    // Not again when the attempt's time ran out first, whose abort set this one off (see `expire`).
    if (this.reason === undefined) this.abortWith(reason);
    (this.reject as (error: unknown) => void)(reason);
  }

  /**
   * The attempt answered `value` after the call was made: with a time limit, the loop hears of it a
   * microtask later, through the timeout step, so that a caller's abort meanwhile still ends the call.
   */
  override answered(value: T): void {
    if (!this.answering && this.plan.limit !== undefined) this.heardLate = true;
    super.answered(value);
  }

  /** The value the caller's promise fulfils with (see `answered`). */
  delivered(value: T): T {
    const caller = this.caller;
    if (this.heardLate && caller.aborted) {
      this.giveUpAborted(caller.reason);
      atEdge(caller.reason);
    }
    return value;
  }

  /** Tells `onGiveUp` (and `giveUp` listeners) that the caller's abort ended the call in its first attempt. */
  giveUpAborted(reason: unknown): void {
    const clock = this.plan.clock;
    this.plan.retryStep().gaveUp(reason, "aborted", 1, clock.now() - this.began(), 0, false);
  }

  /**
   * Goes on from this attempt, which failed with `error` (or bailed, or was aborted by the caller): in the
   * retry loop, on a root scope of the caller's signal.
   */
  override resume(error: unknown, site: CallSite | undefined): PromiseLike<T> {
    // Thrown in a reaction to a promise the caller awaits, as the pipeline's edge throws it.
    if (this.abortedByCaller) atEdge(error);
    const caller = this.caller;
    const plan = this.plan;
    if (caller.aborted) {
      // Aborted after the attempt failed (or bailed), before this: with a time limit, the loop hears of the
      // attempt through the timeout step, a microtask after it failed; the abort came first.
      if (plan.limit !== undefined) {
        this.giveUpAborted(caller.reason);
        atEdge(caller.reason);
      }
      // Without one, the loop hears of the failure as it comes: it goes on from it, then hears of the abort.
      const scope = new Scope(plan.clock, plan.random, undefined, undefined, true);
      const call = new RetryCall(plan.retryStep(), plan.loop(this.operation), scope, this.began());
      call.resume(this.bailedWith() ?? error, site);
      const out = guardAtEdge(scope, call.out, true);
      scope.abort(caller.reason, "caller");
      return out;
    }
    const scope = new RootScope(plan.clock, plan.random, caller);
    const call = new RetryCall(plan.retryStep(), plan.loop(this.operation), scope, this.began());
    call.resume(this.bailedWith() ?? error, site);
    return guardAtEdge(scope, call.out, true);
  }
}

/**
 * Runs the first attempt of a short form, watching `signal` (the caller's) if given; undefined when this
 * call cannot run here (the caller then runs it through its pipeline).
 */
export function runFirst<T>(
  plan: FirstPlan<T>,
  operation: Next<T>,
  signal?: AbortSignal,
): Promise<T> | undefined {
  if (!plan.direct || !plan.step.plainFirstAttempt()) return undefined;
  const limit = plan.limit;
  if (limit === undefined && signal === undefined) return untimed(plan, operation);
  if (signal?.aborted) return Promise.reject(signal.reason);
  return watched(plan, operation, limit, signal);
}

/** `runFirst` with a per-attempt timeout (on a real clock, for a limit above 0) or a caller's signal, or both. */
function watched<T>(
  plan: FirstPlan<T>,
  operation: Next<T>,
  limit: TimeoutStep | undefined,
  signal: AbortSignal | undefined,
): Promise<T> {
  const context =
    signal === undefined
      ? new WatchedFirstAttempt<T>(plan, operation)
      : new CallerFirstAttempt<T>(plan, operation, signal);
  if (limit !== undefined) {
    // The deadline's reading of the clock is the call's start, compared with later readings only while the
    // clock is still the same (fake timers may replace it meanwhile).
    context.start = (plan.queue as DeadlineQueue).add(context, limit.ms);
    context.host = (context.lane as { host: DeadlineHost }).host;
  } else if (plan.sharedStart) {
    context.start = sharedStart();
    context.real = startWasReal;
  } else context.start = plan.clock.now();
  // Made before the attempt, which may abort the caller's signal as it runs.
  capturing = context as WatchedFirstAttempt<unknown>;
  const attempt = new Promise<T>(capture as (resolve: (v: T) => void, reject: (e: unknown) => void) => void);
  capturing = undefined;
  if (signal !== undefined) watch(signal, context as CallerFirstAttempt<T>);
  const resume = (error: unknown): PromiseLike<T> => context.resume(error, callSite(resume));
  let result: T | PromiseLike<T>;
  try {
    result = operation(context);
  } catch (error) {
    if (context.done) return attempt.then(undefined, resume);
    // Gone on from here, where the caller's frames are on the stack: the attempt's promise is left unsettled.
    context.end();
    return settleAtEdge(context.resume(error, callSite(watched)), true);
  }
  // Observed even when the attempt ended first, so that a late rejection is never unhandled. What the
  // operation answers is heard when the loop would hear it: a value, or a thenable that settles at once, at
  // once (a caller's abort in the next microtask comes after it); a promise when it settles, or, with a
  // time limit, a microtask later, through the timeout step's own promise.
  if (result instanceof Promise) {
    context.answering = limit === undefined;
    try {
      result.then(
        (value: T) => context.answered(value),
        (error: unknown) => context.failed(error),
      );
    } catch (error) {
      // A promise whose `then` throws (a hostile subclass's): that is the attempt's error, as `await` has it.
      context.failed(error);
    }
  } else {
    context.answering = true;
    settleWith(
      result,
      (value: T) => context.answered(value),
      (error: unknown) => context.failed(error),
    );
  }
  context.answering = false;
  // Failed (or bailed) at once: gone on from here, where the caller's frames are on the stack.
  if (context.failedAtOnce) return settleAtEdge(context.resume(context.failure, callSite(watched)), true);
  // With a caller's signal and a time limit, a value is checked against an abort that came meanwhile;
  // otherwise it needs no handler of its own here: `answered` looked for a `bail` already.
  if (signal !== undefined && limit !== undefined) {
    const caller = context as CallerFirstAttempt<T>;
    return attempt.then((value) => caller.delivered(value), resume);
  }
  return attempt.then(undefined, resume);
}

let capturing: WatchedFirstAttempt<unknown> | undefined;
function capture(resolve: (value: unknown) => void, reject: (error: unknown) => void): void {
  const context = capturing as WatchedFirstAttempt<unknown>;
  context.resolve = resolve;
  context.reject = reject;
}

function untimed<T>(plan: FirstPlan<T>, operation: Next<T>): Promise<T> {
  const context = new FirstAttempt<T>(plan, operation);
  // No limit depends on the start when no policy has a `maxElapsed`: a shared reading does.
  if (plan.sharedStart) {
    context.start = sharedStart();
    context.real = startWasReal;
  } else context.start = plan.clock.now();
  let result: T | PromiseLike<T>;
  try {
    result = operation(context);
  } catch (error) {
    return settleAtEdge(context.resume(error, callSite(untimed)), true);
  }
  // A value, or a thenable of another kind, as a promise.
  try {
    return settled(context, result instanceof Promise ? result : Promise.resolve(result));
  } catch (error) {
    // A promise whose `then` throws (a hostile subclass's): that is the attempt's error, as `await` has it.
    return settleAtEdge(context.resume(error, callSite(untimed)), true);
  }
}

/**
 * The caller's promise: the first attempt's value, or, once it failed (or bailed), the retry loop's
 * outcome. The failure is heard in a reaction to a promise the caller awaits, where the caller's frames
 * can be captured for the error the call may end with.
 */
function settled<T>(context: FirstAttempt<T>, answer: Promise<T>): Promise<T> {
  const resume = (error: unknown): PromiseLike<T> => context.resume(error, callSite(resume));
  return answer.then(
    (value) => (context.bailedWith() === undefined ? context.succeeded(value) : resume(undefined)),
    resume,
  );
}
