import { describe, expect, it } from "vitest";
import { addCallSite, callSite } from "../src/core/call-site.js";

/** Runs `body` with `Error.stackTraceLimit` set to `limit`, restoring it after. */
function withStackLimit<T>(limit: number, body: () => T): T {
  const errorClass = Error as { stackTraceLimit?: number };
  const before = errorClass.stackTraceLimit;
  errorClass.stackTraceLimit = limit;
  try {
    return body();
  } finally {
    errorClass.stackTraceLimit = before;
  }
}

describe("the caller's frames", () => {
  it("are captured while stack traces are on, and not at all while they are off (a simulation's run)", () => {
    function caller() {
      return callSite(caller);
    }
    expect(withStackLimit(10, caller)?.stack).toBeTypeOf("string");
    expect(withStackLimit(0, caller)).toBeUndefined();
  });

  it("with stack traces off, an error a call ends with keeps the stack it was made with", () => {
    const error = withStackLimit(0, () => new Error("down"));
    const before = error.stack;
    withStackLimit(0, () => addCallSite(error, callSite(addCallSite)));
    expect(error.stack).toBe(before);
  });
});
