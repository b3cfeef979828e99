/**
 * A worker's life: a new incarnation of it, made by its factory, and the context the factory is given,
 * whose callbacks reach the supervisor only while that incarnation lives; the timeouts on its start and
 * on each message's acknowledgement; and its exit, which `stop()` waits for.
 */
import type { CancelTimer, Clock } from "../core/clock.js";
import { TimeoutError } from "../core/errors.js";
import { type Child, DEAD_HANDLE, type Entry, type Incarnation, noop } from "./group.js";
import { IN_FLIGHT } from "./mailbox.js";
import type { WorkerStartContext } from "./types.js";

/** What a started incarnation tells the supervisor. */
export interface IncarnationHooks {
  ready(): void;
  /** The worker answered message `id`: `ok` with its reply `value`, or not with the error `value`. */
  answered(id: number, ok: boolean, value: unknown): void;
  crashed(cause: unknown): void;
}

/**
 * Starts a new incarnation of `child` with its factory. The callbacks it is given check `live`, so a
 * stopped incarnation is never heard; one made while the factory's `start` runs waits until it has
 * returned (and the handle is known). A factory that throws leaves a dead handle, and crashes a microtask
 * later.
 */
export function startIncarnation<M, R>(
  child: Child<M, R>,
  clock: Clock,
  hooks: IncarnationHooks,
): Incarnation<M> {
  child.incarnation += 1;
  const incarnation: Incarnation<M> = { live: true, starting: true, handle: undefined };
  child.current = incarnation;
  child.state = "starting";
  const hear = (fn: () => void) => {
    if (!incarnation.live) return;
    if (incarnation.starting) queueMicrotask(() => incarnation.live && fn());
    else fn();
  };
  const context: WorkerStartContext<R> = {
    worker: child.index,
    incarnation: child.incarnation,
    clock,
    ready: () => hear(() => hooks.ready()),
    acknowledge: (id, reply) => {
      if (incarnation.live && !incarnation.starting) hooks.answered(id, true, reply);
      else hear(() => hooks.answered(id, true, reply));
    },
    reject: (id, error) => hear(() => hooks.answered(id, false, error)),
    crashed: (cause) => hear(() => hooks.crashed(cause)),
  };
  try {
    incarnation.handle = child.factory.start(context);
  } catch (error) {
    incarnation.handle = DEAD_HANDLE;
    queueMicrotask(() => incarnation.live && hooks.crashed(error));
  }
  incarnation.starting = false;
  return incarnation;
}

/** A timeout on a worker: on which clock, how long (Infinity: none), and how it crashes the worker. */
export interface Timing {
  readonly clock: Clock;
  readonly ms: number;
  readonly crash: (cause: unknown) => void;
}

/**
 * Crashes the worker with a `TimeoutError` saying `message()` if it is still `waiting()` after
 * `timing.ms`; `fired` runs first. The timer's cancel, or undefined without a timeout.
 */
function watchFor(
  timing: Timing,
  waiting: () => boolean,
  message: () => string,
  fired: () => void,
): CancelTimer | undefined {
  const { clock, ms, crash } = timing;
  if (ms === Number.POSITIVE_INFINITY) return undefined;
  return clock.setTimer(ms, () => {
    fired();
    if (waiting()) crash(new TimeoutError(ms, message()));
  });
}

/** Crashes `child` with a `TimeoutError` unless this incarnation is ready within `timing.ms`. */
export function watchStart<M, R>(child: Child<M, R>, incarnation: Incarnation<M>, timing: Timing): void {
  const waiting = () => incarnation.live && child.state === "starting";
  if (!waiting()) return;
  child.startTimer = watchFor(
    timing,
    waiting,
    () => `Worker ${child.index} was not ready within ${timing.ms} ms of its start`,
    () => {
      child.startTimer = undefined;
    },
  );
}

/**
 * Crashes the worker with a `TimeoutError` unless `entry`, just delivered to `incarnation`, is answered
 * within `timing.ms`: a worker that does not answer is as broken as one that died.
 */
export function watchAck<M, R>(entry: Entry<M, R>, incarnation: Incarnation<M>, timing: Timing): void {
  entry.timer = watchFor(
    timing,
    () => entry.state === IN_FLIGHT && incarnation.live,
    () => `Message ${entry.id} was not acknowledged within ${timing.ms} ms`,
    () => {
      entry.timer = undefined;
    },
  );
}

/** The incarnations being stopped, so that the supervisor's own `stop()` waits until every one has exited. */
export class Exits {
  readonly #pending = new Set<Promise<void>>();

  /** Stops an incarnation with `stop`, whose failure is its own business, and keeps it until it is over. */
  track(stop: () => Promise<void>): void {
    let stopping: Promise<void>;
    try {
      stopping = Promise.resolve(stop());
    } catch {
      stopping = Promise.resolve();
    }
    const tracked: Promise<void> = stopping.then(noop, noop).then(() => {
      this.#pending.delete(tracked);
    });
    this.#pending.add(tracked);
  }

  /** Resolves once every incarnation tracked, those tracked meanwhile too, has exited. */
  async settled(): Promise<void> {
    while (this.#pending.size > 0) await Promise.all([...this.#pending]);
  }
}
