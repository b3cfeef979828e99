/**
 * The short form: `retry(op, options)` and `wrap(fn, options)` run the retry loop (./call.ts) over the
 * operation, with the per-attempt timeout kept by the loop, and inside each attempt the steps the options
 * name, in a fixed order (breaker → hedge → chaos → operation), each made by its feature's own import.
 */
import { OptionError } from "../core/errors.js";
import type { ExecutionContext } from "../pipeline/context.js";
import { Pipeline } from "../pipeline/pipeline.js";
import { type Next, SHORT_FORM_STEP, type Step } from "../pipeline/step.js";
import {
  type AttemptContext,
  type Callbacks,
  FUNCTION_KEYS,
  type ResolvedOptions,
  type RetryOptions,
  resolveOptions,
  withFunctions,
} from "../policy/options.js";
import { TimeoutStep } from "../timeout/step.js";
import { RetryCall, type TimeLimit } from "./call.js";
import { RetryStep } from "./step.js";

/** The short form's options, checked, and what a call runs on them. */
interface Resolution<T> {
  readonly options: ResolvedOptions<T>;
  /** The per-attempt time limit; undefined for none. */
  readonly limit: TimeLimit | undefined;
  /**
   * The steps inside the retry step, outermost first: the breaker's, then the hedge and chaos steps the
   * options hold. Empty for most options.
   */
  readonly inner: readonly Step[];
  /** The callbacks and predicates a call tells and asks (see `Callbacks`). */
  readonly callbacks: Callbacks<T>;
}

/** What a call on `resolved` runs. */
function build<T>(resolved: ResolvedOptions<T>): Resolution<T> {
  const inner: Step[] = [];
  // A value retryOnResult retries is a failure to the breaker too.
  const breaker = resolved.breaker;
  if (breaker !== undefined)
    inner.push(
      breaker[SHORT_FORM_STEP](
        resolved.retry.retryOnResult as (value: unknown) => boolean | PromiseLike<boolean>,
      ),
    );
  // Steps the app made with the feature's own function (`steps.hedge(…)`, `steps.chaos(…)`), so that their
  // code reaches only the bundles of apps that use them.
  if (resolved.hedge !== undefined) inner.push(resolved.hedge);
  if (resolved.chaos !== undefined) inner.push(resolved.chaos);
  const ms = resolved.timeout;
  return {
    options: resolved,
    limit: ms === Number.POSITIVE_INFINITY ? undefined : { ms },
    inner,
    callbacks: resolved.retry,
  };
}

/**
 * The resolution of `options` made from `resolution`, for options that hold what it was resolved from but
 * for their callbacks and predicates (`FUNCTION_KEYS`; a callback written inline is a new function at each
 * call; see `FUNCTIONS`): only those are checked. Undefined when steps run inside the retry step (a breaker
 * is made around `retryOnResult`), or the options have rules.
 */
function rebind<T>(resolution: Resolution<T>, options: RetryOptions<T>): Resolution<T> | undefined {
  if (resolution.inner.length > 0) return undefined;
  const resolved = resolution.options;
  const rebound = withFunctions(resolved.retry, options);
  if (rebound === undefined) return undefined;
  // Only callbacks differ: the call runs on the kept resolution with them.
  if (!("policies" in rebound)) {
    return { options: resolved, limit: resolution.limit, inner: resolution.inner, callbacks: rebound };
  }
  const retry = rebound;
  return {
    // Built field by field, in the order `resolveOptions` makes them (a spread is slower here).
    options: {
      retry,
      timeout: resolved.timeout,
      signal: resolved.signal,
      clock: resolved.clock,
      random: resolved.random,
      breaker: resolved.breaker,
      hedge: resolved.hedge,
      chaos: resolved.chaos,
    },
    limit: resolution.limit,
    inner: resolution.inner,
    callbacks: retry,
  };
}

// Calls without options share one resolution of the defaults.
const defaults: Resolution<unknown> = build(resolveOptions(undefined));

/**
 * A resolution and the keys and values it was resolved from, in the order the object listed them: it is
 * used again only for an object that holds exactly those keys with exactly those values (`===`), so that
 * a changed option takes effect (and is validated) at the next call. A `signal` is no part of a
 * resolution: it belongs to the call, and is checked on every call.
 *
 * Options holding an object or a function (a callback, a backoff, a clock) are kept weakly: those values
 * and the resolution (which holds them) through `WeakRef`s, so that the cache keeps nothing of the
 * caller's alive; a collection may empty such an entry, and the next call resolves its options again.
 */
interface Cached {
  /** The resolution; a `WeakRef` to it when `held`. */
  readonly resolution: Resolution<unknown> | WeakRef<Resolution<unknown>>;
  readonly keys: readonly string[];
  /** The values; for an object or function, a `WeakRef` to it (see `held`). */
  readonly values: readonly unknown[];
  /** Which of `values` are `WeakRef`s; undefined when none is (and the resolution is held strongly). */
  readonly held: readonly boolean[] | undefined;
  /** Whether a call found it since it was made. */
  found: boolean;
}

/** `compare`'s answers, from the least alike. Options of other keys, or other primitive values. */
const OTHER = 0;
/**
 * Options that hold the keys of an entry, in its order, with its values but for its objects and
 * functions, which are objects or functions in the options too.
 */
const SHAPE = 1;
/**
 * Options of the shape of an entry that differ from it only in some of its callbacks, predicates, backoffs
 * and jitters (`FUNCTION_KEYS`; a callback written inline, say): what `rebind` needs.
 */
const FUNCTIONS = 2;
/** Options that hold exactly the keys and values an entry was resolved from (a `signal` aside). */
const SAME = 3;

/**
 * How alike `options` are to the keys and values `seen` was resolved from (`OTHER` … `SAME`). One walk
 * over the options tells whether they are the same and, if not, whether `rebind` may resolve them from the
 * entry: a call whose options are not found looks for such an entry among the same entries.
 */
function compare(options: object, seen: Cached): number {
  const record = options as Record<string, unknown>;
  const keys = seen.keys;
  const held = seen.held;
  let same = true;
  let functions = true;
  let i = 0;
  for (const key in record) {
    if (key !== keys[i]) return OTHER;
    if (key !== "signal") {
      const value = record[key];
      if (held === undefined || !held[i]) {
        if (value !== seen.values[i]) return OTHER;
      } else if (value === null || (typeof value !== "object" && typeof value !== "function")) return OTHER;
      else {
        // A value collected since cannot be the one given now (which is alive).
        const kept = (seen.values[i] as WeakRef<object>).deref();
        if (kept === undefined || value !== kept) {
          same = false;
          if (!FUNCTION_KEYS.has(key)) functions = false;
        }
      }
    }
    i += 1;
  }
  if (i !== keys.length) return OTHER;
  return same ? SAME : functions ? FUNCTIONS : SHAPE;
}

/**
 * The `CACHE_SIZE` entries used last, most recent first: options written inline
 * (`retry(op, { maxRetries: 3 })`, a new object each call) are found by their keys and values, with no
 * per-object bookkeeping, so that a literal costs neither an insertion nor garbage beyond itself.
 */
const CACHE_SIZE = 16;
const cache: Cached[] = [];
/**
 * Options holding objects or functions, by identity, for as long as each lives (options built once): the
 * entry they were kept as, to tell whether they changed since, and its resolution, held strongly.
 */
const byIdentity = new WeakMap<object, { readonly seen: Cached; readonly resolution: Resolution<unknown> }>();

/**
 * Options holding an object or a function that were not found: one in `HELD_EVERY` is kept. Keeping one
 * costs an insertion in a weak map and a `WeakRef` per such value (about 10 µs here, most of it the
 * collector's), which a call site that makes a new function at each call (a callback written inline)
 * would pay at every call for an entry never used again; options built once, or written inline around
 * the same functions, are found again once kept.
 */
export const HELD_EVERY = 64;
let heldMisses = HELD_EVERY - 1;
/**
 * Of the options due to be kept (see `HELD_EVERY`) that have the shape of an entry no call found, one in
 * `UNFOUND_EVERY` is: such an entry stands for a call site that makes a new function at each call, where
 * keeping another costs its 10 µs again (one in 64 calls) for an entry that is not found either. Options
 * written inline around the same functions, or built once, are still found, after at most
 * `HELD_EVERY * UNFOUND_EVERY` calls.
 */
export const UNFOUND_EVERY = 16;
let unfoundDue = 0;

/** Whether `WeakRef` is there (every runtime robustly supports has it; without it such options are not kept). */
const canHold = typeof WeakRef === "function";

/** The resolution an entry holds; undefined when it was collected. */
function resolutionOf(seen: Cached): Resolution<unknown> | undefined {
  return seen.held === undefined
    ? (seen.resolution as Resolution<unknown>)
    : (seen.resolution as WeakRef<Resolution<unknown>>).deref();
}

/**
 * Whether the cache can tell `options` by their enumerable keys and values: an object whose prototype is
 * `Object.prototype` (a literal, a spread, `JSON.parse`'s), so that no option is read from elsewhere (a
 * class's accessors, a prototype's keys). Anything else (null, an array, a class instance, an object
 * made with `Object.create`) is resolved at every call, as `wrap` resolves it.
 */
function plain(options: object): boolean {
  return (
    options !== null && typeof options === "object" && Object.getPrototypeOf(options) === Object.prototype
  );
}

/**
 * The keys and values of `options`, each read once, in an object of their own: what a kept entry is made
 * from and its resolution resolved from, so that an option read by a getter is the same value in both.
 */
function snapshot<T>(options: RetryOptions<T>): RetryOptions<T> {
  const record = options as Record<string, unknown>;
  const given: Record<string, unknown> = {};
  for (const key in record) {
    if (key === "__proto__") {
      // An own key of that name (JSON.parse makes one): kept a key, as it was, not made the prototype.
      Object.defineProperty(given, key, { value: record[key], enumerable: true, writable: true });
    } else given[key] = record[key];
  }
  return given as RetryOptions<T>;
}

/**
 * Whether a resolution of `options` may be used again for the same values: not when they hold an object
 * it reads the inside of, which can change from one call to the next while the object stays the same (a
 * rule list, a retryOn list; a hedge or chaos step is built once, but is the caller's to hold).
 */
function keepable<T>(options: RetryOptions<T>): boolean {
  return (
    options.rules === undefined &&
    options.hedge === undefined &&
    options.chaos === undefined &&
    !Array.isArray(options.retryOn)
  );
}

/** The resolution of `options`: a cached one when they hold the keys and values of one (exported for tests). */
export function resolveOnce<T>(options: RetryOptions<T> | undefined): Resolution<T> {
  if (options === undefined) return defaults as Resolution<T>;
  // A literal's constructor, read where V8 finds it at once; what is not a literal is told by `plain`
  // below, before anything is kept.
  if (options === null || (options as { constructor?: unknown }).constructor !== Object) {
    return build(resolveOptions(options));
  }
  // Options that differ from kept ones only in their functions (a callback written inline): the first entry
  // of their shape, for `rebind`.
  let like: Cached | undefined;
  let likeResolution: Resolution<unknown> | undefined;
  for (let i = 0; i < cache.length; i++) {
    const seen = cache[i] as Cached;
    const match = compare(options, seen);
    if (match !== SAME) {
      if (match === FUNCTIONS && like === undefined) {
        // Not one whose resolution was collected (a collection empties entries holding functions).
        likeResolution = resolutionOf(seen);
        if (likeResolution !== undefined) like = seen;
      }
      continue;
    }
    const resolution = resolutionOf(seen);
    if (resolution === undefined) break;
    seen.found = true;
    if (i > 0) {
      cache.copyWithin(1, 0, i);
      cache[0] = seen;
    }
    return resolution as Resolution<T>;
  }
  if (!plain(options)) return build(resolveOptions(options));
  // Options built once and changed since are resolved again.
  const known = byIdentity.get(options);
  if (known !== undefined && compare(options, known.seen) === SAME) return known.resolution as Resolution<T>;
  let due = keepable(options) && isDue(options);
  // Options of the shape of an entry no call found (a call site that makes a new function at each call)
  // would most likely go unfound too: of those due, one in `UNFOUND_EVERY` is kept.
  if (due && like !== undefined && !like.found) {
    unfoundDue += 1;
    if (unfoundDue < UNFOUND_EVERY) due = false;
    else unfoundDue = 0;
  }
  // Options to keep are resolved in full from their snapshot, the values their entry holds; others of the
  // shape of an entry, from its resolution (only their functions are checked).
  const given = due ? snapshot(options) : options;
  const resolution =
    (due || likeResolution === undefined ? undefined : rebind(likeResolution as Resolution<T>, given)) ??
    build(resolveOptions(given));
  if (!due || !keepable(given)) return resolution;
  // Kept without the signal it was resolved with, which the cache must not hold on to.
  const kept = (
    given.signal === undefined
      ? resolution
      : { ...resolution, options: { ...resolution.options, signal: undefined } }
  ) as Resolution<unknown>;
  const entry = entryOf(options, given, kept);
  // In the place of an entry of the same shape that no call found (a call site that writes a callback
  // inline makes a new function at each call: one entry for it, not all), else of the least recently used.
  let at = entry.held === undefined ? -1 : cache.findIndex((o) => !o.found && compare(given, o) !== OTHER);
  if (at < 0) {
    if (cache.length < CACHE_SIZE) cache.push(entry);
    at = cache.length - 1;
  }
  cache.copyWithin(1, 0, at);
  cache[0] = entry;
  return resolution;
}

/**
 * Whether options not found are to be kept: always when their values are all primitives; when an object or
 * function is among them, one time in `HELD_EVERY`, and only where there is `WeakRef`.
 */
function isDue(options: object): boolean {
  const record = options as Record<string, unknown>;
  for (const key in record) {
    if (key === "signal") continue;
    const value = record[key];
    if (value !== null && (typeof value === "object" || typeof value === "function")) {
      heldMisses += 1;
      if (!canHold || heldMisses < HELD_EVERY) return false;
      heldMisses = 0;
      return true;
    }
  }
  return true;
}

/**
 * The entry `options` are kept as: the keys and values of `given`, their snapshot, and `resolution`, made
 * from it. One holding an object or function is also found by identity while the options object lives.
 */
function entryOf(options: object, given: object, resolution: Resolution<unknown>): Cached {
  const record = given as Record<string, unknown>;
  const keys: string[] = [];
  const values: unknown[] = [];
  let held: boolean[] | undefined;
  for (const key in record) {
    const value = key === "signal" ? undefined : record[key];
    const object = value !== null && (typeof value === "object" || typeof value === "function");
    if (object && held === undefined) held = keys.map(() => false);
    held?.push(object);
    keys.push(key);
    values.push(object ? new WeakRef(value as object) : value);
  }
  if (held === undefined) return { resolution, keys, values, held, found: false };
  const entry: Cached = { resolution: new WeakRef(resolution), keys, values, held, found: false };
  byIdentity.set(options, { seen: entry, resolution });
  return entry;
}

/** The call's own signal: the one its options hold, checked (a cached resolution holds none). */
function signalOf(options: { signal?: AbortSignal } | undefined): AbortSignal | undefined {
  const signal = options?.signal;
  if (signal !== undefined && !(signal instanceof AbortSignal)) {
    throw new OptionError("signal", signal, "an AbortSignal");
  }
  return signal;
}

function checkOperation(operation: unknown): void {
  if (typeof operation !== "function") throw new OptionError("operation", operation, "a function");
}

/** Runs the steps from `steps[index]` on, then `operation`, in `context`. */
function through<T>(
  steps: readonly Step[],
  index: number,
  operation: Next<T>,
  context: ExecutionContext,
): T | PromiseLike<T> {
  const step = steps[index];
  if (step === undefined) return operation(context);
  return step.execute((inner) => through(steps, index + 1, operation, inner), context);
}

/** Runs one call of `operation` on a resolution, watching the caller's `signal`. */
function run<T>(resolution: Resolution<T>, operation: Next<T>, signal: AbortSignal | undefined): Promise<T> {
  const { retry, clock, random } = resolution.options;
  const inner = resolution.inner;
  const next: Next<T> = inner.length === 0 ? operation : (context) => through(inner, 0, operation, context);
  return new RetryCall(
    retry,
    undefined,
    next,
    clock,
    random,
    undefined,
    signal,
    resolution.limit,
    resolution.callbacks,
  ).run();
}

/**
 * Calls `operation` until it succeeds or the policy gives up, then resolves with its value or rejects
 * with its last error, unchanged. Options are checked at once: a bad one rejects before any attempt.
 * The short form of `pipeline(steps.retry(…), steps.breaker(…), steps.timeout(…), steps.hedge(…),
 * steps.chaos(…)).execute(operation, { signal, clock, random })`.
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
    const resolution = resolveOnce(options);
    return run(resolution, operation, signalOf(options));
  } catch (error) {
    return Promise.reject(error);
  }
}

/**
 * The access wrapper: returns a function that calls `operation(context, ...args)` under `options`, with
 * the receiver it was called on: a wrapped method keeps its `this`. The options are checked once, here;
 * a bad one throws at once.
 *
 * @example
 * const getUser = wrap(async ({ signal }, id: string) => fetchUser(id, signal), { timeout: 1000 });
 * const user = await getUser("42");
 */
export function wrap<A extends unknown[], T, This = unknown>(
  operation: (this: This, context: AttemptContext, ...args: A) => T | PromiseLike<T>,
  options?: RetryOptions<T>,
): (this: This, ...args: A) => Promise<T> {
  checkOperation(operation);
  const resolution = build(resolveOptions(options));
  const signal = resolution.options.signal;
  // Called bare without arguments (the common case), a call allocates neither an argument list nor a
  // closure.
  const bare = operation as unknown as (context: AttemptContext) => T | PromiseLike<T>;
  const direct = (context: AttemptContext) => bare(context);
  return function wrapped(this: This): Promise<T> {
    // biome-ignore lint/complexity/noArguments: reading `arguments` (not a rest list) keeps the no-argument call free of allocations
    if (arguments.length === 0 && this === undefined) return run(resolution, direct, signal);
    // biome-ignore lint/complexity/noArguments: as above
    const args = Array.prototype.slice.call(arguments) as A;
    return run(resolution, (context: AttemptContext) => operation.call(this, context, ...args), signal);
  } as (this: This, ...args: A) => Promise<T>;
}

/**
 * The pipeline `retry` and `wrap` stand for, built from `options` (checked at once): to run it yourself,
 * or to use it as a step of a bigger one. The options' `signal`, `clock` and `random` belong to an
 * execution: pass them to `execute`.
 *
 * @example
 * const p = retryPipeline({ maxRetries: 3, timeout: 2000 });
 * await p.execute(op, { signal });
 */
export function retryPipeline<T = unknown>(options?: RetryOptions<T>): Pipeline {
  const resolution = build(resolveOptions(options));
  const resolved = resolution.options;
  const inner = resolution.inner;
  const steps: Step[] = [new RetryStep(resolved.retry)];
  // The breaker's step, then the time limit, then hedging and faults inside it.
  const breakerSteps = resolved.breaker === undefined ? 0 : 1;
  steps.push(...inner.slice(0, breakerSteps));
  if (resolution.limit !== undefined) steps.push(new TimeoutStep({ ms: resolution.limit.ms }));
  steps.push(...inner.slice(breakerSteps));
  return new Pipeline(steps);
}
