/** What a call draws on as its retry budget: `retryBudget()`'s budgets and the default ones have it. */
export interface BudgetLike {
  /** A call starts. */
  request(): void;
  /** May one more retry happen now? If so it is counted. */
  tryRetry(): boolean;
  /** An attempt succeeded. */
  success(): void;
  /** An attempt failed. */
  failure(): void;
}

/**
 * Whether `value` can serve as a retry budget where a call draws on one: an object with the four methods a
 * call uses (`request`, `tryRetry`, `success`, `failure`), as `retryBudget()` makes it. Checked when the
 * options are, so that one lacking a method fails there, naming the option, not inside a call.
 */
export function isBudgetLike(value: unknown): value is BudgetLike {
  if (value === null || typeof value !== "object") return false;
  const budget = value as Record<string, unknown>;
  return (
    typeof budget.request === "function" &&
    typeof budget.tryRetry === "function" &&
    typeof budget.success === "function" &&
    typeof budget.failure === "function"
  );
}
