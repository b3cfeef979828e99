import type { Attributes, Meter } from "@opentelemetry/api";
import {
  backoff,
  circuitBreaker,
  jitter,
  memoryStore,
  ResponsiveBackoff,
  retry,
  retryBudget,
  TimeoutError,
} from "robustly";
import { openTelemetry } from "robustly/telemetry";
import { VirtualClock } from "robustly/testing";
import { describe, expect, it } from "vitest";
import { drive } from "./support/drive.js";
import { faultyStore } from "./support/faulty-store.js";

/** A Meter that records every measurement, standing in for an OpenTelemetry SDK. */
function recordingMeter() {
  const recorded: { name: string; value: number; attributes: Attributes | undefined }[] = [];
  const instrument = (name: string) => ({
    add: (value: number, attributes?: Attributes) => recorded.push({ name, value, attributes }),
    record: (value: number, attributes?: Attributes) => recorded.push({ name, value, attributes }),
  });
  const meter = { createCounter: instrument, createHistogram: instrument } as unknown as Meter;
  const sum = (name: string, where: (a: Attributes | undefined) => boolean = () => true) =>
    recorded.filter((r) => r.name === name && where(r.attributes)).reduce((total, r) => total + r.value, 0);
  return { meter, recorded, sum };
}

describe("openTelemetry", () => {
  it("records attempts by outcome, retries and their delays, and keeps the caller's callbacks", async () => {
    const { meter, recorded, sum } = recordingMeter();
    const telemetry = openTelemetry({ meter, attributes: { "robustly.policy": "test" } });
    const clock = new VirtualClock();
    let n = 0;
    const seen: string[] = [];
    const result = await drive(
      clock,
      retry(
        () => {
          n += 1;
          if (n === 1) return new Promise(() => {}); // times out
          if (n === 2) throw new Error("down");
          return "ok";
        },
        telemetry.instrument({
          clock,
          timeout: 100,
          backoff: backoff.constant({ base: 250 }),
          jitter: jitter.none(),
          onError: (e) => seen.push(e instanceof TimeoutError ? "timeout" : "error"),
          onSuccess: () => seen.push("success"),
        }),
      ),
    );
    expect(result).toEqual({ ok: true, value: "ok" });
    expect(seen).toEqual(["timeout", "error", "success"]);
    const outcome = (o: string) => (a: Attributes | undefined) => a?.["robustly.outcome"] === o;
    expect(sum("robustly.attempts", outcome("timeout"))).toBe(1);
    expect(sum("robustly.attempts", outcome("failure"))).toBe(1);
    expect(sum("robustly.attempts", outcome("success"))).toBe(1);
    expect(sum("robustly.retries")).toBe(2);
    expect(recorded.filter((r) => r.name === "robustly.retry.delay").map((r) => r.value)).toEqual([250, 250]);
    expect(recorded.every((r) => r.attributes?.["robustly.policy"] === "test")).toBe(true);
  });

  it("records a breaker's state changes and rejections, and a budget's refusals, until disposed", async () => {
    const { meter, sum } = recordingMeter();
    const telemetry = openTelemetry({ meter });
    const clock = new VirtualClock();
    const breaker = circuitBreaker({ consecutiveFailures: 1, clock });
    const budget = retryBudget({ maxTokens: 2, tokenRatio: 1 });
    const watching = [telemetry.observe(breaker, "db"), telemetry.observe(budget)];
    await breaker.execute(() => Promise.reject(new Error("x"))).catch(() => undefined);
    await breaker.execute(() => "refused").catch(() => undefined);
    budget.failure();
    budget.tryRetry();
    expect(
      sum(
        "robustly.breaker.transitions",
        (a) => a?.["robustly.to"] === "open" && a?.["robustly.name"] === "db",
      ),
    ).toBe(1);
    expect(sum("robustly.breaker.rejections")).toBe(1);
    expect(sum("robustly.budget.refusals")).toBe(1);
    for (const w of watching) w.dispose();
    await breaker.execute(() => "refused").catch(() => undefined);
    expect(sum("robustly.breaker.rejections")).toBe(1);
  });

  it("records a responsive backoff's delay each time it changes", () => {
    const { meter, recorded } = recordingMeter();
    const telemetry = openTelemetry({ meter });
    const pace = new ResponsiveBackoff({
      base: 100,
      spread: 0,
      downThreshold: 1,
      downMultiplier: 0.5,
    });
    const watching = telemetry.observe(pace, "writes");
    pace.failure();
    pace.failure();
    pace.success();
    watching.dispose();
    pace.failure();
    expect(recorded.map((r) => [r.name, r.value, r.attributes?.["robustly.direction"]])).toEqual([
      ["robustly.responsive.delay", 100, "up"],
      ["robustly.responsive.delay", 150, "up"],
      ["robustly.responsive.delay", 0, "down"],
    ]);
  });

  it("needs a meter", () => {
    expect(() => openTelemetry({ meter: {} as Meter })).toThrow(
      "openTelemetry: meter must be an OpenTelemetry Meter",
    );
  });

  it("records when a shared policy's store goes down and comes back", async () => {
    const { meter, sum } = recordingMeter();
    const telemetry = openTelemetry({ meter });
    const clock = new VirtualClock();
    const store = faultyStore(memoryStore({ clock }));
    const budget = retryBudget({ store, key: "k", clock, storeTimeout: 20 });
    const pace = new ResponsiveBackoff({ store, key: "k", clock, storeTimeout: 20 });
    const watching = [telemetry.observe(budget, "api"), telemetry.observe(pace, "api")];
    await Promise.all([budget.ready(), pace.ready()]);
    store.fault = "hang";
    await clock.advance(200);
    store.fault = "none";
    await clock.advance(2000);
    const by = (state: string) => (a: Attributes | undefined) => a?.["robustly.store"] === state;
    expect(sum("robustly.store.transitions", by("down"))).toBe(2);
    expect(sum("robustly.store.transitions", by("up"))).toBe(2);
    for (const w of watching) w.dispose();
    await Promise.all([budget.close(), pace.close()]);
  });

  it("records a store key found holding something robustly did not write", async () => {
    const { meter, sum } = recordingMeter();
    const telemetry = openTelemetry({ meter });
    const clock = new VirtualClock();
    const store = memoryStore({ clock });
    const breaker = circuitBreaker({ store, key: "k", clock });
    const watching = telemetry.observe(breaker, "api");
    await breaker.ready();
    const found = await store.read("breaker:k");
    await store.write("breaker:k", found.version, "v=abc", 60_000);
    await clock.advance(500);
    const corrupt = (a: Attributes | undefined) => a?.["robustly.store"] === "corrupt";
    expect(sum("robustly.store.transitions", corrupt)).toBeGreaterThanOrEqual(1);
    watching.dispose();
    await breaker.close();
  });
});

describe("span events", () => {
  /** A span that keeps the events added to it, and a trace whose active span it is. */
  function recordingTrace() {
    const events: [string, Record<string, unknown> | undefined][] = [];
    const span = {
      addEvent: (name: string, attributes?: Record<string, unknown>) => events.push([name, attributes]),
    };
    return { events, trace: { getActiveSpan: () => span as never } };
  }

  it("adds each attempt, each retry with its delay and a give-up with its reason to the active span", async () => {
    const { meter } = recordingMeter();
    const { events, trace } = recordingTrace();
    const telemetry = openTelemetry({ meter, trace });
    const clock = new VirtualClock();
    let calls = 0;
    const ok = await drive(
      clock,
      retry(
        () => {
          calls += 1;
          if (calls < 3) throw new Error("down");
          return "up";
        },
        telemetry.instrument({ clock, backoff: backoff.constant({ base: 100 }), jitter: jitter.none() }),
      ),
    );
    expect(ok).toEqual({ ok: true, value: "up" });
    expect(events.map(([name, a]) => [name, a?.["robustly.outcome"] ?? a?.["robustly.delay"]])).toEqual([
      ["robustly.attempt", "failure"],
      ["robustly.retry", 100],
      ["robustly.attempt", "failure"],
      ["robustly.retry", 100],
      ["robustly.attempt", "success"],
    ]);
    events.length = 0;
    await drive(
      clock,
      retry(
        () => {
          throw new Error("down");
        },
        telemetry.instrument({ clock, maxRetries: 0 }),
      ),
    );
    expect(events.map(([name, a]) => [name, a?.["robustly.reason"] ?? a?.["robustly.outcome"]])).toEqual([
      ["robustly.attempt", "failure"],
      ["robustly.give_up", "retries"],
    ]);
  });

  it("numbers each attempt's span event as onAttempt numbers the attempt, and keeps onAttempt", async () => {
    const { meter } = recordingMeter();
    const { events, trace } = recordingTrace();
    const telemetry = openTelemetry({ meter, trace });
    const clock = new VirtualClock();
    const begun: number[] = [];
    let calls = 0;
    await drive(
      clock,
      retry(
        () => {
          calls += 1;
          if (calls < 3) throw new Error("down");
          return "up";
        },
        telemetry.instrument({
          clock,
          backoff: backoff.constant({ base: 100 }),
          jitter: jitter.none(),
          onAttempt: ({ attempt }) => begun.push(attempt),
        }),
      ),
    );
    const ended = events
      .filter(([name]) => name === "robustly.attempt")
      .map(([, a]) => a?.["robustly.attempt"]);
    expect(begun).toEqual([1, 2, 3]);
    expect(ended).toEqual(begun);
  });

  it("adds a breaker's transitions to the active span while observed", async () => {
    const { meter } = recordingMeter();
    const { events, trace } = recordingTrace();
    const telemetry = openTelemetry({ meter, trace });
    const clock = new VirtualClock();
    const breaker = circuitBreaker({ consecutiveFailures: 1, clock });
    const watching = telemetry.observe(breaker, "api");
    breaker.acquire();
    breaker.failure();
    watching.dispose();
    expect(events).toEqual([
      [
        "robustly.breaker.transition",
        { "robustly.name": "api", "robustly.from": "closed", "robustly.to": "open" },
      ],
    ]);
  });

  it("needs OpenTelemetry's trace, when given", () => {
    const { meter } = recordingMeter();
    expect(() => openTelemetry({ meter, trace: {} as never })).toThrow("openTelemetry: trace must be");
  });
});
