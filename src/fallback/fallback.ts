/**
 * The fallback step (Polly's fallback, cockatiel's `fallback`): a value instead of an error that `when`
 * matches. Outside a retry step it answers when retries are spent; inside, for each failed attempt.
 */
import { unwrapPermanent as unwrap } from "../core/errors.js";
import { type CallbackErrorHandler, type Disposable, Events, warnOnce } from "../core/events.js";
import { Eventual, invoke, isThenable, settleWith } from "../core/invoke.js";
import { knownKeys, optionalFunction } from "../core/validate.js";
import { type ExecutionContext, toRootScope } from "../pipeline/context.js";
import type { Next, Step } from "../pipeline/step.js";
import { compileRetryMatcher, type MatchAnswer, type RetryMatcher } from "../policy/matcher.js";

export interface FallbackOptions {
  /**
   * Which errors it answers for (a class, a name or code, a list, a predicate), tested on the error as
   * the caller would see it (a `PermanentError`'s cause). Default: every error. Never the caller's own
   * abort: once the context aborts, the step fails at once with the abort's reason. A predicate may
   * answer with a promise, which is awaited; one that throws or rejects ends the step with that error.
   */
  when?: RetryMatcher;
  /** Called as it answers in place of an error; the `fallback` event's short form. */
  onFallback?: (event: FallbackEvent) => void;
  /** Receives what `onFallback` or a listener threw (or rejected with). Default: one warning line. */
  onCallbackError?: CallbackErrorHandler;
}

/** What the `fallback` event receives. */
export interface FallbackEvent {
  /** The error it answers in place of (a `PermanentError`'s cause). */
  readonly error: unknown;
}

export interface FallbackEvents extends Record<string, unknown> {
  fallback: FallbackEvent;
}

/**
 * A fallback value, or a function making it from the error (and the context). A function is always
 * called: to answer with a function, return it from one (`() => fn`).
 */
export type FallbackValue<R> = R | ((error: unknown, context: ExecutionContext) => R | PromiseLike<R>);

export class FallbackStep<R = unknown> implements Step {
  readonly #value: FallbackValue<R>;
  readonly #when: ((error: unknown) => MatchAnswer) | undefined;
  readonly #events: Events<FallbackEvents>;

  constructor(value: FallbackValue<R>, options?: FallbackOptions) {
    knownKeys("steps.fallback", options, ["when", "onFallback", "onCallbackError"]);
    this.#value = value;
    this.#when =
      options?.when === undefined ? undefined : compileRetryMatcher("steps.fallback: when", options.when);
    optionalFunction("steps.fallback: onFallback", options?.onFallback);
    optionalFunction("steps.fallback: onCallbackError", options?.onCallbackError);
    this.#events = new Events<FallbackEvents>(options?.onCallbackError ?? warnOnce);
    if (options?.onFallback !== undefined) this.#events.on("fallback", options.onFallback);
  }

  /** Listens to `fallback` until the handle is disposed. */
  on<K extends keyof FallbackEvents>(
    event: K,
    listener: (payload: FallbackEvents[K]) => unknown,
  ): Disposable {
    return this.#events.on(event, listener);
  }

  execute<T>(next: Next<T>, context: ExecutionContext): T | PromiseLike<T> {
    const scope = toRootScope(context);
    if (scope.aborted) throw scope.reason;
    const out = new Eventual<T>();
    let done = false;
    // The caller's abort (or a timeout's, or a lost hedge's, outside) is never answered for: the step ends
    // at once with its reason, and ignores what comes later. Hooked before anything runs inside, so that it
    // hears of the abort before any error the abort causes there.
    const unhook = scope.onAbort(() => {
      if (done) return;
      done = true;
      out.reject(scope.reason);
    });
    const resolve = (value: T) => {
      if (done) return;
      done = true;
      unhook();
      out.resolve(value);
    };
    const reject = (error: unknown) => {
      if (done) return;
      done = true;
      unhook();
      out.reject(error);
    };
    invoke(
      () => next(scope),
      resolve,
      (thrown) => {
        if (done) return;
        const error = unwrap(thrown);
        let matches: MatchAnswer;
        try {
          matches = this.#when === undefined || this.#when(error);
        } catch (broken) {
          // A `when` predicate that throws: that is the outcome.
          reject(broken);
          return;
        }
        // An async predicate is awaited (its rejection is the outcome, as a throw is); the caller's abort
        // meanwhile ends the step at once, and the late answer is ignored.
        if (!isThenable(matches)) this.#answer(matches, thrown, error, scope, resolve, reject);
        else {
          settleWith(
            matches,
            (answer) => {
              if (!done) this.#answer(Boolean(answer), thrown, error, scope, resolve, reject);
            },
            reject,
          );
        }
      },
    );
    return out;
  }

  /** Answers for `error` (a `PermanentError`'s cause) if `when` matched it; else rethrows `thrown` unchanged. */
  #answer<T>(
    matches: boolean,
    thrown: unknown,
    error: unknown,
    scope: ExecutionContext,
    resolve: (value: T) => void,
    reject: (error: unknown) => void,
  ): void {
    if (!matches) {
      // Unchanged, so that a retry step outside still sees a PermanentError.
      reject(thrown);
      return;
    }
    if (this.#events.has("fallback")) this.#events.emit("fallback", { error });
    const value = this.#value;
    invoke<T>(
      typeof value === "function"
        ? () => (value as (error: unknown, context: ExecutionContext) => T | PromiseLike<T>)(error, scope)
        : () => value as unknown as T | PromiseLike<T>,
      resolve,
      reject,
    );
  }
}

/**
 * A fallback step: `value` (or `value(error, context)`'s result, which may be a promise) instead of an
 * error that `when` matches; if the function throws or rejects, that error is the outcome. A function is
 * always called: to answer with a function itself, wrap it, `steps.fallback(() => fn)`.
 *
 * @example
 * const p = pipeline(steps.fallback([], { when: TimeoutError }), steps.retry({ maxRetries: 2 }), steps.timeout(1000));
 */
export function fallbackStep<R>(value: FallbackValue<R>, options?: FallbackOptions): FallbackStep<R> {
  return new FallbackStep(value, options);
}
