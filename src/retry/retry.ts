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

/**
 * `retry(op, options)` called again and again with the same options object (the usual way) resolves it
 * once. The cached resolution is used only while the object still holds exactly the keys and values it
 * was resolved from, so changing an option between calls takes effect (and is validated) at the next call.
 * Options with `rules` are not cached: a rule list can change inside the same array.
 */
interface Resolution {
  readonly resolved: ResolvedOptions<unknown>;
  readonly keys: readonly string[];
  readonly values: readonly unknown[];
}
const resolutions = new WeakMap<object, Resolution>();

function unchanged(options: object, seen: Resolution): boolean {
  const record = options as Record<string, unknown>;
  let i = 0;
  for (const key in record) {
    if (key !== seen.keys[i] || record[key] !== seen.values[i]) return false;
    i += 1;
  }
  return i === seen.keys.length;
}

function resolveOnce<T>(options: RetryOptions<T>): ResolvedOptions<T> {
  const seen = resolutions.get(options);
  if (seen !== undefined && unchanged(options, seen)) return seen.resolved as ResolvedOptions<T>;
  const resolved = resolveOptions(options);
  if (options.rules === undefined) {
    const record = options as Record<string, unknown>;
    const keys: string[] = [];
    const values: unknown[] = [];
    for (const key in record) {
      keys.push(key);
      values.push(record[key]);
    }
    resolutions.set(options, { resolved: resolved as ResolvedOptions<unknown>, keys, values });
  }
  return resolved;
}

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
    const resolved = options === undefined ? defaults : resolveOnce(options);
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
  // Without arguments (the common case) a call allocates neither an argument list nor a closure.
  const direct = (context: AttemptContext) => operation(context, ...([] as unknown as A));
  return function wrapped(): Promise<T> {
    // biome-ignore lint/complexity/noArguments: reading `arguments` (not a rest list) keeps the no-argument call free of allocations
    if (arguments.length === 0) return runLoop(direct, resolved);
    // biome-ignore lint/complexity/noArguments: as above
    const args = Array.prototype.slice.call(arguments) as A;
    return runLoop((context) => operation(context, ...args), resolved);
  } as (...args: A) => Promise<T>;
}
