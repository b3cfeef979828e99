/**
 * How a call's promise rejects at the caller's edge: with a `PermanentError`'s cause unwrapped, and with
 * the caller's frames added to an error a retry step ended the call with.
 */
import { addCallSite, callSite } from "./call-site.js";
import { unwrapPermanent } from "./errors.js";
import { retryReport } from "./report.js";

/**
 * The error a call ends with at its edge: a `PermanentError`'s cause, unless a retry step gave up with this
 * very error. That step unwrapped the one the operation threw, and what it gave up with is the answer: a
 * `PermanentError` wrapped in another comes out as the inner one (which an outer retry stops at too).
 */
export function edgeError(error: unknown): unknown {
  return retryReport(error) === undefined ? unwrapPermanent(error) : error;
}

/**
 * Rethrows `error` as the caller sees it. Runs as a reaction to a promise the caller awaits, where the
 * runtime links the caller's frames to the stack.
 */
export function atEdge(error: unknown): never {
  const final = edgeError(error);
  if (retryReport(final) !== undefined) addCallSite(final, callSite(atEdge));
  throw final;
}
