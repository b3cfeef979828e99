import { getEventListeners } from "node:events";
import { type AttemptContext, type Clock, type RetryOptions, retry } from "robustly";
import { VirtualClock } from "robustly/testing";
import { afterEach, beforeEach } from "vitest";
import { sweep } from "../../src/core/abort.js";

export type Settled<T> = { ok: true; value: T } | { ok: false; error: unknown };

/** Runs the virtual clock until no timer is left, then reports how `promise` settled. */
export async function drive<T>(clock: VirtualClock, promise: Promise<T>): Promise<Settled<T>> {
  const settled = promise.then(
    (value): Settled<T> => ({ ok: true, value }),
    (error: unknown): Settled<T> => ({ ok: false, error }),
  );
  await clock.runAll();
  return settled;
}

/**
 * Runs `retry(operation, options)` on the options' virtual clock (a new one when they have none) until no
 * timer is left, then reports how it settled.
 */
export function retried<T>(
  operation: (context: AttemptContext) => T | PromiseLike<T>,
  options: RetryOptions<T> = {},
): Promise<Settled<T>> {
  const clock = options.clock instanceof VirtualClock ? options.clock : new VirtualClock();
  return drive(clock, retry(operation, { ...options, clock }));
}

/**
 * The abort listeners on `signal` once robustly has removed those of signals no call watches any more,
 * which it does at the next turn of the event loop (see `sweep`): what stays is held by a call.
 */
export function abortListeners(signal: AbortSignal): number {
  sweep();
  return getEventListeners(signal, "abort").length;
}

/** A promise with its resolve and reject exposed. */
export function deferred<T>(): {
  promise: Promise<T>;
  resolve: (value: T) => void;
  reject: (error: unknown) => void;
} {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** Resolves with `promise`, or rejects after `ms` of real time (for real processes, servers and timers). */
export async function within<T>(ms: number, what: string, promise: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`${what}: nothing after ${ms} ms`)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** Lets queued continuations run. */
export const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

export { VirtualClock };

/**
 * Collects the process warnings emitted until `restore()` without printing them (so a passing run stays
 * quiet): each as its message and type.
 */
export function captureWarnings(): { warnings: { message: string; type?: string }[]; restore: () => void } {
  const warnings: { message: string; type?: string }[] = [];
  const original = process.emitWarning;
  process.emitWarning = ((warning: string | Error, options?: string | { type?: string }) => {
    const message = typeof warning === "string" ? warning : warning.message;
    const type = typeof options === "string" ? options : options?.type;
    warnings.push(type === undefined ? { message } : { message, type });
  }) as typeof process.emitWarning;
  const restore = () => {
    process.emitWarning = original;
  };
  return { warnings, restore };
}

/** A clock whose reading a test sets by hand (`clock.t = …`), for code that reads the time and sets no timer. */
export function handClock(start = 0): Clock & { t: number } {
  const clock = {
    t: start,
    now: () => clock.t,
    setTimer: () => () => {},
  };
  return clock;
}

/** What `run` throws (undefined when it returns). */
export function thrownBy(run: () => unknown): unknown {
  try {
    run();
  } catch (error) {
    return error;
  }
  return undefined;
}

/**
 * The promise rejections no one handled during each test of the file that calls this (at its top level):
 * the array is emptied before each test and filled as they come.
 */
export function unhandledRejections(): unknown[] {
  const seen: unknown[] = [];
  const collect = (reason: unknown) => seen.push(reason);
  beforeEach(() => {
    seen.length = 0;
    process.on("unhandledRejection", collect);
  });
  afterEach(() => {
    process.off("unhandledRejection", collect);
  });
  return seen;
}
