/**
 * The errors a supervisor's senders and crash events see. Each says what happened to the message and why,
 * and carries the message itself (`payload`: `message` is the error's text).
 */

/**
 * `maxPending` was exceeded and this message was the oldest waiting one, so it was dropped (a bounded
 * buffer drops its oldest first). It may have been delivered before (and crashed its worker), never after.
 */
export class MessageDroppedError<M = unknown> extends Error {
  override readonly name = "MessageDroppedError";
  readonly id: number;
  readonly payload: M;
  readonly maxPending: number;
  constructor(id: number, payload: M, maxPending: number) {
    super(
      `Message ${id} was dropped: more than maxPending (${maxPending}) messages were pending and it was the oldest waiting one`,
    );
    this.id = id;
    this.payload = payload;
    this.maxPending = maxPending;
  }
}

/**
 * A poison message, set aside so that the others go on: it was delivered `maxDeliveries` times, or it
 * crashed its worker `poisonAfter` times, and its worker crashed (or was stopped) every time before
 * acknowledging it. `cause` is the last crash's.
 */
export class MessageDeadLetteredError<M = unknown> extends Error {
  override readonly name = "MessageDeadLetteredError";
  readonly id: number;
  readonly payload: M;
  readonly deliveries: number;
  /** When `poisonAfter` set it aside: the crashes of its worker while it handled it; otherwise undefined. */
  readonly crashes: number | undefined;
  /**
   * `crashes`, when given, says that `poisonAfter` set it aside (the message tells of its crashes);
   * left out, `maxDeliveries` did.
   */
  constructor(id: number, payload: M, deliveries: number, cause: unknown, crashes?: number) {
    const times = (n: number) => `${n} time${n === 1 ? "" : "s"}`;
    super(
      crashes === undefined
        ? `Message ${id} was dead-lettered: delivered ${times(deliveries)} (maxDeliveries) and never acknowledged`
        : `Message ${id} was dead-lettered as a poison message: it crashed its worker ${times(crashes)} (poisonAfter)`,
      { cause },
    );
    this.id = id;
    this.payload = payload;
    this.deliveries = deliveries;
    this.crashes = crashes;
  }
}

/**
 * The supervisor gave up on the worker that held this message: it crashed more than `maxRestarts` times
 * within `restartWindow` (Akka's maxNrOfRetries within withinTimeRange). `cause` is the last crash's.
 */
export class SupervisorGaveUpError extends Error {
  override readonly name = "SupervisorGaveUpError";
  /** The worker(s) given up on. */
  readonly workers: readonly number[];
  constructor(workers: readonly number[], reason: string, cause: unknown) {
    super(`The supervisor gave up on worker ${workers.join(", ")}: ${reason}`, { cause });
    this.workers = workers;
  }
}

/** The supervisor was stopped (or is stopping) before this message could be answered. */
export class SupervisorStoppedError extends Error {
  override readonly name = "SupervisorStoppedError";
  constructor(message = "The supervisor was stopped before the message was answered") {
    super(message);
  }
}

/** A crash cause: a thread or process worker exited (or was killed) without being asked to. */
export class WorkerExitError extends Error {
  override readonly name = "WorkerExitError";
  /** The exit code, or null when a signal ended it. */
  readonly code: number | null;
  /** The signal that ended a process, or null. */
  readonly signal: string | null;
  constructor(kind: string, code: number | null, signal: string | null, cause?: unknown) {
    const how = signal === null ? `exited with code ${code}` : `was killed by ${signal}`;
    super(`The ${kind} worker ${how}`, cause === undefined ? undefined : { cause });
    this.code = code;
    this.signal = signal;
  }
}
