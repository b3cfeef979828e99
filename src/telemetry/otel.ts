/**
 * An OpenTelemetry bridge: robustly's events recorded as OpenTelemetry metrics and, given the
 * application's `trace`, as events on the active span. It takes a `Meter` from
 * the application's own OpenTelemetry setup (`metrics.getMeter("robustly")`) and never imports
 * `@opentelemetry/api`, not even its types: the few parts of a Meter and a Span it uses are described
 * here, so the library keeps no runtime dependency and its declarations check without the package.
 */
import type { ResponsiveBackoff } from "../adaptive/responsive.js";
import type { CircuitBreaker } from "../breaker/circuit-breaker.js";
import type { RetryBudget } from "../budget/retry-budget.js";
import { OptionError, TimeoutError } from "../core/errors.js";
import type { Disposable } from "../core/events.js";
import type { RetryStats } from "../core/report.js";
import type { RetryOptions } from "../policy/options.js";

/** What a measurement or a span event is labelled with (OpenTelemetry's `Attributes`). */
export type AttributesLike = Record<string, unknown>;

/** The part of an OpenTelemetry `Counter` this bridge uses. */
export interface CounterLike {
  add(value: number, attributes?: AttributesLike): void;
}

/** The part of an OpenTelemetry `Histogram` this bridge uses. */
export interface HistogramLike {
  record(value: number, attributes?: AttributesLike): void;
}

/** The part of an OpenTelemetry `Meter` (`metrics.getMeter(…)` of `@opentelemetry/api`) this bridge uses. */
export interface MeterLike {
  createCounter(name: string, options?: { description?: string; unit?: string }): CounterLike;
  createHistogram(name: string, options?: { description?: string; unit?: string }): HistogramLike;
}

/** The part of an OpenTelemetry `Span` this bridge uses. */
export interface SpanLike {
  addEvent(name: string, attributes?: AttributesLike): unknown;
}

export interface TelemetryOptions {
  /** Where the instruments are created. */
  meter: MeterLike;
  /** Added to every measurement, e.g. `{ "robustly.policy": "payments" }`. */
  attributes?: AttributesLike;
  /**
   * The application's `trace` (`import { trace } from "@opentelemetry/api"`): with it, each attempt's
   * outcome (with `robustly.attempt`, numbered as `onAttempt` numbers it), each retry with its delay, a give-up with its reason, and a breaker's transitions are also
   * added as events to the span active when they happen (`robustly.attempt`, `robustly.retry`,
   * `robustly.give_up`, `robustly.breaker.transition`), as Polly and resilience4j users expect.
   */
  trace?: { getActiveSpan(): SpanLike | undefined };
}

/** The instruments, by name (all prefixed `robustly.`). */
export interface Telemetry {
  /**
   * `options` with callbacks that record every attempt, retry, delay and timeout, then call the
   * callbacks `options` already had.
   */
  instrument<T>(options?: RetryOptions<T>): RetryOptions<T>;
  /**
   * Records a breaker's state changes and rejections, a budget's refusals, or a responsive backoff's
   * delay changes, and for each of them shared through a store, when the store goes down and comes back;
   * until disposed.
   */
  observe(policy: CircuitBreaker | RetryBudget | ResponsiveBackoff, name?: string): Disposable;
}

/**
 * @example
 * import { metrics } from "@opentelemetry/api";
 * const telemetry = openTelemetry({ meter: metrics.getMeter("robustly") });
 * await retry(op, telemetry.instrument({ maxRetries: 3, breaker }));
 * telemetry.observe(breaker, "payments");
 */
export function openTelemetry(options: TelemetryOptions): Telemetry {
  const meter = options?.meter;
  if (
    meter === undefined ||
    typeof meter.createCounter !== "function" ||
    typeof meter.createHistogram !== "function"
  ) {
    throw new OptionError("openTelemetry: meter", meter, "an OpenTelemetry Meter (metrics.getMeter(…))");
  }
  const base: AttributesLike = { ...options.attributes };
  const instruments = createInstruments(meter);
  const { attempts, retries, delays } = instruments;
  const tracer = options.trace;
  if (tracer !== undefined && typeof tracer?.getActiveSpan !== "function") {
    throw new OptionError("openTelemetry: trace", tracer, "OpenTelemetry's trace (with getActiveSpan())");
  }
  /** Adds an event to the active span, if there is a trace and a span. */
  const spanEvent = (name: string, attributes: AttributesLike) =>
    tracer?.getActiveSpan()?.addEvent(name, attributes);

  return {
    instrument<T>(given: RetryOptions<T> = {}): RetryOptions<T> {
      const { onSuccess, onError, onRetry, onGiveUp } = given;
      return {
        ...given,
        onSuccess: (value: T, stats: RetryStats) => {
          attempts.add(1, { ...base, "robustly.outcome": "success" });
          // `robustly.attempt` numbers the attempt as `onAttempt` and the `attempt` event do (1-based).
          spanEvent("robustly.attempt", {
            ...base,
            "robustly.outcome": "success",
            "robustly.attempt": stats.attempts,
            "robustly.attempts": stats.attempts,
          });
          onSuccess?.(value, stats);
        },
        onError: (error: unknown, count: number) => {
          const outcome = error instanceof TimeoutError ? "timeout" : "failure";
          attempts.add(1, { ...base, "robustly.outcome": outcome });
          // `count` is the retries before the failed attempt: its number is one more.
          spanEvent("robustly.attempt", {
            ...base,
            "robustly.outcome": outcome,
            "robustly.attempt": count + 1,
            "robustly.retries": count,
          });
          onError?.(error, count);
        },
        onRetry: (event) => {
          retries.add(1, base);
          delays.record(event.delay, base);
          spanEvent("robustly.retry", {
            ...base,
            "robustly.attempt": event.attempt,
            "robustly.delay": event.delay,
          });
          onRetry?.(event);
        },
        onGiveUp: (event) => {
          spanEvent("robustly.give_up", {
            ...base,
            "robustly.reason": event.reason,
            "robustly.attempts": event.attempts,
          });
          onGiveUp?.(event);
        },
      };
    },
    observe(policy: CircuitBreaker | RetryBudget | ResponsiveBackoff, name?: string): Disposable {
      const attributes = name === undefined ? base : { ...base, "robustly.name": name };
      const watching = observe(instruments, attributes, policy);
      if (tracer === undefined || !("acquire" in policy)) return watching;
      const transitions = policy.on("change", ({ from, to }) =>
        spanEvent("robustly.breaker.transition", { ...attributes, "robustly.from": from, "robustly.to": to }),
      );
      return {
        dispose() {
          watching.dispose();
          transitions.dispose();
        },
      };
    },
  };
}

/** The instruments robustly records on. */
interface Instruments {
  readonly attempts: CounterLike;
  readonly retries: CounterLike;
  readonly delays: HistogramLike;
  readonly transitions: CounterLike;
  readonly rejections: CounterLike;
  readonly refusals: CounterLike;
  readonly stores: CounterLike;
  readonly paces: HistogramLike;
}

/** Creates the instruments on `meter`. */
function createInstruments(meter: MeterLike): Instruments {
  return {
    attempts: meter.createCounter("robustly.attempts", {
      description: "Attempts made, by outcome (success, failure, timeout)",
    }),
    retries: meter.createCounter("robustly.retries", { description: "Retries begun" }),
    delays: meter.createHistogram("robustly.retry.delay", {
      description: "The delay slept before a retry",
      unit: "ms",
    }),
    transitions: meter.createCounter("robustly.breaker.transitions", {
      description: "Circuit breaker state changes, by from and to",
    }),
    rejections: meter.createCounter("robustly.breaker.rejections", {
      description: "Calls refused because the circuit was open",
    }),
    refusals: meter.createCounter("robustly.budget.refusals", {
      description: "Retries refused by a retry budget",
    }),
    stores: meter.createCounter("robustly.store.transitions", {
      description:
        "A shared policy's store went down (the policy decides alone), came back (it shares again), or held something robustly did not write (corrupt)",
    }),
    paces: meter.createHistogram("robustly.responsive.delay", {
      description: "A responsive backoff's delay each time it changes, by direction",
      unit: "ms",
    }),
  };
}

/** Records what `policy` reports on `i`, with `attributes`, until disposed. */
function observe(
  i: Instruments,
  attributes: AttributesLike,
  policy: CircuitBreaker | RetryBudget | ResponsiveBackoff,
): Disposable {
  const watching: Disposable[] = [];
  if ("acquire" in policy) {
    watching.push(
      policy.on("change", ({ from, to }) =>
        i.transitions.add(1, { ...attributes, "robustly.from": from, "robustly.to": to }),
      ),
      policy.on("rejected", () => i.rejections.add(1, attributes)),
    );
  } else if ("sleepOnFailure" in policy) {
    watching.push(
      policy.on("change", ({ direction, to }) =>
        i.paces.record(to, { ...attributes, "robustly.direction": direction }),
      ),
    );
  } else {
    watching.push(policy.on("refused", () => i.refusals.add(1, attributes)));
  }
  // The three kinds emit the same store events; `on` is typed per kind, so each is named here.
  const on = policy.on.bind(policy) as (
    event: "store-down" | "store-up" | "store-corrupt",
    listener: () => void,
  ) => Disposable;
  watching.push(
    on("store-down", () => i.stores.add(1, { ...attributes, "robustly.store": "down" })),
    on("store-up", () => i.stores.add(1, { ...attributes, "robustly.store": "up" })),
    on("store-corrupt", () => i.stores.add(1, { ...attributes, "robustly.store": "corrupt" })),
  );
  return {
    dispose() {
      for (const w of watching) w.dispose();
    },
  };
}
