/**
 * What an operation may answer with besides a value or a promise: any thenable, as `await` takes it. Its
 * outcome is heard once, whatever it calls how often; a chain of thenables is followed to a bounded depth.
 */
import { retry } from "robustly";
import { describe, expect, it } from "vitest";
import { isThenable, MAX_ADOPTED, settleWith } from "../src/core/invoke.js";

/** Every outcome `settleWith` reports for `result`, in order. */
function outcomes(result: unknown): unknown[] {
  const heard: unknown[] = [];
  settleWith(
    result,
    (value) => heard.push(["value", value]),
    (error) => heard.push(["error", error instanceof Error ? error.message : error]),
  );
  return heard;
}

/** A thenable that calls its callbacks as `act` does, synchronously. */
const thenable = (act: (ok: (v: unknown) => void, fail: (e: unknown) => void) => void) => ({
  // biome-ignore lint/suspicious/noThenProperty: a thenable is what these tests are about
  then: (ok: (v: unknown) => void, fail: (e: unknown) => void) => act(ok, fail),
});

/** `n` thenables, each answering with the next; the last answers `value`. */
function chain(n: number, value: unknown): unknown {
  let answer = value;
  for (let i = 0; i < n; i++) {
    const next = answer;
    answer = thenable((ok) => ok(next));
  }
  return answer;
}

describe("a thenable's outcome", () => {
  it("is heard once: the first of its callbacks counts, later calls and a throw after it do not", () => {
    expect(
      outcomes(
        thenable((ok, fail) => {
          ok(1);
          ok(2);
          fail(new Error("late"));
        }),
      ),
    ).toEqual([["value", 1]]);
    expect(
      outcomes(
        thenable((ok, fail) => {
          fail(new Error("first"));
          ok(2);
          fail(new Error("again"));
        }),
      ),
    ).toEqual([["error", "first"]]);
    expect(
      outcomes(
        thenable((ok) => {
          ok(1);
          throw new Error("after");
        }),
      ),
    ).toEqual([["value", 1]]);
  });

  it("is the error its then throws before calling anything", () => {
    expect(
      outcomes(
        thenable(() => {
          throw new Error("then threw");
        }),
      ),
    ).toEqual([["error", "then threw"]]);
  });

  it(`follows a thenable answering with a thenable up to ${MAX_ADOPTED} times in a row, then fails`, () => {
    expect(outcomes(chain(MAX_ADOPTED + 1, 42))).toEqual([["value", 42]]);
    expect(outcomes(chain(MAX_ADOPTED + 2, 42))).toEqual([
      ["error", `a thenable answered with a thenable more than ${MAX_ADOPTED} times in a row`],
    ]);
  });

  it("is a plain value's own, at once, for anything that is no thenable", () => {
    // biome-ignore lint/suspicious/noThenProperty: a then that is no function is what this checks
    for (const value of [null, undefined, 0, "then", { then: 5 }])
      expect(outcomes(value)).toEqual([["value", value]]);
  });

  it("counts for a function with a then method too, and for an object whose then getter throws", async () => {
    // biome-ignore lint/suspicious/noThenProperty: a callable thenable is what this checks
    const callable = Object.assign(() => 0, { then: (ok: (v: unknown) => void) => ok("from a function") });
    expect(isThenable(callable)).toBe(true);
    await expect(retry(() => callable as unknown as Promise<string>, { maxRetries: 0 })).resolves.toBe(
      "from a function",
    );
    // biome-ignore lint/suspicious/noThenProperty: a then getter that throws is what this checks
    const hostile = Object.defineProperty({}, "then", {
      get() {
        throw new Error("getter");
      },
    });
    expect(outcomes(hostile)).toEqual([["error", "getter"]]);
    // biome-ignore lint/suspicious/noThenProperty: a then that is no function is what this checks
    const notCallable = Object.assign(() => 0, { then: 1 });
    expect(isThenable(notCallable)).toBe(false);
  });
});
