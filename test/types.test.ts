// Type tests: `npm run typecheck` checks these; a wrong public type fails the build.
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
  wrap,
} from "robustly";
import { type Random, VirtualClock } from "robustly/testing";
import { describe, expectTypeOf, it } from "vitest";

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

  it("strategies and custom strategies share one shape", () => {
    expectTypeOf(backoff.exponential()).toEqualTypeOf<Backoff>();
    expectTypeOf(jitter.full()).toEqualTypeOf<Jitter>();
    const custom: BackoffFunction = (x: number, _random: Random) => x * 10;
    const customJitter: JitterFunction = (d: number) => d / 2;
    expectTypeOf<RetryOptions["backoff"]>().toEqualTypeOf<Backoff | BackoffFunction | undefined>();
    void [custom, customJitter];
  });

  it("VirtualClock is a Clock", () => {
    expectTypeOf(new VirtualClock()).toMatchTypeOf<NonNullable<RetryOptions["clock"]>>();
  });
});
