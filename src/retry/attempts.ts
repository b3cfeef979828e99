/**
 * The iterator form: a loop whose body is the attempt, for code that reads better as a loop than as a
 * callback.
 *
 *     for await (const attempt of attempts({ maxRetries: 5 })) {
 *       try {
 *         result = await fetch(url, { signal: attempt.signal });
 *         break;
 *       } catch (error) {
 *         attempt.failure(error);
 *       }
 *     }
 *
 * It is `retry` underneath: each attempt the loop yields is an attempt of one call, and the body's report
 * (`failure(error)`, `success(value)`, or nothing) is that attempt's outcome. Everything `retry` decides,
 * it decides here, `retryOnResult` included; only `hedge` and `chaos`, which run the operation more than
 * once at a time or in its place, are not taken.
 */
import { watchAbort } from "../core/abort.js";
import { keysOf } from "../core/schema.js";
import { RETRY_CHECKS } from "../policy/checks.js";
import {
  type AttemptContext,
  plainCopy,
  type RetryEvent,
  type RetryOptions,
  resolveOptions,
} from "../policy/options.js";
import { retry } from "./retry.js";

/** What the loop yields: the attempt's context, and how the body reports its outcome. */
export interface Attempt<T = unknown> extends AttemptContext {
  /**
   * This attempt failed with `error`: the next iteration sleeps the backoff and yields the next attempt,
   * or the loop throws the error the call ends with (this one, or a `PermanentError`'s cause). Leaving the
   * loop right after, `onError` hears it, no retry is made, and the loop ends without throwing.
   */
  failure(error: unknown): void;
  /**
   * This attempt answered `value`: `retryOnResult` judges it (the next iteration yields another attempt,
   * or ends the loop), and `onSuccess` hears it once accepted. Leaving the loop does the same for an
   * attempt that reported nothing (with no value).
   */
  success(value?: T): void;
}

/**
 * What `attempts` takes: `retry`'s options, but for `hedge` (which runs the operation more than once at a
 * time) and `chaos` (which may answer in the operation's place, so the body would not see the attempt).
 */
export type AttemptsOptions<T = unknown> = Omit<RetryOptions<T>, "hedge" | "chaos">;

const ATTEMPTS_KEYS = keysOf(RETRY_CHECKS).filter((key) => key !== "hedge" && key !== "chaos");

/**
 * Why a loop's call is stopped when the body leaves the loop after a failure (or while a retry is decided):
 * an `AbortError` of that loop's own, which `onGiveUp` hears (reason "aborted") and the loop never throws.
 */
function leftReason(): DOMException {
  return new DOMException("the attempts() loop was left", "AbortError");
}

type Outcome = { ok: true } | { ok: false; error: unknown };

/** An attempt as the loop yields it, and whether the body reported its outcome (the first report counts). */
interface LoopAttempt extends Attempt<unknown> {
  readonly reported: boolean;
  /** Whether the report was `success`. */
  readonly succeeded: boolean;
}

function loopAttempt(
  context: AttemptContext,
  resolve: (value: unknown) => void,
  reject: (error: unknown) => void,
): LoopAttempt {
  let reported = false;
  let succeeded = false;
  const report = (settle: (outcome: unknown) => void, success: boolean) => (outcome?: unknown) => {
    if (reported) return;
    reported = true;
    succeeded = success;
    settle(outcome);
  };
  return {
    // Made when first read, as the context makes them.
    get signal() {
      return context.signal;
    },
    get bail() {
      return context.bail;
    },
    attempt: context.attempt,
    retries: context.retries,
    retriesLeft: context.retriesLeft,
    elapsed: context.elapsed,
    timeout: context.timeout,
    hedge: context.hedge,
    clock: context.clock,
    random: context.random,
    get reported() {
      return reported;
    },
    get succeeded() {
      return succeeded;
    },
    failure: report(reject, false),
    success: report(resolve, true),
  };
}

class AttemptLoop implements AsyncIterableIterator<Attempt> {
  readonly #options: AttemptsOptions;
  readonly #stop = new AbortController();
  #started = false;
  /** The attempt the body is running (yielded, not yet followed by `next` or `return`). */
  #current: LoopAttempt | undefined;
  /** An attempt the call began while the body was still running (after a timeout). */
  #ready: LoopAttempt | undefined;
  /** A `next` waiting for the next attempt or the end. */
  #wanted: ((next: LoopAttempt | Outcome) => void) | undefined;
  #outcome: Outcome | undefined;
  #ended: Promise<Outcome> | undefined;
  #finished = false;
  /** The call decided on a retry since the body's last attempt was yielded. */
  #retryDecided = false;
  /**
   * The body left the loop after reporting its attempt's outcome, which the call is still to hear: a retry
   * decided now stops the call instead.
   */
  #leaving = false;
  /** The reason the call was stopped with when the body left the loop. */
  #left: DOMException | undefined;

  constructor(options: AttemptsOptions) {
    this.#options = options;
  }

  [Symbol.asyncIterator](): AsyncIterableIterator<Attempt> {
    return this;
  }

  #start(): void {
    this.#started = true;
    const signal = this.#options.signal;
    let unwatch: (() => void) | undefined;
    if (signal?.aborted) this.#stop.abort(signal.reason);
    else if (signal !== undefined) unwatch = watchAbort(signal, () => this.#stop.abort(signal.reason));
    const call = retry(
      (context) =>
        new Promise((resolve, reject) => {
          const attempt = loopAttempt(context, resolve, reject);
          const wanted = this.#wanted;
          this.#wanted = undefined;
          if (wanted === undefined) this.#ready = attempt;
          else wanted(attempt);
        }),
      { ...this.#options, signal: this.#stop.signal, onRetry: this.#onRetry },
    );
    this.#ended = call.then(
      (): Outcome => ({ ok: true }),
      (error: unknown): Outcome => ({ ok: false, error }),
    );
    void this.#ended.then((outcome) => {
      unwatch?.();
      this.#outcome = outcome;
      const wanted = this.#wanted;
      this.#wanted = undefined;
      wanted?.(outcome);
    });
  }

  readonly #onRetry = (event: RetryEvent): void => {
    this.#retryDecided = true;
    // retryOnResult asked for another attempt after the body left the loop: stop before the wait.
    if (this.#leaving) this.#leave();
    else this.#options.onRetry?.(event);
  };

  async next(): Promise<IteratorResult<Attempt>> {
    if (this.#finished) return { done: true, value: undefined };
    if (!this.#started) this.#start();
    // The body went on without reporting a failure: the attempt succeeded.
    this.#current?.success();
    this.#current = undefined;
    const next =
      this.#ready ??
      this.#outcome ??
      (await new Promise<LoopAttempt | Outcome>((resolve) => {
        this.#wanted = resolve;
      }));
    this.#ready = undefined;
    // An iteration still waiting when the body left the loop ends as the loop does, without its own abort.
    if ("ok" in next) return this.#end(next.ok === false && next.error === this.#left ? { ok: true } : next);
    this.#retryDecided = false;
    this.#current = next;
    return { done: false, value: next };
  }

  /**
   * Leaving the loop: a success for an attempt that reported nothing. The call hears the attempt's outcome
   * first, as it would have: after a success, the verdict on the value is waited for (accepted, the call
   * ends as it would have; a value `retryOnResult` would retry stops the call before its wait); after a
   * failure, `onError` is told of it, and the call gives up as it would have or is stopped before the
   * retry, and the loop ends without throwing (the body reported the error: it has it). Otherwise (the
   * call went on past the attempt) the call is stopped at once.
   */
  async return(): Promise<IteratorResult<Attempt>> {
    if (this.#finished || !this.#started) {
      this.#finished = true;
      return { done: true, value: undefined };
    }
    const current = this.#current;
    this.#current = undefined;
    if (current !== undefined && !current.reported && !current.signal.aborted) current.success();
    const heard = current !== undefined && !current.signal.aborted && !this.#retryDecided;
    if (heard) this.#leaving = true;
    else this.#leave();
    const outcome = await (this.#ended as Promise<Outcome>);
    const failed = current?.reported === true && !current.succeeded;
    return this.#end(
      outcome.ok === false && (outcome.error === this.#left || failed) ? { ok: true } : outcome,
    );
  }

  /** Stops the loop's call: the body left the loop. */
  #leave(): void {
    this.#left ??= leftReason();
    this.#stop.abort(this.#left);
  }

  #end(outcome: Outcome): IteratorResult<Attempt> {
    this.#finished = true;
    if (!outcome.ok) throw outcome.error;
    return { done: true, value: undefined };
  }
}

/**
 * The iterator form of `retry`: each iteration yields an attempt; the body reports a failure with
 * `attempt.failure(error)` and leaves the loop (`break`) on success. The next iteration sleeps the
 * backoff first, or, when the policy gives up, throws the error the call ends with. An attempt that
 * reports no failure succeeded: the loop ends after it, `break` or not. The caller's `signal` stops a
 * wait at once (the loop throws its reason); a `timeout` aborts the attempt's `signal` and fails the
 * attempt whatever the body reports later. With `retryOnResult`, the body reports each attempt's value with
 * `attempt.success(value)` and goes on: the next iteration yields another attempt or ends the loop (a
 * `break` stops retrying). Options are `retry`'s but for `hedge` and `chaos`, checked at once; nothing
 * starts before the first iteration.
 *
 * @example
 * for await (const attempt of attempts({ maxRetries: 5, timeout: 2000 })) {
 *   try {
 *     body = await (await fetch(url, { signal: attempt.signal })).text();
 *     break;
 *   } catch (error) {
 *     attempt.failure(error);
 *   }
 * }
 */
export function attempts<T = unknown>(options?: AttemptsOptions<T>): AsyncIterableIterator<Attempt<T>> {
  // Each option read once, here: the loop runs on the values checked (a getter is not asked again).
  const given = plainCopy(options, ATTEMPTS_KEYS, "attempts");
  resolveOptions(given);
  return new AttemptLoop(given as AttemptsOptions) as AsyncIterableIterator<Attempt<T>>;
}
