import { backoff, jitter, retry, TimeoutError } from "robustly";
import { describe, expect, it } from "vitest";
import { drive, VirtualClock } from "./support/drive.js";

class RateLimited extends Error {}
class Broken extends Error {}

/** Fails with the errors in order, then succeeds; records when each attempt began. */
function scripted(errors: unknown[]) {
  const starts: number[] = [];
  const op = async (ctx: { attempt: number; elapsed: number }) => {
    starts.push(ctx.elapsed);
    const error = errors[ctx.attempt - 1];
    if (error !== undefined) throw error;
    return "done";
  };
  return { op, starts };
}

describe("rules: policies per error type", () => {
  it("seed 000's example: 10 retries for a timeout, none for other errors", async () => {
    const clock = new VirtualClock();
    const options = {
      clock,
      maxRetries: 0,
      backoff: backoff.none(),
      rules: [{ when: TimeoutError, maxRetries: 10 }],
    };
    const timeouts = scripted(Array.from({ length: 12 }, () => new TimeoutError(5)));
    expect((await drive(clock, retry(timeouts.op, options))).ok).toBe(false);
    expect(timeouts.starts).toHaveLength(11);

    const other = scripted([new Broken("x")]);
    expect((await drive(clock, retry(other.op, options))).ok).toBe(false);
    expect(other.starts).toHaveLength(1);
  });

  it("the first matching rule wins", async () => {
    const clock = new VirtualClock();
    const seen: number[] = [];
    const options = {
      clock,
      onRetry: (e: { rule: number }) => seen.push(e.rule),
      backoff: backoff.none(),
      rules: [
        { when: RateLimited, maxRetries: 1 },
        { when: Error, maxRetries: 5 },
      ],
    };
    const { op } = scripted([new RateLimited("a"), new Broken("b"), new RateLimited("c")]);
    const result = await drive(clock, retry(op, options));
    // The second RateLimited exceeds its rule's single retry, although the Error rule would allow more.
    expect(result.ok).toBe(false);
    expect(seen).toEqual([0, 1]);
  });

  it("each rule counts its own retries and feeds its own count to its backoff", async () => {
    const clock = new VirtualClock();
    const delays: [number, number][] = [];
    const options = {
      clock,
      jitter: jitter.none(),
      onRetry: (e: { rule: number; delay: number }) => delays.push([e.rule, e.delay]),
      rules: [
        { when: RateLimited, maxRetries: 3, backoff: backoff.exponential({ base: 100 }) },
        { when: Broken, maxRetries: 2, backoff: backoff.linear({ base: 10, interval: 10 }) },
      ],
    };
    const { op } = scripted([
      new RateLimited("1"),
      new Broken("1"),
      new RateLimited("2"),
      new Broken("2"),
      new RateLimited("3"),
    ]);
    expect(await drive(clock, retry(op, options))).toEqual({ ok: true, value: "done" });
    expect(delays).toEqual([
      [0, 100],
      [1, 10],
      [0, 200],
      [1, 20],
      [0, 400],
    ]);
  });

  it("errors no rule matches fall to the top-level policy, which counts only its own retries", async () => {
    const clock = new VirtualClock();
    const rules: number[] = [];
    const options = {
      clock,
      maxRetries: 1,
      backoff: backoff.none(),
      onRetry: (e: { rule: number }) => rules.push(e.rule),
      rules: [{ when: RateLimited, maxRetries: 5 }],
    };
    const { op, starts } = scripted([
      new RateLimited("a"),
      new RateLimited("b"),
      new Broken("c"),
      new Broken("d"),
    ]);
    const result = await drive(clock, retry(op, options));
    expect(result.ok).toBe(false);
    expect(rules).toEqual([0, 0, -1]);
    expect(starts).toHaveLength(4);
  });

  it("retryOn limits only the top-level policy; a rule's `when` decides for its own errors", async () => {
    const clock = new VirtualClock();
    const options = {
      clock,
      backoff: backoff.none(),
      retryOn: RateLimited,
      rules: [{ when: Broken, maxRetries: 1 }],
    };
    const broken = scripted([new Broken("a")]);
    expect(await drive(clock, retry(broken.op, options))).toEqual({ ok: true, value: "done" });
    const other = scripted([new TypeError("t")]);
    expect((await drive(clock, retry(other.op, options))).ok).toBe(false);
    expect(other.starts).toHaveLength(1);
  });

  it("a rule inherits what it leaves out from the top level, and may set its own maxElapsed and scale", async () => {
    const clock = new VirtualClock();
    const options = {
      clock,
      maxRetries: -1,
      backoff: backoff.constant({ base: 100 }),
      jitter: jitter.none(),
      rules: [{ when: RateLimited, maxElapsed: 1000, scale: 2 }],
    };
    const { op, starts } = scripted(Array.from({ length: 20 }, () => new RateLimited("x")));
    expect((await drive(clock, retry(op, options))).ok).toBe(false);
    // Sleeps of 200 ms (constant 100 scaled by 2) until the next would end past 1000 ms.
    expect(starts).toEqual([0, 200, 400, 600, 800, 1000]);
  });
});
