/**
 * What every retry budget is: the interface, the options of its two kinds, its events and its state.
 */
import type { Clock } from "../core/clock.js";
import type { Disposable } from "../core/events.js";
import type { SharingOptions } from "../store/replica.js";
import type { StoreEvents } from "../store/shared-policy.js";

export interface RatioBudgetOptions extends SharingOptions {
  /** Retries allowed per request, in [0, 1000]. Default 0.2 (Finagle's default percentCanRetry). */
  ratio?: number;
  /** Retries allowed per second whatever the traffic, >= 0. Default 10 (Finagle's minRetriesPerSec). */
  minPerSecond?: number;
  /** The window, ms, in [1, 2^31 − 1] (about 24.8 days). Default 10,000 (Finagle's ttl). */
  window?: number;
  clock?: Clock;
}

export interface TokenBudgetOptions extends SharingOptions {
  /** The bucket, > 0; it starts full. */
  maxTokens: number;
  /** Given back per success, > 0. */
  tokenRatio: number;
  /** Times the exchanges with a `store`. Default: the real clock. */
  clock?: Clock;
}

/** What a budget reports, `store-down` and `store-up` too when it shares its state through a store. */
export interface BudgetEvents extends StoreEvents {
  /** A retry was refused: the budget is spent. */
  refused: { readonly state: BudgetState };
}

/** A budget's state: one plain object, to read, store and restore. */
export type BudgetState =
  | {
      readonly kind: "ratio";
      readonly requests: readonly number[];
      readonly retries: readonly number[];
      readonly bucketAt: number;
    }
  | { readonly kind: "tokens"; readonly tokens: number };

/** A retry budget, shared by every call that should draw on it. */
export interface RetryBudget {
  readonly kind: "ratio" | "tokens";
  /** A call starts (the ratio flavour counts it as traffic). */
  request(): void;
  /** An attempt succeeded. */
  success(): void;
  /** An attempt failed. */
  failure(): void;
  /** May one more retry happen now? If so it is counted; if not, a `refused` event says so. */
  tryRetry(): boolean;
  /** Whether a retry would be allowed now, without taking it. */
  readonly available: boolean;
  on<K extends keyof BudgetEvents>(event: K, listener: (payload: BudgetEvents[K]) => void): Disposable;
  snapshot(): BudgetState;
  restore(state: BudgetState): void;
  /** Whether the budget is shared through a store now (false without one, and while the store is down). */
  readonly shared: boolean;
  /** Resolves when the first exchange with the store is over (at once without a store). */
  ready(): Promise<void>;
  /** Hands this process's counts to the store one last time and stops exchanging (nothing without a store). */
  close(): Promise<void>;
}
