/**
 * One hedged run: the first attempt, the hedges started beside it after the delay (or at once after a
 * failure), the first success winning and the others aborted, and the budget told of each attempt.
 */

import { type CancelTimer, MAX_TIMER_DELAY } from "../core/clock.js";
import { PermanentError } from "../core/errors.js";
import type { Events } from "../core/events.js";
import { Eventual, invoke } from "../core/invoke.js";
import type { Scope } from "../pipeline/context.js";
import type { Next } from "../pipeline/step.js";
import { HedgeLostError } from "./errors.js";
import type { LatencyTracker } from "./latency-tracker.js";
import type { HedgeDelay, HedgeEvent, HedgeTrigger, ResolvedHedge } from "./types.js";

/** The delay for a call starting now: fixed, or the tracker's percentile (the fallback while it is short). */
function currentDelay(delay: HedgeDelay): number {
  if (typeof delay === "number") return Math.min(delay, MAX_TIMER_DELAY);
  const enough = delay.of.size >= (delay.minSamples ?? 1);
  const value = enough ? delay.of.percentile(delay.percentile) : undefined;
  return Math.min(Math.max(value ?? delay.fallback, 0), MAX_TIMER_DELAY);
}

/** Records a latency, skipping what a clock that stepped back (or broke) would make of it. */
function record(tracker: LatencyTracker, ms: number): void {
  if (ms >= 0 && Number.isFinite(ms)) tracker.record(ms);
}

/** One attempt in flight. */
interface Running {
  readonly attempt: number;
  readonly started: number;
  readonly scope: Scope;
  /** The budget's mark on this attempt, when this step reports its outcome. */
  readonly claim: { readonly budget: object; inner: boolean } | undefined;
}

export interface HedgeEvents extends Record<string, unknown> {
  /** A hedge is about to start. */
  hedge: HedgeEvent;
}

/** One hedged run: its `out` settles exactly once, leaving no timer and no hook behind. */
export class HedgedCall<T> {
  readonly #next: Next<T>;
  readonly #options: ResolvedHedge;
  readonly #scope: Scope;
  readonly out = new Eventual<T>();
  readonly #events: Events<HedgeEvents>;
  readonly #delay: number;
  readonly #start: number;
  readonly #running = new Set<Running>();
  /** Whether this step tells the budget of its attempts' outcomes (no step inside took that over). */
  readonly #reports: boolean;
  #started = 0;
  #hedgesLeft: number;
  #cancelTimer: CancelTimer | undefined;
  #unwatch: (() => void) | undefined;
  #done = false;
  #lastError: unknown;

  constructor(next: Next<T>, options: ResolvedHedge, scope: Scope, events: Events<HedgeEvents>) {
    this.#next = next;
    this.#options = options;
    this.#scope = scope;
    this.#events = events;
    this.#hedgesLeft = options.maxHedges;
    this.#delay = currentDelay(options.delay);
    this.#start = scope.clock.now();
    this.#reports = options.budget !== undefined;
  }

  begin(): void {
    const scope = this.#scope;
    if (scope.aborted) {
      this.#done = true;
      this.out.reject(scope.reason);
      return;
    }
    this.#unwatch = scope.onAbort(this.#onAbort);
    const budget = this.#options.budget;
    if (budget !== undefined) {
      // The budget hears of this execution once: a step outside that uses it counted the request already.
      const outer = scope.findClaim(budget);
      if (outer === undefined) budget.request();
      else outer.inner = true;
    }
    this.#launch();
    this.#schedule();
  }

  /** Sets the timer for the next hedge, unless the call is over or no hedge is left. */
  #schedule(): void {
    this.#cancelTimer?.();
    this.#cancelTimer = undefined;
    if (this.#done || this.#hedgesLeft === 0) return;
    this.#cancelTimer = this.#scope.clock.setTimer(this.#delay, this.#onDelay);
  }

  readonly #onDelay = (): void => {
    this.#cancelTimer = undefined;
    if (this.#done) return;
    if (this.#hedgeNow("delay")) this.#schedule();
  };

  /** Starts a hedge if one is left and the budget grants it; true when one started. */
  #hedgeNow(trigger: HedgeTrigger): boolean {
    if (this.#hedgesLeft === 0) return false;
    const budget = this.#options.budget;
    if (budget !== undefined && !budget.tryRetry()) {
      // The budget is spent: this call hedges no more.
      this.#hedgesLeft = 0;
      return false;
    }
    this.#hedgesLeft -= 1;
    if (this.#events.has("hedge")) {
      this.#events.emit("hedge", {
        attempt: this.#started + 1,
        after: this.#scope.clock.now() - this.#start,
        trigger,
      });
    }
    // The listener may have aborted the caller's signal, which ended the call.
    if (this.#done) return false;
    this.#launch();
    return !this.#done;
  }

  #launch(): void {
    this.#started += 1;
    const budget = this.#options.budget;
    const claim = budget === undefined ? undefined : { budget, inner: false };
    const running: Running = {
      attempt: this.#started,
      started: this.#scope.clock.now(),
      scope: this.#scope.child({ hedge: this.#started, claim }, true),
      claim,
    };
    this.#running.add(running);
    invoke(
      () => this.#next(running.scope),
      (value) => this.#succeeded(running, value),
      (error) => this.#failed(running, error),
    );
  }

  #succeeded(running: Running, value: T): void {
    // A late outcome of an attempt the call no longer waits for is dropped.
    if (this.#done || !this.#running.delete(running)) return;
    this.#answered(running);
    const losers = [...this.#running];
    if (this.#reports && running.claim?.inner === false) this.#options.budget?.success();
    this.#finish(running.attempt);
    this.out.resolve(value);
    const tracker = this.#options.tracker;
    if (tracker === undefined) return;
    const now = this.#scope.clock.now();
    record(tracker, now - running.started);
    // A loser's latency is known only to exceed the time it ran: recording that lower bound keeps the slow
    // tail in the tracker. Recording winners alone would drop exactly the slow attempts hedging cut short,
    // and the percentile, hence the delay, would sink call after call down to the fast attempts' latency
    // (test/hedge.test.ts shows both). With the lower bounds it settles a little below the true percentile.
    for (const loser of losers) record(tracker, now - loser.started);
  }

  #failed(running: Running, error: unknown): void {
    if (this.#done || !this.#running.delete(running)) return;
    this.#answered(running);
    this.#lastError = error;
    if (this.#reports && running.claim?.inner === false) this.#options.budget?.failure();
    if (error instanceof PermanentError) {
      // As in retry: a PermanentError ends the call at once (the edge unwraps it).
      this.#finish(
        running.attempt,
        `attempt ${running.attempt} failed permanently; this attempt is not needed`,
      );
      this.out.reject(error);
      return;
    }
    if (this.#options.hedgeOnFailure && this.#hedgeNow("failure")) {
      this.#schedule();
      return;
    }
    if (this.#done) return;
    if (this.#running.size === 0) {
      // Every attempt started has failed, and no hedge is left to start.
      this.#finish(running.attempt);
      this.out.reject(this.#lastError);
    }
  }

  /**
   * `running` answered: its scope lets go of the call's, which keeps it in place of the one that answered
   * before (the winner, or the failure the call may end with), for an `abortOnReturn` outside to reach.
   */
  #answered(running: Running): void {
    running.scope.release();
    this.#scope.keepAnswered(running.scope);
  }

  readonly #onAbort = (): void => {
    if (this.#done) return;
    this.#unwatch = undefined;
    // The attempts' scopes abort with this one.
    this.#running.clear();
    this.#finish(0);
    this.out.reject(this.#scope.reason);
  };

  /**
   * Marks the call settled, removes its timer and its hook, and aborts every attempt still running with a
   * `HedgeLostError` naming the attempt that settled it.
   */
  #finish(settledBy: number, message?: string): void {
    this.#done = true;
    this.#cancelTimer?.();
    this.#cancelTimer = undefined;
    this.#unwatch?.();
    this.#unwatch = undefined;
    if (this.#running.size === 0) return;
    const losers = [...this.#running];
    this.#running.clear();
    const why = new HedgeLostError(settledBy, message);
    for (const loser of losers) loser.scope.abort(why, "lost");
  }
}
