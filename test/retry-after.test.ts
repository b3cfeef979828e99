import { backoff, jitter, retry, retryAfter } from "robustly";
import { VirtualClock } from "robustly/testing";
import { describe, expect, it } from "vitest";
import { drive } from "./support/drive.js";

describe("retryAfter", () => {
  const now = Date.parse("Sun, 22 Nov 2026 12:00:00 GMT");

  it("reads seconds and HTTP dates, from a value, a Headers, a Response or a header map", () => {
    expect(retryAfter("120")).toBe(60_000); // capped at the default 1 min
    expect(retryAfter("120", { max: 300_000 })).toBe(120_000);
    expect(retryAfter("0")).toBe(0);
    expect(retryAfter("Sun, 22 Nov 2026 12:00:30 GMT", { now })).toBe(30_000);
    expect(retryAfter("Sun, 22 Nov 2026 11:00:00 GMT", { now })).toBe(0); // in the past
    expect(retryAfter(new Headers({ "Retry-After": "7" }))).toBe(7000);
    expect(retryAfter(new Response("", { status: 503, headers: { "retry-after": "3" } }))).toBe(3000);
    expect(retryAfter({ "Retry-After": "2" })).toBe(2000);
    expect(retryAfter({ "retry-after": ["4"] })).toBe(4000);
  });

  it("ignores garbage, so the computed backoff is used", () => {
    for (const bad of ["", "soon", "-5", "1.5", "1e3", "0x10", "Someday, 99 Foo 20XX", undefined, null]) {
      expect(retryAfter(bad), String(bad)).toBeUndefined();
    }
    expect(retryAfter(new Headers())).toBeUndefined();
  });
});

describe("delayFrom: the server's hint replaces the computed delay", () => {
  it("waits what Retry-After says, capped, with the backoff on top, and the backoff alone when there is no hint", async () => {
    const clock = new VirtualClock();
    const responses = [
      new Response("", { status: 503, headers: { "retry-after": "5" } }),
      new Response("", { status: 503 }),
      new Response("", { status: 429, headers: { "retry-after": "86400" } }),
      new Response("ok", { status: 200 }),
    ];
    const slept: number[] = [];
    let i = 0;
    const result = await drive(
      clock,
      retry(() => responses[i++] as Response, {
        clock,
        retryOnResult: (r) => !r.ok,
        backoff: backoff.constant({ base: 1000 }),
        jitter: jitter.none(),
        maxRetries: 5,
        delayFrom: (r) => retryAfter(r as Response, { max: 30_000 }),
        onRetry: ({ delay }) => slept.push(delay),
      }),
    );
    expect(result.ok).toBe(true);
    expect(slept).toEqual([5000 + 1000, 1000, 30_000 + 1000]);
  });

  it("a hint that would end past maxElapsed ends the call instead", async () => {
    const clock = new VirtualClock();
    let attempts = 0;
    const result = await drive(
      clock,
      retry(
        () => {
          attempts += 1;
          throw Object.assign(new Error("busy"), { retryAfterMs: 10_000 });
        },
        { clock, maxElapsed: 5000, delayFrom: (e) => (e as { retryAfterMs: number }).retryAfterMs },
      ),
    );
    expect(result.ok).toBe(false);
    expect(attempts).toBe(1);
  });
});
