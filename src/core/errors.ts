/**
 * The errors robustly itself creates. Everything else that comes out of a call is the caller's own error,
 * passed through unchanged.
 */

/** Thrown into an attempt (through its `signal`) and recorded as its outcome when the attempt's `timeout` elapses. */
export class TimeoutError extends Error {
  override readonly name = "TimeoutError";
  /** The timeout that elapsed, in milliseconds. */
  declare readonly timeout: number;
  constructor(timeout: number, message = `The attempt timed out after ${timeout} ms`) {
    super(message);
    this.timeout = timeout;
  }
}

/**
 * Wrap an error in `PermanentError` (or throw one with a message) to stop retrying at once.
 * `retry` then rejects with the wrapped error itself (`cause`), or with this error when there is none.
 * The first argument is the cause when it is an object (an `Error`, or any object you throw); a string
 * or another primitive is the message (as p-retry's `new AbortError("…")`), so the call never rejects
 * with a bare string.
 *
 * @example
 * if (response.status === 404) throw new PermanentError(new Error("not found"));
 * if (!token) throw new PermanentError("no token");
 */
export class PermanentError extends Error {
  override readonly name = "PermanentError";
  constructor(cause?: unknown, message?: string) {
    const isCause = typeof cause === "object" && cause !== null;
    const text =
      message ??
      (cause instanceof Error
        ? cause.message
        : cause === undefined || isCause
          ? "Permanent failure"
          : String(cause));
    super(text, isCause ? { cause } : undefined);
  }
}

/** What a call ends with when `error` stopped it: a `PermanentError`'s cause, or the error itself. */
export function unwrapPermanent(error: unknown): unknown {
  return error instanceof PermanentError && error.cause !== undefined ? error.cause : error;
}

/**
 * Marks an attempt whose value `retryOnResult` rejected. Rules and `retryOn` see it like any other error;
 * it never escapes `retry`: when retries run out, `retry` resolves with the last value.
 */
export class RetryableResultError<T = unknown> extends Error {
  override readonly name = "RetryableResultError";
  declare readonly value: T;
  constructor(value: T) {
    super("retryOnResult asked for a retry");
    this.value = value;
  }
}

/**
 * Makes an error without capturing a stack trace. For errors made in timer callbacks (an attempt's
 * timeout), where the stack shows only the timer machinery and capturing it costs microseconds, which adds
 * up in a simulation of millions of attempts.
 */
export function withoutStack<E extends Error>(make: () => E): E {
  const errorClass = Error as { stackTraceLimit?: number };
  const limit = errorClass.stackTraceLimit;
  errorClass.stackTraceLimit = 0;
  try {
    return make();
  } finally {
    errorClass.stackTraceLimit = limit;
  }
}

/**
 * Where an error says how long to wait before trying again, in ms: the retry loop reads it, when the policy
 * has no `delayFrom`, as it reads a server's `Retry-After` (the least wait, the jittered delay on top).
 * `RateLimitedError` sets it; an error of your own may too. A symbol, so that no field of another
 * library's errors (a `retryAfter` in seconds, say) is read by mistake.
 */
export const RETRY_AFTER: unique symbol = Symbol.for("robustly.retryAfter");

/** A bad option: thrown at once, naming the option, the value and what is allowed. */
export class OptionError extends TypeError {
  override readonly name = "OptionError";
  declare readonly option: string;
  declare readonly value: unknown;
  /** For a misspelt or renamed option: the name meant ("did you mean `maxRetries`?"). */
  declare readonly hint: string | undefined;
  constructor(option: string, value: unknown, allowed: string, hint?: string) {
    super(`${option} must be ${allowed}; got ${describe(value)}${hint === undefined ? "" : `. ${hint}`}`);
    this.option = option;
    this.value = value;
    this.hint = hint;
  }
}

/**
 * The longest description of a list or an object, in characters. A message names the value, it does not
 * reproduce it: a million-element list is shown by its start.
 */
const DESCRIBED = 80;

/** A short, safe rendering of any value for error messages. */
export function describe(value: unknown): string {
  if (Object.is(value, -0)) return "-0";
  // A string, a name or a number of a million characters is cut as a list is: by its start.
  if (typeof value === "string") return cut(JSON.stringify(value.slice(0, DESCRIBED)));
  if (typeof value === "function") return cut(`function ${value.name || "(anonymous)"}`);
  if (value === null || typeof value !== "object") return cut(String(value));
  // Written out piece by piece rather than by recursing through the whole value or by JSON.stringify:
  // a value that contains itself must not overflow the stack (nor be refused by JSON), and one a million
  // elements long or ten thousand deep must cost no more than the characters shown. Each level of
  // nesting writes a bracket before it goes deeper and writing stops once the text is long enough, so
  // the depth walked is bounded by DESCRIBED.
  let text = "";
  const full = () => text.length > DESCRIBED;
  const add = (piece: string) => {
    text += piece.length > DESCRIBED ? piece.slice(0, DESCRIBED + 1) : piece;
  };
  // The values being written, outside in: one met again inside itself is [Circular].
  const within: object[] = [];
  // Writes `item` as `describe` shows it. A list (`json` false) is `[a, b]`, its elements as `describe`
  // shows them and its objects as JSON; anything `json` is what JSON.stringify writes for it (already
  // toJson'd). One walk for both, as they differ only in a list's separator and its elements.
  const write = (item: unknown, json: boolean): void => {
    if (item === null || typeof item !== "object") {
      // A bigint, which JSON.stringify refuses, is still a number to show; what JSON leaves out is null.
      add(
        !json ? describe(item) : typeof item === "bigint" ? String(item) : (JSON.stringify(item) ?? "null"),
      );
      return;
    }
    if (within.includes(item)) {
      add("[Circular]");
      return;
    }
    within.push(item);
    if (Array.isArray(item)) {
      add("[");
      for (let i = 0; i < item.length && !full(); i++) {
        if (i > 0) add(json ? "," : ", ");
        const element: unknown = item[i];
        // In a list, a primitive or a list is shown as describe shows it; an object, as JSON.
        if (json || (typeof element === "object" && element !== null && !Array.isArray(element))) {
          write(toJson(element, String(i)), true);
        } else write(element, false);
      }
      add("]");
    } else {
      add("{");
      let first = true;
      for (const key in item) {
        if (full()) break;
        if (!Object.hasOwn(item, key)) continue;
        const property = toJson((item as Record<string, unknown>)[key], key);
        if (leftOut(property)) continue;
        add(`${first ? "" : ","}${JSON.stringify(key)}:`);
        first = false;
        write(property, true);
      }
      add("}");
    }
    within.pop();
  };
  try {
    if (Array.isArray(value)) write(value, false);
    else write(toJson(value, ""), true);
  } catch {
    // A getter or a toJSON that throws: the value's kind still says something (a revoked Proxy has none).
    try {
      return Object.prototype.toString.call(value);
    } catch {
      return "[object]";
    }
  }
  return cut(text);
}

/** `text`, cut with "..." when longer than DESCRIBED. */
function cut(text: string): string {
  return text.length > DESCRIBED ? `${text.slice(0, DESCRIBED - 3)}...` : text;
}

/** What JSON.stringify writes for `value` under `key`: the answer of its toJSON, a boxed primitive unboxed. */
function toJson(value: unknown, key: string): unknown {
  if ((typeof value === "object" && value !== null) || typeof value === "bigint") {
    const toJSON = (value as { toJSON?: unknown }).toJSON;
    if (typeof toJSON === "function") value = toJSON.call(value, key);
  }
  if (value instanceof Number || value instanceof String || value instanceof Boolean) return value.valueOf();
  return value;
}

/** Whether JSON.stringify leaves a property with this value out (and writes null for it in a list). */
function leftOut(value: unknown): boolean {
  return value === undefined || typeof value === "function" || typeof value === "symbol";
}
