/**
 * How a call's promise rejects at the caller's edge: with a `PermanentError`'s cause unwrapped, and with
 * the caller's frames added to an error a retry step ended the call with.
 */
import { addCallSite, callSite } from "./call-site.js";
import { unwrapPermanent } from "./errors.js";
import { retryReport } from "./report.js";

/**
 * Rethrows `error` as the caller sees it. Runs as a reaction to a promise the caller awaits, where the
 * runtime links the caller's frames to the stack.
 */
export function atEdge(error: unknown): never {
  const final = unwrapPermanent(error);
  if (retryReport(final) !== undefined) addCallSite(final, callSite(atEdge));
  throw final;
}
