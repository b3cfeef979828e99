// robustFetch against a real HTTP server on loopback that fails on command. Real timers, short backoffs
// (10 ms) and short timeouts: the whole file runs in about a second.
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { backoff, circuitBreaker, jitter, OptionError, type RetryEvent, TimeoutError } from "robustly";
import { afterEach, beforeEach, describe, expect, expectTypeOf, it } from "vitest";
import {
  FETCH_DEFAULTS,
  type FetchLike,
  isNetworkError,
  type RobustFetch,
  robustFetch,
  withRetry,
} from "../src/http/robust-fetch.js";
import { abortListeners, within } from "./support/drive.js";

/** What the server does with the next request; an empty script answers 200 "ok". */
type Step =
  | { readonly status: number; readonly headers?: Record<string, string>; readonly body?: string }
  /** Never answers. */
  | { readonly hang: true }
  /** Destroys the connection without an answer. */
  | { readonly reset: true }
  /** Sends the status and a body that never ends. */
  | { readonly stream: number };

interface Seen {
  readonly method: string;
  readonly url: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
  /** Which connection carried it, numbered from 0. */
  readonly connection: number;
}

let server: Server;
let base: string;
let script: Step[];
let seen: Seen[];
/** Resolves when connection i closes. */
let closed: Promise<void>[];

beforeEach(async () => {
  script = [];
  seen = [];
  closed = [];
  const ids = new WeakMap<Socket, number>();
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      seen.push({
        method: req.method ?? "",
        url: req.url ?? "",
        headers: req.headers,
        body: Buffer.concat(chunks).toString(),
        connection: ids.get(req.socket) ?? -1,
      });
      const step = script.shift() ?? { status: 200, body: "ok" };
      if ("hang" in step) return;
      if ("reset" in step) {
        req.socket.destroy();
        return;
      }
      if ("stream" in step) {
        res.writeHead(step.stream, { "content-type": "text/plain" });
        const more = setInterval(() => res.write("x".repeat(16_384)), 5);
        res.on("close", () => clearInterval(more));
        return;
      }
      res.writeHead(step.status, step.headers).end(step.body ?? `status ${step.status}`);
    });
  });
  server.on("connection", (socket: Socket) => {
    ids.set(socket, closed.length);
    closed.push(new Promise((resolve) => socket.on("close", () => resolve())));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterEach(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

/** Short waits, so that the tests run fast on real timers. */
const fast = { backoff: backoff.constant({ base: 10 }), jitter: jitter.none() };

function recorder(): { events: RetryEvent[]; onRetry: (event: RetryEvent) => void } {
  const events: RetryEvent[] = [];
  return { events, onRetry: (event) => events.push(event) };
}

describe("robustFetch: what it retries", () => {
  it("retries a 503 and resolves with the success", async () => {
    script = [{ status: 503 }, { status: 503 }];
    const { events, onRetry } = recorder();
    const response = await robustFetch(`${base}/items`, undefined, { ...fast, onRetry });
    expect(response.status).toBe(200);
    expect(await response.text()).toBe("ok");
    expect(seen.map((s) => s.url)).toEqual(["/items", "/items", "/items"]);
    expect(events.map((e) => e.delay)).toEqual([10, 10]);
  });

  it("retries each status of retryOnStatus (default 408, 425, 429, 500, 502, 503, 504), and no other", async () => {
    expect(FETCH_DEFAULTS.retryOnStatus).toEqual([408, 425, 429, 500, 502, 503, 504]);
    script = [408, 425, 429, 500, 502, 503, 504].map((status) => ({ status }));
    const response = await robustFetch(base, undefined, { ...fast, maxRetries: 10 });
    expect(response.status).toBe(200);
    expect(seen).toHaveLength(8);

    seen = [];
    script = [{ status: 418 }];
    const custom = await robustFetch(base, undefined, { ...fast, retryOnStatus: [418] });
    expect(custom.status).toBe(200);
    expect(seen).toHaveLength(2);

    seen = [];
    script = [{ status: 503 }];
    const none = await robustFetch(base, undefined, { ...fast, retryOnStatus: [] });
    expect(none.status).toBe(503);
    expect(seen).toHaveLength(1);
  });

  it("does not retry a 404: resolves with it, unread", async () => {
    script = [{ status: 404, body: "no such item" }];
    const response = await robustFetch(`${base}/missing`, undefined, fast);
    expect(response.status).toBe(404);
    expect(await response.text()).toBe("no such item");
    expect(seen).toHaveLength(1);
  });

  it("retries a network error (the connection reset without an answer)", async () => {
    script = [{ reset: true }, { reset: true }];
    const { events, onRetry } = recorder();
    const response = await robustFetch(base, undefined, { ...fast, onRetry });
    expect(await response.text()).toBe("ok");
    expect(seen).toHaveLength(3);
    expect(events.map((e) => isNetworkError(e.error))).toEqual([true, true]);
  });

  it("rejects with fetch's TypeError when network errors outlast the retries", async () => {
    script = [{ reset: true }, { reset: true }, { reset: true }];
    const failing = robustFetch(base, undefined, { ...fast, maxRetries: 2 });
    await expect(failing).rejects.toThrow(TypeError);
    await expect(failing).rejects.toThrow("fetch failed");
    expect(seen).toHaveLength(3);
  });

  it("does not retry a TypeError that no retry can fix (a malformed URL)", async () => {
    let calls = 0;
    const counting: FetchLike = (input, init) => {
      calls += 1;
      return fetch(input, init);
    };
    await expect(withRetry(counting, fast)("not a url")).rejects.toThrow("Failed to parse URL");
    expect(calls).toBe(1);
  });

  it("times out an attempt whose response hangs, then retries", async () => {
    script = [{ hang: true }];
    const { events, onRetry } = recorder();
    const started = performance.now();
    const response = await robustFetch(base, undefined, { ...fast, timeout: 100, onRetry });
    expect(await response.text()).toBe("ok");
    expect(seen).toHaveLength(2);
    expect(events[0]?.error).toBeInstanceOf(TimeoutError);
    expect(performance.now() - started).toBeGreaterThanOrEqual(100);
    expect(performance.now() - started).toBeLessThan(2000);
  });

  it("resolves with the last retryable response, unread, when retries run out", async () => {
    script = [1, 2, 3, 4].map((n) => ({ status: 503, body: `unavailable ${n}` }));
    const response = await robustFetch(base, undefined, { ...fast, maxRetries: 3 });
    expect(response.status).toBe(503);
    expect(response.bodyUsed).toBe(false);
    expect(await response.text()).toBe("unavailable 4");
    expect(seen).toHaveLength(4);
  });
});

describe("robustFetch: Retry-After", () => {
  it("waits what Retry-After asks (capped at maxRetryAfter), with the backoff's delay on top", async () => {
    script = [
      { status: 503, headers: { "retry-after": "0" } },
      { status: 429, headers: { "retry-after": "1" } },
      { status: 503, headers: { "retry-after": "soon" } }, // garbage: the backoff's 10 ms
    ];
    const { events, onRetry } = recorder();
    const response = await robustFetch(base, undefined, { ...fast, maxRetryAfter: 30, onRetry });
    expect(response.status).toBe(200);
    // The hints 0, 30 (1 s capped) and none, each plus the backoff's 10 ms.
    expect(events.map((e) => e.delay)).toEqual([10, 40, 10]);
  });

  it("caps a hint at 60 s by default (the wait is cut short here by aborting)", async () => {
    script = [{ status: 429, headers: { "retry-after": "3600" } }];
    const controller = new AbortController();
    const { events, onRetry } = recorder();
    const call = robustFetch(
      base,
      { signal: controller.signal },
      {
        ...fast,
        onRetry: (event) => {
          onRetry(event);
          controller.abort(new Error("enough"));
        },
      },
    );
    await expect(call).rejects.toThrow("enough");
    expect(events.map((e) => e.delay)).toEqual([60_010]);
  });

  it("gives the hint up for a delayFrom of the caller's", async () => {
    script = [{ status: 503, headers: { "retry-after": "1" } }];
    const { events, onRetry } = recorder();
    await robustFetch(base, undefined, { ...fast, delayFrom: () => 5, onRetry });
    expect(events.map((e) => e.delay)).toEqual([15]);
  });
});

describe("robustFetch: which requests are safe to send again", () => {
  it("does not retry a POST: its first response is final, its first network error too", async () => {
    script = [{ status: 503 }];
    const response = await robustFetch(base, { method: "POST", body: "order" }, fast);
    expect(response.status).toBe(503);
    expect(seen).toHaveLength(1);

    script = [{ reset: true }];
    await expect(robustFetch(base, { method: "PATCH", body: "x" }, fast)).rejects.toThrow("fetch failed");
    expect(seen).toHaveLength(2);
  });

  it("retries a POST with retryNonIdempotent, sending the same body again", async () => {
    script = [{ status: 503 }, { reset: true }];
    const response = await robustFetch(
      base,
      { method: "POST", body: JSON.stringify({ id: 7 }), headers: { "content-type": "application/json" } },
      { ...fast, retryNonIdempotent: true },
    );
    expect(response.status).toBe(200);
    expect(seen.map((s) => [s.method, s.body])).toEqual([
      ["POST", '{"id":7}'],
      ["POST", '{"id":7}'],
      ["POST", '{"id":7}'],
    ]);
  });

  it("retries a POST that carries an Idempotency-Key (any case, any header form)", async () => {
    script = [{ status: 503 }];
    const response = await robustFetch(
      base,
      { method: "post", body: new URLSearchParams({ a: "1" }), headers: [["IDEMPOTENCY-KEY", "k-1"]] },
      fast,
    );
    expect(response.status).toBe(200);
    expect(seen.map((s) => [s.body, s.headers["idempotency-key"]])).toEqual([
      ["a=1", "k-1"],
      ["a=1", "k-1"],
    ]);
  });

  it("resends Blob, Buffer and FormData bodies", async () => {
    const form = new FormData();
    form.set("field", "form");
    const bodies: [BodyInit, string][] = [
      [new Blob(["blob"]), "blob"],
      [Buffer.from("buffer"), "buffer"],
      [form, 'name="field"\r\n\r\nform\r\n'],
    ];
    for (const [body, sent] of bodies) {
      seen = [];
      script = [{ status: 500 }];
      const response = await robustFetch(base, { method: "PUT", body }, fast);
      expect(response.status).toBe(200);
      expect(seen).toHaveLength(2);
      for (const request of seen) expect(request.body).toContain(sent);
    }
  });

  it("never retries a request whose body is a stream, which can be read only once", async () => {
    script = [{ status: 503 }];
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(new TextEncoder().encode("streamed"));
        controller.close();
      },
    });
    const init = { method: "PUT", body, duplex: "half" } as RequestInit;
    const response = await robustFetch(base, init, fast);
    expect(response.status).toBe(503);
    expect(seen.map((s) => s.body)).toEqual(["streamed"]);
  });

  it("clones a Request with a body for each attempt", async () => {
    script = [{ status: 502 }];
    const request = new Request(`${base}/put`, { method: "PUT", body: "payload" });
    const response = await robustFetch(request, undefined, fast);
    expect(response.status).toBe(200);
    expect(seen.map((s) => [s.method, s.url, s.body])).toEqual([
      ["PUT", "/put", "payload"],
      ["PUT", "/put", "payload"],
    ]);
  });
});

describe("robustFetch: connections and signals", () => {
  it("releases a retried response's body before the backoff, so its connection is let go", async () => {
    // The 503's body never ends: until the client cancels it, the connection stays busy.
    script = [{ stream: 503 }];
    const response = await robustFetch(base, undefined, { ...fast, backoff: backoff.constant({ base: 50 }) });
    expect(await response.text()).toBe("ok");
    expect(seen.map((s) => s.connection)).toEqual([0, 1]);
    await within(2000, "the 503's connection closing", closed[0] as Promise<void>);
  });

  it("frees the connection of a short failed response for reuse", async () => {
    script = [{ status: 503 }, { status: 503 }];
    const response = await robustFetch(base, undefined, fast);
    expect(await response.text()).toBe("ok");
    expect(seen.map((s) => s.connection)).toEqual([0, 0, 0]);
  });

  it("rejects with the caller's reason when aborted mid-backoff, and stops there", async () => {
    script = [{ status: 503, headers: { "retry-after": "30" } }];
    const controller = new AbortController();
    const reason = new Error("user left");
    const started = performance.now();
    setTimeout(() => controller.abort(reason), 50);
    const call = robustFetch(base, { signal: controller.signal }, fast);
    await expect(call).rejects.toBe(reason);
    expect(performance.now() - started).toBeLessThan(1000);
    expect(seen).toHaveLength(1);
    expect(abortListeners(controller.signal)).toBe(0);
  });

  it("rejects with the caller's reason when aborted mid-attempt, and the request is cut", async () => {
    script = [{ hang: true }];
    const controller = new AbortController();
    const reason = new Error("cancelled");
    setTimeout(() => controller.abort(reason), 50);
    await expect(robustFetch(base, { signal: controller.signal }, fast)).rejects.toBe(reason);
    await within(2000, "the hung request's connection closing", closed[0] as Promise<void>);
    expect(abortListeners(controller.signal)).toBe(0);
  });

  it("rejects at once, without a request, when the signal has already aborted", async () => {
    const reason = new Error("too late");
    await expect(robustFetch(base, { signal: AbortSignal.abort(reason) }, fast)).rejects.toBe(reason);
    expect(seen).toHaveLength(0);
  });

  it("leaves no listener on the caller's signal, whatever the outcome", async () => {
    const signal = new AbortController().signal;
    const listeners = () => abortListeners(signal);

    script = [{ status: 503 }];
    await (await robustFetch(base, { signal }, { ...fast, timeout: 1000 })).text();
    expect(listeners()).toBe(0);

    script = [{ status: 503 }, { status: 503 }];
    expect((await robustFetch(base, { signal }, { ...fast, maxRetries: 1 })).status).toBe(503);
    expect(listeners()).toBe(0);

    script = [{ reset: true }, { hang: true }];
    await expect(robustFetch(base, { signal }, { ...fast, timeout: 50, maxRetries: 1 })).rejects.toThrow(
      TimeoutError,
    );
    expect(listeners()).toBe(0);

    // A Request made with a signal holds a listener of its own on it (undici's, until it is collected).
    const request = new Request(base, { signal });
    const before = listeners();
    script = [{ status: 503 }];
    await robustFetch(request, undefined, { ...fast, timeout: 1000 });
    expect(listeners()).toBe(before);
  });

  it("obeys a signal of the options as well as init.signal, and unhooks both", async () => {
    const shutdown = new AbortController();
    const request = new AbortController();
    const api = withRetry(fetch, { ...fast, signal: shutdown.signal });
    expect(await (await api(base, { signal: request.signal })).text()).toBe("ok");
    expect(abortListeners(shutdown.signal)).toBe(0);
    expect(abortListeners(request.signal)).toBe(0);

    script = [{ status: 503, headers: { "retry-after": "30" } }];
    const reason = new Error("shutting down");
    setTimeout(() => shutdown.abort(reason), 50);
    await expect(api(base, { signal: request.signal })).rejects.toBe(reason);
    expect(abortListeners(request.signal)).toBe(0);
  });
});

describe("withRetry", () => {
  it("wraps a fetch with defaults, and a third argument overrides them for one call", async () => {
    let calls = 0;
    const counting: FetchLike = (input, init) => {
      calls += 1;
      return fetch(input, init);
    };
    const api = withRetry(counting, { ...fast, maxRetries: 1 });
    script = [{ status: 503 }, { status: 503 }];
    expect((await api(base)).status).toBe(503);
    expect(calls).toBe(2);

    script = [{ status: 503 }, { status: 503 }];
    expect((await api(base, undefined, { maxRetries: 2 })).status).toBe(200);
    expect(calls).toBe(5);
  });

  it("can stand in for fetch", () => {
    expectTypeOf(withRetry()).toExtend<typeof fetch>();
    expectTypeOf(withRetry(fetch)).toEqualTypeOf<RobustFetch>();
    expectTypeOf(robustFetch).toExtend<typeof fetch>();
  });

  it("passes retry's shared controllers through: a breaker opened by 503s refuses the next call", async () => {
    const breaker = circuitBreaker({ consecutiveFailures: 2 });
    const api = withRetry(fetch, { ...fast, breaker, maxRetries: 1 });
    script = [{ status: 503 }, { status: 503 }];
    expect((await api(base)).status).toBe(503);
    await expect(api(base)).rejects.toThrow(/open/i);
    expect(seen).toHaveLength(2);
  });
});

describe("options are checked loudly", () => {
  it.each([
    [{ retryOnStatus: [503, 700] }, "retryOnStatus[1]"],
    [{ retryOnStatus: 503 }, "retryOnStatus"],
    [{ maxRetryAfter: -1 }, "maxRetryAfter"],
    [{ maxRetryAfter: Number.NaN }, "maxRetryAfter"],
    [{ retryNonIdempotent: "yes" }, "retryNonIdempotent"],
    [{ retryOn: 42 }, "retryOn"],
    [{ maxRetries: 1.5 }, "maxRetries"],
    [{ retries: 3 }, "options.retries"],
  ])("withRetry(fetch, %o) throws an OptionError naming %s", (options, option) => {
    const make = () => withRetry(fetch, options as never);
    expect(make).toThrow(OptionError);
    expect(make).toThrow(expect.objectContaining({ option }));
  });

  it("withRetry refuses a fetch that is not a function; robustFetch rejects a bad option", async () => {
    expect(() => withRetry("fetch" as never)).toThrow(expect.objectContaining({ option: "fetchImpl" }));
    await expect(robustFetch(base, undefined, { maxRetryAfter: -5 })).rejects.toThrow(
      "maxRetryAfter must be a finite number >= 0; got -5",
    );
    await expect(withRetry(fetch)(base, undefined, "fast" as never)).rejects.toThrow(OptionError);
    expect(seen).toHaveLength(0);
  });
});
