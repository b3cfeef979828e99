/**
 * `supervise`'s options: their defaults, and their validation (once, up front, loudly: each failure names
 * the option, the value and what is allowed).
 */
import { toBackoff } from "../backoff/common.js";
import { slotted } from "../backoff/slotted.js";
import type { Backoff } from "../backoff/types.js";
import { type Clock, clockOption } from "../core/clock.js";
import { OptionError } from "../core/errors.js";
import { checkedRandom, type Random, systemRandom } from "../core/random.js";
import { checkKeys, read } from "../core/schema.js";
import { knownKeys, limit } from "../core/validate.js";
import { SUPERVISOR_SCHEMA } from "./schema.js";
import type { RestartStrategy, StopOptions, SuperviseOptions, WorkerFactory } from "./types.js";

/** The defaults, documented on `SuperviseOptions`. */
export const SUPERVISOR_DEFAULTS = Object.freeze({
  instances: 1,
  strategy: "one-for-one" as RestartStrategy,
  concurrency: 1,
  /** The backoff between restarts: slot 10 ms, ceiling 10, stayAtCeiling false (Ethernet's truncated binary exponential backoff, scaled down). */
  slot: 10,
  ceiling: 10,
  maxPending: 1000,
  maxDeliveries: 5,
  poisonAfter: 3,
  maxRestarts: 10,
  restartWindow: 60_000,
  ackTimeout: -1,
  startTimeout: -1,
});

const defaultBackoff = slotted({ slot: SUPERVISOR_DEFAULTS.slot, ceiling: SUPERVISOR_DEFAULTS.ceiling });

/** Every option checked, every default filled in; limits that are off are Infinity. */
export interface ResolvedSupervisorOptions<M, R> {
  /** One factory per worker of the group. */
  readonly factories: readonly WorkerFactory<M, R>[];
  readonly strategy: RestartStrategy;
  readonly route: ((message: M, workers: number) => number) | undefined;
  readonly concurrency: number;
  readonly backoff: Backoff;
  readonly maxPending: number;
  readonly maxDeliveries: number;
  readonly poisonAfter: number;
  readonly maxRestarts: number;
  readonly restartWindow: number;
  readonly ackTimeout: number;
  readonly startTimeout: number;
  readonly clock: Clock;
  readonly random: Random;
}

const P = "supervise: ";

function isFactory(value: unknown): value is WorkerFactory<unknown, unknown> {
  return (
    typeof value === "object" &&
    value !== null &&
    typeof (value as { start?: unknown }).start === "function" &&
    typeof (value as { kind?: unknown }).kind === "string"
  );
}

const FACTORY =
  "a worker factory (inProcessWorker(…), threadWorker(…), processWorker(…), or an object with kind and start)";

/** A time limit: negative or Infinity for none; otherwise a number > 0. */
function timeLimit(option: string, value: unknown): number {
  const ms = limit(option, value, false);
  if (ms === 0) throw new OptionError(option, value, "a number > 0 (negative or Infinity = none)");
  return ms;
}

/** Checks `options` and fills in the defaults. Throws an `OptionError` naming the first bad option. */
export function resolveSupervisorOptions<M, R>(
  options: SuperviseOptions<M, R>,
): ResolvedSupervisorOptions<M, R> {
  if (options === undefined || options === null || typeof options !== "object" || Array.isArray(options)) {
    throw new OptionError("supervise: options", options, "an object with at least a worker");
  }
  checkKeys(SUPERVISOR_SCHEMA, options);
  const o = options;

  let factories: WorkerFactory<M, R>[];
  if (Array.isArray(o.worker)) {
    const list = o.worker as readonly unknown[];
    if (list.length === 0)
      throw new OptionError(`${P}worker`, list, `${FACTORY}, or a non-empty array of them`);
    list.forEach((f, i) => {
      if (!isFactory(f)) throw new OptionError(`${P}worker[${i}]`, f, FACTORY);
    });
    if (o.instances !== undefined) {
      throw new OptionError(
        `${P}instances`,
        o.instances,
        "left out when worker is an array (the array is the group)",
      );
    }
    factories = [...(list as WorkerFactory<M, R>[])];
  } else {
    if (!isFactory(o.worker)) throw new OptionError(`${P}worker`, o.worker, FACTORY);
    const instances =
      read<number>(SUPERVISOR_SCHEMA, "instances", o.instances) ?? SUPERVISOR_DEFAULTS.instances;
    factories = Array.from({ length: instances }, () => o.worker as WorkerFactory<M, R>);
  }

  const strategy =
    read<RestartStrategy>(SUPERVISOR_SCHEMA, "strategy", o.strategy) ?? SUPERVISOR_DEFAULTS.strategy;
  read(SUPERVISOR_SCHEMA, "route", o.route);
  const concurrency =
    read<number>(SUPERVISOR_SCHEMA, "concurrency", o.concurrency) ?? SUPERVISOR_DEFAULTS.concurrency;
  const backoff = o.backoff === undefined ? defaultBackoff : toBackoff(o.backoff, `${P}backoff`);

  const window = factories.length * concurrency;
  const maxPending = limit(
    `${P}maxPending`,
    o.maxPending ?? Math.max(SUPERVISOR_DEFAULTS.maxPending, window),
    true,
  );
  if (maxPending < window) {
    // Below the messages the workers may hold at once, a message would be dropped while being handled.
    throw new OptionError(
      `${P}maxPending`,
      o.maxPending,
      `an integer >= workers × concurrency (${window}), or negative or Infinity for no limit`,
    );
  }
  const maxDeliveries = limit(
    `${P}maxDeliveries`,
    o.maxDeliveries ?? SUPERVISOR_DEFAULTS.maxDeliveries,
    true,
  );
  if (maxDeliveries < 1) {
    throw new OptionError(
      `${P}maxDeliveries`,
      o.maxDeliveries,
      "an integer >= 1 (negative or Infinity = no limit)",
    );
  }
  const poisonAfter =
    read<number>(SUPERVISOR_SCHEMA, "poisonAfter", o.poisonAfter) ?? SUPERVISOR_DEFAULTS.poisonAfter;
  const maxRestarts = read<number>(
    SUPERVISOR_SCHEMA,
    "maxRestarts",
    o.maxRestarts ?? SUPERVISOR_DEFAULTS.maxRestarts,
  );
  const restartWindow = timeLimit(`${P}restartWindow`, o.restartWindow ?? SUPERVISOR_DEFAULTS.restartWindow);
  const ackTimeout = timeLimit(`${P}ackTimeout`, o.ackTimeout ?? SUPERVISOR_DEFAULTS.ackTimeout);
  const startTimeout = timeLimit(`${P}startTimeout`, o.startTimeout ?? SUPERVISOR_DEFAULTS.startTimeout);

  const clock = clockOption(
    `${P}clock`,
    o.clock,
    "a Clock (an object with now() and setTimer(ms, callback))",
  );
  const given = read<Random | undefined>(SUPERVISOR_SCHEMA, "random", o.random);
  const random = given === undefined ? systemRandom : checkedRandom(given, "supervise: random");

  return {
    factories,
    strategy,
    route: o.route,
    concurrency,
    backoff,
    maxPending,
    maxDeliveries,
    poisonAfter,
    maxRestarts,
    restartWindow,
    ackTimeout,
    startTimeout,
    clock,
    random,
  };
}

/** `stop()`'s drain timeout: its default, and the most a finite one may be (24 h). */
export const STOP_TIMEOUT = Object.freeze({ default: 10_000, max: 86_400_000 });

/** Checks `stop()`'s options; returns drain and the drain timeout (Infinity for none). */
export function resolveStopOptions(options: StopOptions | undefined): { drain: boolean; timeout: number } {
  knownKeys("stop", options, ["drain", "timeout"]);
  const drain = options?.drain ?? true;
  if (typeof drain !== "boolean") throw new OptionError("stop: drain", drain, "true or false");
  const given = options?.timeout ?? STOP_TIMEOUT.default;
  const timeout = limit("stop: timeout", given, false);
  if (timeout !== Number.POSITIVE_INFINITY && timeout > STOP_TIMEOUT.max) {
    throw new OptionError(
      "stop: timeout",
      given,
      `a number of ms in [0, ${STOP_TIMEOUT.max}] (24 h), or negative or Infinity to wait as long as it takes`,
    );
  }
  return { drain, timeout };
}
