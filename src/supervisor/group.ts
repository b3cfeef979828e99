/**
 * The supervisor's bookkeeping: a message and its sender (`Entry`), one start of a worker
 * (`Incarnation`), a worker across its incarnations (`Child`), what restarts together (`Unit`), and a
 * `stop()` under way.
 */
import type { CancelTimer } from "../core/clock.js";
import { MessageDeadLetteredError, type SupervisorGaveUpError } from "./errors.js";
import { DONE, type Letter, Mailbox, WAITING } from "./mailbox.js";
import type {
  DeadLetter,
  DeadLetterReason,
  RestartStrategy,
  WorkerFactory,
  WorkerHandle,
  WorkerState,
  WorkerStatus,
} from "./types.js";

/** One message and its sender, tracked until it is answered. */
export class Entry<M, R> implements Letter {
  state: Letter["state"] = WAITING;
  deliveries = 0;
  /** It was in flight when its worker crashed, and has not been answered since. */
  suspect = false;
  /** Crashes of its worker while it was in flight (not a sibling's crash under all-for-one). */
  crashes = 0;
  /** Set aside as a poison message (`maxDeliveries` or `poisonAfter`): the crashes it caused are forgiven. */
  poison = false;
  lastCause: unknown = undefined;
  timer: CancelTimer | undefined = undefined;
  constructor(
    readonly id: number,
    readonly message: M,
    readonly child: Child<M, R>,
    readonly resolve: (reply: R) => void,
    readonly reject: (error: unknown) => void,
  ) {}

  /** The dead letter that the `dead-letter` (and `drop`) events tell of. */
  letter(reason: DeadLetterReason, error: Error): DeadLetter<M> {
    return Object.freeze({
      id: this.id,
      message: this.message,
      worker: this.child.index,
      deliveries: this.deliveries,
      reason,
      error,
    });
  }

  /**
   * The poison-message policy: once delivered `maxDeliveries` times, or once it crashed its worker
   * `poisonAfter` times, it is not delivered again. The reason and the error to dead-letter it with (its
   * last crash's cause, or `cause`), or undefined while it may go again.
   */
  poisoned(
    maxDeliveries: number,
    poisonAfter: number,
    cause: unknown,
  ): { reason: "max-deliveries" | "poison"; error: MessageDeadLetteredError } | undefined {
    if (this.state === DONE) return undefined;
    const last = this.lastCause === undefined ? cause : this.lastCause;
    if (this.deliveries >= maxDeliveries) {
      const error = new MessageDeadLetteredError(this.id, this.message, this.deliveries, last);
      return { reason: "max-deliveries", error };
    }
    if (this.crashes >= poisonAfter) {
      const error = new MessageDeadLetteredError(this.id, this.message, this.deliveries, last, this.crashes);
      return { reason: "poison", error };
    }
    return undefined;
  }

  /** Cancels its acknowledgement timeout, if one is running. */
  cancelTimer(): void {
    if (this.timer !== undefined) {
      this.timer();
      this.timer = undefined;
    }
  }
}

/** One start of a worker. The callbacks it was given check `live`, so a stopped incarnation is never heard. */
export interface Incarnation<M> {
  live: boolean;
  /** True while its factory's `start` runs: a callback made then waits until `start` has returned. */
  starting: boolean;
  handle: WorkerHandle<M> | undefined;
}

/** One worker of the group, across its incarnations. */
export class Child<M, R> {
  readonly mailbox = new Mailbox<Entry<M, R>>();
  state: WorkerState = "idle";
  incarnation = 0;
  current: Incarnation<M> | undefined = undefined;
  startTimer: CancelTimer | undefined = undefined;
  /** Held messages that were in flight at one of its crashes: delivered one at a time until none is left. */
  suspects = 0;
  /** A pump loop is running for it (a worker that answers synchronously must not make it recurse). */
  pumping = false;
  // Set right after construction, when the units are formed.
  unit!: Unit<M, R>;
  constructor(
    readonly index: number,
    readonly factory: WorkerFactory<M, R>,
  ) {}

  /** Cancels its start timeout, if one is running. */
  cancelStartTimer(): void {
    if (this.startTimer !== undefined) {
      this.startTimer();
      this.startTimer = undefined;
    }
  }

  /** What `supervisor.workers` says of it. */
  status(): WorkerStatus {
    return Object.freeze({
      index: this.index,
      kind: this.factory.kind,
      state: this.state,
      incarnation: this.incarnation,
      retries: this.unit.retries,
      pending: this.mailbox.held,
      inFlight: this.mailbox.inFlight,
      pid: this.current?.handle?.pid,
      threadId: this.current?.handle?.threadId,
    });
  }

  /**
   * Stops its current incarnation (killed at once, by `track`) and puts the messages it had in flight
   * back in line, adding them to `returned`: suspects, with `cause`, if it is the worker that `crashed`.
   */
  halt(
    crashed: boolean,
    cause: unknown,
    returned: Entry<M, R>[],
    track: (stop: () => Promise<void>) => void,
  ): void {
    if (this.state !== "starting" && this.state !== "running") return;
    const incarnation = this.current;
    this.current = undefined;
    this.state = "backing-off";
    this.cancelStartTimer();
    if (incarnation !== undefined) {
      incarnation.live = false;
      const handle = incarnation.handle;
      if (handle !== undefined) track(() => handle.stop(false));
    }
    for (const entry of this.mailbox.returnInFlight()) {
      entry.cancelTimer();
      // Only the crashed worker's messages are suspects; a sibling's (all-for-one) were merely interrupted.
      if (crashed) {
        entry.lastCause = cause;
        entry.crashes += 1;
        if (!entry.suspect) {
          entry.suspect = true;
          this.suspects += 1;
        }
      }
      returned.push(entry);
    }
  }
}

/** A restart within the window of `maxRestarts`: when, and the messages in flight at the crash it follows. */
export interface Restart<M, R> {
  readonly at: number;
  readonly culprits: readonly Entry<M, R>[];
}

/** What restarts together, with one backoff and one restart count: a worker (one-for-one) or the group (all-for-one). */
export class Unit<M, R> {
  /** Restarts since the last acknowledgement: x in the backoff's delay(x). */
  retries = 0;
  /** The restarts within the window (kept only when maxRestarts is finite). */
  restarts: Restart<M, R>[] = [];
  /** A message was set aside as poison since the last acknowledgement: its crashes await forgiveness. */
  forgiving = false;
  timer: CancelTimer | undefined = undefined;
  gaveUp: SupervisorGaveUpError | undefined = undefined;
  readonly indices: readonly number[];
  constructor(readonly children: readonly Child<M, R>[]) {
    this.indices = Object.freeze(children.map((c) => c.index));
  }

  /**
   * On an acknowledgement: the restarts that followed a crash of a message since set aside as poison no
   * longer count against `maxRestarts`. The worker has shown that it handles the other messages; those
   * crashes were the message's fault, not the worker's.
   */
  forgive(): void {
    if (!this.forgiving) return;
    this.forgiving = false;
    this.restarts = this.restarts.filter((r) => !r.culprits.some((entry) => entry.poison));
  }

  /** Cancels its restart timer, if one is running. */
  cancelTimer(): void {
    if (this.timer !== undefined) {
      this.timer();
      this.timer = undefined;
    }
  }
}

/** A `stop()` under way. */
export interface Stopping {
  readonly promise: Promise<void>;
  readonly resolve: () => void;
  /** False once stop rejected a pending message. */
  drained: boolean;
  /** The drain timeout. */
  timer: CancelTimer | undefined;
}

/** A worker per factory, in units: one for the whole group (all-for-one), or one for each worker. */
export function formGroup<M, R>(
  factories: readonly WorkerFactory<M, R>[],
  strategy: RestartStrategy,
): { children: readonly Child<M, R>[]; units: readonly Unit<M, R>[] } {
  const children = factories.map((factory, i) => new Child(i, factory));
  const units = strategy === "all-for-one" ? [new Unit(children)] : children.map((c) => new Unit([c]));
  for (const unit of units) for (const child of unit.children) child.unit = unit;
  return { children, units };
}

/** A `stop()` that has just begun, draining. */
export function beginStop(): Stopping {
  let resolve: () => void = noop;
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve, drained: true, timer: undefined };
}

/** Cancels a stop's drain timeout, if one is running. */
export function cancelDrainTimer(stop: Stopping): void {
  if (stop.timer !== undefined) {
    stop.timer();
    stop.timer = undefined;
  }
}

/** The oldest message waiting in any of `children`'s mailboxes. */
export function oldestWaiting<M, R>(children: readonly Child<M, R>[]): Entry<M, R> | undefined {
  let oldest: Entry<M, R> | undefined;
  for (const child of children) {
    const entry = child.mailbox.peekWaiting();
    if (entry !== undefined && (oldest === undefined || entry.id < oldest.id)) oldest = entry;
  }
  return oldest;
}

export const DEAD_HANDLE: WorkerHandle<never> = { deliver() {}, stop: () => Promise.resolve() };
export const noop = () => {};
