// robustFetch against a server that never answers: its defaults bound each attempt and the whole call.
import { FETCH_DEFAULTS, TimeoutError, withRetry } from "robustly";
import { seededRandom } from "robustly/testing";
import { describe, expect, it } from "vitest";
import { drive, VirtualClock } from "../support/drive.js";

/** A fetch that never answers, until its signal aborts; it counts its calls. */
function silentServer() {
  const calls: number[] = [];
  let open = 0;
  const fetchImpl = (_input: RequestInfo | URL, init?: RequestInit) =>
    new Promise<Response>((_resolve, reject) => {
      calls.push(open);
      open += 1;
      init?.signal?.addEventListener("abort", () => {
        open -= 1;
        reject(init.signal?.reason);
      });
    });
  return { fetchImpl, calls, open: () => open };
}

describe("robustFetch's defaults against a server that never answers", () => {
  it("documents them: 30 s per attempt, 2 min for the whole call", () => {
    expect(FETCH_DEFAULTS.timeout).toBe(30_000);
    expect(FETCH_DEFAULTS.totalTimeout).toBe(120_000);
  });

  it("each attempt times out at 30 s and is retried; the call rejects with a TimeoutError after 2 min, leaving nothing behind", async () => {
    const clock = new VirtualClock();
    const server = silentServer();
    const api = withRetry(server.fetchImpl, { clock, random: seededRandom(1), maxRetries: -1 });
    const result = await drive(clock, api("http://example.test/"));
    expect(result.ok).toBe(false);
    const error = (result as { error: unknown }).error as TimeoutError;
    expect(error).toBeInstanceOf(TimeoutError);
    expect(error.timeout).toBe(120_000);
    expect(clock.now()).toBe(120_000);
    // 30 s attempts with up to a few seconds of backoff between them: four of them in 2 min.
    expect(server.calls.length).toBe(4);
    expect(server.open()).toBe(0);
    expect(clock.pending).toBe(0);
  });

  it("both are options: a shorter total, or none at all with a per-attempt limit", async () => {
    const clock = new VirtualClock();
    const server = silentServer();
    const api = withRetry(server.fetchImpl, { clock, random: seededRandom(1) });
    const short = await drive(clock, api("http://example.test/", undefined, { totalTimeout: 5000 }));
    expect((short as { error: TimeoutError }).error.timeout).toBe(5000);
    const started = clock.now();
    const unbounded = await drive(
      clock,
      api("http://example.test/", undefined, { totalTimeout: -1, timeout: 1000, maxRetries: 2 }),
    );
    expect((unbounded as { error: TimeoutError }).error.timeout).toBe(1000);
    expect(clock.now() - started).toBeLessThan(10_000);
    expect(server.open()).toBe(0);
  });
});

describe("a response whose body stalls", () => {
  /** A response with one chunk, then nothing for ever (until cancelled). */
  function stallingFetch() {
    let cancelled: unknown;
    const fetchImpl = async () =>
      new Response(
        new ReadableStream<Uint8Array>({
          start(controller) {
            controller.enqueue(new TextEncoder().encode("first part "));
          },
          cancel(reason) {
            cancelled = reason;
          },
        }),
        { status: 200, headers: { "content-type": "text/plain" } },
      );
    return { fetchImpl, cancelled: () => cancelled };
  }

  it("reading it errors with a TimeoutError after 30 s without a chunk, and the stalled stream is cancelled", async () => {
    const clock = new VirtualClock();
    const server = stallingFetch();
    const api = withRetry(server.fetchImpl, { clock });
    const response = (await drive(clock, api("http://example.test/"))) as { ok: true; value: Response };
    expect(response.value.status).toBe(200);
    expect(response.value.headers.get("content-type")).toBe("text/plain");
    const read = await drive(clock, response.value.text());
    expect(read.ok).toBe(false);
    const error = (read as { error: TimeoutError }).error;
    expect(error).toBeInstanceOf(TimeoutError);
    expect(error.timeout).toBe(30_000);
    expect(clock.now()).toBe(30_000);
    expect(server.cancelled()).toBe(error);
    expect(clock.pending).toBe(0);
  });

  it("a body that keeps coming is read whole, and bodyTimeout: -1 waits for ever", async () => {
    const clock = new VirtualClock();
    const chunks = ["a", "b", "c"];
    const slow = async () =>
      new Response(
        new ReadableStream<Uint8Array>({
          async pull(controller) {
            await new Promise<void>((resolve) => clock.setTimer(20_000, resolve));
            const next = chunks.shift();
            if (next === undefined) controller.close();
            else controller.enqueue(new TextEncoder().encode(next));
          },
        }),
      );
    const api = withRetry(slow, { clock });
    const response = (await drive(clock, api("http://example.test/"))) as { ok: true; value: Response };
    expect(await drive(clock, response.value.text())).toEqual({ ok: true, value: "abc" });
    const none = withRetry(stallingFetch().fetchImpl, { clock, bodyTimeout: -1 });
    const unwatched = (await drive(clock, none("http://example.test/"))) as { ok: true; value: Response };
    const reader = unwatched.value.body?.getReader();
    await reader?.read();
    await clock.advance(10 * 60_000);
    expect(clock.pending).toBe(0);
    await reader?.cancel();
  });
});
