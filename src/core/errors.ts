/**
 * The errors robustly itself creates. Everything else that comes out of a call is the caller's own error,
 * passed through unchanged.
 */

/** Thrown into an attempt (through its `signal`) and recorded as its outcome when the attempt's `timeout` elapses. */
export class TimeoutError extends Error {
  override readonly name = "TimeoutError";
  /** The timeout that elapsed, in milliseconds. */
  readonly timeout: number;
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
  readonly value: T;
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

/** A bad option: thrown at once, naming the option, the value and what is allowed. */
export class OptionError extends TypeError {
  override readonly name = "OptionError";
  readonly option: string;
  readonly value: unknown;
  /** For a misspelt or renamed option: the name meant ("did you mean `maxRetries`?"). */
  readonly hint: string | undefined;
  constructor(option: string, value: unknown, allowed: string, hint?: string) {
    super(`${option} must be ${allowed}; got ${describe(value)}${hint === undefined ? "" : `. ${hint}`}`);
    this.option = option;
    this.value = value;
    this.hint = hint;
  }
}

/** A short, safe rendering of any value for error messages. */
export function describe(value: unknown): string {
  if (typeof value === "number") {
    return Object.is(value, -0) ? "-0" : String(value);
  }
  if (typeof value === "string") return JSON.stringify(value);
  if (typeof value === "function") return `function ${value.name || "(anonymous)"}`;
  if (Array.isArray(value)) return `[${value.map(describe).join(", ")}]`;
  if (value === null || value === undefined || typeof value !== "object") return String(value);
  try {
    const json = JSON.stringify(value);
    return json.length > 80 ? `${json.slice(0, 77)}...` : json;
  } catch {
    return Object.prototype.toString.call(value);
  }
}
