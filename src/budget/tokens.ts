/**
 * The token budget (gRPC's retry throttling): a bucket starts full at `maxTokens`; each failed attempt
 * takes 1, each success gives back `tokenRatio`; no retry while the tokens are at or below half the bucket.
 */
import { OptionError } from "../core/errors.js";
import { finiteAbove, finiteAtLeast } from "../core/validate.js";
import { BudgetBase } from "./base.js";
import type { BudgetState, TokenBudgetOptions } from "./types.js";

export class TokenBudget extends BudgetBase {
  readonly kind = "tokens";
  readonly #max: number;
  readonly #ratio: number;
  #tokens: number;

  constructor(options: TokenBudgetOptions) {
    super();
    this.#max = finiteAbove("retryBudget: maxTokens", options.maxTokens, 0);
    this.#ratio = finiteAbove("retryBudget: tokenRatio", options.tokenRatio, 0);
    this.#tokens = this.#max;
  }

  get tokenRatio(): number {
    return this.#ratio;
  }

  /** Shared mode: `successes`, then `failures`, at once. */
  apply(successes: number, failures: number): void {
    this.#tokens = Math.max(0, Math.min(this.#max, this.#tokens + successes * this.#ratio) - failures);
  }

  get maxTokens(): number {
    return this.#max;
  }

  request(): void {}

  success(): void {
    this.#tokens = Math.min(this.#max, this.#tokens + this.#ratio);
  }

  failure(): void {
    this.#tokens = Math.max(0, this.#tokens - 1);
  }

  get available(): boolean {
    return this.#tokens > this.#max / 2;
  }

  tryRetry(): boolean {
    return this.available || this.refuse();
  }

  snapshot(): BudgetState {
    return { kind: "tokens", tokens: this.#tokens };
  }

  restore(state: BudgetState): void {
    if (state?.kind !== "tokens")
      throw new OptionError("retryBudget.restore", state, "the state of a token budget");
    this.#tokens = finiteAtLeast("retryBudget.restore: tokens", state.tokens, 0, this.#max);
  }
}
