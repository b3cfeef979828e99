/**
 * The one execution contract: a step is an object with `execute(next, context)`.
 */
import type { ExecutionContext } from "./context.js";

/** What a step calls to run the rest of the pipeline (the steps inside it, then the operation). */
export type Next<T> = (context: ExecutionContext) => T | PromiseLike<T>;

/**
 * A step of a pipeline. `execute` runs `next(context)` once, several times (retry, hedge), or not at all
 * (an open breaker, a full bulkhead, a fallback that answers), and answers with a value, a promise or a
 * throw. The contract:
 * - Pass `next` the `context` you were given: it carries the signal, the attempt, the clock and the
 *   randomness of this execution. Watch `context.signal` while you wait for anything of your own.
 * - Time and randomness come from `context.clock` and `context.random`, never from `Date.now`,
 *   `setTimeout` or `Math.random`, so that a test on a `VirtualClock` runs your step without waiting.
 * - An error from `next` is the outcome of what ran inside: rethrow it (or another) to fail, or answer
 *   with a value to recover. Never leave a promise of `next` unobserved.
 * - When `context.signal` aborts, stop and end with `context.signal.reason`; the pipeline rejects the
 *   caller's promise at once either way, and ignores whatever you answer later.
 *
 * @example
 * const logAttempts: Step = {
 *   async execute(next, context) {
 *     console.log(`attempt ${context.attempt}`);
 *     return await next(context);
 *   },
 * };
 */
export interface Step {
  execute<T>(next: Next<T>, context: ExecutionContext): T | PromiseLike<T>;
}

/**
 * Marks steps whose answer, when it is a native promise, is final at the edge already (the retry step:
 * it unwraps a `PermanentError` itself, and answers with a promise only when nothing can abort the call).
 */
export const FINAL_AT_EDGE: unique symbol = Symbol("robustly.finalAtEdge");

/**
 * The kind of a step robustly makes for an option that takes one kind of step (`retry`'s `hedge` and
 * `chaos`), so that a step of another kind is refused there rather than run in its place. Registered
 * (`Symbol.for`), so that a step made by another copy of robustly is still told by its kind.
 */
export const STEP_KIND: unique symbol = Symbol.for("robustly.stepKind");

/**
 * The method of a guard that `retry`'s options take as an object (`breaker: circuitBreaker()`) which
 * makes the step it runs as inside the short form's retry step: the guard brings its step's code, so that
 * an app that does not use it carries none of it.
 */
export const SHORT_FORM_STEP: unique symbol = Symbol("robustly.shortFormStep");

/** Whether `value` looks like a step. */
export function isStep(value: unknown): value is Step {
  return (
    value !== null &&
    (typeof value === "object" || typeof value === "function") &&
    typeof (value as Step).execute === "function"
  );
}
