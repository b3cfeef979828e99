/**
 * A simulated client's per-attempt timeout. It runs where the library's timeout step would (innermost,
 * after the retry step and any breaker) and behaves as its default, aggressive form does: the timer is
 * set before the attempt starts, and when it fires first the attempt fails at once and a late answer is
 * dropped.
 *
 * What it leaves out is what a simulation cannot observe, and what made timeouts the simulator's most
 * expensive event: an abortable scope per attempt (simulated operations read no signal), and a
 * `TimeoutError` per timeout (an `Error` costs microseconds to build even without a stack). A timed-out
 * attempt fails with a plain, frozen record instead: `SimulatedTimeout`.
 */
import { Eventual, settleWith } from "../core/invoke.js";
import type { ExecutionContext } from "../pipeline/context.js";
import type { Next, Step } from "../pipeline/step.js";
import { Outcome } from "./outcome.js";

/** What a simulated attempt fails with when its timeout elapses first. */
export interface SimulatedTimeout {
  readonly name: "SimulatedTimeout";
  /** The timeout that elapsed, ms. */
  readonly timeout: number;
}

/** Whether `error` is a simulated attempt's timeout. */
export function isSimulatedTimeout(error: unknown): error is SimulatedTimeout {
  return (
    typeof error === "object" && error !== null && (error as { name?: unknown }).name === "SimulatedTimeout"
  );
}

/** The per-attempt timeout of a simulated client: `ms` milliseconds on the execution's clock. */
export class SimulatedTimeoutStep implements Step {
  readonly ms: number;
  /** One record for every timeout of this step: it carries no state of its own. */
  readonly #timedOut: SimulatedTimeout;

  constructor(ms: number) {
    this.ms = ms;
    this.#timedOut = Object.freeze({ name: "SimulatedTimeout", timeout: ms });
  }

  execute<T>(next: Next<T>, context: ExecutionContext): T | PromiseLike<T> {
    const out = new Eventual<T>();
    const timedOut = this.#timedOut;
    let done = false;
    let result: T | PromiseLike<T> | undefined;
    // Set before the attempt starts, so that at equal times the limit runs before what it limits.
    const cancel = context.clock.setTimer(this.ms, () => {
      done = true;
      // The server may hold the abandoned request for long: it need not hold this attempt too.
      if (result instanceof Outcome) result.unlisten(onValue);
      out.reject(timedOut);
    });
    const onValue = (value: T) => {
      if (done) return;
      done = true;
      cancel();
      out.resolve(value);
    };
    const onError = (error: unknown) => {
      if (done) return;
      done = true;
      cancel();
      out.reject(error);
    };
    try {
      result = next(context);
    } catch (error) {
      onError(error);
      return out;
    }
    // A simulated server's outcome is heard of without the promise-like chain `then` would build.
    if (result instanceof Outcome) result.listen(onValue, onError);
    else settleWith(result, onValue, onError);
    return out;
  }
}
