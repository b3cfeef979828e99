/**
 * Fault injection, after Polly v8's chaos strategies (App-vNext/Polly, `src/Polly.Core/Simmy/`): wrap an
 * operation so that, at chosen rates, a call waits before it runs (latency), throws instead of running
 * (fault), or returns a value instead of running (result). Test retries, hedging, timeouts and breakers
 * against the failures they exist for, on purpose and reproducibly: with a seeded `Random` the same seed
 * injects the same sequence.
 */
import { type Clock, MAX_TIMER_DELAY, sleep, systemClock } from "../core/clock.js";
import { OptionError } from "../core/errors.js";
import { checkedRandom, type Random, systemRandom } from "../core/random.js";
import { clampDelay, finiteAtLeast, knownKeys, optionalFunction } from "../core/validate.js";
import { type ExecutionContext, toRootScope } from "../pipeline/context.js";
import { type Next, STEP_KIND, type Step } from "../pipeline/step.js";

/** Throw `error` instead of calling the operation, in a share `rate` of the calls. */
export interface FaultInjection {
  /** The share of calls, in [0, 1]. */
  rate: number;
  /** The error to throw, or a function making a fresh one for each injection. */
  error: Error | (() => Error);
}

/** Wait `ms` before the call goes on, in a share `rate` of the calls. */
export interface LatencyInjection {
  /** The share of calls, in [0, 1]. */
  rate: number;
  /** The wait in ms (a finite number >= 0), or a function drawing it from the chaos `Random`. */
  ms: number | ((random: Random) => number);
}

/** Return `value` instead of calling the operation, in a share `rate` of the calls. */
export interface ResultInjection<T> {
  /** The share of calls, in [0, 1]. */
  rate: number;
  /**
   * The value to return, or a function making it for each injection (to inject a function itself, return
   * it from one: `value: () => fn`).
   */
  value: T | (() => T);
}

export interface ChaosOptions<T> {
  latency?: LatencyInjection;
  fault?: FaultInjection;
  result?: ResultInjection<T>;
  /** Whether chaos injects anything; a function is asked at each call. Default true. */
  enabled?: boolean | (() => boolean);
  /**
   * Aborts an injected wait (the call then rejects with the signal's reason). A call whose first argument
   * holds an AbortSignal as `signal` (as `retry`'s and `hedge`'s contexts do) uses that one instead.
   */
  signal?: AbortSignal;
  /**
   * Called on each injection. A listener that throws is ignored: chaos must not add faults of its own.
   * Written as a method so that a step injecting a narrower value (`ChaosStep<number>`) is still a
   * `ChaosStep<unknown>`, what `retry`'s `chaos` takes: it only ever hears of its own injections.
   */
  onInject?(event: ChaosEvent<T>): void;
  /** Decides the injections. Default `systemRandom`; pass `seededRandom(seed)` to replay a run. */
  random?: Random;
  /** Times the injected waits. Default `systemClock`. */
  clock?: Clock;
}

/** One injection. */
export type ChaosEvent<T> =
  | { readonly kind: "latency"; readonly ms: number }
  | { readonly kind: "fault"; readonly error: Error }
  | { readonly kind: "result"; readonly value: T };

/** What a chaos-wrapped operation has injected since it was made (or reset). */
export interface ChaosMetrics {
  /** Calls made to the wrapper. */
  readonly calls: number;
  /** Calls that waited first. */
  readonly latencies: number;
  /** Calls that threw an injected error. */
  readonly faults: number;
  /** Calls that returned an injected value. */
  readonly results: number;
}

/** The wrapped operation: same arguments, always a promise, plus its counts. */
export type ChaosOperation<A extends unknown[], T> = ((...args: A) => Promise<T>) & {
  /** A copy of the counts so far. */
  metrics(): ChaosMetrics;
  /** Sets the counts back to 0. */
  reset(): void;
};

function rate(where: string, injection: { rate?: unknown }): number {
  return finiteAtLeast(`${where}.rate`, injection.rate, 0, 1);
}

function checkInjection(where: string, value: unknown, keys: readonly string[]): void {
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new OptionError(where, value, `an object { ${keys.join(", ")} }`);
  }
  knownKeys(where, value, keys);
}

function checkOptions<T>(options: ChaosOptions<T>): void {
  if (options === null || typeof options !== "object" || Array.isArray(options)) {
    throw new OptionError("chaos: options", options, "an object");
  }
  knownKeys("chaos", options, [
    "latency",
    "fault",
    "result",
    "enabled",
    "signal",
    "onInject",
    "random",
    "clock",
  ]);
  const { latency, fault, result } = options;
  if (latency !== undefined) {
    checkInjection("chaos: latency", latency, ["rate", "ms"]);
    rate("chaos: latency", latency);
    if (typeof latency.ms !== "function") finiteAtLeast("chaos: latency.ms", latency.ms, 0);
  }
  if (fault !== undefined) {
    checkInjection("chaos: fault", fault, ["rate", "error"]);
    rate("chaos: fault", fault);
    if (!(fault.error instanceof Error) && typeof fault.error !== "function") {
      throw new OptionError("chaos: fault.error", fault.error, "an Error or a function returning one");
    }
  }
  if (result !== undefined) {
    checkInjection("chaos: result", result, ["rate", "value"]);
    rate("chaos: result", result);
  }
  const enabled = options.enabled;
  if (enabled !== undefined && typeof enabled !== "boolean" && typeof enabled !== "function") {
    throw new OptionError("chaos: enabled", enabled, "true, false or a function returning one");
  }
  if (options.signal !== undefined && !(options.signal instanceof AbortSignal)) {
    throw new OptionError("chaos: signal", options.signal, "an AbortSignal");
  }
  optionalFunction("chaos: onInject", options.onInject);
  optionalFunction("chaos: random", options.random);
  const clock = options.clock;
  if (clock !== undefined && (typeof clock?.now !== "function" || typeof clock.setTimer !== "function")) {
    throw new OptionError("chaos: clock", clock, "a Clock ({ now, setTimer })");
  }
}

/** The `signal` of the call's first argument, when it has one. */
function signalOf(first: unknown): AbortSignal | undefined {
  if (first === null || typeof first !== "object") return undefined;
  const signal = (first as { signal?: unknown }).signal;
  return signal instanceof AbortSignal ? signal : undefined;
}

/**
 * Wraps `operation` so that its calls suffer injected latency, faults and results at the given rates.
 * Each call draws once from `random` for each configured injection, in the order latency, fault,
 * result, all at the moment it is called, so that the same seed and the same calls inject the same
 * sequence whatever the timing. A call may get both a wait and then a fault or result; a fault takes
 * precedence over a result. Options are checked at once: a bad one throws here.
 *
 * @example
 * const flaky = chaos(fetchUser, { fault: { rate: 0.3, error: () => new Error("injected") }, random: seededRandom(7) });
 * await retry(flaky, { maxRetries: 10 }); // does the retry policy cope with 30% failures?
 * flaky.metrics(); // { calls: 4, latencies: 0, faults: 3, results: 0 }
 */
export function chaos<A extends unknown[], T>(
  operation: (...args: A) => T | PromiseLike<T>,
  options: ChaosOptions<T>,
): ChaosOperation<A, T> {
  if (typeof operation !== "function") throw new OptionError("chaos: operation", operation, "a function");
  checkOptions(options);
  const injector = new Injector(options);
  const clock = options.clock ?? systemClock;
  const random = options.random === undefined ? systemRandom : checkedRandom(options.random, "chaos: random");
  const wrapped = (...args: A): Promise<T> =>
    injector.run(() => operation(...args), signalOf(args[0]) ?? options.signal, clock, random);
  return Object.assign(wrapped, {
    metrics: () => injector.metrics(),
    reset: () => injector.reset(),
  });
}

/** The injections of one set of chaos options, and their counts. */
class Injector<T> {
  readonly #options: ChaosOptions<T>;
  #calls = 0;
  #latencies = 0;
  #faults = 0;
  #results = 0;

  constructor(options: ChaosOptions<T>) {
    this.#options = options;
  }

  metrics(): ChaosMetrics {
    return { calls: this.#calls, latencies: this.#latencies, faults: this.#faults, results: this.#results };
  }

  reset(): void {
    this.#calls = 0;
    this.#latencies = 0;
    this.#faults = 0;
    this.#results = 0;
  }

  #report(event: ChaosEvent<T>): void {
    const onInject = this.#options.onInject;
    if (onInject === undefined) return;
    try {
      onInject(event);
    } catch {
      // A listener's failure must not become a fault chaos did not mean to inject.
    }
  }

  /** Runs `call`, or injects instead of it, drawing from `random` and waiting on `clock`. */
  async run(
    call: () => T | PromiseLike<T>,
    signal: AbortSignal | undefined,
    clock: Clock,
    random: Random,
  ): Promise<T> {
    const { latency, fault, result } = this.#options;
    const enabled = this.#options.enabled ?? true;
    this.#calls += 1;
    if (!(typeof enabled === "function" ? enabled() : enabled)) return call();
    // Every draw happens now, before any wait, so the sequence does not depend on timing.
    const wait = latency !== undefined && random() < latency.rate;
    const throws = fault !== undefined && random() < fault.rate;
    const replaces = result !== undefined && random() < result.rate;
    if (wait) {
      const ms = typeof latency.ms === "function" ? latency.ms(random) : latency.ms;
      const delay = clampDelay("chaos: latency.ms", ms, MAX_TIMER_DELAY);
      this.#latencies += 1;
      this.#report({ kind: "latency", ms: delay });
      await sleep(clock, delay, signal);
    }
    if (throws) {
      const error = typeof fault.error === "function" ? fault.error() : fault.error;
      this.#faults += 1;
      this.#report({ kind: "fault", error });
      throw error;
    }
    if (replaces) {
      const value = typeof result.value === "function" ? (result.value as () => T)() : result.value;
      this.#results += 1;
      this.#report({ kind: "result", value });
      return value;
    }
    return call();
  }
}

/** `steps.chaos`'s options: `chaos()`'s, without what the execution provides (signal and clock). */
export type ChaosStepOptions<T> = Omit<ChaosOptions<T>, "signal" | "clock">;

/** The chaos step: faults, latency and results injected into each run of what is inside it. */
export class ChaosStep<R = unknown> implements Step {
  readonly #injector: Injector<R>;
  readonly #random: Random | undefined;
  /** What `retry`'s `chaos` option takes (set in the constructor: a class with a computed key is kept by bundlers). */
  declare readonly [STEP_KIND]: "chaos";

  constructor(options: ChaosStepOptions<R>) {
    this[STEP_KIND] = "chaos";
    if (options !== null && typeof options === "object") {
      knownKeys("steps.chaos", options, ["latency", "fault", "result", "enabled", "onInject", "random"]);
    }
    checkOptions(options as ChaosOptions<R>);
    this.#injector = new Injector(options as ChaosOptions<R>);
    // Its own random is held to [0, 1) as chaos()'s is: a draw of 2 would otherwise never inject.
    this.#random =
      options.random === undefined ? undefined : checkedRandom(options.random, "steps.chaos: random");
  }

  /** What it has injected so far. */
  metrics(): ChaosMetrics {
    return this.#injector.metrics();
  }

  /** Sets the counts back to 0. */
  reset(): void {
    this.#injector.reset();
  }

  execute<T>(next: Next<T>, context: ExecutionContext): PromiseLike<T> {
    const scope = toRootScope(context);
    const injector = this.#injector as unknown as Injector<T>;
    return injector.run(() => next(scope), scope.signal, scope.clock, this.#random ?? scope.random);
  }
}

/**
 * A chaos step: at the given rates, each run of what is inside it waits first, fails, or answers with a
 * value instead. Its waits run on the execution's clock; it draws from its own `random` if given one, else
 * the execution's.
 *
 * @example
 * const p = pipeline(steps.retry({ maxRetries: 10 }), steps.chaos({ fault: { rate: 0.3, error: () => new Error("injected") } }));
 */
export function chaosStep<T = unknown>(options: ChaosStepOptions<T>): ChaosStep<T> {
  return new ChaosStep(options);
}
