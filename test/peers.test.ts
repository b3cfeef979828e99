// Defects found by holding robustly to what its peers' users expect (p-retry, async-retry,
// exponential-backoff, tenacity): each test is named after what broke.
import { backoff, jitter, OptionError, PermanentError, retry, retryReport, wrap } from "robustly";
import { VirtualClock } from "robustly/testing";
import { describe, expect, it } from "vitest";
import { BACKOFF_SCHEMAS } from "../src/backoff/schema.js";
import { JITTER_SCHEMAS } from "../src/jitter/schema.js";
import { drive } from "./support/drive.js";

const steady = { backoff: backoff.constant({ base: 1000 }), jitter: jitter.none() };

function thrown(make: () => unknown): Error {
  try {
    make();
  } catch (error) {
    return error as Error;
  }
  throw new Error("nothing thrown");
}

describe("PermanentError with a message", () => {
  it("new PermanentError('stop') rejects with an Error carrying the message, not the bare string", async () => {
    const error = await retry(() => {
      throw new PermanentError("stop");
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Error);
    expect(error).toBeInstanceOf(PermanentError);
    expect((error as Error).message).toBe("stop");
    expect((error as Error).cause).toBeUndefined();
    expect(retryReport(error)?.reason).toBe("permanent");
  });

  it("through wrap with a timeout (the pipeline's edge) too", async () => {
    const viaWrap = await wrap(() => Promise.reject(new PermanentError("gone")), { timeout: 1000 })().catch(
      (e: unknown) => e,
    );
    expect(viaWrap).toBeInstanceOf(PermanentError);
    expect((viaWrap as Error).message).toBe("gone");
  });

  it("given an Error, it still rejects with that error, which is its cause", async () => {
    const cause = new RangeError("no such id");
    const permanent = new PermanentError(cause);
    expect(permanent.cause).toBe(cause);
    expect(permanent.message).toBe("no such id");
    await expect(
      retry(() => {
        throw permanent;
      }),
    ).rejects.toBe(cause);
  });

  it("given a message and a cause, it keeps both", () => {
    const cause = new Error("404");
    const permanent = new PermanentError(cause, "not found");
    expect(permanent.message).toBe("not found");
    expect(permanent.cause).toBe(cause);
  });

  it("a number or another primitive is a message too, never what the call rejects with", async () => {
    const error = await retry(() => {
      throw new PermanentError(42);
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PermanentError);
    expect((error as Error).message).toBe("42");
  });
});

describe("wrap and this", () => {
  it("a wrapped method keeps its receiver", async () => {
    const service = {
      name: "users",
      get: wrap(
        async function (this: { name: string }, _context, id: string) {
          return `${this.name}/${id}`;
        },
        { maxRetries: 0 },
      ),
      ping: wrap(
        function (this: { name: string }) {
          return this.name;
        },
        { maxRetries: 0 },
      ),
    };
    await expect(service.get("42")).resolves.toBe("users/42");
    await expect(service.ping()).resolves.toBe("users");
  });

  it("the receiver is kept on every attempt, with call or apply", async () => {
    const clock = new VirtualClock();
    const receivers: unknown[] = [];
    const fn = wrap(
      function (this: unknown, { attempt }) {
        receivers.push(this);
        if (attempt < 3) throw new Error("again");
        return attempt;
      },
      { clock, ...steady },
    );
    const self = { id: 1 };
    expect(await drive(clock, fn.call(self))).toEqual({ ok: true, value: 3 });
    expect(receivers).toEqual([self, self, self]);
  });
});

describe("a backoff's max below its base", () => {
  it("the options' descriptions say that max must be at least base", () => {
    for (const name of ["exponential", "linear", "fibonacci", "polynomial", "random"]) {
      expect(BACKOFF_SCHEMAS[name]?.fields.max?.doc).toMatch(/at least base/);
    }
    expect(JITTER_SCHEMAS.decorrelatedAws?.fields.max?.doc).toMatch(/at least base/);
  });

  it("the error names the rule and the base it compared with, and says when that base is the default", () => {
    const given = thrown(() => backoff.exponential({ base: 500, max: 100 }));
    expect(given).toBeInstanceOf(OptionError);
    expect(given.message).toBe("backoff.exponential: max must be a number >= base, here 500; got 100");
    const defaulted = thrown(() => backoff.linear({ max: 100 }));
    expect(defaulted.message).toBe(
      "backoff.linear: max must be a number >= base, here 1000 (base's default); got 100",
    );
    expect(thrown(() => backoff.random({ base: 500, max: 100 })).message).toMatch(
      /^backoff\.random: max must be a number >= base, here 500; got 100$/,
    );
    expect(thrown(() => jitter.decorrelatedAws({ base: 500, max: 100 })).message).toBe(
      "jitter.decorrelatedAws: max must be a number >= base, here 500; got 100",
    );
  });
});
