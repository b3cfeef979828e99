/**
 * The timeout step: what runs inside it gets `ms` milliseconds. When they run out, its context aborts
 * with a `TimeoutError` and the step fails with that error at once, whether or not what ran inside has
 * stopped (a late answer is dropped). Outside a retry step it limits the whole call; inside, each attempt.
 */
import { type CancelTimer, deadlinesOf } from "../core/clock.js";
import { Deadline, type DeadlineQueue } from "../core/deadlines.js";
import { OptionError, TimeoutError, withoutStack } from "../core/errors.js";
import { type CallbackErrorHandler, type Disposable, Events, warnOnce } from "../core/events.js";
import { Eventual, settleWith } from "../core/invoke.js";
import { checkKeys, read } from "../core/schema.js";
import { type ExecutionContext, type Scope, toRootScope } from "../pipeline/context.js";
import type { Next, Step } from "../pipeline/step.js";
import { TIMEOUT_CHECKS } from "./checks.js";

/** `steps.timeout`'s options. */
export interface TimeoutStepOptions {
  /** The time limit in ms; negative or Infinity = none. Required. */
  ms: number;
  /** Called when the limit runs out; the `timeout` event's short form. */
  onTimeout?: (event: TimeoutEvent) => void;
  /**
   * Cooperative (cockatiel's `TimeoutStrategy.Cooperative`): when the time runs out, the signal aborts
   * with a `TimeoutError` but the step waits for what runs inside to end, and its outcome is the step's.
   * Default false (aggressive): the step rejects with the `TimeoutError` at once, even if what runs inside
   * ignores its signal.
   */
  cooperative?: boolean;
  /**
   * cockatiel's `abortOnReturn`: once what runs inside has answered (a value or an error), abort its signal
   * (with an `AbortError`), so that whatever is still tied to it (a response body, a listener, a child
   * request) is let go. It reaches through the steps inside: behind a retry or a hedge step, the signal
   * aborted is that of the attempt that answered for the call (those before it were let go as they
   * ended). Default false: the signal stays as it is.
   */
  abortOnReturn?: boolean;
  /** Receives what `onTimeout` or a listener threw (or rejected with). Default: one warning line. */
  onCallbackError?: CallbackErrorHandler;
}

/** What the `timeout` event receives. */
export interface TimeoutEvent {
  /** The limit that ran out, ms. */
  readonly timeout: number;
  /** The attempt it cut short (as counted by the nearest retry step outside). */
  readonly attempt: number;
}

export interface TimeoutEvents extends Record<string, unknown> {
  timeout: TimeoutEvent;
}

export class TimeoutStep implements Step {
  /** The limit in ms, Infinity for none. */
  readonly ms: number;
  /** Whether the time running out only aborts the signal, leaving the outcome to what runs inside. */
  readonly cooperative: boolean;
  /** Whether the signal of what runs inside is aborted once it has answered. */
  readonly abortOnReturn: boolean;
  readonly #events: Events<TimeoutEvents>;

  constructor(options: TimeoutStepOptions) {
    checkKeys(TIMEOUT_CHECKS, options);
    this.ms = read(TIMEOUT_CHECKS, "ms", options.ms);
    this.cooperative = read<boolean | undefined>(TIMEOUT_CHECKS, "cooperative", options.cooperative) ?? false;
    this.abortOnReturn =
      read<boolean | undefined>(TIMEOUT_CHECKS, "abortOnReturn", options.abortOnReturn) ?? false;
    read(TIMEOUT_CHECKS, "onTimeout", options.onTimeout);
    read(TIMEOUT_CHECKS, "onCallbackError", options.onCallbackError);
    this.#events = new Events<TimeoutEvents>(options.onCallbackError ?? warnOnce);
    if (options.onTimeout !== undefined) this.#events.on("timeout", options.onTimeout);
  }

  on<K extends keyof TimeoutEvents>(event: K, listener: (payload: TimeoutEvents[K]) => unknown): Disposable {
    return this.#events.on(event, listener);
  }

  execute<T>(next: Next<T>, context: ExecutionContext): T | PromiseLike<T> {
    const scope = toRootScope(context);
    const ms = this.ms;
    if (ms === Number.POSITIVE_INFINITY) return next(scope);
    if (scope.aborted) throw scope.reason;
    return new TimedRun<T>(this, scope, ms).run(next);
  }

  /** Tells the listeners that the limit ran out on `attempt`. */
  timedOut(attempt: number): void {
    if (this.#events.has("timeout")) this.#events.emit("timeout", { timeout: this.ms, attempt });
  }
}

/**
 * One run of what is inside a timeout step, under its limit: the limit is a deadline in the real clock's
 * shared queue (or a timer of its own on any other clock), and the run is its own listener. It answers
 * with an `Eventual` that settles as what runs inside does (a promise, a value, a thenable that settles
 * synchronously as in the simulator): the step adds no microtask between an answer and its caller.
 */
class TimedRun<T> extends Deadline {
  readonly #step: TimeoutStep;
  readonly #ms: number;
  readonly #inner: Scope;
  readonly #scope: Scope;
  #done = false;
  #queue: DeadlineQueue | undefined;
  #cancel: CancelTimer | undefined;
  #unwatch: (() => void) | undefined;
  #resolve: ((value: T) => void) | undefined;
  #reject: ((error: unknown) => void) | undefined;
  #early = false;
  #earlyError: unknown;

  constructor(step: TimeoutStep, scope: Scope, ms: number) {
    super();
    this.#step = step;
    this.#ms = ms;
    this.#scope = scope;
    this.#inner = scope.child({ timeout: ms }, true);
  }

  run(next: Next<T>): T | PromiseLike<T> {
    const scope = this.#scope;
    const ms = this.#ms;
    // Set before anything runs inside, so that on a shared clock the limit is queued before what it limits.
    // A limit of 0 is a timer of its own: it runs out at the next turn of the event loop.
    const queue = ms > 0 ? deadlinesOf(scope.clock) : undefined;
    if (queue === undefined) this.#cancel = scope.clock.setTimer(ms, () => this.expire());
    else {
      this.#queue = queue;
      queue.add(this, ms);
    }
    if (scope.canAbort) {
      this.#unwatch = scope.onAbort(() => {
        if (this.#done) return;
        this.#finish();
        this.#fail(scope.reason);
      });
    }
    let result: T | PromiseLike<T>;
    try {
      result = next(this.#inner);
    } catch (error) {
      return this.#eventual(error, false);
    }
    return this.#eventual(result, true);
  }

  /** Answers through an `Eventual` that hears of `result` (a value, a thenable, or, `ok` false, a throw). */
  #eventual(result: unknown, ok: boolean): Eventual<T> {
    const out = new Eventual<T>();
    this.#resolve = (value) => out.resolve(value);
    this.#reject = (error) => out.reject(error);
    if (this.#early) out.reject(this.#earlyError);
    if (!ok) this.#failed(result);
    // Heard even when the run ended first, so that a late rejection is never unhandled.
    else
      settleWith(
        result as T | PromiseLike<T>,
        (value) => this.#succeeded(value),
        (error) => this.#failed(error),
      );
    return out;
  }

  #succeeded(value: T): void {
    if (this.#done) return;
    this.#answered();
    this.#resolve?.(value);
  }

  #failed(error: unknown): void {
    if (this.#done) return;
    this.#answered();
    this.#fail(error);
  }

  /**
   * What ran inside has answered: with abortOnReturn its signal aborts too, before the answer is passed
   * on; without, the scope outside keeps it, for an `abortOnReturn` further out to reach.
   */
  #answered(): void {
    this.#finish();
    if (this.#step.abortOnReturn) this.#inner.abort(settledReason(), "settled");
    else this.#scope.keepAnswered(this.#inner);
  }

  #fail(error: unknown): void {
    if (this.#reject !== undefined) this.#reject(error);
    else {
      // Before there is an answer to settle (the caller aborted while the operation ran): kept for it.
      this.#early = true;
      this.#earlyError = error;
    }
  }

  /** The limit ran out. */
  override expire(): void {
    if (this.#done) return;
    const ms = this.#ms;
    // Made in a timer callback, where a stack says nothing about the caller: none is captured.
    const error = withoutStack(() => new TimeoutError(ms));
    // Cooperative: the signal says the time is up, and what runs inside decides how to end.
    const cooperative = this.#step.cooperative;
    if (!cooperative) this.#finish();
    this.#inner.abort(error, "timeout");
    this.#step.timedOut(this.#inner.attempt);
    if (!cooperative) this.#fail(error);
  }

  /** Settled: takes the limit off the queue (or cancels its timer) and lets go of the scopes. */
  #finish(): void {
    this.#done = true;
    this.#queue?.remove(this);
    this.#cancel?.();
    this.#cancel = undefined;
    this.#unwatch?.();
    this.#unwatch = undefined;
    this.#inner.release();
  }
}

/** The reason an `abortOnReturn` abort gives: a plain abort (no stack: it says nothing of a caller). */
function settledReason(): unknown {
  return withoutStack(
    () => new DOMException("the call inside steps.timeout has answered (abortOnReturn)", "AbortError"),
  );
}

/**
 * A timeout step: `steps.timeout(2000)` or `steps.timeout({ ms: 2000, onTimeout })`.
 *
 * @example
 * const p = pipeline(steps.timeout(10_000), steps.retry({ maxRetries: 5 }), steps.timeout(2000));
 */
export function timeoutStep(options: number | TimeoutStepOptions): TimeoutStep {
  if (typeof options === "number") return new TimeoutStep({ ms: options });
  if (options === null || typeof options !== "object") {
    throw new OptionError("steps.timeout", options, "a number of ms or { ms, onTimeout }");
  }
  return new TimeoutStep(options);
}
