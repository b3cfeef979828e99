import { integerAtLeast } from "../core/validate.js";
import { newPolicyState, nextDelay } from "../policy/delay.js";
import { type ResolvedPolicy, type RetryOptions, resolveOptions } from "../policy/options.js";

/**
 * The final delays (backoff → jitter → scale) that `retry` would sleep before each of the first `count`
 * retries if every attempt failed with an error of the top-level policy: `count` numbers, whatever
 * `maxRetries` and `maxElapsed` say. With `delayFirstAttempt`, the first entry is the wait before the
 * first attempt and entry i the wait before retry i (the same numbers: the first wait takes the
 * backoff's x = 0). `delayFrom` and rules are not previewed: they need an outcome. Pure and
 * deterministic given `options.random`.
 *
 * @example
 * delays({ backoff: backoff.exponential({ base: 1000 }), jitter: jitter.none() }, 4); // [1000, 2000, 4000, 8000]
 */
export function delays(options: RetryOptions, count: number): number[] {
  const resolved = resolveOptions(options);
  integerAtLeast("count", count, 0);
  const policies = resolved.retry.policies;
  const top = policies[policies.length - 1] as ResolvedPolicy;
  // A stateful backoff (a ResponsiveBackoff) is previewed on a copy: the live one never hears of this.
  const policy = typeof top.backoff.fork === "function" ? { ...top, backoff: top.backoff.fork() } : top;
  const state = newPolicyState();
  const out: number[] = [];
  for (let i = 0; i < count; i++) out.push(nextDelay(policy, state, resolved.random));
  return out;
}
