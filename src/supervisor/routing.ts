/**
 * Which worker of a group takes a message: the one `route` names, or else the one holding the fewest
 * messages, so that one backing off does not collect them all, ties taken in turn.
 */
import { describe } from "../core/errors.js";
import type { Child } from "./group.js";

/** The worker for `message`, and the turn to start from next time. */
export function pickWorker<M, R>(
  children: readonly Child<M, R>[],
  route: ((message: M, workers: number) => number) | undefined,
  turn: number,
  message: M,
): { readonly child: Child<M, R>; readonly turn: number } {
  const n = children.length;
  if (n === 1) return { child: children[0] as Child<M, R>, turn };
  if (route !== undefined) {
    const i = route(message, n);
    if (!Number.isInteger(i) || i < 0 || i >= n) {
      throw new RangeError(
        `supervise: route returned ${describe(i)}; it must return a worker index, an integer in [0, ${n - 1}]`,
      );
    }
    return { child: children[i] as Child<M, R>, turn };
  }
  let best: Child<M, R> | undefined;
  for (let k = 0; k < n; k++) {
    const child = children[(turn + k) % n] as Child<M, R>;
    if (child.unit.gaveUp !== undefined) continue;
    if (best === undefined || child.mailbox.held < best.mailbox.held) best = child;
  }
  const chosen = best ?? (children[0] as Child<M, R>);
  return { child: chosen, turn: (chosen.index + 1) % n };
}
