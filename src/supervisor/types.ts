/**
 * The supervisor's types: the worker interface every kind implements (in-process, thread, process, or
 * your own), the handler a worker runs, and the supervisor's events, metrics and state.
 */
import type { BackoffLike } from "../backoff/types.js";
import type { Clock } from "../core/clock.js";
import type { Random } from "../core/random.js";

/** What a handler receives with each message. */
export interface Delivery {
  /** The message's id, the same on every delivery: the key to make a handler idempotent. */
  readonly id: number;
  /** How many times this message has been delivered, this time included: 1 the first time, 2 on the first redelivery, … */
  readonly deliveries: number;
  /** Aborts when the supervisor stops this worker (a crash of a sibling under all-for-one, an ack timeout, or `stop()`). */
  readonly signal: AbortSignal;
}

/**
 * Handles one message. Returning (or resolving) is the acknowledgement, and the value is the sender's reply.
 * Throwing (or rejecting) crashes the worker ("let it crash", as in Erlang and Akka): it is stopped, restarted after a
 * backoff, and every unacknowledged message is delivered again. Throw a `PermanentError` instead to fail
 * this one message for its sender without a crash: the sender's promise rejects with its `cause` (or the
 * `PermanentError` itself when it has none), and the message counts as acknowledged.
 *
 * @example
 * const handler: Handler<{ to: string }, number> = async (mail, { id }) => smtp.send(mail, { idempotencyKey: id });
 */
export type Handler<M, R> = (message: M, delivery: Delivery) => R | Promise<R>;

/** What a worker factory's `start` receives: who it is, and the callbacks through which the worker speaks. */
export interface WorkerStartContext<R> {
  /** The worker's index in the group, 0-based. */
  readonly worker: number;
  /** 1 for the first start of this worker, 2 after its first restart, … */
  readonly incarnation: number;
  /** The supervisor's clock, for a kind that needs timers (the process kind's kill escalation). */
  readonly clock: Clock;
  /** The worker can take messages now. No message is delivered before. */
  ready(): void;
  /** The worker handled message `id`: its reply, which acknowledges it. */
  acknowledge(id: number, reply: R): void;
  /** The worker failed message `id` for its sender without crashing (a `PermanentError`); acknowledges it. */
  reject(id: number, error: unknown): void;
  /** The worker died or broke. Every call after the first, and every call after `stop()`, is ignored. */
  crashed(cause: unknown): void;
}

/** One message handed to a worker. */
export interface Envelope<M> {
  readonly id: number;
  readonly message: M;
  readonly deliveries: number;
}

/** One running incarnation of a worker, as its factory started it. */
export interface WorkerHandle<M> {
  /**
   * Hands a message to the worker. May throw when the message cannot be handed over at all (not
   * structured-clonable for a thread or process); the sender's promise then rejects with that error.
   */
  deliver(envelope: Envelope<M>): void;
  /**
   * Stops the worker and resolves once it is gone: the process exited and was reaped, the thread exited.
   * `graceful` (on `supervisor.stop()`) lets it finish cleanly within a grace period; otherwise (a crash,
   * a sibling's crash, a timeout) it is killed at once. Must not reject.
   */
  stop(graceful: boolean): Promise<void>;
  /** The process id, for the process kind. */
  readonly pid?: number | undefined;
  /** The thread id, for the thread kind. */
  readonly threadId?: number | undefined;
}

/**
 * Makes workers: `start` is called for the first incarnation and again on every restart. robustly ships
 * three (`inProcessWorker`, `threadWorker`, `processWorker`); implement this to supervise anything else.
 */
export interface WorkerFactory<M, R> {
  /** A short name for events and status: "in-process", "thread", "process", or your own. */
  readonly kind: string;
  start(context: WorkerStartContext<R>): WorkerHandle<M>;
}

/** How a group restarts: only the worker that crashed, or all of them (Akka's OneForOne and AllForOne strategies). */
export type RestartStrategy = "one-for-one" | "all-for-one";

/** Everything `supervise` accepts. All times are in milliseconds. */
export interface SuperviseOptions<M, R> {
  /**
   * The worker: a factory from `inProcessWorker`, `threadWorker` or `processWorker` (or your own), or an
   * array of factories for a group of different workers.
   */
  worker: WorkerFactory<M, R> | readonly WorkerFactory<M, R>[];
  /** With a single factory: how many copies of it to run as a group. An integer >= 1; default 1. */
  instances?: number;
  /** How a group restarts after a crash. Default "one-for-one". */
  strategy?: RestartStrategy;
  /**
   * Picks the worker (0-based index) for a message, e.g. by a hash of a key so that messages with the same
   * key keep their order. Default: the worker with the fewest pending messages, ties taken in turn.
   */
  route?: (message: M, workers: number) => number;
  /**
   * Messages one worker holds at once (delivered, not yet acknowledged). An integer >= 1; default 1: one
   * message at a time, in order. After a crash, the messages it held are delivered again one at a time
   * until each is acknowledged or dead-lettered, so that a poison message is found alone.
   */
  concurrency?: number;
  /**
   * The delay before each restart, from the restarts since the last acknowledgement (which resets it).
   * Default: truncated binary exponential backoff, as Ethernet's, `backoff.slotted({ slot: 10, ceiling: 10 })`.
   */
  backoff?: BackoffLike;
  /**
   * The most messages held (waiting or delivered, not yet answered) across the supervisor; beyond it the
   * oldest waiting message is dropped: its sender's promise rejects with a `MessageDroppedError` (seed
   * 004's "LRU fashion"). An integer >= instances × concurrency, or negative or Infinity for no limit.
   * Default 1000.
   */
  maxPending?: number;
  /**
   * Times one message is delivered at most. A message still unacknowledged when its worker crashes after
   * its last delivery is dead-lettered with a `MessageDeadLetteredError` instead: a poison message that
   * always crashes its worker cannot block the others. An integer >= 1, or negative or Infinity for no
   * limit. Default 5.
   */
  maxDeliveries?: number;
  /**
   * Crashes of its worker one message may cause: a message in flight when its worker crashed `poisonAfter`
   * times is a poison message, dead-lettered with a `MessageDeadLetteredError` (reason `"poison"`) instead
   * of being delivered again. Its crashes then stop counting against `maxRestarts` as soon as the worker
   * acknowledges another message: a few poison messages among many good ones never make the supervisor give
   * up, while a worker that crashes on every message still does. An integer in [1, 1000]; default 3.
   */
  poisonAfter?: number;
  /**
   * Restarts allowed within `restartWindow` (Akka's maxNrOfRetries); past it the supervisor gives up on
   * the worker (on the whole group under all-for-one): it stays stopped and every message it held is
   * rejected with a `SupervisorGaveUpError`. The crashes of a poison message do not count once the worker
   * has acknowledged a message since (see `poisonAfter`). 0 = never restart; negative or Infinity = no
   * limit. Default 10.
   */
  maxRestarts?: number;
  /** The window over which `maxRestarts` counts (Akka's withinTimeRange); negative or Infinity = forever. Default 60,000. */
  restartWindow?: number;
  /**
   * A message not acknowledged within this time counts as a crash of its worker (it hangs): the worker is
   * stopped and restarted, and the message delivered again (it counts towards `poisonAfter`). Negative or
   * Infinity = none (default): a handler may take as long as it needs, and only `stop()`'s `timeout` ends
   * the wait.
   */
  ackTimeout?: number;
  /** A worker not ready within this time after its start counts as crashed. Negative or Infinity = none (default). */
  startTimeout?: number;
  /** The clock for backoff delays and timeouts. Default: the real one. */
  clock?: Clock;
  /** Randomness for the backoff. Default `Math.random`. */
  random?: Random;
}

/** What `stop()` accepts. */
export interface StopOptions {
  /**
   * true (default): wait until every pending message is answered (restarts go on meanwhile); false: reject
   * every pending message with a `SupervisorStoppedError` at once. New messages are refused either way.
   */
  drain?: boolean;
  /**
   * With `drain`: after this many ms, reject whatever is still pending with a `SupervisorStoppedError` and
   * stop the workers (a thread or process worker gets its own `stopTimeout` of grace, then is killed), so
   * that a handler that never returns cannot hold `stop()` (or a sender) forever. At most 86,400,000 (24 h);
   * negative or Infinity = wait as long as it takes. Default 10,000. To bound each message rather than the
   * stop, see `ackTimeout`.
   */
  timeout?: number;
}

/** The supervisor's state: running; stopping (draining or stopping workers); stopped; or gave up on every worker. */
export type SupervisorState = "running" | "stopping" | "stopped" | "gave-up";

/** A worker's state: idle (before its first start), starting, running, backing off before a restart, gave up, stopped. */
export type WorkerState = "idle" | "starting" | "running" | "backing-off" | "gave-up" | "stopped";

/** A snapshot of one worker. */
export interface WorkerStatus {
  readonly index: number;
  readonly kind: string;
  readonly state: WorkerState;
  /** Starts so far: 1 for the first, one more per restart. */
  readonly incarnation: number;
  /** Restarts since the last acknowledgement: x in the backoff's delay(x). */
  readonly retries: number;
  /** Messages this worker holds, waiting or delivered. */
  readonly pending: number;
  /** Of those, the ones delivered and not yet acknowledged. */
  readonly inFlight: number;
  readonly pid?: number | undefined;
  readonly threadId?: number | undefined;
}

/** Counters since the supervisor started. Always sent = acknowledged + deadLettered + pending. */
export interface SupervisorMetrics {
  /** Messages accepted by `send`. */
  readonly sent: number;
  /** Deliveries to a worker, redeliveries included. */
  readonly delivered: number;
  /** Deliveries of a message delivered before. */
  readonly redelivered: number;
  /** Messages answered by their worker (a reply, or a `PermanentError`). */
  readonly acknowledged: number;
  readonly crashes: number;
  /** Restarts scheduled. */
  readonly restarts: number;
  /** Messages dropped by `maxPending`. */
  readonly dropped: number;
  /** Messages whose sender got an error instead of a reply: dropped, past `maxDeliveries` or `poisonAfter`, given up on, stopped, undeliverable. */
  readonly deadLettered: number;
  /** Messages held now (waiting or in flight). */
  readonly pending: number;
  /** Messages delivered and not yet acknowledged now. */
  readonly inFlight: number;
}

/** Why a message got an error instead of a reply. */
export type DeadLetterReason =
  | "dropped"
  | "max-deliveries"
  | "poison"
  | "gave-up"
  | "stopped"
  | "undeliverable";

/** The events a supervisor emits, by name. */
export interface SupervisorEvents<M, R> {
  /** A worker incarnation was started (it is not ready yet). */
  start: {
    readonly worker: number;
    readonly incarnation: number;
    readonly kind: string;
    readonly pid?: number | undefined;
    readonly threadId?: number | undefined;
  };
  /** A worker became ready; messages flow to it. */
  ready: { readonly worker: number; readonly incarnation: number };
  /** A worker crashed; the messages it held will be delivered again (or dead-lettered past `maxDeliveries` or `poisonAfter`). */
  crash: {
    readonly worker: number;
    readonly incarnation: number;
    readonly cause: unknown;
    /** Messages it held, delivered and unacknowledged, when it crashed. */
    readonly inFlight: number;
  };
  /** A restart is scheduled after `delay` ms, for `workers` (one, or the whole group under all-for-one). */
  restart: {
    readonly workers: readonly number[];
    readonly delay: number;
    /** Restarts since the last acknowledgement, this one included. */
    readonly retries: number;
    readonly cause: unknown;
  };
  /** A worker acknowledged a message: with a reply, or with a `PermanentError` (ok false) that its sender gets. */
  ack:
    | {
        readonly worker: number;
        readonly id: number;
        readonly message: M;
        readonly deliveries: number;
        readonly ok: true;
        readonly reply: R;
      }
    | {
        readonly worker: number;
        readonly id: number;
        readonly message: M;
        readonly deliveries: number;
        readonly ok: false;
        readonly error: unknown;
      };
  /** `maxPending` dropped a message (it is also a dead letter). */
  drop: DeadLetter<M>;
  /** A message's sender got an error instead of a reply; the message is here, to log, store or resend. */
  "dead-letter": DeadLetter<M>;
  /** The supervisor gave up on `workers` (past `maxRestarts` within `restartWindow`); they stay stopped. */
  "give-up": {
    readonly workers: readonly number[];
    readonly reason: string;
    readonly cause: unknown;
  };
  /** `stop()` finished: every worker is gone. The last event; every listener is removed after it. */
  stop: { readonly drained: boolean };
}

/** A message that got an error instead of a reply, and why. */
export interface DeadLetter<M> {
  readonly id: number;
  readonly message: M;
  readonly worker: number;
  readonly deliveries: number;
  readonly reason: DeadLetterReason;
  /** The error its sender's promise rejected with. */
  readonly error: Error;
}

/** Removes a listener. */
export type { Disposable } from "../core/events.js";

import type { Disposable } from "../core/events.js";

/** A running supervisor: send messages through it, watch its events, stop it. */
export interface Supervisor<M, R> {
  /**
   * Sends a message to a worker; resolves with the worker's reply. Rejects with a `MessageDroppedError`,
   * `MessageDeadLetteredError`, `SupervisorGaveUpError` or `SupervisorStoppedError` when no reply will come,
   * or with the error of a `PermanentError` the handler threw. For thread and process workers the message
   * and the reply must be structured-clonable.
   */
  send(message: M): Promise<R>;
  /**
   * Stops: drains the pending messages (for at most 10 s by default) or rejects them (see `StopOptions`),
   * then stops every worker and resolves once they are gone.
   */
  stop(options?: StopOptions): Promise<void>;
  /** Listens to an event; `dispose()` removes the listener. A listener's error is reported as a process warning. */
  on<K extends keyof SupervisorEvents<M, R>>(
    event: K,
    listener: (event: SupervisorEvents<M, R>[K]) => void,
  ): Disposable;
  readonly state: SupervisorState;
  /** A snapshot of the counters. */
  readonly metrics: SupervisorMetrics;
  /** A snapshot of every worker. */
  readonly workers: readonly WorkerStatus[];
}
