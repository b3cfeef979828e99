import { OptionError } from "../core/errors.js";
import {
  type AttemptContext,
  type ResolvedOptions,
  type RetryOptions,
  resolveOptions,
} from "../policy/options.js";
import { runLoop } from "./loop.js";

// Calls without options share one resolved default policy.
const defaults: ResolvedOptions<unknown> = resolveOptions(undefined);

function checkOperation(operation: unknown): void {
  if (typeof operation !== "function") throw new OptionError("operation", operation, "a function");
}

/**
 * Calls `operation` until it succeeds or the policy gives up, then resolves with its value or rejects
 * with its last error, unchanged. Options are checked at once: a bad one rejects before any attempt.
 *
 * @example
 * const body = await retry(async ({ signal }) => (await fetch(url, { signal })).text(), { timeout: 2000, maxRetries: 5 });
 */
export function retry<T>(
  operation: (context: AttemptContext) => T | PromiseLike<T>,
  options?: RetryOptions<T>,
): Promise<T> {
  try {
    checkOperation(operation);
    const resolved = options === undefined ? defaults : resolveOptions(options);
    return runLoop(operation, resolved as ResolvedOptions<T>);
  } catch (error) {
    return Promise.reject(error);
  }
}

/**
 * Seed 000's access_wrapper: returns a function that calls `operation(context, ...args)` under `options`.
 * The options are checked once, here; a bad one throws at once.
 *
 * @example
 * const getUser = wrap(async ({ signal }, id: string) => fetchUser(id, signal), { timeout: 1000 });
 * const user = await getUser("42");
 */
export function wrap<A extends unknown[], T>(
  operation: (context: AttemptContext, ...args: A) => T | PromiseLike<T>,
  options?: RetryOptions<T>,
): (...args: A) => Promise<T> {
  checkOperation(operation);
  const resolved = resolveOptions(options);
  return (...args: A) => runLoop((context) => operation(context, ...args), resolved);
}
