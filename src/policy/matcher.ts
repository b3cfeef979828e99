import { OptionError } from "../core/errors.js";
import { isThenable } from "../core/invoke.js";

/** An error class, as matched by `instanceof`. */
// biome-ignore lint/suspicious/noExplicitAny: constructors of any arity must fit
export type ErrorClass = abstract new (...args: any[]) => unknown;

/**
 * Which errors a rule (or `retryOn`) covers:
 * - a class (`instanceof`): an `Error` subclass, or any class whatever it extends,
 * - a string, equal to the error's `name` or `code` (e.g. "ECONNRESET"),
 * - a list of classes and strings (any of them),
 * - a predicate `(error) => boolean`.
 */
export type ErrorMatcher =
  | ErrorClass
  | string
  | readonly (ErrorClass | string)[]
  | ((error: unknown) => boolean);

/**
 * What `retryOn` and a rule's `when` take: an `ErrorMatcher`, whose predicate may also answer with a
 * promise. The retry step waits for it; a predicate that throws or rejects ends the call with that error.
 */
export type RetryMatcher = ErrorMatcher | ((error: unknown) => boolean | PromiseLike<boolean>);

/** A compiled retry matcher's answer: a boolean, or the promise an async predicate answered with. */
export type MatchAnswer = boolean | PromiseLike<boolean>;

/**
 * A class is matched with `instanceof`, never called: an `Error` subclass, or any function written with
 * `class` syntax (calling one would throw "Class constructor cannot be invoked without 'new'").
 */
function isErrorClass(value: unknown): value is ErrorClass {
  if (typeof value !== "function") return false;
  if (value === Error || value.prototype instanceof Error) return true;
  return /^class[\s{]/.test(Function.prototype.toString.call(value));
}

function single(option: string, item: unknown): (error: unknown) => boolean {
  if (typeof item === "string") {
    if (item === "") throw new OptionError(option, item, "a non-empty error name or code");
    return (error) =>
      typeof error === "object" &&
      error !== null &&
      ((error as { name?: unknown }).name === item || (error as { code?: unknown }).code === item);
  }
  if (isErrorClass(item)) return (error) => error instanceof item;
  throw new OptionError(option, item, "an Error class or an error name/code string");
}

/**
 * Compiles `retryOn`, a rule's `when` or a fallback's `when` into a predicate, failing at once on anything
 * else. A predicate's promise comes back as it is, for the step to wait for (its truthiness counts).
 */
export function compileRetryMatcher(option: string, value: unknown): (error: unknown) => MatchAnswer {
  if (Array.isArray(value)) {
    if (value.length === 0)
      throw new OptionError(option, value, "a non-empty list of Error classes or names");
    const tests = value.map((item, i) => single(`${option}[${i}]`, item));
    return (error) => tests.some((test) => test(error));
  }
  if (typeof value === "string" || isErrorClass(value)) return single(option, value);
  if (typeof value === "function") {
    const predicate = value as (error: unknown) => unknown;
    return (error) => {
      const answer = predicate(error);
      return isThenable(answer) ? (answer as PromiseLike<boolean>) : Boolean(answer);
    };
  }
  throw new OptionError(
    option,
    value,
    "an Error class, an error name/code string, a list of those, or a predicate function",
  );
}
