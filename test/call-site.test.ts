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

describe("adding the caller's frames to an error", () => {
  const site = (...frames: string[]) => ({ stack: ["Error", ...frames].join("\n") });

  it("appends each frame the error's stack lacks, in order, once; blank lines are no frames", () => {
    const error = new Error("down");
    error.stack = "Error: down\n    at attempt (a.js:1:1)";
    addCallSite(
      error,
      site("    at attempt (a.js:1:1)", "", "    at async caller (b.js:2:2)", "    at async main (c.js:3:3)"),
    );
    expect(error.stack).toBe(
      "Error: down\n    at attempt (a.js:1:1)\n    at async caller (b.js:2:2)\n    at async main (c.js:3:3)",
    );
  });

  it("extends an error at most once, however many calls end with it", () => {
    const error = new Error("shared");
    error.stack = "Error: shared";
    addCallSite(error, site("    at async first (a.js:1:1)"));
    addCallSite(error, site("    at async second (b.js:2:2)"));
    expect(error.stack).toBe("Error: shared\n    at async first (a.js:1:1)");
  });

  it("leaves an error that already holds every frame as it is, and may extend it later", () => {
    const error = new Error("whole");
    error.stack = "Error: whole\n    at async caller (b.js:2:2)";
    addCallSite(error, site("    at async caller (b.js:2:2)"));
    expect(error.stack).toBe("Error: whole\n    at async caller (b.js:2:2)");
    addCallSite(error, site("    at async other (c.js:3:3)"));
    expect(error.stack).toBe("Error: whole\n    at async caller (b.js:2:2)\n    at async other (c.js:3:3)");
  });

  it("leaves alone what has no stack to extend: a frozen error, a stack that is no string, a primitive, no site", () => {
    const frames = site("    at async caller (b.js:2:2)");
    const frozen = Object.freeze(Object.assign(new Error("frozen"), {}));
    const before = frozen.stack;
    addCallSite(frozen, frames);
    expect(frozen.stack).toBe(before);
    const noStack = { stack: 42 };
    addCallSite(noStack, frames);
    expect(noStack.stack).toBe(42);
    for (const thrown of [null, undefined, "down", 503])
      expect(() => addCallSite(thrown, frames)).not.toThrow();
    const plain = new Error("plain");
    plain.stack = "Error: plain";
    addCallSite(plain, undefined);
    expect(plain.stack).toBe("Error: plain");
    const emptySite = new Error("empty");
    emptySite.stack = "Error: empty";
    addCallSite(emptySite, {});
    expect(emptySite.stack).toBe("Error: empty");
  });

  it("never throws for an error whose stack cannot be written, and leaves it as it was", () => {
    const error = new Error("read-only");
    const written: unknown[] = [];
    Object.defineProperty(error, "stack", {
      get: () => "Error: read-only",
      set: (value: unknown) => {
        written.push(value);
        throw new Error("no");
      },
    });
    addCallSite(error, site("    at async caller (b.js:2:2)"));
    // It tried to write the extended stack, and the failure stayed inside.
    expect(written).toEqual(["Error: read-only\n    at async caller (b.js:2:2)"]);
    expect(error.stack).toBe("Error: read-only");
    // Not marked as extended: a later call tries again.
    addCallSite(error, site("    at async caller (b.js:2:2)"));
    expect(written).toHaveLength(2);
  });
});
