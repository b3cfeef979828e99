/**
 * Whether a retry is allowed: given a failed attempt's error, find the policy it falls to, then decide
 * whether to retry and, if so, after which delay. Pure apart from drawing on `random` and advancing the
 * call's `PolicyState`s.
 */
import { MAX_TIMER_DELAY } from "../core/clock.js";
import { RETRY_AFTER, RetryableResultError } from "../core/errors.js";
import { isThenable, settleWith } from "../core/invoke.js";
import type { Random } from "../core/random.js";
import type { GiveUpReason } from "../core/report.js";
import { newPolicyState, nextDelay, type PolicyState } from "./delay.js";
import type { DelayAnswer, ResolvedPolicy } from "./options.js";

export type { GiveUpReason };

/** A decision to retry: which policy allowed it (its index) and the final delay to sleep first. */
export interface Decision {
  readonly policy: number;
  readonly delay: number;
}

/**
 * Reports through `onIndex` the index of the first policy whose matcher accepts `error` (-1 when none
 * does), asking them in order. A matcher that answers with a promise is waited for; one that throws or
 * rejects is reported through `onError`. Synchronous matchers answer synchronously.
 */
export function firstMatch(
  policies: readonly ResolvedPolicy[],
  error: unknown,
  onIndex: (index: number) => void,
  onError: (error: unknown) => void,
  from = 0,
): void {
  for (let i = from; i < policies.length; i++) {
    let answer: unknown;
    try {
      answer = (policies[i] as ResolvedPolicy).match(error);
    } catch (thrown) {
      onError(thrown);
      return;
    }
    if (isThenable(answer)) {
      settleWith(
        answer,
        (matched) => (matched ? onIndex(i) : firstMatch(policies, error, onIndex, onError, i + 1)),
        onError,
      );
      return;
    }
    if (answer) {
      onIndex(i);
      return;
    }
  }
  onIndex(-1);
}

/** Where a call stands when a retry is decided: the attempt that failed, the retries so far, the time since the first attempt. */
export interface RetryAt {
  readonly attempt: number;
  readonly retries: number;
  readonly elapsed: number;
}

function isWait(ms: unknown): ms is number {
  return typeof ms === "number" && ms >= 0 && !Number.isNaN(ms);
}

/**
 * The wait a delay generator's `answer` makes of the policy's computed `delay`: a number is the least
 * wait, with the computed delay on top (so a fleet told "retry after 0", or a date already past, spreads
 * out over the jitter instead of coming back in one instant); `{ exactly }` replaces it; anything else
 * (undefined, NaN, a negative) keeps it.
 */
function generatedDelay(answer: DelayAnswer, delay: number): number {
  if (isWait(answer)) return Math.min(answer + delay, MAX_TIMER_DELAY);
  if (typeof answer === "object" && answer !== null && isWait(answer.exactly))
    return Math.min(answer.exactly, MAX_TIMER_DELAY);
  return delay;
}

/**
 * The retry-policy state of one call: one `PolicyState` per policy (the rules, then the top level).
 * A new call starts a new one: every access begins afresh.
 */
export class RetryState {
  readonly #policies: readonly ResolvedPolicy[];
  readonly #states: PolicyState[];

  constructor(policies: readonly ResolvedPolicy[]) {
    this.#policies = policies;
    this.#states = policies.map(newPolicyState);
  }

  /**
   * Policy `index` (the first whose matcher accepts `error`, from `firstMatch`; -1 for none) decides: no
   * retry once it has granted `maxRetries`, when its `maxElapsed` is 0, or when the sleep would end past
   * its `maxElapsed` (measured from the first attempt, `at.elapsed` ms ago). Otherwise the retry is
   * granted and counted; a `free` one is neither held against `maxRetries` nor counted, and waits what the
   * next counted retry would (its jitter draws afresh). `at` is the failed attempt and the call's retries
   * so far, for the policy's `delayFrom`.
   */
  decide(index: number, error: unknown, at: RetryAt, random: Random, free: boolean): Decision | GiveUpReason {
    const policy = this.#policies[index];
    if (policy === undefined) return "not-retryable";
    const state = this.#states[index] as PolicyState;
    if (!free && state.granted >= policy.maxRetries) return "retries";
    if (policy.maxElapsed === 0) return "elapsed";
    let delay = nextDelay(policy, free ? { ...state } : state, random);
    if (policy.delayFrom !== undefined) {
      const outcome = error instanceof RetryableResultError ? error.value : error;
      const rule = index === this.#policies.length - 1 ? -1 : index;
      delay = generatedDelay(policy.delayFrom(outcome, { ...at, delay, rule }), delay);
    } else if (error !== null && typeof error === "object" && RETRY_AFTER in error) {
      // The error's own word on when to retry (a rate limiter's), as a server's Retry-After is read: a
      // number of ms alone (capped as every delay is); anything else, or a getter that throws, is no word.
      let wait: unknown;
      try {
        wait = (error as { [RETRY_AFTER]: unknown })[RETRY_AFTER];
      } catch {
        // No word.
      }
      // A finite number only (Infinity is no word here); a negative one is no wait, as in `generatedDelay`.
      if (Number.isFinite(wait)) delay = generatedDelay(wait as number, delay);
    }
    const spent = policy.maxElapsedCountsWait ? at.elapsed + delay : at.elapsed;
    return spent > policy.maxElapsed ? "elapsed" : { policy: index, delay };
  }

  /**
   * The wait before a first attempt (`delayFirstAttempt`): the top-level policy's delay for x = 0; its
   * backoff then goes on from x = 1, and no retry is counted.
   */
  firstWait(random: Random): number {
    const last = this.#policies.length - 1;
    const state = this.#states[last] as PolicyState;
    const delay = nextDelay(this.#policies[last] as ResolvedPolicy, state, random);
    state.granted -= 1;
    return delay;
  }

  /** The retries the top-level policy still allows: its `maxRetries` minus those it has counted. */
  retriesLeft(): number {
    const last = this.#policies.length - 1;
    return (this.#policies[last] as ResolvedPolicy).maxRetries - (this.#states[last] as PolicyState).granted;
  }
}
