/**
 * The restart policy: after a crash, a unit (a worker, or the group with all-for-one) starts again after
 * its backoff's delay, unless it has used up `maxRestarts` within `restartWindow` (Akka's maxNrOfRetries
 * within withinTimeRange) or the backoff fails: then the supervisor gives up on it.
 */
import { MAX_TIMER_DELAY } from "../core/clock.js";
import { clampDelay } from "../core/validate.js";
import type { Unit } from "./group.js";
import type { ResolvedSupervisorOptions } from "./options.js";

/** Restart after `delay` ms, or give up for `reason`, with `cause`. */
export type RestartDecision =
  | { readonly delay: number }
  | { readonly reason: string; readonly cause: unknown };

/** What to do after `unit` crashed with `cause` at clock time `now` (its restarts outside the window are forgotten). */
export function decideRestart<M, R>(
  unit: Unit<M, R>,
  options: Pick<ResolvedSupervisorOptions<M, R>, "maxRestarts" | "restartWindow" | "backoff" | "random">,
  now: number,
  cause: unknown,
): RestartDecision {
  const { maxRestarts, restartWindow, backoff, random } = options;
  if (maxRestarts !== Number.POSITIVE_INFINITY) {
    // Akka's maxNrOfRetries within withinTimeRange: count only the restarts inside the window.
    if (restartWindow !== Number.POSITIVE_INFINITY) {
      unit.restarts = unit.restarts.filter((r) => now - r.at < restartWindow);
    }
    if (unit.restarts.length >= maxRestarts) {
      const within = restartWindow === Number.POSITIVE_INFINITY ? "" : ` within ${restartWindow} ms`;
      return { reason: `maxRestarts (${maxRestarts}) restarts${within} used up`, cause };
    }
  }
  try {
    return {
      delay: clampDelay(`backoff ${backoff.name}`, backoff.delay(unit.retries, random), MAX_TIMER_DELAY),
    };
  } catch (error) {
    // A broken custom backoff must not throw out of a worker's exit event; it ends the supervision, loudly.
    return {
      reason: `the backoff failed: ${error instanceof Error ? error.message : String(error)}`,
      cause: error,
    };
  }
}
