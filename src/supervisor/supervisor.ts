/**
 * The supervisor, after Akka's BackoffSupervisor pattern: messages go through it to a worker; the worker acknowledges
 * each one it handled (its reply); when the worker crashes, the supervisor stops it, starts a new one after
 * a backoff delay, and delivers again every unacknowledged message, in order; an acknowledgement resets the
 * backoff. robustly fixes the pattern's two drawbacks: the buffer of unacknowledged messages is bounded
 * (`maxPending` drops the oldest), and retries stop (`maxRestarts` within `restartWindow`, as Akka's
 * maxNrOfRetries / withinTimeRange). This file is the state machine; it knows nothing of threads or
 * processes, only the `WorkerFactory` interface, and waits only on the injected `Clock`.
 */
import { describe, withoutStack } from "../core/errors.js";
import { MessageDroppedError, SupervisorGaveUpError, SupervisorStoppedError } from "./errors.js";
import { Emitter } from "./events.js";
import {
  beginStop,
  type Child,
  cancelDrainTimer,
  Entry,
  formGroup,
  type Incarnation,
  oldestWaiting,
  type Stopping,
  type Unit,
} from "./group.js";
import { Exits, startIncarnation, type Timing, watchAck, watchStart } from "./lifecycle.js";
import { DONE } from "./mailbox.js";
import { type ResolvedSupervisorOptions, resolveStopOptions, resolveSupervisorOptions } from "./options.js";
import { decideRestart } from "./restart.js";
import { pickWorker } from "./routing.js";
import type {
  DeadLetterReason,
  Disposable,
  StopOptions,
  SuperviseOptions,
  Supervisor,
  SupervisorEvents,
  SupervisorMetrics,
  SupervisorState,
  WorkerHandle,
  WorkerStatus,
} from "./types.js";

class SupervisorImpl<M, R> implements Supervisor<M, R> {
  readonly #o: ResolvedSupervisorOptions<M, R>;
  readonly #children: readonly Child<M, R>[];
  readonly #units: readonly Unit<M, R>[];
  readonly #events = new Emitter<SupervisorEvents<M, R>>();
  /** Workers being stopped; `stop()` resolves only when every one has exited. */
  readonly #exits = new Exits();
  #state: SupervisorState = "running";
  #lastId = 0;
  #held = 0;
  #turn = 0;
  readonly #m = {
    sent: 0,
    delivered: 0,
    redelivered: 0,
    acknowledged: 0,
    crashes: 0,
    restarts: 0,
    dropped: 0,
    deadLettered: 0,
  };
  #stop: Stopping | undefined;
  #finishing = false;

  constructor(options: SuperviseOptions<M, R>) {
    this.#o = resolveSupervisorOptions(options);
    const { children, units } = formGroup(this.#o.factories, this.#o.strategy);
    this.#children = children;
    this.#units = units;
    // The first start waits a microtask, so that listeners added right after `supervise()` hear it.
    queueMicrotask(() => {
      if (this.#finishing) return;
      for (const unit of this.#units) this.#startUnit(unit);
    });
  }

  get state(): SupervisorState {
    return this.#state;
  }

  get metrics(): SupervisorMetrics {
    let inFlight = 0;
    for (const child of this.#children) inFlight += child.mailbox.inFlight;
    return Object.freeze({ ...this.#m, pending: this.#held, inFlight });
  }

  get workers(): readonly WorkerStatus[] {
    return Object.freeze(this.#children.map((c) => c.status()));
  }

  on<K extends keyof SupervisorEvents<M, R>>(
    event: K,
    listener: (event: SupervisorEvents<M, R>[K]) => void,
  ): Disposable {
    if (typeof listener !== "function") {
      throw new TypeError(`supervisor.on: listener must be a function; got ${describe(listener)}`);
    }
    return this.#events.on(event, listener);
  }

  send(message: M): Promise<R> {
    if (this.#state !== "running") return Promise.reject(this.#refusal());
    let child: Child<M, R>;
    try {
      child = this.#route(message);
    } catch (error) {
      return Promise.reject(error);
    }
    const gaveUp = child.unit.gaveUp;
    if (gaveUp !== undefined) return Promise.reject(gaveUp);
    return new Promise<R>((resolve, reject) => {
      const entry = new Entry<M, R>(++this.#lastId, message, child, resolve, reject);
      child.mailbox.push(entry);
      this.#held += 1;
      this.#m.sent += 1;
      if (this.#held > this.#o.maxPending) this.#dropOldest();
      this.#pump(child);
    });
  }

  stop(options?: StopOptions): Promise<void> {
    let drain: boolean;
    let timeout: number;
    try {
      ({ drain, timeout } = resolveStopOptions(options));
    } catch (error) {
      return Promise.reject(error);
    }
    if (this.#stop === undefined) {
      this.#stop = beginStop();
      this.#state = "stopping";
      if (drain && timeout !== Number.POSITIVE_INFINITY) {
        this.#stop.timer = this.#o.clock.setTimer(timeout, () =>
          this.#rejectAll(
            `The supervisor stopped before the message was answered: stop's timeout (${timeout} ms) ran out`,
          ),
        );
      }
    }
    // A second stop({ drain: false }) while draining cuts the drain short.
    if (!drain) this.#rejectAll(undefined);
    this.#checkDrained();
    return this.#stop.promise;
  }

  // ----- routing and delivery ----------------------------------------------------------------------------

  #refusal(): Error {
    if (this.#state === "gave-up") {
      return this.#units.find((u) => u.gaveUp !== undefined)?.gaveUp ?? new SupervisorStoppedError();
    }
    return new SupervisorStoppedError(
      `The supervisor is ${this.#state === "stopped" ? "stopped" : "stopping"}: it takes no new messages`,
    );
  }

  #route(message: M): Child<M, R> {
    const { child, turn } = pickWorker(this.#children, this.#o.route, this.#turn, message);
    this.#turn = turn;
    return child;
  }

  #pump(child: Child<M, R>): void {
    // Re-entered from a synchronous acknowledgement inside `deliver`: the running loop takes the free slot.
    if (child.pumping) return;
    child.pumping = true;
    try {
      const mailbox = child.mailbox;
      while (child.state === "running") {
        // After a crash, the messages it held go one at a time (see `concurrency`).
        const window = child.suspects > 0 ? 1 : this.#o.concurrency;
        if (mailbox.inFlight >= window) return;
        const entry = mailbox.takeWaiting();
        if (entry === undefined) return;
        this.#deliver(child, entry);
      }
    } finally {
      child.pumping = false;
    }
  }

  #deliver(child: Child<M, R>, entry: Entry<M, R>): void {
    const incarnation = child.current as Incarnation<M>;
    entry.deliveries += 1;
    this.#m.delivered += 1;
    if (entry.deliveries > 1) this.#m.redelivered += 1;
    const ackTimeout = this.#o.ackTimeout;
    if (ackTimeout !== Number.POSITIVE_INFINITY)
      watchAck(entry, incarnation, this.#timing(child, ackTimeout));
    try {
      (incarnation.handle as WorkerHandle<M>).deliver({
        id: entry.id,
        message: entry.message,
        deliveries: entry.deliveries,
      });
    } catch (error) {
      // The message cannot be handed over at all (not structured-clonable): no redelivery would help.
      this.#deadLetter(entry, "undeliverable", error instanceof Error ? error : new Error(String(error)));
    }
  }

  /** A timeout of `ms` on `child`, which crashes it. */
  #timing(child: Child<M, R>, ms: number): Timing {
    return { clock: this.#o.clock, ms, crash: (cause) => this.#crash(child, cause) };
  }

  #dropOldest(): void {
    const oldest = oldestWaiting(this.#children);
    // maxPending >= workers × concurrency, so one held beyond it is always waiting, never in flight.
    if (oldest === undefined) return;
    const dropped = oldest;
    const error = withoutStack(
      () => new MessageDroppedError(dropped.id, dropped.message, this.#o.maxPending),
    );
    this.#deadLetter(dropped, "dropped", error);
  }

  // ----- outcomes ----------------------------------------------------------------------------------------

  /** Removes a held entry from its mailbox and from every count. */
  #release(entry: Entry<M, R>): void {
    entry.cancelTimer();
    if (entry.suspect) {
      entry.suspect = false;
      entry.child.suspects -= 1;
    }
    entry.child.mailbox.finish(entry);
    this.#held -= 1;
  }

  #acknowledged(child: Child<M, R>, id: number, ok: boolean, value: unknown): void {
    const entry = child.mailbox.findInFlight(id);
    if (entry === undefined) return;
    this.#release(entry);
    this.#m.acknowledged += 1;
    // An acknowledgement resets the backoff: the worker is healthy again.
    child.unit.retries = 0;
    child.unit.forgive();
    this.#o.backoff.success?.();
    if (ok) entry.resolve(value as R);
    else entry.reject(value);
    if (this.#events.has("ack")) {
      const base = { worker: child.index, id, message: entry.message, deliveries: entry.deliveries };
      this.#events.emit(
        "ack",
        ok ? { ...base, ok: true, reply: value as R } : { ...base, ok: false, error: value },
      );
    }
    this.#pump(child);
    this.#checkDrained();
  }

  #deadLetter(entry: Entry<M, R>, reason: DeadLetterReason, error: Error): void {
    if (entry.state === DONE) return;
    this.#release(entry);
    this.#m.deadLettered += 1;
    if (reason === "dropped") this.#m.dropped += 1;
    if (reason === "max-deliveries" || reason === "poison") {
      entry.poison = true;
      entry.child.unit.forgiving = true;
    }
    entry.reject(error);
    if (this.#events.has("dead-letter") || this.#events.has("drop")) {
      const letter = entry.letter(reason, error);
      if (reason === "dropped") this.#events.emit("drop", letter);
      this.#events.emit("dead-letter", letter);
    }
    this.#checkDrained();
  }

  // ----- worker lifecycle --------------------------------------------------------------------------------

  #startUnit(unit: Unit<M, R>): void {
    for (const child of unit.children) this.#start(child);
  }

  #start(child: Child<M, R>): void {
    const incarnation = startIncarnation(child, this.#o.clock, {
      ready: () => this.#ready(child),
      answered: (id, ok, value) => this.#acknowledged(child, id, ok, value),
      crashed: (cause) => this.#crash(child, cause),
    });
    if (this.#events.has("start")) {
      this.#events.emit("start", {
        worker: child.index,
        incarnation: child.incarnation,
        kind: child.factory.kind,
        pid: incarnation.handle?.pid,
        threadId: incarnation.handle?.threadId,
      });
    }
    watchStart(child, incarnation, this.#timing(child, this.#o.startTimeout));
  }

  #ready(child: Child<M, R>): void {
    if (child.state !== "starting") return;
    child.state = "running";
    child.cancelStartTimer();
    if (this.#events.has("ready")) {
      this.#events.emit("ready", { worker: child.index, incarnation: child.incarnation });
    }
    this.#pump(child);
  }

  /** A worker died (Akka's `Terminated`): stop, put the unacknowledged messages back, back off, restart. */
  #crash(child: Child<M, R>, cause: unknown): void {
    if (child.state !== "starting" && child.state !== "running") return;
    this.#m.crashes += 1;
    const inFlight = child.mailbox.inFlight;
    const incarnation = child.incarnation;
    const unit = child.unit;
    const returned: Entry<M, R>[] = [];
    for (const c of unit.children) c.halt(c === child, cause, returned, (stop) => this.#exits.track(stop));
    if (this.#events.has("crash")) {
      this.#events.emit("crash", { worker: child.index, incarnation, cause, inFlight });
    }
    // The messages it had in flight are the crash's culprits: it counts against each of them.
    const culprits = returned.filter((entry) => entry.child === child);
    // The poison-message policy: a message delivered maxDeliveries times, or that crashed its worker
    // poisonAfter times, is not delivered again.
    const { maxDeliveries, poisonAfter } = this.#o;
    for (const entry of returned) {
      const poisoned = entry.poisoned(maxDeliveries, poisonAfter, cause);
      if (poisoned !== undefined) this.#deadLetter(entry, poisoned.reason, poisoned.error);
    }
    // A listener may have stopped the supervisor, or stop() is finishing: no restart then.
    if (this.#finishing || unit.gaveUp !== undefined || unit.timer !== undefined) return;
    this.#scheduleRestart(unit, cause, culprits);
  }

  #scheduleRestart(unit: Unit<M, R>, cause: unknown, culprits: readonly Entry<M, R>[]): void {
    const { clock, maxRestarts } = this.#o;
    const now = clock.now();
    const decision = decideRestart(unit, this.#o, now, cause);
    if (!("delay" in decision)) {
      this.#giveUp(unit, decision.reason, decision.cause);
      return;
    }
    const { delay } = decision;
    if (maxRestarts !== Number.POSITIVE_INFINITY) unit.restarts.push({ at: now, culprits });
    unit.retries += 1;
    this.#m.restarts += 1;
    unit.timer = clock.setTimer(delay, () => {
      unit.timer = undefined;
      if (!this.#finishing) this.#startUnit(unit);
    });
    if (this.#events.has("restart")) {
      this.#events.emit("restart", { workers: unit.indices, delay, retries: unit.retries, cause });
    }
  }

  #giveUp(unit: Unit<M, R>, reason: string, cause: unknown): void {
    const error = new SupervisorGaveUpError(unit.indices, reason, cause);
    unit.gaveUp = error;
    for (const child of unit.children) child.state = "gave-up";
    if (this.#units.every((u) => u.gaveUp !== undefined) && this.#state === "running") {
      this.#state = "gave-up";
    }
    if (this.#events.has("give-up")) {
      this.#events.emit("give-up", { workers: unit.indices, reason, cause });
    }
    for (const child of unit.children) {
      for (const entry of child.mailbox.heldLetters()) this.#deadLetter(entry, "gave-up", error);
    }
  }

  // ----- stopping ----------------------------------------------------------------------------------------

  /** Rejects every held message with a `SupervisorStoppedError` saying `why` (or the default text). */
  #rejectAll(why: string | undefined): void {
    const stop = this.#stop;
    if (stop === undefined) return;
    cancelDrainTimer(stop);
    if (this.#held === 0) return;
    stop.drained = false;
    const error = new SupervisorStoppedError(why);
    for (const child of this.#children) {
      for (const entry of child.mailbox.heldLetters()) this.#deadLetter(entry, "stopped", error);
    }
  }

  #checkDrained(): void {
    if (this.#stop === undefined || this.#finishing || this.#held !== 0) return;
    this.#finishing = true;
    queueMicrotask(() => void this.#finish());
  }

  async #finish(): Promise<void> {
    const stop = this.#stop as Stopping;
    cancelDrainTimer(stop);
    for (const unit of this.#units) unit.cancelTimer();
    for (const child of this.#children) {
      child.cancelStartTimer();
      const incarnation = child.current;
      child.current = undefined;
      if (incarnation !== undefined) {
        incarnation.live = false;
        const handle = incarnation.handle;
        if (handle !== undefined) this.#exits.track(() => handle.stop(true));
      }
      if (child.state !== "gave-up") child.state = "stopped";
    }
    // Crashed incarnations may still be exiting: wait for every one, so that nothing outlives stop().
    await this.#exits.settled();
    this.#state = "stopped";
    this.#events.emit("stop", { drained: stop.drained });
    this.#events.clear();
    stop.resolve();
  }
}

/**
 * Supervises a worker (or a group): `send` routes each message to a worker and resolves with its reply;
 * a crash stops the worker, and after a backoff a new one receives every unacknowledged message again, in
 * order (Akka's BackoffSupervisor pattern). Every message is delivered at least once, and its sender gets exactly one outcome: the
 * reply or an error saying why none will come. See `SuperviseOptions` for the defaults.
 *
 * @example
 * const mailer = supervise({ worker: processWorker(new URL("./mailer.js", import.meta.url)), maxRestarts: 20 });
 * mailer.on("crash", ({ cause }) => log.warn(cause));
 * const receipt = await mailer.send({ to: "ada@example.com" });
 * await mailer.stop();
 */
export function supervise<M, R>(options: SuperviseOptions<M, R>): Supervisor<M, R> {
  return new SupervisorImpl(options);
}
