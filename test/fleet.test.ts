/**
 * Real processes sharing their policies through a real redis-server on loopback: one budget for four
 * processes, one breaker for four processes, and Redis killed and restarted under a running fleet.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath, pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RedisServer, startRedisServer } from "./support/redis-server.js";

const root = fileURLToPath(new URL("..", import.meta.url));
const tsx = pathToFileURL(join(root, "node_modules", "tsx", "dist", "loader.mjs")).href;
const member = join(root, "test", "fixtures", "fleet", "member.ts");

let server: RedisServer;
beforeAll(async () => {
  server = await startRedisServer();
});
afterAll(async () => {
  await server?.stop();
});

interface Member {
  readonly child: ChildProcess;
  readonly ready: Promise<void>;
  readonly result: Promise<Record<string, unknown>>;
  readonly exit: Promise<number | null>;
}

function start(config: Record<string, unknown>): Member {
  const child = spawn(process.execPath, ["--import", tsx, member, JSON.stringify(config)], {
    stdio: ["pipe", "pipe", "inherit"],
  });
  const lines = createInterface({ input: child.stdout as NonNullable<typeof child.stdout> });
  let markReady: () => void = () => {};
  const ready = new Promise<void>((resolve) => {
    markReady = resolve;
  });
  const result = new Promise<Record<string, unknown>>((resolve) => {
    lines.on("line", (line) => {
      if (line === "ready") markReady();
      else if (line.startsWith("{")) resolve(JSON.parse(line));
    });
  });
  const exit = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  return { child, ready, result, exit };
}

/** Starts `configs` as processes, lets them go together, and returns what each saw (each must exit, 0, in time). */
async function runFleet(configs: Record<string, unknown>[], during?: () => Promise<void>) {
  const members = configs.map(start);
  try {
    await within(Promise.all(members.map((m) => m.ready)), 30_000, "the members to get ready");
    for (const m of members) m.child.stdin?.write("go\n");
    await during?.();
    const results = await within(Promise.all(members.map((m) => m.result)), 30_000, "the members' results");
    const codes = await within(Promise.all(members.map((m) => m.exit)), 10_000, "the members to exit");
    expect(codes).toEqual(configs.map(() => 0));
    for (const r of results) expect(r.unhandled).toEqual([]);
    return results;
  } finally {
    for (const m of members) if (m.child.exitCode === null) m.child.kill("SIGKILL");
  }
}

function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    promise.finally(() => clearTimeout(timer)),
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`waited ${ms} ms for ${what}`)), ms);
    }),
  ]);
}

const wait = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("a fleet of four processes on one redis-server", () => {
  it("shares one retry budget: the fleet retries about as much as one budget allows, not four times as much", async () => {
    const base = { role: "budget", url: server.url, prefix: "fleet-budget:", key: "api", runFor: 1500 };
    const shared = await runFleet([0, 1, 2, 3].map(() => ({ ...base, shared: true })));
    const alone = await runFleet([0, 1, 2, 3].map(() => ({ ...base, shared: false })));
    const total = (results: Record<string, unknown>[]) =>
      results.reduce((sum, r) => sum + (r.retries as number), 0);
    const budget = 40; // the floor: 40 retries in a window that outlasts the run
    // Alone, each process spends a whole budget of its own.
    expect(total(alone)).toBe(4 * budget);
    // Shared, the four spend one between them: never more (the leases forbid it) and at least 80% of it.
    expect(total(shared)).toBeLessThanOrEqual(budget);
    expect(total(shared)).toBeGreaterThanOrEqual(0.8 * budget);
    // Every process made calls throughout (the budget refused retries, not calls).
    for (const r of shared) expect(r.calls as number).toBeGreaterThan(10);
  }, 60_000);

  it("shares one breaker: when one process's calls trip it, the others fail fast", async () => {
    const base = {
      role: "breaker",
      url: server.url,
      prefix: "fleet-breaker:",
      key: "payments",
      runFor: 2000,
      shared: true,
    };
    const results = await runFleet([{ ...base, trip: true, tripAt: 500 }, base, base, base]);
    const [tripper, ...others] = results as {
      openedAt?: number;
      firstRejectedAt?: number;
      callsAfterRejection: number;
    }[];
    expect(tripper?.openedAt).toBeTypeOf("number");
    for (const other of others) {
      // The others fail fast within a few exchanges (every 50 ms) of the opening; generous for a busy machine.
      expect(other.firstRejectedAt).toBeTypeOf("number");
      expect((other.firstRejectedAt as number) - (tripper?.openedAt as number)).toBeLessThan(1000);
      // And from then on no call of theirs reaches the operation.
      expect(other.callsAfterRejection).toBe(0);
    }
  }, 60_000);

  it("keeps working when Redis is killed, says so, and shares again when it is back", async () => {
    const base = {
      role: "fault",
      url: server.url,
      prefix: "fleet-fault:",
      key: "svc",
      runFor: 6000,
      shared: true,
    };
    const results = await runFleet([{ ...base, trip: true }, base, base, base], async () => {
      await wait(800);
      await server.kill();
      await wait(1500);
      await server.start();
    });
    for (const r of results) {
      const events = (r.events as [string, number][]).map(([name]) => name);
      // Down once (each policy), up again, sharing at the end.
      expect(events.filter((e) => e === "breaker-down")).toHaveLength(1);
      expect(events.filter((e) => e === "budget-down")).toHaveLength(1);
      expect(events).toContain("breaker-up");
      expect(events).toContain("budget-up");
      expect(events.filter((e) => e === "pace-down")).toHaveLength(1);
      expect(events).toContain("pace-up");
      expect(r.sharedAtEnd).toBe(true);
      // Calls went on while Redis was gone, on local state, and none failed for it.
      expect(r.okWhileAlone as number).toBeGreaterThan(10);
      expect(r.otherErrors).toBe(0);
      // After Redis returned, one process tripped the breaker, and every process saw it open.
      expect(r.stateAtEnd).toBe("open");
      expect(r.rejected as number).toBeGreaterThan(0);
    }
  }, 60_000);
});
