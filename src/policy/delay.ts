/**
 * One retry's delay: backoff → jitter → scale (the backoff strategy's delay, the jitter, the scaling factor).
 */
import { MAX_TIMER_DELAY } from "../core/clock.js";
import type { Random } from "../core/random.js";
import { clampDelay } from "../core/validate.js";
import type { ResolvedPolicy } from "./options.js";

/**
 * The state one policy keeps during one call: how many retries it has
 * granted, the x its backoff continues from, and its previous jittered delay.
 */
export interface PolicyState {
  /** Retries this policy granted; held against its maxRetries and never reset within a call. */
  granted: number;
  /** x for the next backoff; equals `granted` unless a decorrelated jitter reset it. */
  x: number;
  /** The previous jittered (unscaled) delay, for decorrelated jitters. */
  previous: number | undefined;
  /** What the jitter asked to see again (`JitterResult.state`), for Polly's decorrelated jitter. */
  jitterState: number | undefined;
}

export function newPolicyState(): PolicyState {
  return { granted: 0, x: 0, previous: undefined, jitterState: undefined };
}

/**
 * Computes the next final delay under `policy` and advances `state` as if the retry happens.
 * The result is always a finite number in [0, MAX_TIMER_DELAY].
 */
export function nextDelay(policy: ResolvedPolicy, state: PolicyState, random: Random): number {
  const answer = policy.jitter.apply({
    backoff: policy.backoff,
    retries: state.x,
    random,
    previous: state.previous,
    state: state.jitterState,
  });
  let jittered: number;
  let usedX = state.x;
  if (typeof answer === "object" && answer !== null) {
    jittered = answer.delay;
    usedX = answer.retries;
    state.jitterState = answer.state;
  } else {
    // A number, or garbage from a custom strategy, which clampDelay reports.
    jittered = answer;
  }
  // A delay in range is kept as it is; only one out of range, or garbage, goes to clampDelay, so that its
  // label (which names the strategies) is built only for an error or a clamp.
  if (!(typeof jittered === "number" && jittered > 0 && jittered <= MAX_TIMER_DELAY)) {
    jittered = clampDelay(
      `jitter "${policy.jitter.name}" with backoff "${policy.backoff.name}"`,
      jittered,
      MAX_TIMER_DELAY,
    );
  }
  state.previous = jittered;
  state.x = usedX + 1;
  state.granted += 1;
  return clampDelay("scale", jittered * policy.scale, MAX_TIMER_DELAY);
}
