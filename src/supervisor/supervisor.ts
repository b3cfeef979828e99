/**
 * The supervisor, seed 004's BackOffSender: messages go through it to a worker; the worker acknowledges
 * each one it handled (its reply); when the worker crashes, the supervisor stops it, starts a new one after
 * a backoff delay, and delivers again every unacknowledged message, in order; an acknowledgement resets the
 * backoff. robustly fixes the two drawbacks the seed names: the buffer of unacknowledged messages is bounded
 * (`maxPending` drops the oldest), and retries stop (`maxRestarts` within `restartWindow`, as Akka's
 * maxNrOfRetries / withinTimeRange). This file is the state machine; it knows nothing of threads or
 * processes, only the `WorkerFactory` interface, and waits only on the injected `Clock`.
 */
import { type CancelTimer, MAX_TIMER_DELAY } from "../core/clock.js";
import { describe, TimeoutError, withoutStack } from "../core/errors.js";
import { clampDelay } from "../core/validate.js";
import {
  MessageDeadLetteredError,
  MessageDroppedError,
  SupervisorGaveUpError,
  SupervisorStoppedError,
} from "./errors.js";
import { Emitter } from "./events.js";
import { DONE, IN_FLIGHT, type Letter, Mailbox, WAITING } from "./mailbox.js";
import { type ResolvedSupervisorOptions, resolveStopOptions, resolveSupervisorOptions } from "./options.js";
import type {
  DeadLetterReason,
  Disposable,
  StopOptions,
  SuperviseOptions,
  Supervisor,
  SupervisorEvents,
  SupervisorMetrics,
  SupervisorState,
  WorkerFactory,
  WorkerHandle,
  WorkerStartContext,
  WorkerState,
  WorkerStatus,
} from "./types.js";

/** One message and its sender (seed 004's `TrackedMsg`). */
class Entry<M, R> implements Letter {
  state: Letter["state"] = WAITING;
  deliveries = 0;
  /** It was in flight when its worker crashed, and has not been answered since. */
  suspect = false;
  lastCause: unknown = undefined;
  timer: CancelTimer | undefined = undefined;
  constructor(
    readonly id: number,
    readonly message: M,
    readonly child: Child<M, R>,
    readonly resolve: (reply: R) => void,
    readonly reject: (error: unknown) => void,
  ) {}
}

/** One start of a worker. The callbacks it was given check `live`, so a stopped incarnation is never heard. */
interface Incarnation<M> {
  live: boolean;
  /** True while its factory's `start` runs: a callback made then waits until `start` has returned. */
  starting: boolean;
  handle: WorkerHandle<M> | undefined;
}

/** One worker of the group, across its incarnations. */
class Child<M, R> {
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
}

/** What restarts together, with one backoff and one restart count: a worker (one-for-one) or the group (all-for-one). */
class Unit<M, R> {
  /** Restarts since the last acknowledgement: x in the backoff's delay(x) (seed 004's `retries`). */
  retries = 0;
  /** When the restarts within the window happened (kept only when maxRestarts is finite). */
  restartTimes: number[] = [];
  timer: CancelTimer | undefined = undefined;
  gaveUp: SupervisorGaveUpError | undefined = undefined;
  readonly indices: readonly number[];
  constructor(readonly children: readonly Child<M, R>[]) {
    this.indices = Object.freeze(children.map((c) => c.index));
  }
}

/** A `stop()` under way. */
interface Stopping {
  readonly promise: Promise<void>;
  readonly resolve: () => void;
  /** False once stop rejected a pending message. */
  drained: boolean;
  /** The drain timeout. */
  timer: CancelTimer | undefined;
}

const DEAD_HANDLE: WorkerHandle<never> = { deliver() {}, stop: () => Promise.resolve() };
const noop = () => {};

class SupervisorImpl<M, R> implements Supervisor<M, R> {
  readonly #o: ResolvedSupervisorOptions<M, R>;
  readonly #children: readonly Child<M, R>[];
  readonly #units: readonly Unit<M, R>[];
  readonly #events = new Emitter<SupervisorEvents<M, R>>();
  /** Workers being stopped; `stop()` resolves only when this is empty. */
  readonly #stopping = new Set<Promise<void>>();
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
    const children = this.#o.factories.map((factory, i) => new Child(i, factory));
    this.#children = children;
    this.#units =
      this.#o.strategy === "all-for-one" ? [new Unit(children)] : children.map((c) => new Unit([c]));
    for (const unit of this.#units) for (const child of unit.children) child.unit = unit;
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
    return Object.freeze(
      this.#children.map((c) =>
        Object.freeze({
          index: c.index,
          kind: c.factory.kind,
          state: c.state,
          incarnation: c.incarnation,
          retries: c.unit.retries,
          pending: c.mailbox.held,
          inFlight: c.mailbox.inFlight,
          pid: c.current?.handle?.pid,
          threadId: c.current?.handle?.threadId,
        }),
      ),
    );
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
      let resolve: () => void = noop;
      const promise = new Promise<void>((r) => {
        resolve = r;
      });
      this.#stop = { promise, resolve, drained: true, timer: undefined };
      this.#state = "stopping";
      if (drain && timeout !== Number.POSITIVE_INFINITY) {
        this.#stop.timer = this.#o.clock.setTimer(timeout, () => this.#rejectAll());
      }
    }
    // A second stop({ drain: false }) while draining cuts the drain short.
    if (!drain) this.#rejectAll();
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
    const children = this.#children;
    const n = children.length;
    if (n === 1) return children[0] as Child<M, R>;
    const route = this.#o.route;
    if (route !== undefined) {
      const i = route(message, n);
      if (!Number.isInteger(i) || i < 0 || i >= n) {
        throw new RangeError(
          `supervise: route returned ${describe(i)}; it must return a worker index, an integer in [0, ${n - 1}]`,
        );
      }
      return children[i] as Child<M, R>;
    }
    // The worker holding the fewest messages, so that one backing off does not collect them all; ties in turn.
    let best: Child<M, R> | undefined;
    for (let k = 0; k < n; k++) {
      const child = children[(this.#turn + k) % n] as Child<M, R>;
      if (child.unit.gaveUp !== undefined) continue;
      if (best === undefined || child.mailbox.held < best.mailbox.held) best = child;
    }
    const chosen = best ?? (children[0] as Child<M, R>);
    this.#turn = (chosen.index + 1) % n;
    return chosen;
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
    if (ackTimeout !== Number.POSITIVE_INFINITY) {
      entry.timer = this.#o.clock.setTimer(ackTimeout, () => {
        entry.timer = undefined;
        if (entry.state !== IN_FLIGHT || !incarnation.live) return;
        // A worker that does not answer is as broken as one that died: stop it and deliver elsewhere/again.
        this.#crash(
          child,
          new TimeoutError(ackTimeout, `Message ${entry.id} was not acknowledged within ${ackTimeout} ms`),
        );
      });
    }
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

  #dropOldest(): void {
    let oldest: Entry<M, R> | undefined;
    for (const child of this.#children) {
      const entry = child.mailbox.peekWaiting();
      if (entry !== undefined && (oldest === undefined || entry.id < oldest.id)) oldest = entry;
    }
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
    if (entry.timer !== undefined) {
      entry.timer();
      entry.timer = undefined;
    }
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
    // Seed 004: "When the BackOffSender receives this message it resets the back off algorithm."
    child.unit.retries = 0;
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
    entry.reject(error);
    if (this.#events.has("dead-letter") || this.#events.has("drop")) {
      const letter = Object.freeze({
        id: entry.id,
        message: entry.message,
        worker: entry.child.index,
        deliveries: entry.deliveries,
        reason,
        error,
      });
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
    child.incarnation += 1;
    const incarnation: Incarnation<M> = { live: true, starting: true, handle: undefined };
    child.current = incarnation;
    child.state = "starting";
    // A callback made while the factory's `start` runs waits until it has returned (and the handle is known).
    const hear = (fn: () => void) => {
      if (!incarnation.live) return;
      if (incarnation.starting) queueMicrotask(() => incarnation.live && fn());
      else fn();
    };
    const context: WorkerStartContext<R> = {
      worker: child.index,
      incarnation: child.incarnation,
      clock: this.#o.clock,
      ready: () => hear(() => this.#ready(child)),
      acknowledge: (id, reply) => {
        if (incarnation.live && !incarnation.starting) this.#acknowledged(child, id, true, reply);
        else hear(() => this.#acknowledged(child, id, true, reply));
      },
      reject: (id, error) => hear(() => this.#acknowledged(child, id, false, error)),
      crashed: (cause) => hear(() => this.#crash(child, cause)),
    };
    try {
      incarnation.handle = child.factory.start(context);
    } catch (error) {
      incarnation.handle = DEAD_HANDLE;
      queueMicrotask(() => incarnation.live && this.#crash(child, error));
    }
    incarnation.starting = false;
    if (this.#events.has("start")) {
      this.#events.emit("start", {
        worker: child.index,
        incarnation: child.incarnation,
        kind: child.factory.kind,
        pid: incarnation.handle.pid,
        threadId: incarnation.handle.threadId,
      });
    }
    const startTimeout = this.#o.startTimeout;
    if (startTimeout !== Number.POSITIVE_INFINITY && incarnation.live && child.state === "starting") {
      child.startTimer = this.#o.clock.setTimer(startTimeout, () => {
        child.startTimer = undefined;
        if (!incarnation.live || child.state !== "starting") return;
        this.#crash(
          child,
          new TimeoutError(
            startTimeout,
            `Worker ${child.index} was not ready within ${startTimeout} ms of its start`,
          ),
        );
      });
    }
  }

  #ready(child: Child<M, R>): void {
    if (child.state !== "starting") return;
    child.state = "running";
    if (child.startTimer !== undefined) {
      child.startTimer();
      child.startTimer = undefined;
    }
    if (this.#events.has("ready")) {
      this.#events.emit("ready", { worker: child.index, incarnation: child.incarnation });
    }
    this.#pump(child);
  }

  /** Seed 004's `Terminated(failedRef)`: stop, put the unacknowledged messages back, back off, restart. */
  #crash(child: Child<M, R>, cause: unknown): void {
    if (child.state !== "starting" && child.state !== "running") return;
    this.#m.crashes += 1;
    const inFlight = child.mailbox.inFlight;
    const incarnation = child.incarnation;
    const unit = child.unit;
    const returned: Entry<M, R>[] = [];
    for (const c of unit.children) this.#halt(c, c === child, cause, returned);
    if (this.#events.has("crash")) {
      this.#events.emit("crash", { worker: child.index, incarnation, cause, inFlight });
    }
    // The poison-message policy: a message delivered maxDeliveries times is not delivered again.
    const maxDeliveries = this.#o.maxDeliveries;
    for (const entry of returned) {
      if (entry.state !== DONE && entry.deliveries >= maxDeliveries) {
        const error = new MessageDeadLetteredError(
          entry.id,
          entry.message,
          entry.deliveries,
          entry.lastCause === undefined ? cause : entry.lastCause,
        );
        this.#deadLetter(entry, "max-deliveries", error);
      }
    }
    // A listener may have stopped the supervisor, or stop() is finishing: no restart then.
    if (this.#finishing || unit.gaveUp !== undefined || unit.timer !== undefined) return;
    this.#scheduleRestart(unit, cause);
  }

  /** Stops one worker's current incarnation (killed at once) and puts the messages it held back in line. */
  #halt(child: Child<M, R>, crashed: boolean, cause: unknown, returned: Entry<M, R>[]): void {
    if (child.state !== "starting" && child.state !== "running") return;
    const incarnation = child.current;
    child.current = undefined;
    child.state = "backing-off";
    if (child.startTimer !== undefined) {
      child.startTimer();
      child.startTimer = undefined;
    }
    if (incarnation !== undefined) {
      incarnation.live = false;
      const handle = incarnation.handle;
      if (handle !== undefined) this.#track(() => handle.stop(false));
    }
    for (const entry of child.mailbox.returnInFlight()) {
      if (entry.timer !== undefined) {
        entry.timer();
        entry.timer = undefined;
      }
      // Only the crashed worker's messages are suspects; a sibling's (all-for-one) were merely interrupted.
      if (crashed) {
        entry.lastCause = cause;
        if (!entry.suspect) {
          entry.suspect = true;
          child.suspects += 1;
        }
      }
      returned.push(entry);
    }
  }

  #scheduleRestart(unit: Unit<M, R>, cause: unknown): void {
    const { clock, maxRestarts, restartWindow, backoff, random } = this.#o;
    const now = clock.now();
    if (maxRestarts !== Number.POSITIVE_INFINITY) {
      // Akka's maxNrOfRetries within withinTimeRange: count only the restarts inside the window.
      if (restartWindow !== Number.POSITIVE_INFINITY) {
        unit.restartTimes = unit.restartTimes.filter((t) => now - t < restartWindow);
      }
      if (unit.restartTimes.length >= maxRestarts) {
        const within = restartWindow === Number.POSITIVE_INFINITY ? "" : ` within ${restartWindow} ms`;
        this.#giveUp(unit, `maxRestarts (${maxRestarts}) restarts${within} used up`, cause);
        return;
      }
    }
    let delay: number;
    try {
      delay = clampDelay(`backoff ${backoff.name}`, backoff.delay(unit.retries, random), MAX_TIMER_DELAY);
    } catch (error) {
      // A broken custom backoff must not throw out of a worker's exit event; it ends the supervision, loudly.
      this.#giveUp(
        unit,
        `the backoff failed: ${error instanceof Error ? error.message : String(error)}`,
        error,
      );
      return;
    }
    if (maxRestarts !== Number.POSITIVE_INFINITY) unit.restartTimes.push(now);
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

  #track(stop: () => Promise<void>): void {
    let stopping: Promise<void>;
    try {
      stopping = Promise.resolve(stop());
    } catch {
      stopping = Promise.resolve();
    }
    const tracked: Promise<void> = stopping.then(noop, noop).then(() => {
      this.#stopping.delete(tracked);
    });
    this.#stopping.add(tracked);
  }

  // ----- stopping ----------------------------------------------------------------------------------------

  #rejectAll(): void {
    const stop = this.#stop;
    if (stop === undefined) return;
    if (stop.timer !== undefined) {
      stop.timer();
      stop.timer = undefined;
    }
    if (this.#held === 0) return;
    stop.drained = false;
    const error = new SupervisorStoppedError();
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
    if (stop.timer !== undefined) {
      stop.timer();
      stop.timer = undefined;
    }
    for (const unit of this.#units) {
      if (unit.timer !== undefined) {
        unit.timer();
        unit.timer = undefined;
      }
    }
    for (const child of this.#children) {
      if (child.startTimer !== undefined) {
        child.startTimer();
        child.startTimer = undefined;
      }
      const incarnation = child.current;
      child.current = undefined;
      if (incarnation !== undefined) {
        incarnation.live = false;
        const handle = incarnation.handle;
        if (handle !== undefined) this.#track(() => handle.stop(true));
      }
      if (child.state !== "gave-up") child.state = "stopped";
    }
    // Crashed incarnations may still be exiting: wait for every one, so that nothing outlives stop().
    while (this.#stopping.size > 0) await Promise.all([...this.#stopping]);
    this.#state = "stopped";
    this.#events.emit("stop", { drained: stop.drained });
    this.#events.clear();
    stop.resolve();
  }
}

/**
 * Supervises a worker (or a group): `send` routes each message to a worker and resolves with its reply;
 * a crash stops the worker, and after a backoff a new one receives every unacknowledged message again, in
 * order (seed 004). Every message is delivered at least once, and its sender gets exactly one outcome: the
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
