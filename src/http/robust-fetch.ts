/**
 * `fetch`, robustly: per-attempt timeouts, retries of network errors and of the statuses that mean "try
 * again", `Retry-After` honoured, only for requests that are safe to send twice. It runs the one retry
 * loop (`retry`), so every retry option (backoff, jitter, budget, breaker, callbacks, clock) applies.
 *
 * Signals: each attempt hands fetch the attempt's own `signal`, which the loop aborts on the attempt's
 * timeout (reason: a `TimeoutError`) or on the caller's abort (reason: theirs). The caller's signal itself
 * is never given to fetch: undici keeps a listener on the signal it is given until the request is garbage
 * collected, and `AbortSignal.any` on Node 20 leaks with a long-lived source (nodejs/node#55351). The loop's
 * one listener on the caller's signal is removed when the call settles.
 */
import { type DefaultBudget, DefaultBudgets } from "../budget/default.js";
import { type Clock, systemClock } from "../core/clock.js";
import { OptionError, RetryableResultError, TimeoutError } from "../core/errors.js";
import { read } from "../core/schema.js";
import { isFunction } from "../core/validate.js";
import { compileRetryMatcher } from "../policy/matcher.js";
import { type RetryEvent, type RetryOptions, resolveOptions } from "../policy/options.js";
import { retry } from "../retry/retry.js";
import { retryAfter } from "./retry-after.js";
import { FETCH_SCHEMA } from "./schema.js";

/** What `withRetry` wraps: `globalThis.fetch`, or anything called like it. */
export type FetchLike = (input: RequestInfo | URL, init?: RequestInit) => Promise<Response>;

/** Everything `robustFetch` accepts: all of `retry`'s options, plus the HTTP ones. All times in ms. */
export interface RobustFetchOptions extends RetryOptions<Response> {
  /**
   * The response statuses worth another attempt. Default `[408, 425, 429, 500, 502, 503, 504]`;
   * `[]` retries no status (network errors and timeouts only).
   */
  retryOnStatus?: readonly number[];
  /**
   * The longest `Retry-After` obeyed, in ms: a longer hint is cut to it. Default 60,000 (1 min).
   * Used by the default `delayFrom`; pass your own `delayFrom` to replace the Retry-After reading.
   */
  maxRetryAfter?: number;
  /**
   * Retry non-idempotent methods (POST, PATCH, CONNECT, …) too. Default false: they are retried only when
   * the request carries an `Idempotency-Key` header; otherwise their first outcome is final.
   */
  retryNonIdempotent?: boolean;
  /**
   * The whole call's limit, ms, across every attempt and wait: when it runs out the call rejects with a
   * `TimeoutError` and the attempt in flight is aborted. Default 120,000 (2 min); negative or Infinity for
   * none. (`timeout`, each attempt's limit, defaults to 30,000 here.)
   */
  totalTimeout?: number;
  /**
   * Once the call has resolved, the longest the response's body may go without a chunk, ms: a body that
   * stalls longer errors with a `TimeoutError` as it is read. Default 30,000; negative or Infinity for
   * none. (The body is read after robustFetch has returned, so a stall is not retried: read the body
   * inside `retry` where that is wanted.)
   */
  bodyTimeout?: number;
}

/** A fetch that retries: fetch's own parameters, then optional per-call options over the defaults. */
export type RobustFetch = (
  input: RequestInfo | URL,
  init?: RequestInit,
  options?: RobustFetchOptions,
) => Promise<Response>;

/** The defaults of `robustFetch`'s own options. */
export const FETCH_DEFAULTS = Object.freeze({
  retryOnStatus: Object.freeze([408, 425, 429, 500, 502, 503, 504]) as readonly number[],
  maxRetryAfter: 60_000,
  retryNonIdempotent: false,
  /** Each attempt's limit, up to the response's headers. */
  timeout: 30_000,
  /** The whole call's limit. */
  totalTimeout: 120_000,
  /** The longest a returned response's body may go without a chunk. */
  bodyTimeout: 30_000,
});

/** RFC 9110 §9.2.2: methods whose repetition has the same effect as one request. */
const IDEMPOTENT_METHODS: ReadonlySet<string> = new Set(["GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE"]);

/**
 * The messages fetch implementations reject with when the request never got a response (undici, the
 * browsers, the common polyfills). Any TypeError would also take in a malformed URL, method or header,
 * which no retry can fix.
 */
const NETWORK_ERROR_MESSAGES: ReadonlySet<string> = new Set([
  "fetch failed", // Node.js (undici)
  "terminated", // undici, connection lost mid-response
  "Failed to fetch", // Chromium
  "network error", // Chromium
  "NetworkError when attempting to fetch resource.", // Firefox
  "Load failed", // Safari 17+
  "The Internet connection appears to be offline.", // older Safari
  "Network request failed", // whatwg-fetch, cross-fetch, React Native
]);

/** True for a fetch that failed before any response: refused, reset, DNS failure, … */
export function isNetworkError(error: unknown): boolean {
  return error instanceof TypeError && NETWORK_ERROR_MESSAGES.has(error.message);
}

function isResponseLike(value: unknown): value is Response {
  return (
    typeof value === "object" &&
    value !== null &&
    typeof (value as { status?: unknown }).status === "number" &&
    typeof (value as { headers?: { get?: unknown } }).headers?.get === "function"
  );
}

/**
 * Lets go of a response that will not be returned, so that its connection is freed (undici closes it, or
 * reuses it once the body was read). Started, not awaited: the loop sleeps meanwhile.
 */
function discard(response: unknown): void {
  if (!isResponseLike(response) || response.bodyUsed) return;
  const body = response.body as ReadableStream | null | undefined;
  try {
    if (body !== null && body !== undefined && typeof body.cancel === "function") {
      if (!body.locked) body.cancel().catch(ignore);
    } else if (typeof response.arrayBuffer === "function") {
      response.arrayBuffer().catch(ignore);
    }
  } catch {
    // A body that cannot be released is left to the garbage collector; the retry goes on.
  }
}

function ignore(): void {}

/** Bodies fetch rebuilds from scratch on every call; anything else (a stream, an async iterable) is read once. */
function isReplayable(body: unknown): boolean {
  return (
    body === undefined ||
    body === null ||
    typeof body === "string" ||
    body instanceof ArrayBuffer ||
    ArrayBuffer.isView(body) ||
    body instanceof URLSearchParams ||
    (typeof Blob === "function" && body instanceof Blob) ||
    (typeof FormData === "function" && body instanceof FormData)
  );
}

function asRequest(input: RequestInfo | URL): Request | undefined {
  return typeof Request === "function" && input instanceof Request ? input : undefined;
}

function hasIdempotencyKey(init: RequestInit | undefined, request: Request | undefined): boolean {
  try {
    if (init?.headers !== undefined) return new Headers(init.headers).has("idempotency-key");
    return request?.headers.has("idempotency-key") ?? false;
  } catch {
    // Malformed headers: fetch rejects them itself, once.
    return false;
  }
}

/** `robustFetch`'s options checked and compiled once; `retryOptions` are checked by `retry`. */
interface Prepared {
  readonly retryNonIdempotent: boolean;
  /** The whole call's limit, ms (Infinity for none). */
  readonly totalTimeout: number;
  /** The longest a returned body may go without a chunk, ms (Infinity for none). */
  readonly bodyTimeout: number;
  /** The retry options with robustFetch's compositions in place, `signal` still the caller's one. */
  readonly retryOptions: RetryOptions<Response>;
}

const OWN_KEYS: ReadonlySet<string> = new Set([
  "retryOnStatus",
  "maxRetryAfter",
  "retryNonIdempotent",
  "totalTimeout",
  "bodyTimeout",
]);

function checkStatuses(value: unknown): ReadonlySet<number> {
  if (!Array.isArray(value)) {
    throw new OptionError("retryOnStatus", value, "an array of HTTP status codes (integers 100 to 599)");
  }
  value.forEach((status: unknown, i: number) => {
    if (typeof status !== "number" || !Number.isInteger(status) || status < 100 || status > 599) {
      throw new OptionError(`retryOnStatus[${i}]`, status, "an HTTP status code (an integer 100 to 599)");
    }
  });
  return new Set(value as number[]);
}

function checkObject(options: unknown): void {
  if (options !== undefined && (options === null || typeof options !== "object" || Array.isArray(options))) {
    throw new OptionError("options", options, "an object");
  }
}

function prepare(options: RobustFetchOptions | undefined): Prepared {
  checkObject(options);
  const o = options ?? {};
  const statuses =
    o.retryOnStatus === undefined ? new Set(FETCH_DEFAULTS.retryOnStatus) : checkStatuses(o.retryOnStatus);
  const maxRetryAfter =
    read<number>(FETCH_SCHEMA, "maxRetryAfter", o.maxRetryAfter) ?? FETCH_DEFAULTS.maxRetryAfter;
  const retryNonIdempotent =
    read<boolean>(FETCH_SCHEMA, "retryNonIdempotent", o.retryNonIdempotent) ??
    FETCH_DEFAULTS.retryNonIdempotent;
  read(FETCH_SCHEMA, "retryOnResult", o.retryOnResult);
  read(FETCH_SCHEMA, "onRetry", o.onRetry);

  // A retryable status always reaches the policy: `retryOn` classifies errors only.
  const matchError =
    o.retryOn === undefined
      ? (error: unknown) => error instanceof TimeoutError || isNetworkError(error)
      : compileRetryMatcher("retryOn", o.retryOn);
  const userRetryOnResult = o.retryOnResult;
  const userOnRetry = o.onRetry;
  const retryOptions: Record<string, unknown> = {};
  for (const key of Object.keys(o)) {
    if (!OWN_KEYS.has(key)) retryOptions[key] = (o as Record<string, unknown>)[key];
  }
  Object.assign(retryOptions, {
    retryOn: (error: unknown) => error instanceof RetryableResultError || matchError(error),
    retryOnResult: (response: Response) =>
      statuses.has(response.status) || (userRetryOnResult?.(response) ?? false),
    delayFrom:
      o.delayFrom ??
      ((outcome: unknown) =>
        isResponseLike(outcome) ? retryAfter(outcome, { max: maxRetryAfter }) : undefined),
    // Called only when a retry follows (the final outcome is returned, never here): release the body
    // before the backoff sleep, so no connection is held while waiting.
    onRetry: (event: RetryEvent) => {
      if (event.error instanceof RetryableResultError) discard(event.error.value);
      userOnRetry?.(event);
    },
  } satisfies RetryOptions<Response>);
  retryOptions.timeout ??= FETCH_DEFAULTS.timeout;
  const totalTimeout =
    read<number>(FETCH_SCHEMA, "totalTimeout", o.totalTimeout) ?? FETCH_DEFAULTS.totalTimeout;
  const bodyTimeout = read<number>(FETCH_SCHEMA, "bodyTimeout", o.bodyTimeout) ?? FETCH_DEFAULTS.bodyTimeout;
  return {
    retryNonIdempotent,
    totalTimeout,
    bodyTimeout,
    retryOptions: retryOptions as RetryOptions<Response>,
  };
}

/**
 * The caller's signal: `init.signal` (or the Request's own), and the options' `signal`. When both are
 * given, one is made to follow both, and `release` unhooks it once the call has settled.
 */
function callerSignal(
  fromRequest: AbortSignal | null | undefined,
  fromOptions: AbortSignal | undefined,
): { signal: AbortSignal | undefined; release: () => void } {
  const a = fromRequest ?? undefined;
  if (a === undefined || fromOptions === undefined || a === fromOptions) {
    return { signal: a ?? fromOptions, release: ignore };
  }
  if (a.aborted) return { signal: a, release: ignore };
  if (fromOptions.aborted) return { signal: fromOptions, release: ignore };
  const both = new AbortController();
  const release = () => {
    a.removeEventListener("abort", onA);
    fromOptions.removeEventListener("abort", onB);
  };
  const onA = () => {
    release();
    both.abort(a.reason);
  };
  const onB = () => {
    release();
    both.abort(fromOptions.reason);
  };
  a.addEventListener("abort", onA);
  fromOptions.addEventListener("abort", onB);
  return { signal: both.signal, release };
}

/**
 * The caller's signal, made to abort with a `TimeoutError` when the whole call's limit runs out too (on
 * `clock`); `release` also removes the timer.
 */
function withDeadline(
  caller: { signal: AbortSignal | undefined; release: () => void },
  ms: number,
  clock: Clock,
): { signal: AbortSignal | undefined; release: () => void } {
  if (ms === Number.POSITIVE_INFINITY || caller.signal?.aborted) return caller;
  const deadline = new AbortController();
  const outer = caller.signal;
  const onAbort = () => deadline.abort(outer?.reason);
  outer?.addEventListener("abort", onAbort, { once: true });
  const cancel = clock.setTimer(ms, () =>
    deadline.abort(new TimeoutError(ms, `The call timed out after ${ms} ms`)),
  );
  return {
    signal: deadline.signal,
    release: () => {
      cancel();
      outer?.removeEventListener("abort", onAbort);
      caller.release();
    },
  };
}

/** The most origins whose default budgets are kept: past it, the least recently used one is let go. */
export const MAX_ORIGINS = 1000;
/** Each origin's default budgets (one per clock), the least recently used first. */
const originBudgets = new Map<string, DefaultBudgets>();

/**
 * The default budget of the origin (scheme, host and port) `input` goes to, on `clock`. A URL that does not
 * parse (a relative one outside a page) counts under one shared key.
 */
function originBudget(input: RequestInfo | URL, clock: Clock): DefaultBudget {
  const origin = originOf(input);
  let budgets = originBudgets.get(origin);
  if (budgets === undefined) budgets = new DefaultBudgets();
  else originBudgets.delete(origin);
  originBudgets.set(origin, budgets);
  if (originBudgets.size > MAX_ORIGINS) originBudgets.delete(originBudgets.keys().next().value as string);
  return budgets.of(clock);
}

function originOf(input: RequestInfo | URL): string {
  try {
    const url = input instanceof URL ? input.href : typeof input === "string" ? input : input.url;
    return new URL(url, (globalThis as { location?: { href?: string } }).location?.href).origin;
  } catch {
    return "";
  }
}

async function fetchWithRetry(
  fetchImpl: FetchLike,
  input: RequestInfo | URL,
  init: RequestInit | undefined,
  prepared: Prepared,
): Promise<Response> {
  const request = asRequest(input);
  const method = (init?.method ?? request?.method ?? "GET").toUpperCase();
  // init.body, when given, replaces the Request's body; otherwise a Request's body is replayed by cloning
  // the Request for each attempt (the clone's tee keeps the body in memory for the next one).
  const cloneRequest = request !== undefined && init?.body === undefined && request.body !== null;
  const replayable = init?.body === undefined || isReplayable(init.body);
  const retryable =
    replayable &&
    (IDEMPOTENT_METHODS.has(method) || prepared.retryNonIdempotent || hasIdempotencyKey(init, request));

  const base = prepared.retryOptions;
  const caller = callerSignal(init?.signal !== undefined ? init.signal : request?.signal, base.signal);
  const { signal, release } = withDeadline(caller, prepared.totalTimeout, base.clock ?? systemClock);
  // Options that name no budget (nor false) draw on the origin's default one.
  const budget = base.budget === undefined ? originBudget(input, base.clock ?? systemClock) : base.budget;
  const options: RetryOptions<Response> = retryable
    ? { ...base, signal, budget }
    : // One attempt (still timed, still counted by a budget or breaker); its outcome is final.
      { ...base, signal, budget, maxRetries: 0, rules: undefined };
  try {
    const response = await retry(async (attempt) => {
      const attemptSignal = attempt.signal;
      const response = await fetchImpl(cloneRequest ? (request as Request).clone() : input, {
        ...init,
        signal: attemptSignal,
      });
      // A fetch that ignored its signal answered after the attempt ended: nobody will read this response.
      if (attemptSignal.aborted) {
        discard(response);
        throw attemptSignal.reason;
      }
      return response;
    }, options);
    return watchBody(response, prepared.bodyTimeout, base.clock ?? systemClock);
  } finally {
    release();
  }
}

/**
 * `response` with a body that errors with a `TimeoutError` when no chunk comes for `ms` while it is read
 * (its status, headers, url and redirected as they were).
 */
function watchBody(response: Response, ms: number, clock: Clock): Response {
  const body = response.body;
  if (ms === Number.POSITIVE_INFINITY || body === null || response.status < 200 || response.status > 599) {
    return response;
  }
  const reader = body.getReader();
  let cancel: (() => void) | undefined;
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      cancel = clock.setTimer(ms, () => {
        const stalled = new TimeoutError(ms, `The response body stalled for ${ms} ms`);
        controller.error(stalled);
        reader.cancel(stalled).catch(ignore);
      });
      return reader.read().then(
        ({ done, value }) => {
          cancel?.();
          if (done) controller.close();
          else controller.enqueue(value);
        },
        (error: unknown) => {
          cancel?.();
          controller.error(error);
        },
      );
    },
    cancel(reason) {
      cancel?.();
      return reader.cancel(reason);
    },
  });
  const watched = new Response(stream, {
    status: response.status,
    statusText: response.statusText,
    headers: response.headers,
  });
  for (const key of ["url", "redirected", "type"] as const) {
    Object.defineProperty(watched, key, { value: response[key] });
  }
  return watched;
}

/**
 * `fetch` with retries: per-attempt `timeout`, network errors and the statuses in `retryOnStatus` retried
 * (`maxRetries` default 3, exponential backoff with full jitter), `Retry-After` honoured up to
 * `maxRetryAfter`. Like fetch, it resolves with any HTTP status: a non-retryable one at once, the last
 * retryable one when retries run out, unread in both cases. A retried response's body is cancelled before
 * the backoff sleep. Rejects with the last error (a `TypeError` from fetch, a `TimeoutError`), or with the
 * signal's reason as soon as `init.signal` (or `options.signal`) aborts, mid-attempt or mid-backoff.
 *
 * Only idempotent methods are retried (GET, HEAD, OPTIONS, TRACE, PUT, DELETE), unless the request has an
 * `Idempotency-Key` header or `retryNonIdempotent` is set. A body that is a stream (a `ReadableStream`, an
 * async iterable) can be sent only once, so such a request is never retried; strings, buffers, Blobs,
 * URLSearchParams and FormData are sent again. A `Request` with a body is cloned for each attempt.
 *
 * The timeout and the signal cover each attempt up to the response's headers. Once the call resolves, the
 * caller's signal no longer reaches the response: to stop reading its body, `response.body?.cancel()`.
 *
 * @example
 * const response = await robustFetch("https://api.example.com/items", { signal }, { timeout: 5000, maxRetries: 5 });
 */
export function robustFetch(
  input: RequestInfo | URL,
  init?: RequestInit,
  options?: RobustFetchOptions,
): Promise<Response> {
  try {
    return fetchWithRetry(globalThis.fetch, input, init, prepare(options));
  } catch (error) {
    return Promise.reject(error);
  }
}

/**
 * Wraps a fetch (default: `globalThis.fetch`, read now) into a `RobustFetch` with `defaults`, which are
 * checked here, once: a bad option throws an `OptionError` at once. The result can stand in for fetch;
 * a third argument overrides the defaults for one call.
 *
 * @example
 * const api = withRetry(fetch, { timeout: 2000, maxRetries: 4, backoff: backoff.exponential({ base: 200 }) });
 * const response = await api("https://api.example.com/items");
 */
export function withRetry(
  fetchImpl: FetchLike = globalThis.fetch,
  defaults?: RobustFetchOptions,
): RobustFetch {
  isFunction("fetchImpl", fetchImpl);
  const prepared = prepare(defaults);
  // Check the retry options now rather than at the first request.
  resolveOptions(prepared.retryOptions);
  return (input, init, options) => {
    try {
      checkObject(options);
      const perCall = options === undefined ? prepared : prepare({ ...defaults, ...options });
      return fetchWithRetry(fetchImpl, input, init, perCall);
    } catch (error) {
      return Promise.reject(error);
    }
  };
}
