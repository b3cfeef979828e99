// Server pushback and a fleet: "Retry-After: 0" (or a date already past) told to 50 clients at once must
// not bring all 50 back in the same instant.
import { retry, retryAfter } from "robustly";
import { seededRandom } from "robustly/testing";
import { describe, expect, it } from "vitest";
import { drive, VirtualClock } from "../support/drive.js";

async function fleet(header: string): Promise<number[]> {
  const clock = new VirtualClock();
  const random = seededRandom(11);
  const retriedAt: number[] = [];
  const clients = Array.from({ length: 50 }, () => {
    let attempts = 0;
    return retry(
      () => {
        attempts += 1;
        if (attempts > 1) retriedAt.push(clock.now());
        return new Response("", attempts === 1 ? { status: 503, headers: { "retry-after": header } } : {});
      },
      {
        clock,
        random,
        retryOnResult: (r) => r.status === 503,
        delayFrom: (r) => retryAfter(r as Response),
      },
    );
  });
  await drive(clock, Promise.all(clients));
  return retriedAt;
}

describe("Retry-After and a fleet", () => {
  it.each([
    ["0", "Retry-After: 0"],
    ["Thu, 01 Jan 1970 00:00:00 GMT", "a date already past"],
  ])(
    "%s: 50 clients told at once come back spread over the policy's jitter, not in one instant (%s)",
    async (header) => {
      const at = (await fleet(header)).sort((a, b) => a - b);
      expect(at).toHaveLength(50);
      // The default policy: full jitter over 1 s. Spread over most of that second, never two at once.
      expect(new Set(at).size).toBe(50);
      expect((at[49] as number) - (at[0] as number)).toBeGreaterThan(500);
    },
  );

  it("a hint in the future is the least wait: nobody comes back before it", async () => {
    const at = await fleet("3");
    expect(Math.min(...at)).toBeGreaterThanOrEqual(3000);
    expect(Math.max(...at) - Math.min(...at)).toBeGreaterThan(500);
  });
});
