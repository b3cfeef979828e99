/**
 * The bulkhead step: each run of what is inside it takes a place in a bulkhead, waits its turn, or is
 * refused with `BulkheadRejectedError`. The place is freed exactly once: when the run settles, or when its
 * context aborts (then the step fails at once with the abort's reason, and a late outcome is ignored).
 * Outside a retry step it limits calls; inside, attempts (each retry queues again).
 */
import { Eventual, invoke } from "../core/invoke.js";
import { type ExecutionContext, toRootScope } from "../pipeline/context.js";
import type { Next, Step } from "../pipeline/step.js";
import { Bulkhead, type BulkheadOptions, checkBulkheadOptions, type Release } from "./bulkhead.js";

export class BulkheadStep implements Step {
  /** The bulkhead it draws on (shared, if it was given one). */
  readonly bulkhead: Bulkhead;

  constructor(bulkhead: Bulkhead) {
    this.bulkhead = bulkhead;
  }

  execute<T>(next: Next<T>, context: ExecutionContext): T | PromiseLike<T> {
    const scope = toRootScope(context);
    if (scope.aborted) throw scope.reason;
    const out = new Eventual<T>();
    let done = false;
    let unhook: () => void = noop;
    const end = (release: Release) => {
      done = true;
      unhook();
      release();
    };
    // Refused: BulkheadRejectedError, thrown before anything runs.
    const release = this.bulkhead.acquire((free) => {
      invoke(
        () => next(scope),
        (value) => {
          if (done) return;
          end(free);
          out.resolve(value);
        },
        (error) => {
          if (done) return;
          end(free);
          out.reject(error);
        },
      );
    });
    if (done) return out;
    if (scope.aborted) {
      // Aborted while it took its place (by a listener of the bulkhead's events, or by what ran).
      end(release);
      out.reject(scope.reason);
      return out;
    }
    unhook = scope.onAbort(() => {
      if (done) return;
      end(release);
      out.reject(scope.reason);
    });
    return out;
  }
}

function noop(): void {}

/**
 * A bulkhead step: `steps.bulkhead({ limit, queue })` makes a bulkhead of its own; `steps.bulkhead(pool)`
 * shares one made with `bulkhead()` (with every other step and `pool.execute` call given it).
 *
 * @example
 * const p = pipeline(steps.fallback("busy", { when: BulkheadRejectedError }), steps.bulkhead({ limit: 10, queue: 20 }));
 */
export function bulkheadStep(options: BulkheadOptions | Bulkhead): BulkheadStep {
  if (options instanceof Bulkhead) return new BulkheadStep(options);
  checkBulkheadOptions("steps.bulkhead", options);
  return new BulkheadStep(new Bulkhead(options));
}
