/**
 * The caller's frames on an error a call ends with. An attempt made after a backoff sleep runs from a
 * timer, and an attempt whose promise a step consumes is no longer linked to the code awaiting the call,
 * so the error's own stack ends in the timer machinery instead of at the code that called `retry`. When a
 * call ends with an error, the frames of the code awaiting it (the `at async …` lines p-retry users see,
 * captured where the runtime links them) are appended to the error's `stack`, each frame once and an
 * error at most once. Nothing is captured while a call succeeds.
 */

/** A captured stack: what `Error.captureStackTrace` leaves on an object. */
export interface CallSite {
  stack?: string;
}

type Capture = (target: object, hide?: (...args: never[]) => unknown) => void;
const capture = (Error as { captureStackTrace?: Capture }).captureStackTrace;

/**
 * The stack of the code running now, without `hide` and what it called (undefined where the runtime
 * cannot capture one). Called in a promise reaction whose promise the caller awaits, it holds the
 * caller's `at async …` frames.
 */
export function callSite(hide: (...args: never[]) => unknown): CallSite | undefined {
  if (typeof capture !== "function") return undefined;
  // With stack traces off (`Error.stackTraceLimit` 0, as while a simulation runs) there is no frame to
  // capture: a capture would cost its time and add nothing to any error.
  if ((Error as { stackTraceLimit?: number }).stackTraceLimit === 0) return undefined;
  const site: CallSite = {};
  capture(site, hide);
  return site;
}

const extended = new WeakSet<object>();

/**
 * Appends to `error`'s stack the frames of `site` it lacks: once per error (an error thrown by many calls
 * is not extended by each), never for a frozen error or one without a stack, and never throwing.
 */
export function addCallSite(error: unknown, site: CallSite | undefined): void {
  // No site while stack traces are off (a simulation's run): nothing to add, and nothing to try.
  if (site === undefined || extended.has(error as object)) return;
  try {
    // A primitive or null has no stack to extend: its read gives undefined, or throws and is caught.
    const stack = (error as { stack?: unknown }).stack;
    if (typeof stack !== "string" || Object.isFrozen(error)) return;
    const frames = (site.stack ?? "").split("\n").slice(1);
    const missing = frames.filter((frame) => frame.trim() !== "" && !stack.includes(frame));
    if (missing.length === 0) return;
    (error as { stack: string }).stack = `${stack}\n${missing.join("\n")}`;
    extended.add(error as object);
  } catch {
    // An error whose stack cannot be written comes out as it was.
  }
}
