// Type tests: what expectTypeOf and @ts-expect-error assert holds only if this file type-checks, so the last
// test runs tsc on it (vitest's own typecheck mode would print an "experimental" warning on every run).
import { fileURLToPath } from "node:url";
import { type Attributes, type Meter, metrics, type trace } from "@opentelemetry/api";
import {
  type AttemptContext,
  type Backoff,
  type BackoffFunction,
  backoff,
  type Jitter,
  type JitterFunction,
  jitter,
  type RetryEvent,
  type RetryOptions,
  retry,
  steps,
  wrap,
} from "robustly";
import {
  type AttributesLike,
  type MeterLike,
  openTelemetry,
  type TelemetryOptions,
} from "robustly/telemetry";
import { type Random, VirtualClock } from "robustly/testing";
import { describe, expect, expectTypeOf, it } from "vitest";
import { typeCheckFiles } from "./support/blocks.js";

describe("public types", () => {
  it("retry infers the operation's value, sync or async", () => {
    expectTypeOf(retry(async () => 42)).toEqualTypeOf<Promise<number>>();
    expectTypeOf(retry(() => "sync")).toEqualTypeOf<Promise<string>>();
    expectTypeOf<Parameters<typeof retry>[0]>().parameter(0).toEqualTypeOf<AttemptContext>();
  });

  it("wrap keeps the argument types after the context", () => {
    const wrapped = wrap(async (_ctx, id: string, limit: number) => ({ id, limit }));
    expectTypeOf(wrapped).toEqualTypeOf<
      (id: string, limit: number) => Promise<{ id: string; limit: number }>
    >();
    // @ts-expect-error: the second argument must be a number
    void (() => wrapped("a", "b"));
  });

  it("callbacks and retryOnResult see the operation's value type", () => {
    const options: RetryOptions<number> = { retryOnResult: (v) => v > 3, onSuccess: (v) => void v.toFixed() };
    expectTypeOf(options.onRetry).toEqualTypeOf<((event: RetryEvent) => void) | undefined>();
    // @ts-expect-error: unknown options do not compile either
    const bad: RetryOptions = { maxRetrys: 3 };
    void bad;
  });

  it("retryOnResult and the callbacks infer the operation's value without an annotation", () => {
    void retry(async () => 42, {
      retryOnResult: (n) => {
        expectTypeOf(n).toEqualTypeOf<number>();
        return n > 40;
      },
      onSuccess: (n) => expectTypeOf(n).toEqualTypeOf<number>(),
    });
    void retry(() => "sync", { maxRetries: 2, retryOnResult: async (s) => s.length === 0 });
    const wrapped = wrap(async (_ctx, id: string) => ({ id }), {
      retryOnResult: (user) => {
        expectTypeOf(user).toEqualTypeOf<{ id: string }>();
        return user.id === "";
      },
    });
    void wrapped;
    // @ts-expect-error: a check written for another type is refused, not taken as the operation's type
    void retry(async () => 42, { retryOnResult: (s: string) => s === "" });
  });

  it("telemetry's instrument keeps the operation's value type", () => {
    const telemetry = openTelemetry({ meter: metrics.getMeter("types") });
    void retry(
      async () => 42,
      telemetry.instrument({
        retryOnResult: (n) => {
          expectTypeOf(n).toEqualTypeOf<number>();
          return n > 40;
        },
      }),
    );
  });

  it("telemetry takes OpenTelemetry's own Meter and trace, though its types do not import them", () => {
    expectTypeOf<Meter>().toExtend<MeterLike>();
    expectTypeOf<typeof trace>().toExtend<NonNullable<TelemetryOptions["trace"]>>();
    const labels: AttributesLike = {} as Attributes;
    void labels;
  });

  it("strategies and custom strategies share one shape", () => {
    expectTypeOf(backoff.exponential()).toEqualTypeOf<Backoff>();
    expectTypeOf(jitter.full()).toEqualTypeOf<Jitter>();
    const custom: BackoffFunction = (x: number, _random: Random) => x * 10;
    const customJitter: JitterFunction = (d: number) => d / 2;
    expectTypeOf<RetryOptions["backoff"]>().toEqualTypeOf<Backoff | BackoffFunction | undefined>();
    void [custom, customJitter];
  });

  it("retry and wrap take a chaos step that injects a value of the operation's type, and a hedge step", () => {
    const injected = retry<number>(async () => 1, { chaos: steps.chaos({ result: { rate: 1, value: 42 } }) });
    expectTypeOf(injected).toEqualTypeOf<Promise<number>>();
    expectTypeOf(
      retry(async () => 1, {
        hedge: steps.hedge({ delay: 100 }),
        chaos: steps.chaos({ result: { rate: 0.5, value: 7 } }),
      }),
    ).toEqualTypeOf<Promise<number>>();
    const words = steps.chaos({ result: { rate: 1, value: "chaos" }, onInject: (e) => void e });
    const options: RetryOptions<string> = { chaos: words, hedge: steps.hedge({ delay: 1 }) };
    const wrapped = wrap(async (_context, id: string) => id, options);
    expectTypeOf(wrapped).toEqualTypeOf<(id: string) => Promise<string>>();
    // @ts-expect-error: a hedge option is a hedge step, not plain options
    void (() => retry(async () => 1, { hedge: { delay: 100 } }));
  });

  it("VirtualClock is a Clock", () => {
    expectTypeOf(new VirtualClock()).toMatchTypeOf<NonNullable<RetryOptions["clock"]>>();
  });

  it("this file type-checks, so every assertion above holds", () => {
    expect(typeCheckFiles([fileURLToPath(import.meta.url)])).toEqual({ output: "", status: 0 });
  }, 120_000);
});
