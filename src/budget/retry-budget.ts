/**
 * Retry budgets: retries allowed only while they stay a fraction of the traffic, so that under a long
 * outage retries cannot multiply the load on the failing resource (seed 000's conclusion, after Marc
 * Brooker: backoff spreads retries out but does not reduce them). Two flavours:
 *
 * - ratio and floor over a window (Finagle's RetryBudget): within the last `ttl` ms, retries may be at
 *   most `ratio` × requests + `minPerSecond` × ttl / 1000;
 * - tokens (gRPC's retry throttling): a bucket starts full at `maxTokens`; each failed attempt takes 1, each
 *   success gives back `tokenRatio`; no retry while the tokens are at or below half the bucket.
 */
import { type Clock, systemClock } from "../core/clock.js";
import { OptionError } from "../core/errors.js";
import { type Disposable, Events } from "../core/events.js";
import { finiteAbove, finiteAtLeast, knownKeys } from "../core/validate.js";

export interface RatioBudgetOptions {
  /** Retries allowed per request, in [0, 1000]. Default 0.2 (Finagle's default percentCanRetry). */
  ratio?: number;
  /** Retries allowed per second whatever the traffic, >= 0. Default 10 (Finagle's minRetriesPerSec). */
  minPerSecond?: number;
  /** The window, ms, > 0. Default 10,000 (Finagle's ttl). */
  ttl?: number;
  clock?: Clock;
}

export interface TokenBudgetOptions {
  /** The bucket, > 0; it starts full. */
  maxTokens: number;
  /** Given back per success, > 0. */
  tokenRatio: number;
}

/** What a budget reports. */
export interface BudgetEvents extends Record<string, unknown> {
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
  succeeded(): void;
  /** An attempt failed. */
  failed(): void;
  /** May one more retry happen now? If so it is counted; if not, a `refused` event says so. */
  tryRetry(): boolean;
  /** Whether a retry would be allowed now, without taking it. */
  readonly available: boolean;
  on<K extends keyof BudgetEvents>(event: K, listener: (payload: BudgetEvents[K]) => void): Disposable;
  state(): BudgetState;
  restore(state: BudgetState): void;
}

const BUCKETS = 10;

class RatioBudget implements RetryBudget {
  readonly kind = "ratio";
  readonly #events = new Events<BudgetEvents>();
  readonly #ratio: number;
  readonly #floor: number;
  readonly #width: number;
  readonly #clock: Clock;
  // The window as BUCKETS buckets of ttl / BUCKETS ms; index = bucket number mod BUCKETS.
  #requests = new Array<number>(BUCKETS).fill(0);
  #retries = new Array<number>(BUCKETS).fill(0);
  #bucket: number;

  constructor(options: RatioBudgetOptions) {
    knownKeys("retryBudget", options, ["ratio", "minPerSecond", "ttl", "clock"]);
    this.#ratio = finiteAtLeast("retryBudget: ratio", options.ratio ?? 0.2, 0, 1000);
    const minPerSecond = finiteAtLeast("retryBudget: minPerSecond", options.minPerSecond ?? 10, 0);
    const ttl = finiteAbove("retryBudget: ttl", options.ttl ?? 10_000, 0);
    this.#floor = (minPerSecond * ttl) / 1000;
    this.#width = ttl / BUCKETS;
    this.#clock = options.clock ?? systemClock;
    this.#bucket = Math.floor(this.#clock.now() / this.#width);
  }

  /** Moves the window to now, emptying the buckets that fell out of it. */
  #advance(): number {
    const bucket = Math.floor(this.#clock.now() / this.#width);
    const gone = Math.min(BUCKETS, bucket - this.#bucket);
    for (let i = 1; i <= gone; i++) {
      const index = (((this.#bucket + i) % BUCKETS) + BUCKETS) % BUCKETS;
      this.#requests[index] = 0;
      this.#retries[index] = 0;
    }
    if (bucket > this.#bucket) this.#bucket = bucket;
    return ((this.#bucket % BUCKETS) + BUCKETS) % BUCKETS;
  }

  request(): void {
    const i = this.#advance();
    this.#requests[i] = (this.#requests[i] as number) + 1;
  }

  succeeded(): void {}

  failed(): void {}

  get available(): boolean {
    this.#advance();
    const requests = this.#requests.reduce((a, b) => a + b, 0);
    const retries = this.#retries.reduce((a, b) => a + b, 0);
    return retries + 1 <= this.#ratio * requests + this.#floor;
  }

  tryRetry(): boolean {
    if (!this.available) {
      this.#events.emit("refused", { state: this.state() });
      return false;
    }
    const i = this.#advance();
    this.#retries[i] = (this.#retries[i] as number) + 1;
    return true;
  }

  on<K extends keyof BudgetEvents>(event: K, listener: (payload: BudgetEvents[K]) => void): Disposable {
    return this.#events.on(event, listener);
  }

  state(): BudgetState {
    this.#advance();
    return {
      kind: "ratio",
      requests: [...this.#requests],
      retries: [...this.#retries],
      bucketAt: this.#bucket,
    };
  }

  restore(state: BudgetState): void {
    if (state?.kind !== "ratio" || state.requests.length !== BUCKETS || state.retries.length !== BUCKETS) {
      throw new OptionError("retryBudget.restore", state, `the state of a ratio budget (${BUCKETS} buckets)`);
    }
    this.#requests = [...state.requests];
    this.#retries = [...state.retries];
    this.#bucket = state.bucketAt;
  }
}

class TokenBudget implements RetryBudget {
  readonly kind = "tokens";
  readonly #events = new Events<BudgetEvents>();
  readonly #max: number;
  readonly #ratio: number;
  #tokens: number;

  constructor(options: TokenBudgetOptions) {
    knownKeys("retryBudget", options, ["maxTokens", "tokenRatio"]);
    this.#max = finiteAbove("retryBudget: maxTokens", options.maxTokens, 0);
    this.#ratio = finiteAbove("retryBudget: tokenRatio", options.tokenRatio, 0);
    this.#tokens = this.#max;
  }

  request(): void {}

  succeeded(): void {
    this.#tokens = Math.min(this.#max, this.#tokens + this.#ratio);
  }

  failed(): void {
    this.#tokens = Math.max(0, this.#tokens - 1);
  }

  get available(): boolean {
    return this.#tokens > this.#max / 2;
  }

  tryRetry(): boolean {
    if (this.available) return true;
    this.#events.emit("refused", { state: this.state() });
    return false;
  }

  on<K extends keyof BudgetEvents>(event: K, listener: (payload: BudgetEvents[K]) => void): Disposable {
    return this.#events.on(event, listener);
  }

  state(): BudgetState {
    return { kind: "tokens", tokens: this.#tokens };
  }

  restore(state: BudgetState): void {
    if (state?.kind !== "tokens")
      throw new OptionError("retryBudget.restore", state, "the state of a token budget");
    this.#tokens = finiteAtLeast("retryBudget.restore: tokens", state.tokens, 0, this.#max);
  }
}

/**
 * A retry budget to share among calls: `retry(op, { budget })`. With `maxTokens` and `tokenRatio`, the
 * token flavour (gRPC); otherwise ratio and floor over a window (Finagle).
 *
 * @example
 * const budget = retryBudget({ ratio: 0.1, minPerSecond: 5 }); // retries at most 10% of calls, plus 5/s
 * await retry(op, { budget, maxRetries: 3 });
 */
export function retryBudget(options: RatioBudgetOptions | TokenBudgetOptions = {}): RetryBudget {
  if (
    options !== null &&
    typeof options === "object" &&
    ("maxTokens" in options || "tokenRatio" in options)
  ) {
    return new TokenBudget(options as TokenBudgetOptions);
  }
  return new RatioBudget(options as RatioBudgetOptions);
}
