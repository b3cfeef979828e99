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
import { type Simulation, SimulationClock, type Timed } from "./engine.js";
import { type Listener, Outcome } from "./outcome.js";

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

/**
 * The per-attempt timeout of a simulated client: `ms` milliseconds on the execution's clock. `onTimeout`,
 * if given, hears of each timeout as it elapses (the scenarios count them there, rather than in a retry
 * callback that every failed attempt would call).
 */
export class SimulatedTimeoutStep implements Step {
  readonly ms: number;
  /** One record for every timeout of this step: it carries no state of its own. */
  readonly #timedOut: SimulatedTimeout;
  readonly #onTimeout: (() => void) | undefined;
  /** What every attempt on the last simulation's clock shares (see `Plan`). */
  #plan: Plan | undefined;

  constructor(ms: number, onTimeout?: () => void) {
    this.ms = ms;
    this.#timedOut = Object.freeze({ name: "SimulatedTimeout", timeout: ms });
    this.#onTimeout = onTimeout;
  }

  execute<T>(next: Next<T>, context: ExecutionContext): T | PromiseLike<T> {
    const clock = context.clock;
    // On the engine's own clock an attempt is one object: its result, its timer event and its listener.
    if (clock instanceof SimulationClock) {
      let plan = this.#plan;
      if (plan?.sim !== clock.simulation) {
        plan = { sim: clock.simulation, ms: this.ms, timedOut: this.#timedOut, onTimeout: this.#onTimeout };
        this.#plan = plan;
      }
      return new TimedAttempt<T>(plan).start(next, context);
    }
    return this.#onAnyClock(next, context);
  }

  /** The same on any other clock, with a timer callback and closures. */
  #onAnyClock<T>(next: Next<T>, context: ExecutionContext): T | PromiseLike<T> {
    const out = new Eventual<T>();
    const timedOut = this.#timedOut;
    let done = false;
    let result: T | PromiseLike<T> | undefined;
    // Set before the attempt starts, so that at equal times the limit runs before what it limits.
    const onTimeout = this.#onTimeout;
    const cancel = context.clock.setTimer(this.ms, () => {
      done = true;
      onTimeout?.();
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

/**
 * One attempt under a simulated timeout, on the engine's clock: the attempt's result (an `Eventual`), the
 * timer event the engine fires (`Timed`) and the listener of the server's answer (`Listener`) in one
 * object, where the general form needs an eventual, three closures and a cancel function. Millions of
 * attempts run in a big simulation, each alive for up to its timeout: what each allocates is what the
 * collector copies.
 */
class TimedAttempt<T> extends Eventual<T> implements Timed, Listener<T> {
  /** What it shares with every attempt of its step: one field where four would be (each attempt's copy is copied by the collector). */
  readonly #plan: Plan;
  #result: T | PromiseLike<T> | undefined;
  /** Its timer's slot in the engine's queue; -1 once the attempt is done. */
  #slot = 0;
  #generation = 0;

  constructor(plan: Plan) {
    super();
    this.#plan = plan;
  }

  start(next: Next<T>, context: ExecutionContext): this {
    // Set before the attempt starts, so that at equal times the limit runs before what it limits.
    const sim = this.#plan.sim;
    const slot = sim.schedule(this.#plan.ms, this);
    this.#slot = slot;
    this.#generation = sim.generation(slot);
    let result: T | PromiseLike<T>;
    try {
      result = next(context);
    } catch (error) {
      this.failed(error);
      return this;
    }
    this.#result = result;
    // A simulated server's outcome is heard of without the promise-like chain `then` would build.
    if (result instanceof Outcome) result.listenBy(this);
    else
      settleWith(
        result,
        (value) => this.heard(value),
        (error) => this.failed(error),
      );
    return this;
  }

  /** The timeout elapsed first. */
  fire(): void {
    this.#slot = -1;
    const result = this.#result;
    this.#result = undefined;
    // The server may hold the abandoned request for long: it need not hold this attempt too.
    if (result instanceof Outcome) result.unlisten(this);
    this.#plan.onTimeout?.();
    this.reject(this.#plan.timedOut);
  }

  heard(value: T): void {
    if (!this.#end()) return;
    this.resolve(value);
  }

  failed(error: unknown): void {
    if (!this.#end()) return;
    this.reject(error);
  }

  /** Ends the attempt on its outcome, cancelling its timer; false if it was done already. */
  #end(): boolean {
    const slot = this.#slot;
    if (slot < 0) return false;
    this.#slot = -1;
    this.#result = undefined;
    this.#plan.sim.cancel(slot, this.#generation);
    return true;
  }
}

/** What the attempts of one timeout step on one simulation share. */
interface Plan {
  readonly sim: Simulation;
  readonly ms: number;
  readonly timedOut: SimulatedTimeout;
  readonly onTimeout: (() => void) | undefined;
}
