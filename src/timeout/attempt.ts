/**
 * One attempt's context. The retry loop (`RetryCall`) times the attempt out and aborts it; a late result
 * or rejection of an attempt that ended is observed and dropped there.
 */
import type { AttemptContext } from "../policy/options.js";

/**
 * The context handed to the operation. Every attempt has a signal of its own, aborted when the attempt
 * times out or the caller aborts, so that listeners an operation adds to it go away with the attempt.
 * Its `AbortController` is created only if the operation reads `signal`, which keeps attempts that ignore
 * it cheap.
 */
export class Attempt implements AttemptContext {
  readonly attempt: number;
  readonly retries: number;
  readonly timeout: number;
  readonly elapsed: number;
  #controller: AbortController | undefined;
  #abortReason: unknown;
  #aborted = false;

  constructor(retries: number, timeout: number, elapsed: number) {
    this.attempt = retries + 1;
    this.retries = retries;
    this.timeout = timeout;
    this.elapsed = elapsed;
  }

  get signal(): AbortSignal {
    if (this.#controller === undefined) {
      this.#controller = new AbortController();
      if (this.#aborted) this.#controller.abort(this.#abortReason);
    }
    return this.#controller.signal;
  }

  /** Aborts this attempt's signal (if anyone holds it) with `reason`. */
  abort(reason: unknown): void {
    if (this.#aborted) return;
    this.#aborted = true;
    this.#abortReason = reason;
    this.#controller?.abort(reason);
  }
}
