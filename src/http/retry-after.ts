/**
 * HTTP's Retry-After (RFC 9110, section 10.2.3): a number of seconds, or an HTTP date. A server that is
 * hostile or broken must not make a client sleep for days, so the hint is capped, and anything that is not
 * a valid value is ignored.
 */
import { OptionError } from "../core/errors.js";
import { finiteAtLeast } from "../core/validate.js";

/** Something that carries a Retry-After: a `Response`, a `Headers`, a plain header map, or the value itself. */
export type RetryAfterSource =
  | string
  | null
  | undefined
  | { readonly headers: { get(name: string): string | null } }
  | { get(name: string): string | null }
  | Readonly<Record<string, string | readonly string[] | undefined>>;

export interface RetryAfterOptions {
  /** The longest wait accepted, ms; a longer hint is cut to it. Default 60,000 (1 min). */
  max?: number;
  /** Now, as ms since the epoch, for HTTP dates. Default `Date.now()`. */
  now?: number;
}

function headerValue(source: RetryAfterSource): string | null | undefined {
  if (source === null || source === undefined || typeof source === "string") return source;
  if ("headers" in source && typeof (source.headers as { get?: unknown })?.get === "function") {
    return (source.headers as { get(name: string): string | null }).get("retry-after");
  }
  if (typeof (source as { get?: unknown }).get === "function") {
    return (source as { get(name: string): string | null }).get("retry-after");
  }
  const record = source as Record<string, string | readonly string[] | undefined>;
  const key = Object.keys(record).find((k) => k.toLowerCase() === "retry-after");
  const value = key === undefined ? undefined : record[key];
  return Array.isArray(value) ? value[0] : (value as string | undefined);
}

/**
 * The wait a `Retry-After` asks for, in ms, capped at `max`; undefined when there is none or it is not
 * valid (use the computed backoff then). Delay-seconds must be a non-negative integer; a date in the past
 * means 0.
 *
 * @example
 * await retry(callApi, { delayFrom: (error) => retryAfter((error as { response?: Response }).response) });
 */
export function retryAfter(source: RetryAfterSource, options: RetryAfterOptions = {}): number | undefined {
  const max = finiteAtLeast("retryAfter: max", options.max ?? 60_000, 0);
  if (options.now !== undefined && !Number.isFinite(options.now)) {
    throw new OptionError("retryAfter: now", options.now, "a finite number of ms since the epoch");
  }
  const raw = headerValue(source)?.trim();
  if (raw === undefined || raw === null || raw === "") return undefined;
  if (/^\d+$/.test(raw)) return Math.min(Number(raw) * 1000, max);
  // An HTTP date (IMF-fixdate; Date.parse also reads the obsolete RFC 850 and asctime forms).
  if (!/^[A-Za-z]{3},? /.test(raw)) return undefined;
  const at = Date.parse(raw);
  if (Number.isNaN(at)) return undefined;
  const now = options.now ?? Date.now();
  return Math.min(Math.max(at - now, 0), max);
}
