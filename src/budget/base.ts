/**
 * What the three budget classes (ratio, tokens, and either one shared through a store) have in common:
 * the `RetryBudget` interface, `shared`, `ready()` and `close()` (from `SharedPolicy`), and their events.
 */
import { type Disposable, Events } from "../core/events.js";
import { SharedPolicy } from "../store/shared-policy.js";
import type { BudgetEvents, BudgetState, RetryBudget } from "./types.js";

export abstract class BudgetBase extends SharedPolicy implements RetryBudget {
  abstract readonly kind: "ratio" | "tokens";
  protected readonly events = new Events<BudgetEvents>();

  abstract request(): void;
  abstract success(): void;
  abstract failure(): void;
  abstract tryRetry(): boolean;
  abstract readonly available: boolean;
  abstract snapshot(): BudgetState;
  abstract restore(state: BudgetState): void;

  on<K extends keyof BudgetEvents>(event: K, listener: (payload: BudgetEvents[K]) => void): Disposable {
    return this.events.on(event, listener);
  }

  /** Refuses a retry, and says so with a `refused` event. */
  protected refuse(): false {
    this.events.emit("refused", { state: this.snapshot() });
    return false;
  }
}
