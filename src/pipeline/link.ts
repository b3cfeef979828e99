/**
 * An attempt's context that the retry loop makes without a scope (src/retry/call.ts), and what a step or
 * pipeline it is passed to needs of it to run inside that attempt (`scopeOf` in context.ts makes the
 * scope). The loop imports only this, so that an app that never runs a step inside an attempt carries no
 * scope code.
 */
import type { Clock } from "../core/clock.js";
import type { Random } from "../core/random.js";

/**
 * Why a context was aborted, which guards need to know: a breaker counts a timeout against the service,
 * but not the caller's abort, a hedge that lost the race, nor a call that had already answered
 * (`settled`: a timeout step's `abortOnReturn`).
 */
export type AbortKind = "caller" | "timeout" | "lost" | "settled";

/**
 * A budget's mark on the context of one attempt: set by the step that made the attempt; a step inside
 * that uses the same budget sets `inner`, and then it reports the attempts' outcomes, not the outer one.
 */
export interface BudgetClaim {
  readonly budget: object;
  inner: boolean;
}

/**
 * A run that has answered in a scope (a child scope let go, a retry step's attempt), which the scope keeps
 * so that an abort of kind "settled" still reaches it (see `Scope.keepAnswered`).
 */
export interface AnsweredRun {
  abort(reason: unknown, kind: AbortKind): void;
}

/** What an attempt asks of the scope made for it. */
export interface LinkedScope extends AnsweredRun {
  /** What `bail` left on it, taken off it. */
  takeBail(): unknown;
  /** Ends its tie to the scope outside (the attempt is over). */
  release(): void;
}

/** Marks an attempt's context that stands for a scope it has not made (see `LinkedAttempt`). */
export const LINKED: unique symbol = Symbol("robustly.linkedAttempt");

/** An attempt's context as `scopeOf` reads it, to make the scope of that attempt once. */
export interface LinkedAttempt {
  readonly [LINKED]: true;
  readonly attempt: number;
  readonly retries: number;
  readonly retriesLeft: number;
  readonly elapsed: number;
  readonly timeout: number;
  readonly clock: Clock;
  readonly random: Random;
  /** The scope the retry step runs in, whose child the attempt's scope is; undefined for `retry`'s own. */
  readonly parent: object | undefined;
  readonly claim: BudgetClaim | undefined;
  /** Why the attempt was aborted, and how (`kind` undefined while it was not). */
  readonly reason: unknown;
  readonly kind: AbortKind | undefined;
  /** The scope made for it, once made: the attempt aborts it with itself and reads its `bail`. */
  scope: LinkedScope | undefined;
}
