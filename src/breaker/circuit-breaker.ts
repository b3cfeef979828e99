/**
 * A circuit breaker: closed (calls pass), open (calls fail at once with `BrokenCircuitError`), half-open
 * (a few probes pass; enough successes close it, a failure opens it again). It opens on a run of
 * consecutive failures, or on a failure ratio over a sliding window once a minimum number of calls has
 * been seen. How long it stays open follows any core backoff, x being how many times in a row it has
 * opened, so the open time grows while probes keep failing (as Polly's breaker does with its
 * BreakDurationGenerator).
 */

import { toBackoff } from "../backoff/common.js";
import { constant } from "../backoff/constant.js";
import type { Backoff } from "../backoff/types.js";
import { type Clock, clockOption, MAX_TIMER_DELAY } from "../core/clock.js";
import { OptionError, PermanentError } from "../core/errors.js";
import { type Disposable, Events, report, warnOnce } from "../core/events.js";
import { isThenable, settleWith } from "../core/invoke.js";
import { checkedRandom, type Random, systemRandom } from "../core/random.js";
import { retryReport } from "../core/report.js";
import { checkKeys, read } from "../core/schema.js";
import { SHORT_FORM_STEP, type Step } from "../pipeline/step.js";
import { compileRetryMatcher, type MatchAnswer } from "../policy/matcher.js";
import { MAX_SKEW, scratchOptions, sharingOptions } from "../store/replica.js";
import { forEachRun } from "../store/run-log.js";
import { restoreShared, SharedPolicy, SharedRuns } from "../store/shared-policy.js";
import { BREAKER_CHECKS } from "./checks.js";
import { BrokenCircuitError } from "./errors.js";
import { executeThrough } from "./execute.js";
import { BreakerStep } from "./step.js";
import {
  type BreakerEvents,
  type BreakerState,
  type CircuitBreakerOptions,
  type CircuitState,
  checkBreakerState,
} from "./types.js";
import { BUCKETS, CallWindow, SlidingCounts } from "./window.js";

export type { BreakerEvents, BreakerState, CircuitBreakerOptions, CircuitState };
export { BrokenCircuitError };

const FAILED = 1;
const PROBE = 2;
/** Not an outcome: this process's breaker opened. An opening is the fleet's, whatever the others saw meanwhile. */
const OPENED = 4;

export class CircuitBreaker extends SharedPolicy {
  readonly #events: Events<BreakerEvents>;
  readonly #consecutive: number | undefined;
  readonly #ratio: number | undefined;
  readonly #minimum: number;
  readonly #openFor: Backoff;
  /** The longest it stays open: its openFor's max, at most the longest timer. */
  readonly #maxOpen: number;
  readonly #closeAfter: number;
  readonly #probes: number;
  readonly #clock: Clock;
  readonly #random: Random;
  #state: CircuitState = "closed";
  #openUntil = 0;
  #openings = 0;
  #failures = 0;
  #successes = 0;
  #inFlightProbes = 0;
  /** Isolations in force (`isolate()` handles not yet disposed). */
  #isolations = 0;
  /** The calls and failures over the window (with `failureRatio`). */
  readonly #window: SlidingCounts;
  /** With `windowCalls`: the last calls' outcomes, in place of the time window. */
  readonly #calls: CallWindow | undefined;
  readonly #options: CircuitBreakerOptions;
  /** The `handles` option compiled: whether a failure with this error counts (perhaps as a promise). */
  readonly #handles: ((error: unknown) => MatchAnswer) | undefined;
  /** Shared mode: the outcomes seen since the last exchange, each FAILED and/or PROBE, or OPENED. */
  readonly #runs = new SharedRuns();
  /** Shared mode: when this process's latest opening ends (store time), until the fleet's state carries it. */
  #pendingOpen: number | undefined;
  /** Shared mode: when this process decided that latest opening (store time). */
  #pendingFrom = 0;
  /**
   * While this process's outcomes are replayed: when the opening they lead to was decided, so that the
   * fleet's breaker stays open openFor from then, not from when the store heard of it. Taken by one opening.
   */
  #openFrom: number | undefined;

  constructor(options: CircuitBreakerOptions = {}) {
    super();
    checkKeys(BREAKER_CHECKS, options);
    read(BREAKER_CHECKS, "onCallbackError", options.onCallbackError);
    this.#events = new Events<BreakerEvents>(options.onCallbackError ?? warnOnce);
    const field = <V>(key: keyof CircuitBreakerOptions) =>
      read<V | undefined>(BREAKER_CHECKS, key, options[key]);
    this.#ratio = field<number>("failureRatio");
    if (options.consecutiveFailures !== undefined || this.#ratio === undefined) {
      this.#consecutive = field<number>("consecutiveFailures") ?? 5;
    }
    const windowCalls = field<number>("windowCalls");
    this.#minimum = field<number>("minimumThroughput") ?? Math.min(10, windowCalls ?? 10);
    if (windowCalls !== undefined) checkWindowCalls(windowCalls, this.#ratio, options.window, this.#minimum);
    this.#calls = windowCalls === undefined ? undefined : new CallWindow(windowCalls);
    this.#openFor = toBackoff(options.openFor ?? constant({ base: 5000 }), "circuitBreaker: openFor");
    const max = this.#openFor.max;
    this.#maxOpen = typeof max === "number" && max >= 0 ? Math.min(max, MAX_TIMER_DELAY) : MAX_TIMER_DELAY;
    this.#closeAfter = field<number>("halfOpenSuccesses") ?? 1;
    this.#probes = field<number>("halfOpenProbes") ?? 1;
    this.#handles =
      options.handles === undefined
        ? undefined
        : compileRetryMatcher("circuitBreaker: handles", options.handles);
    // Checked here as retry's and retryBudget's is, not at the first call that reads it.
    const clock = clockOption("circuitBreaker: clock", options.clock, "a Clock");
    this.#window = new SlidingCounts((field<number>("window") ?? 10_000) / BUCKETS);
    this.#random =
      options.random === undefined
        ? systemRandom
        : checkedRandom(field<Random>("random") as Random, "circuitBreaker: random");
    this.#options = options;
    const sharing = sharingOptions("circuitBreaker", options);
    // Deadlines and windows on the store's clock, which the whole fleet shares.
    this.#clock = this.share("breaker", sharing, clock, this.#events, () =>
      this.#runs.hooks(
        (shared) => checkBreakerState(shared as BreakerState),
        (shared, batch, now, recovering) => this.#merge(shared, batch.runs, now, recovering),
        (shared: BreakerState) => this.#adopt(shared),
      ),
    );
  }

  /** The shared state with `outcomes` replayed on it, in order, by this very breaker's rules. */
  #merge(shared: unknown, outcomes: readonly number[], now: number, recovering: boolean): BreakerState {
    const scratch = new CircuitBreaker({ ...scratchOptions(this.#options, now), random: this.#random });
    restoreShared(shared, (state) => scratch.restore(state as BreakerState));
    scratch.#pendingOpen = this.#pendingOpen;
    scratch.#openFrom = this.#pendingOpen === undefined ? undefined : this.#pendingFrom;
    if (!recovering) scratch.#replay(outcomes);
    // An opening this process decided while sharing, whose report has not landed yet: the fleet's too.
    const until = this.#pendingOpen;
    if (until !== undefined && until > now && !(scratch.#state === "open" && scratch.#openUntil >= until)) {
      scratch.#openAt(until);
    }
    return scratch.snapshot();
  }

  /** Applies `runs` of outcomes (from `#record`) to this breaker, in order. */
  #replay(runs: readonly number[]): void {
    forEachRun(runs, (code, count) => {
      if (code === OPENED) {
        // Opened by this process's calls: open for the fleet (until when it opened, if known), unless it
        // is open already.
        if (this.#state !== "open" || this.#clock.now() >= this.#openUntil) {
          if (this.#pendingOpen === undefined) this.#open();
          else this.#openAt(this.#pendingOpen);
        }
      } else if (code & PROBE) {
        for (let i = 0; i < count; i++) {
          try {
            this.acquire();
          } catch {
            // The fleet's breaker opened again meanwhile: this probe's outcome is out of date.
            continue;
          }
          if (code & FAILED) this.failure();
          else this.success();
        }
      } else if (this.#state === "closed") {
        this.#closedRun((code & FAILED) !== 0, count);
      } else {
        // Calls let through before this process heard of the opening: counted, and nothing more.
        this.#countRun((code & FAILED) !== 0, count);
      }
    });
  }

  /** `count` outcomes alike on a closed breaker, at once: the same state as one at a time. */
  #closedRun(failed: boolean, count: number): void {
    if (!failed) {
      this.#countRun(false, count);
      return;
    }
    // The failures it takes to open, found without replaying them one by one: the smallest j that opens.
    let j = Math.min(count, this.#failuresToOpen());
    this.#countRun(true, j);
    // Rounding in the ratio's estimate: step to the exact point.
    while (j < count && !this.#shouldOpen()) {
      this.#countRun(true, 1);
      j += 1;
    }
    if (!this.#shouldOpen()) return;
    this.#open();
    this.#countRun(true, count - j);
  }

  /** A lower bound on the failures in a row that would open the closed breaker (at least 1). */
  #failuresToOpen(): number {
    let needed = Number.POSITIVE_INFINITY;
    if (this.#consecutive !== undefined) needed = Math.max(1, this.#consecutive - this.#failures);
    if (this.#ratio !== undefined) {
      const { calls, failed } = this.#totals();
      // (failed + j) / (calls + j) >= ratio  ⇔  j >= (ratio·calls − failed) / (1 − ratio), and calls + j >= minimum.
      // With windowCalls this may pass the exact point (failures push older calls out), but a run of
      // failures only raises the window's ratio, so the state at the run's end is the same.
      const byRatio =
        this.#ratio >= 1
          ? failed === calls
            ? 0
            : Number.POSITIVE_INFINITY
          : Math.floor((this.#ratio * calls - failed) / (1 - this.#ratio));
      needed = Math.min(needed, Math.max(1, this.#minimum - calls, byRatio));
    }
    return needed;
  }

  /** Counts `count` outcomes alike in the window and the run of failures. */
  #countRun(failed: boolean, count: number): void {
    if (count <= 0) return;
    this.#count(failed, count);
    this.#failures = failed ? this.#failures + count : 0;
  }

  #adopt(shared: BreakerState): void {
    const from = this.#state;
    const probes = this.#inFlightProbes;
    this.restore(shared);
    if (this.#pendingOpen !== undefined && this.#state === "open" && this.#openUntil >= this.#pendingOpen) {
      this.#pendingOpen = undefined;
    }
    this.#openFrom = this.#pendingOpen === undefined ? undefined : this.#pendingFrom;
    this.#runs.replayOwn(this.#random, (runs) => this.#replay(runs));
    this.#openFrom = undefined;
    if (from === "half-open" && this.state === "half-open") {
      // Told half-open here, and half-open for the fleet too (its opening has run out, though no probe has
      // told the store so): half-open it stays, with this process's probes still out, which must be able
      // to close or reopen the breaker when they end. (A probe given back was never reported.)
      this.#state = "half-open";
      this.#inFlightProbes = probes;
    }
    // Changes as the events have told them: from the state last announced to the one now held.
    const to = this.#state;
    if (from !== to) {
      this.#events.emit(
        "change",
        to === "open"
          ? { from, to, openFor: Math.max(0, this.#openUntil - this.#clock.now()) }
          : { from, to },
      );
    }
  }

  /**
   * Holds the circuit open by hand, as cockatiel's `isolate()`: every call is refused with a
   * `BrokenCircuitError` until each handle returned has been disposed; then calls go through the
   * breaker as before (its own state untouched meanwhile). In this process only: an isolation is not
   * shared through a store.
   *
   * @example
   * const maintenance = breaker.isolate(); // the dependency is down for maintenance
   * maintenance.dispose(); // and back
   */
  isolate(): Disposable {
    this.#isolations += 1;
    let disposed = false;
    return {
      dispose: () => {
        if (disposed) return;
        disposed = true;
        this.#isolations -= 1;
      },
    };
  }

  /** Whether an `isolate()` holds the circuit open now. */
  get isolated(): boolean {
    return this.#isolations > 0;
  }

  /** The state now (an open circuit whose time is up reads as half-open). */
  get state(): CircuitState {
    if (this.#state === "open" && this.#clock.now() >= this.#openUntil) return "half-open";
    return this.#state;
  }

  on<K extends keyof BreakerEvents>(event: K, listener: (payload: BreakerEvents[K]) => void): Disposable {
    return this.#events.on(event, listener);
  }

  /**
   * Asks to make a call. Throws `BrokenCircuitError` if the circuit is open (or half-open with all its
   * probes out); otherwise the call must report its outcome with `settle()`, or `success()`, `failure()`
   * or `release()`. Returns the clock time it let the call through, for `settle` to time it.
   */
  /**
   * The step this breaker runs as inside `retry`'s retry step (`retry(op, { breaker })`): a value
   * `handlesResult` answers true for (the short form's `retryOnResult`) is a failure to it too.
   */
  [SHORT_FORM_STEP](handlesResult: ((value: unknown) => boolean | PromiseLike<boolean>) | undefined): Step {
    return new BreakerStep(this, { handlesResult });
  }

  acquire(): number {
    // An isolation refuses calls, not the replay of a probe this process already made.
    if (this.#isolations > 0 && !this.#runs.quiet) {
      this.#events.emit("rejected", { retryAfter: 0 });
      throw new BrokenCircuitError(0, "the circuit is isolated (held open by isolate())");
    }
    if (this.replica?.refusing) {
      this.#events.emit("rejected", { retryAfter: 0 });
      throw new BrokenCircuitError(0, "the circuit's shared state is out of reach (whenStoreDown: closed)");
    }
    const now = this.#clock.now();
    if (this.#state === "open") {
      if (now < this.#openUntil) this.#reject(this.#openUntil - now);
      this.#move("half-open");
    }
    if (this.#state === "half-open") {
      if (this.#inFlightProbes >= this.#probes) this.#reject(0);
      this.#inFlightProbes += 1;
    }
    return now;
  }

  #reject(retryAfter: number): never {
    if (!this.#runs.quiet) this.#events.emit("rejected", { retryAfter });
    throw new BrokenCircuitError(retryAfter);
  }

  /** A call let through by `acquire` succeeded. */
  success(): void {
    this.#runs.record(this.#state === "half-open" ? PROBE : 0);
    this.#count(false);
    this.#failures = 0;
    if (this.#state === "half-open") {
      this.#inFlightProbes = Math.max(0, this.#inFlightProbes - 1);
      this.#successes += 1;
      if (this.#successes >= this.#closeAfter) {
        this.#openings = 0;
        this.#window.clear();
        this.#calls?.clear();
        this.#move("closed");
      }
    }
  }

  /** A call let through by `acquire` failed. */
  failure(): void {
    this.#runs.record(FAILED | (this.#state === "half-open" ? PROBE : 0));
    this.#count(true);
    this.#failures += 1;
    if (this.#state === "half-open") {
      this.#inFlightProbes = Math.max(0, this.#inFlightProbes - 1);
      this.#open();
      return;
    }
    if (this.#state === "closed" && this.#shouldOpen()) this.#open();
  }

  /**
   * A call let through by `acquire` ended without an outcome that says anything of the service (the
   * caller aborted it, or its error is one `handles` does not count): a probe's place is given back, and
   * nothing is counted.
   */
  release(): void {
    if (this.#state === "half-open") this.#inFlightProbes = Math.max(0, this.#inFlightProbes - 1);
  }

  /**
   * Reports how a call let through by `acquire` ended (`outcome`: its error, or its value when it did not
   * fail): `success()`, `failure()` or `release()`, by `handles`; then calls `then` (at once, or once an
   * async `handles` has answered). A `handles` that throws or rejects is reported to `onCallbackError` and
   * the failure counts as it would without one (a broken predicate must not stop the breaker from
   * guarding the service). Given `started` (from `acquire`), it emits `success` or `failure`.
   */
  settle(outcome: unknown, failed: boolean, then?: () => void, started?: number): void {
    const judged = (counts: boolean) => {
      if (counts) this.failure();
      else this.release();
      this.#told(started, "failure", { outcome, isValue: false, handled: counts });
      then?.();
    };
    if (!failed) {
      this.settleValue(outcome, false, started);
      then?.();
      return;
    }
    const handles = this.#handles;
    if (handles === undefined || isPermanent(outcome)) {
      judged(!isPermanent(outcome));
      return;
    }
    const broken = (thrown: unknown) => {
      report(this.#events.onListenerError, "handles", thrown);
      judged(true);
    };
    let answer: MatchAnswer;
    try {
      answer = handles(outcome);
    } catch (thrown) {
      broken(thrown);
      return;
    }
    if (!isThenable(answer)) judged(answer);
    else settleWith(answer, (counts) => judged(Boolean(counts)), broken);
  }

  /**
   * Reports a call let through by `acquire` that answered with `value`, judged by `handlesResult` (a
   * failure when it answers true); then calls `then` (at once, or once an async predicate has answered).
   * A predicate that throws or rejects is reported to `onCallbackError`, and the value counts as it would
   * without one: a success.
   */
  settleResult(
    value: unknown,
    handlesResult: ((value: unknown) => boolean | PromiseLike<boolean>) | undefined,
    then?: () => void,
    started?: number,
  ): void {
    const judged = (failed: boolean) => {
      this.settleValue(value, failed, started);
      then?.();
    };
    if (handlesResult === undefined) {
      judged(false);
      return;
    }
    const broken = (thrown: unknown) => {
      report(this.#events.onListenerError, "handlesResult", thrown);
      judged(false);
    };
    let answer: boolean | PromiseLike<boolean>;
    try {
      answer = handlesResult(value);
    } catch (thrown) {
      broken(thrown);
      return;
    }
    if (!isThenable(answer)) judged(answer === true);
    else settleWith(answer, (failed) => judged(failed === true), broken);
  }

  /**
   * Reports a call let through by `acquire` that answered with `value`: a success, or a failure when
   * `failed` (a `handlesResult` counted it); emits `success` or `failure` when given `started`.
   */
  settleValue(value: unknown, failed: boolean, started?: number): void {
    if (failed) {
      this.failure();
      this.#told(started, "failure", { outcome: value, isValue: true, handled: true });
    } else {
      this.success();
      this.#told(started, "success", { value });
    }
  }

  /** Emits `event` for a call let through at `started` (nothing when the call was not timed). */
  #told<K extends "success" | "failure">(
    started: number | undefined,
    event: K,
    payload: Omit<BreakerEvents[K], "duration">,
  ): void {
    if (started === undefined || !this.#events.has(event)) return;
    const duration = Math.max(0, this.#clock.now() - started);
    this.#events.emit(event, { duration, ...payload } as BreakerEvents[K]);
  }

  /**
   * Runs `fn` through the breaker: refused at once with `BrokenCircuitError` while open; a failure counts
   * when `handles` matches it. With a `signal`, an abort rejects at once with its reason and counts as
   * nothing (a probe's place is given back).
   */
  execute<T>(fn: (signal?: AbortSignal) => T | PromiseLike<T>, signal?: AbortSignal): Promise<T> {
    return executeThrough(this, fn, signal);
  }

  #shouldOpen(): boolean {
    if (this.#consecutive !== undefined && this.#failures >= this.#consecutive) return true;
    if (this.#ratio === undefined) return false;
    const { calls, failed } = this.#totals();
    return calls >= this.#minimum && failed / calls >= this.#ratio;
  }

  /** The calls and the failures in the window now. */
  #totals(): { calls: number; failed: number } {
    if (this.#calls !== undefined) return { calls: this.#calls.calls, failed: this.#calls.failures };
    this.#window.advanceTo(this.#clock.now());
    return { calls: this.#window.first, failed: this.#window.second };
  }

  #count(failed: boolean, n = 1): void {
    if (this.#ratio === undefined) return;
    if (this.#calls !== undefined) this.#calls.record(failed, n);
    else this.#window.count(this.#clock.now(), n, failed ? n : 0);
  }

  #open(): void {
    const delay = this.#openFor.delay(this.#openings, this.#random);
    const duration = delay > 0 ? Math.min(delay, this.#maxOpen) : 0;
    const now = this.#clock.now();
    const until = (this.#openFrom ?? now) + duration;
    this.#openFrom = undefined;
    // An opening decided here while sharing is the fleet's: it is kept until a write that carries it lands,
    // even if the store fails first.
    if (this.shared && !this.#runs.quiet && until >= (this.#pendingOpen ?? until)) {
      this.#pendingOpen = until;
      this.#pendingFrom = now;
    }
    this.#runs.record(OPENED);
    this.#openAt(until);
  }

  #openAt(until: number): void {
    this.#openings += 1;
    this.#openUntil = until;
    this.#successes = 0;
    this.#inFlightProbes = 0;
    this.#move("open", Math.max(0, until - this.#clock.now()));
  }

  #move(to: CircuitState, openFor?: number): void {
    const from = this.#state;
    this.#state = to;
    if (to === "closed") {
      this.#failures = 0;
      this.#successes = 0;
      this.#inFlightProbes = 0;
    }
    if (to === "half-open") this.#successes = 0;
    if ((from !== to || to === "open") && !this.#runs.quiet) {
      this.#events.emit("change", openFor === undefined ? { from, to } : { from, to, openFor });
      // The fleet should learn of an opening (or a closing) now, not at the next exchange.
      if (to !== "half-open") this.replica?.soon();
    }
  }

  /** A copy of the whole state. */
  snapshot(): BreakerState {
    this.#window.advanceTo(this.#clock.now());
    return {
      state: this.#state,
      openUntil: this.#openUntil,
      openings: this.#openings,
      consecutiveFailures: this.#failures,
      halfOpenSuccesses: this.#successes,
      window: this.#window.entries(),
      ...(this.#calls === undefined ? {} : { recent: this.#calls.outcomes() }),
    };
  }
  /**
   * Replaces the state with `state` (from `snapshot()`, perhaps of another process); checked whole before
   * any of it is taken, and held to what this breaker could have written: open no longer than its longest
   * openFor (and `MAX_SKEW`) from now.
   */
  restore(state: BreakerState): void {
    const checked = checkBreakerState(state);
    const now = this.#clock.now();
    this.#state = checked.state;
    this.#openUntil = Math.min(checked.openUntil, now + this.#maxOpen + MAX_SKEW);
    this.#openings = checked.openings;
    this.#failures = checked.consecutiveFailures;
    this.#successes = checked.halfOpenSuccesses;
    this.#inFlightProbes = 0;
    // Each bucket in the window counted again, in a window that holds no more than BUCKETS: a bucket dated
    // later than now counts now, and never more failures than calls.
    const window = this.#window;
    window.reset(now);
    for (const [time, calls, failures] of checked.window) {
      const n = Math.max(0, calls);
      window.add(Math.min(window.bucketOf(time), window.head), n, Math.min(Math.max(0, failures), n));
    }
    this.#calls?.load(checked.recent ?? []);
  }
}

/** `windowCalls` takes `failureRatio`, not `window`, and a `minimumThroughput` the window can hold. */
function checkWindowCalls(
  windowCalls: number,
  ratio: number | undefined,
  window: number | undefined,
  minimum: number,
): void {
  const option = "circuitBreaker: windowCalls";
  if (ratio === undefined) {
    throw new OptionError(
      option,
      windowCalls,
      "given with failureRatio (the share of the last calls that opens it)",
    );
  }
  if (window !== undefined) {
    throw new OptionError(
      option,
      windowCalls,
      "left out when window is given: a window counts time or calls, not both",
    );
  }
  if (minimum > windowCalls) {
    throw new OptionError(
      "circuitBreaker: minimumThroughput",
      minimum,
      `at most windowCalls (${windowCalls}): the window never holds more calls`,
    );
  }
}

/** A `PermanentError`, or an error a retry step gave up on because it was one. */
function isPermanent(error: unknown): boolean {
  return error instanceof PermanentError || retryReport(error)?.reason === "permanent";
}

/**
 * A circuit breaker to share among calls: `retry(op, { breaker })` or `breaker.execute(op)`. With a
 * `store` (and a `key`), one breaker for every process that names the same store and key (`SharingOptions`).
 *
 * @example
 * const breaker = circuitBreaker({ failureRatio: 0.5, minimumThroughput: 20, openFor: backoff.exponential({ base: 1000, max: 60_000 }) });
 */
export function circuitBreaker(options?: CircuitBreakerOptions): CircuitBreaker {
  return new CircuitBreaker(options);
}
