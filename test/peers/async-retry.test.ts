// What async-retry's users reach for: bail(error) from inside the operation.
import {
  backoff,
  circuitBreaker,
  jitter,
  PermanentError,
  pipeline,
  retry,
  retryReport,
  steps,
} from "robustly";
import { VirtualClock } from "robustly/testing";
import { describe, expect, it } from "vitest";
import { drive, retried } from "../support/drive.js";

const steady = { backoff: backoff.constant({ base: 1000 }), jitter: jitter.none() };

class Unauthorized extends Error {}

describe("context.bail", () => {
  it("stops retrying and rejects with the error given, whatever the attempt then answers", async () => {
    const denied = new Unauthorized("403");
    let attempts = 0;
    const errors: unknown[] = [];
    const result = await retried(
      async ({ attempt, bail }) => {
        attempts += 1;
        if (attempt === 1) throw new Error("flaky");
        bail(denied);
        return "ignored";
      },
      { ...steady, maxRetries: 5, onError: (error) => errors.push(error) },
    );
    expect(result).toEqual({ ok: false, error: denied });
    expect(attempts).toBe(2);
    expect(retryReport(denied)).toMatchObject({ reason: "permanent", attempts: 2 });
  });

  it("on the first attempt too, sync or async, and when the attempt then throws something else", async () => {
    const denied = new Unauthorized("403");
    for (const operation of [
      ({ bail }: { bail: (e?: unknown) => void }) => {
        bail(denied);
        return 1;
      },
      async ({ bail }: { bail: (e?: unknown) => void }) => {
        bail(denied);
        throw new Error("then this");
      },
    ]) {
      let attempts = 0;
      const result = await retried(
        (context) => {
          attempts += 1;
          return operation(context);
        },
        { ...steady },
      );
      expect(result).toEqual({ ok: false, error: denied });
      expect(attempts).toBe(1);
    }
  });

  it("with a message, or nothing, rejects with a PermanentError (never a bare string)", async () => {
    const said = await retry(({ bail }) => bail("no token")).catch((e: unknown) => e);
    expect(said).toBeInstanceOf(PermanentError);
    expect((said as Error).message).toBe("no token");
    const bare = await retry(({ bail }) => bail()).catch((e: unknown) => e);
    expect(bare).toBeInstanceOf(PermanentError);
  });

  it("works from inside a timeout, a hedge and a breaker, and with the caller's signal (the loop)", async () => {
    const clock = new VirtualClock();
    const denied = new Unauthorized("403");
    let attempts = 0;
    const result = await retried(
      ({ attempt, bail }) => {
        attempts += 1;
        if (attempt < 3) throw new Error("flaky");
        bail(denied);
        return "ignored";
      },
      {
        clock,
        ...steady,
        timeout: 5000,
        hedge: steps.hedge({ delay: 10_000, hedgeOnFailure: false }),
        breaker: circuitBreaker({ clock }),
        signal: new AbortController().signal,
      },
    );
    expect(result).toEqual({ ok: false, error: denied });
    expect(attempts).toBe(3);
  });

  it("stops the nearest retry step only: an outer one decides on the error as on any other", async () => {
    const clock = new VirtualClock();
    const denied = new Unauthorized("403");
    let attempts = 0;
    const p = pipeline(steps.retry({ ...steady, maxRetries: 1 }), steps.retry({ ...steady, maxRetries: 5 }));
    const result = await drive(
      clock,
      p.execute(
        ({ bail }) => {
          attempts += 1;
          bail(denied);
        },
        { clock },
      ),
    );
    expect(result).toEqual({ ok: false, error: denied });
    // The inner step stops at once each time; the outer one retries once.
    expect(attempts).toBe(2);
  });

  it("outside any retry step it changes nothing", async () => {
    const value = await pipeline(steps.timeout(1000)).execute(({ bail }) => {
      bail(new Error("unheard"));
      return 7;
    });
    expect(value).toBe(7);
  });
});
