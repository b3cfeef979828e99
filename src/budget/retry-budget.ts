/**
 * Retry budgets: retries allowed only while they stay a fraction of the traffic, so that under a long
 * outage retries cannot multiply the load on the failing resource (Marc Brooker, "Fixing retries with
 * token buckets and circuit breakers", 2022: backoff spreads retries out but does not reduce them). Two kinds, one file each:
 *
 * - ratio and floor over a window (Finagle's RetryBudget, `ratio.ts`);
 * - tokens (gRPC's retry throttling, `tokens.ts`);
 *
 * and either one shared by a fleet through a store (`shared.ts`).
 */

import { type Clock, clockOption } from "../core/clock.js";
import { checkKeys } from "../core/schema.js";
import { sharingOptions } from "../store/replica.js";
import { RATIO_BUDGET_CHECKS, TOKEN_BUDGET_CHECKS } from "./checks.js";
import { RatioBudget } from "./ratio.js";
import { SharedBudget } from "./shared.js";
import { TokenBudget } from "./tokens.js";
import type { RatioBudgetOptions, RetryBudget, TokenBudgetOptions } from "./types.js";

export type {
  BudgetEvents,
  BudgetState,
  RatioBudgetOptions,
  RetryBudget,
  TokenBudgetOptions,
} from "./types.js";

/**
 * A retry budget to share among calls: `retry(op, { budget })`. With `maxTokens` and `tokenRatio`, the
 * token flavour (gRPC); otherwise ratio and floor over a window (Finagle).
 *
 * With a `store` (and a `key`), the budget is the fleet's: every process that names the same store and key
 * draws on one budget (see `SharingOptions`).
 *
 * @example
 * const budget = retryBudget({ ratio: 0.1, minPerSecond: 5 }); // retries at most 10% of calls, plus 5/s
 * await retry(op, { budget, maxRetries: 3 });
 * const fleetBudget = retryBudget({ ratio: 0.1, store: redisStore(), key: "payments" });
 */
export function retryBudget(options: RatioBudgetOptions | TokenBudgetOptions = {}): RetryBudget {
  const tokens =
    options !== null && typeof options === "object" && ("maxTokens" in options || "tokenRatio" in options);
  checkKeys(tokens ? TOKEN_BUDGET_CHECKS : RATIO_BUDGET_CHECKS, options);
  const sharing = sharingOptions("retryBudget", options);
  const clock = clockOption(
    "retryBudget: clock",
    options.clock,
    "a Clock with now() and setTimer(ms, callback)",
  );
  const make = tokens
    ? () => new TokenBudget(options as TokenBudgetOptions)
    : (at: Clock) => new RatioBudget({ ...(options as RatioBudgetOptions), clock: at });
  if (sharing === undefined) return make(clock);
  return new SharedBudget(tokens ? "tokens" : "ratio", make, sharing, clock);
}
