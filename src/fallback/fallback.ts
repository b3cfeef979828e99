/**
 * The fallback step (Polly's fallback, cockatiel's `fallback`): a value instead of an error that `when`
 * matches, or of a value that `whenResult` refuses. Outside a retry step it answers when retries are
 * spent; inside, for each failed attempt.
 */

import { edgeError } from "../core/edge.js";
import { type CallbackErrorHandler, type Disposable, Events, warnOnce } from "../core/events.js";
import { Eventual, invoke, isThenable, settleWith } from "../core/invoke.js";
import { knownKeys, optionalFunction } from "../core/validate.js";
import { type ExecutionContext, toRootScope } from "../pipeline/context.js";
import type { Next, Step } from "../pipeline/step.js";
import { compileRetryMatcher, type MatchAnswer, type RetryMatcher } from "../policy/matcher.js";

export interface FallbackOptions<V = unknown> {
  /**
   * Which errors it answers for (a class, a name or code, a list, a predicate), tested on the error as
   * the caller would see it (a `PermanentError`'s cause). Default: every error. Never the caller's own
   * abort: once the context aborts, the step fails at once with the abort's reason. A predicate may
   * answer with a promise, which is awaited; one that throws or rejects ends the step with that error.
   */
  when?: RetryMatcher;
  /**
   * Which values it answers for in place of (an HTTP 503 answered as a value, say). Default: none, every
   * value passes through. A promise is awaited; a predicate that throws or rejects ends the step with
   * that error, as `when` does.
   */
  whenResult?: (value: V) => boolean | PromiseLike<boolean>;
  /** Called as it answers in place of an error or a refused value; the `fallback` event's short form. */
  onFallback?: (event: FallbackEvent) => void;
  /** Receives what `onFallback` or a listener threw (or rejected with). Default: one warning line. */
  onCallbackError?: CallbackErrorHandler;
}

/**
 * What it answers in place of, as the `fallback` event and a fallback function receive it: an error
 * (`isValue: false`; a `PermanentError`'s cause), or a value `whenResult` refused (`isValue: true`).
 */
export type FallbackEvent =
  | { readonly isValue: false; readonly error: unknown; readonly value?: undefined }
  | { readonly isValue: true; readonly value: unknown; readonly error?: undefined };

export interface FallbackEvents extends Record<string, unknown> {
  fallback: FallbackEvent;
}

/**
 * A fallback value, or a function making it from what it answers in place of: `outcome` is the error (a
 * `PermanentError`'s cause) or the refused value; `what` tells which (the `fallback` event's payload). A
 * function is always called: to answer with a function, return it from one (`() => fn`).
 */
export type FallbackValue<R> =
  | R
  | ((outcome: unknown, context: ExecutionContext, what: FallbackEvent) => R | PromiseLike<R>);

export class FallbackStep<R = unknown> implements Step {
  readonly #value: FallbackValue<R>;
  readonly #when: ((error: unknown) => MatchAnswer) | undefined;
  readonly #whenResult: ((value: unknown) => boolean | PromiseLike<boolean>) | undefined;
  readonly #events: Events<FallbackEvents>;

  constructor(value: FallbackValue<R>, options?: FallbackOptions<never>) {
    knownKeys("steps.fallback", options, ["when", "whenResult", "onFallback", "onCallbackError"]);
    this.#value = value;
    this.#when =
      options?.when === undefined ? undefined : compileRetryMatcher("steps.fallback: when", options.when);
    optionalFunction("steps.fallback: whenResult", options?.whenResult);
    this.#whenResult = options?.whenResult as
      | ((value: unknown) => boolean | PromiseLike<boolean>)
      | undefined;
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
    const whenResult = this.#whenResult;
    invoke(
      () => next(scope),
      whenResult === undefined
        ? resolve
        : (value) => {
            if (done) return;
            let refused: boolean | PromiseLike<boolean>;
            try {
              refused = whenResult(value);
            } catch (broken) {
              // A `whenResult` predicate that throws: that is the outcome, as with `when`.
              reject(broken);
              return;
            }
            const judged = (answer: unknown) => {
              if (done) return;
              if (answer) this.#fallBack({ isValue: true, value }, value, scope, resolve, reject);
              else resolve(value);
            };
            if (!isThenable(refused)) judged(refused);
            else settleWith(refused, judged, reject);
          },
      (thrown) => {
        if (done) return;
        const error = edgeError(thrown);
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
    this.#fallBack({ isValue: false, error }, error, scope, resolve, reject);
  }

  /** Answers in place of `outcome` (an error or a refused value, as `what` tells). */
  #fallBack<T>(
    what: FallbackEvent,
    outcome: unknown,
    scope: ExecutionContext,
    resolve: (value: T) => void,
    reject: (error: unknown) => void,
  ): void {
    if (this.#events.has("fallback")) this.#events.emit("fallback", what);
    const value = this.#value;
    invoke<T>(
      typeof value === "function"
        ? () =>
            (
              value as (
                outcome: unknown,
                context: ExecutionContext,
                what: FallbackEvent,
              ) => T | PromiseLike<T>
            )(outcome, scope, what)
        : () => value as unknown as T | PromiseLike<T>,
      resolve,
      reject,
    );
  }
}

/**
 * A fallback step: `value` (or `value(outcome, context, what)`'s result, which may be a promise) instead
 * of an error that `when` matches or a value that `whenResult` refuses; if the function throws or
 * rejects, that error is the outcome. A function is always called: to answer with a function itself,
 * wrap it, `steps.fallback(() => fn)`.
 *
 * @example
 * const p = pipeline(steps.fallback([], { when: TimeoutError }), steps.retry({ maxRetries: 2 }), steps.timeout(1000));
 * const cached = pipeline(steps.fallback("cached", { whenResult: (res: Response) => res.status === 503 }));
 */
export function fallbackStep<R, V = unknown>(
  value: FallbackValue<R>,
  options?: FallbackOptions<V>,
): FallbackStep<R> {
  return new FallbackStep(value, options as FallbackOptions<never>);
}
