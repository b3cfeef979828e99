/**
 * The timeout step: what runs inside it gets `ms` milliseconds. When they run out, its context aborts
 * with a `TimeoutError` and the step fails with that error at once, whether or not what ran inside has
 * stopped (a late answer is dropped). Outside a retry step it limits the whole call; inside, each attempt.
 */
import { OptionError, TimeoutError, withoutStack } from "../core/errors.js";
import { type CallbackErrorHandler, type Disposable, Events, warnOnce } from "../core/events.js";
import { Eventual, invoke } from "../core/invoke.js";
import { checkKeys, read } from "../core/schema.js";
import { type ExecutionContext, toRootScope } from "../pipeline/context.js";
import type { Next, Step } from "../pipeline/step.js";
import { TIMEOUT_SCHEMA } from "./schema.js";

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
   * request) is let go. Default false: the signal stays as it is.
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
    checkKeys(TIMEOUT_SCHEMA, options);
    this.ms = read(TIMEOUT_SCHEMA, "ms", options.ms);
    this.cooperative = read<boolean | undefined>(TIMEOUT_SCHEMA, "cooperative", options.cooperative) ?? false;
    this.abortOnReturn =
      read<boolean | undefined>(TIMEOUT_SCHEMA, "abortOnReturn", options.abortOnReturn) ?? false;
    read(TIMEOUT_SCHEMA, "onTimeout", options.onTimeout);
    read(TIMEOUT_SCHEMA, "onCallbackError", options.onCallbackError);
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
    const inner = scope.child({ timeout: ms }, true);
    const out = new Eventual<T>();
    let done = false;
    const finish = () => {
      done = true;
      cancel();
      unwatch();
      inner.release();
    };
    // Set before anything runs inside, so that on a shared clock the limit is queued before what it limits.
    const cooperative = this.cooperative;
    const cancel = scope.clock.setTimer(ms, () => {
      if (done) return;
      // Made in a timer callback, where a stack says nothing about the caller: none is captured.
      const error = withoutStack(() => new TimeoutError(ms));
      // Cooperative: the signal says the time is up, and what runs inside decides how to end.
      if (!cooperative) finish();
      inner.abort(error, "timeout");
      if (this.#events.has("timeout")) this.#events.emit("timeout", { timeout: ms, attempt: inner.attempt });
      if (!cooperative) out.reject(error);
    });
    const unwatch = scope.onAbort(() => {
      if (done) return;
      finish();
      out.reject(scope.reason);
    });
    // What ran inside has answered: with abortOnReturn its signal aborts too, before the answer is passed on.
    const answered = () => {
      finish();
      if (this.abortOnReturn) inner.abort(settledReason(), "settled");
    };
    invoke(
      () => next(inner),
      (value) => {
        if (done) return;
        answered();
        out.resolve(value);
      },
      (error) => {
        if (done) return;
        answered();
        out.reject(error);
      },
    );
    return out;
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
