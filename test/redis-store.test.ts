import { createClient } from "@redis/client";
import { Cluster, Redis } from "ioredis";
import { circuitBreaker, RateLimitedError, ResponsiveBackoff, rateLimiter, retryBudget } from "robustly";
import { redisStore } from "robustly/redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RedisServer, startRedisCluster, startRedisServer } from "./support/redis-server.js";

let server: RedisServer;
let client: Redis;

beforeAll(async () => {
  server = await startRedisServer();
  client = new Redis(server.url);
});

afterAll(async () => {
  await client?.quit();
  await server?.stop();
});

describe("redisStore (a real redis-server on loopback)", () => {
  it("reads and writes by compare-and-set, on Redis's clock, under the prefix, with expiry", async () => {
    const store = redisStore({ client, prefix: "t1:" });
    const empty = await store.read("a");
    expect(empty.value).toBeUndefined();
    expect(empty.version).toBe(0);
    // Redis's TIME, in ms since the epoch (this machine's clock is the same one here).
    expect(Math.abs(empty.time - Date.now())).toBeLessThan(5000);
    const first = await store.write("a", 0, { n: 1 }, 60_000);
    expect(first.written).toBe(true);
    expect(first.entry.version).toBeGreaterThan(0);
    const stale = await store.write("a", 0, { n: 2 }, 60_000);
    expect(stale.written).toBe(false);
    expect(stale.entry).toMatchObject({ value: { n: 1 }, version: first.entry.version });
    const second = await store.write("a", first.entry.version, { n: 3 }, 60_000);
    expect(second.entry.version).toBe(first.entry.version + 1);
    expect(await store.read("a")).toMatchObject({ value: { n: 3 }, version: second.entry.version });
    expect(await client.exists("t1:a")).toBe(1);
    const ttl = await client.pttl("t1:a");
    expect(ttl).toBeGreaterThan(50_000);
    expect(ttl).toBeLessThanOrEqual(60_000);
    await store.close(); // the client stays the caller's
    expect(await client.ping()).toBe("PONG");
  });

  it("lets exactly one of many concurrent writers over the same version win", async () => {
    const store = redisStore({ client, prefix: "t2:" });
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) => store.write("race", 0, i, 10_000)),
    );
    expect(results.filter((r) => r.written)).toHaveLength(1);
  });

  it("loads its scripts again after Redis forgets them (SCRIPT FLUSH)", async () => {
    const store = redisStore({ client, prefix: "t3:" });
    await store.read("x");
    await client.script("FLUSH");
    expect((await store.write("x", 0, "v", 1000)).written).toBe(true);
  });

  it("makes and closes its own connection from a URL", async () => {
    const store = redisStore({ url: server.url, prefix: "t4:" });
    expect((await store.write("k", 0, 1, 1000)).written).toBe(true);
    await store.close();
    await expect(store.read("k")).rejects.toThrow(/closed/);
  });

  it("expires a key: nothing of a policy no longer in use stays behind", async () => {
    const store = redisStore({ client, prefix: "t5:" });
    await store.write("short", 0, 1, 30);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(await client.exists("t5:short")).toBe(0);
  });

  it("works as well through a node-redis client", async () => {
    const nodeRedis = createClient({ url: server.url });
    nodeRedis.on("error", () => {});
    await nodeRedis.connect();
    try {
      const store = redisStore({ client: nodeRedis, prefix: "t7:" });
      const first = await store.write("a", 0, { n: 1 }, 60_000);
      expect(first.written).toBe(true);
      expect((await store.write("a", 0, { n: 2 }, 60_000)).written).toBe(false);
      await client.script("FLUSH"); // node-redis too falls back to EVAL when Redis forgot the script
      expect(await store.read("a")).toMatchObject({ value: { n: 1 }, version: first.entry.version });
      const breaker = circuitBreaker({ consecutiveFailures: 1, store, key: "svc" });
      await breaker.ready();
      expect(breaker.shared).toBe(true);
      await breaker.close();
      expect(await client.exists("t7:breaker:svc")).toBe(1);
    } finally {
      await nodeRedis.quit();
    }
  });

  it("names a wrong option", () => {
    expect(() => redisStore({ client: {} as never })).toThrow(
      /redisStore: client must be a connected ioredis or node-redis client/,
    );
    expect(() => redisStore({ url: "http://x" })).toThrow(/redisStore: url must be a "redis:\/\/"/);
    expect(() => redisStore({ prefix: 3 as never })).toThrow(/redisStore: prefix must be a string; got 3/);
  });

  it("shares a budget and a breaker between policies on real Redis", async () => {
    const store = redisStore({ client, prefix: "t6:" });
    const a = circuitBreaker({ consecutiveFailures: 2, store, key: "svc", syncEvery: 20 });
    const b = circuitBreaker({ consecutiveFailures: 2, store, key: "svc", syncEvery: 20 });
    await Promise.all([a.ready(), b.ready()]);
    expect(a.shared && b.shared).toBe(true);
    a.acquire();
    a.failure();
    a.acquire();
    a.failure();
    const deadline = Date.now() + 5000;
    while (b.state !== "open" && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    expect(b.state).toBe("open");
    const budget = retryBudget({ ratio: 0, minPerSecond: 0.5, window: 10_000, store, key: "svc" });
    await budget.ready();
    expect(budget.shared).toBe(true);
    expect(budget.tryRetry()).toBe(true);
    await Promise.all([a.close(), b.close(), budget.close()]);
    const keys = (await client.keys("t6:*")).sort();
    expect(keys).toEqual(["t6:breaker:svc", "t6:budget-ratio:svc"]);
  });
  it("shares one rate limiter's bucket between limiters on real Redis", async () => {
    const store = redisStore({ client, prefix: "rl:" });
    // One token a minute: only the burst of 4 is there to share over the test's time.
    const limiters = [1, 2].map(() =>
      rateLimiter({ rate: 1, per: 60_000, burst: 4, store, key: "api", syncEvery: 20 }),
    );
    await Promise.all(limiters.map((l) => l.ready()));
    expect(limiters.every((l) => l.shared)).toBe(true);
    let started = 0;
    const deadline = Date.now() + 1500;
    while (Date.now() < deadline) {
      for (const limiter of limiters) {
        try {
          limiter.acquire(() => started++);
        } catch (error) {
          expect(error).toBeInstanceOf(RateLimitedError);
        }
      }
      await new Promise((r) => setTimeout(r, 5));
    }
    // Both together: the burst, and at most the one or two tokens a minute adds meanwhile.
    expect(started).toBeGreaterThanOrEqual(3);
    expect(started).toBeLessThanOrEqual(5);
    await Promise.all(limiters.map((l) => l.close()));
    expect(await client.keys("rl:*")).toEqual(["rl:rateLimiter:api"]);
  });
});

describe("a hung Redis (SIGSTOP)", () => {
  it("costs no call any wait: the policies go on alone after storeTimeout and share again after SIGCONT", async () => {
    const store = redisStore({ url: server.url, prefix: "hung:" });
    const sharing = { store, key: "svc", syncEvery: 20, storeTimeout: 100 };
    const breaker = circuitBreaker({ consecutiveFailures: 3, ...sharing });
    const budget = retryBudget({ ratio: 0.5, minPerSecond: 10, ...sharing });
    await Promise.all([breaker.ready(), budget.ready()]);
    const events: string[] = [];
    for (const [name, policy] of [
      ["breaker", breaker],
      ["budget", budget],
    ] as const) {
      policy.on("store-down", () => events.push(`${name}-down`));
      policy.on("store-up", () => events.push(`${name}-up`));
    }
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on("unhandledRejection", onUnhandled);
    try {
      server.pause();
      // For 800 ms of a hung Redis, decide every 5 ms and time the slowest decision.
      let slowest = 0;
      const until = Date.now() + 800;
      while (Date.now() < until) {
        const start = performance.now();
        breaker.acquire();
        breaker.success();
        budget.request();
        budget.tryRetry();
        slowest = Math.max(slowest, performance.now() - start);
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      expect(events).toEqual(expect.arrayContaining(["breaker-down", "budget-down"]));
      expect(breaker.shared || budget.shared).toBe(false);
      // A decision is synchronous work on local state: well under the store timeout, even on a busy machine.
      expect(slowest).toBeLessThan(50);
      server.resume();
      const deadline = Date.now() + 10_000;
      while (!(breaker.shared && budget.shared) && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 20));
      expect(breaker.shared && budget.shared).toBe(true);
      expect(events.filter((e) => e.endsWith("-up")).sort()).toEqual(["breaker-up", "budget-up"]);
    } finally {
      server.resume();
      process.off("unhandledRejection", onUnhandled);
      await Promise.all([breaker.close(), budget.close()]);
      await store.close();
    }
    expect(unhandled).toEqual([]);
  }, 30_000);
});

describe("a Redis Cluster", () => {
  it("shares a budget, a breaker and a responsive backoff: each policy's script touches one key", async () => {
    const cluster = await startRedisCluster();
    const nodes = new Cluster([...cluster.nodes]);
    try {
      const store = redisStore({ client: nodes, prefix: "cluster:" });
      const sharing = { store, syncEvery: 20 };
      const a = circuitBreaker({ consecutiveFailures: 2, ...sharing, key: "svc" });
      const b = circuitBreaker({ consecutiveFailures: 2, ...sharing, key: "svc" });
      const budget = retryBudget({ ratio: 0, minPerSecond: 1, window: 10_000, ...sharing, key: "svc" });
      const pace = new ResponsiveBackoff({ ...sharing, key: "writes" });
      await Promise.all([a.ready(), b.ready(), budget.ready(), pace.ready()]);
      expect([a.shared, b.shared, budget.shared, pace.shared]).toEqual([true, true, true, true]);
      a.acquire();
      a.failure();
      a.acquire();
      a.failure();
      const deadline = Date.now() + 5000;
      while (b.state !== "open" && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
      expect(b.state).toBe("open");
      expect(budget.tryRetry()).toBe(true);
      await Promise.all([a.close(), b.close(), budget.close(), pace.close()]);
      // The keys live on whichever nodes their hash slots belong to.
      const keys = await Promise.all(
        ["cluster:breaker:svc", "cluster:budget-ratio:svc", "cluster:responsive:writes"].map((k) =>
          nodes.exists(k),
        ),
      );
      expect(keys).toEqual([1, 1, 1]);
    } finally {
      await nodes.quit();
      await cluster.stop();
    }
  }, 60_000);
});
