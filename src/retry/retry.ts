import { chaos } from "../chaos/chaos.js";
import { OptionError } from "../core/errors.js";
import { hedge } from "../hedge/hedge.js";
import {
  type AttemptContext,
  type ResolvedOptions,
  type RetryOptions,
  resolveOptions,
} from "../policy/options.js";
import { runLoop } from "./loop.js";

type Operation<T> = (context: AttemptContext) => T | PromiseLike<T>;

/**
 * The operation as the options' `chaos` and `hedge` make it: faults injected into each call, and each
 * attempt hedged (the hedges share the attempt's signal, so its timeout and the caller's abort end them all).
 */
function decorate<T>(
  operation: Operation<T>,
  options: RetryOptions<T>,
  resolved: ResolvedOptions<T>,
): Operation<T> {
  let op = operation;
  if (options.chaos !== undefined) {
    const injected = chaos(operation, { clock: resolved.clock, random: resolved.random, ...options.chaos });
    op = (context) => injected(context);
  }
  if (options.hedge !== undefined) {
    const inner = op;
    const hedging = options.hedge;
    op = (context) =>
      hedge(
        // Each hedged attempt sees the attempt's context with its own signal.
        ({ signal }) => inner(Object.create(context, { signal: { value: signal } }) as AttemptContext),
        { clock: resolved.clock, ...hedging, signal: context.signal },
      );
  }
  return op;
}

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
    const resolved = (options === undefined ? defaults : resolveOnce(options)) as ResolvedOptions<T>;
    if (options?.hedge !== undefined || options?.chaos !== undefined) {
      return runLoop(decorate(operation, options, resolved), resolved);
    }
    return runLoop(operation, resolved);
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
  if (options?.hedge !== undefined || options?.chaos !== undefined) {
    // The arguments travel on the context, so that one decorated operation (one chaos wrapper, whose
    // counts then cover every call) serves all calls.
    type Carrying = AttemptContext & { readonly args: A };
    const decorated = decorate(
      (context: AttemptContext) => operation(context, ...(context as Carrying).args),
      options,
      resolved,
    );
    return (...args: A) =>
      runLoop((context) => decorated(Object.assign(Object.create(context), { args })), resolved);
  }
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
