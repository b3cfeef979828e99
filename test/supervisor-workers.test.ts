/**
 * The supervisor with real isolation: worker threads and child processes. A worker that exits, throws at
 * top level, runs out of memory or is killed with SIGKILL is a crash like any other; crash storms of
 * 10,000 messages lose nothing and answer nothing twice; and nothing is left behind: no process (reaped,
 * not a zombie), no thread. These tests use real time, with short timeouts and generous bounds.
 */

import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import {
  MessageDeadLetteredError,
  MessageDroppedError,
  type ProcessWorkerOptions,
  processWorker,
  type SuperviseOptions,
  type Supervisor,
  SupervisorGaveUpError,
  serveWorker,
  supervise,
  type ThreadWorkerOptions,
  threadWorker,
  WorkerExitError,
  type WorkerFactory,
} from "../src/supervisor/index.js";
import { fixture, useCompiledServe } from "./fixtures/supervisor/serve-module.js";
import { procState } from "./support/commands.js";

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

useCompiledServe();

// A safety net: a failed test must not leave workers running for the next one.
const running = new Set<Supervisor<never, never>>();
afterEach(async () => {
  for (const s of running) await s.stop({ drain: false });
  running.clear();
});

function start<M, R>(options: SuperviseOptions<M, R>): Supervisor<M, R> {
  const s = supervise(options);
  running.add(s as unknown as Supervisor<never, never>);
  return s;
}

/** Waits (up to 5 s: PID 1 may reap orphans late) until none of `pids` is alive or a zombie. */
async function expectAllGone(pids: Iterable<number>): Promise<void> {
  const list = [...pids];
  const deadline = Date.now() + 5000;
  let left = list.filter((pid) => procState(pid) !== undefined);
  while (left.length > 0 && Date.now() < deadline) {
    await sleep(50);
    left = left.filter((pid) => procState(pid) !== undefined);
  }
  expect(left.map((pid) => [pid, procState(pid)])).toEqual([]);
}

/** This process's OS threads: a worker thread that has exited is joined and gone from here. */
const threadCount = () => readdirSync("/proc/self/task").length;

type Echo = { n: number; id: number; deliveries: number; pid: number; handled: number };
type Op = { op: string; n?: number; code?: number; text?: string; ms?: number };

const kinds = {
  thread: (file: string, options: ThreadWorkerOptions = {}) =>
    threadWorker<Op, Echo>(fixture(file), { execArgv: [], ...options }),
  process: (file: string, options: ProcessWorkerOptions = {}) =>
    processWorker<Op, Echo>(fixture(file), { execArgv: [], stdio: "ignore", ...options }),
} as const;

describe.each(["thread", "process"] as const)("%s workers", (kind) => {
  const make = kinds[kind] as (file: string, options?: object) => WorkerFactory<Op, Echo>;

  it("reply to each message, with its id and delivery count", async () => {
    const s = start({ worker: make("echo.mjs") });
    const replies = await Promise.all([1, 2, 3].map((n) => s.send({ op: "echo", n })));
    expect(replies.map((r) => [r.n, r.id, r.deliveries])).toEqual([
      [1, 1, 1],
      [2, 2, 1],
      [3, 3, 1],
    ]);
    if (kind === "process") expect(replies[0]?.pid).toBe(s.workers[0]?.pid);
    else expect(s.workers[0]?.threadId).toBeGreaterThan(0);
    await s.stop();
  });

  it("process.exit is a crash: a new worker gets the message again", async () => {
    const s = start({ worker: make("echo.mjs") });
    const crashes: unknown[] = [];
    s.on("crash", ({ cause }) => crashes.push(cause));
    const reply = await s.send({ op: "exit-first", n: 5, code: 7 });
    expect(reply).toEqual({ n: 5, deliveries: 2 });
    expect(crashes).toHaveLength(1);
    expect(crashes[0]).toBeInstanceOf(WorkerExitError);
    expect((crashes[0] as WorkerExitError).code).toBe(7);
    expect(s.workers[0]?.incarnation).toBe(2);
    await s.stop();
  });

  it("a thrown error is a crash; its name and message cross as the cause", async () => {
    const s = start({ worker: make("echo.mjs") });
    const crashes: WorkerExitError[] = [];
    s.on("crash", ({ cause }) => crashes.push(cause as WorkerExitError));
    expect(await s.send({ op: "throw-first", n: 1, text: "bad input" })).toEqual({ n: 1, deliveries: 2 });
    const crash = crashes[0] as WorkerExitError;
    expect(crash.message).toBe(`The ${kind} worker exited with code 1`);
    expect((crash.cause as Error).name).toBe("TypeError");
    expect((crash.cause as Error).message).toBe("bad input");
    await s.stop();
  });

  it("a top-level throw is a crash; past maxRestarts the supervisor gives up", async () => {
    const s = start({ worker: make("top-throw.mjs"), maxRestarts: 2 });
    const causes: unknown[] = [];
    s.on("crash", ({ cause }) => causes.push(cause));
    const error = await s.send({ op: "echo", n: 1 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SupervisorGaveUpError);
    expect(causes).toHaveLength(3);
    for (const cause of causes) expect((cause as WorkerExitError).code).toBe(1);
    if (kind === "thread") expect(((causes[0] as Error).cause as Error).message).toBe("broken at top level");
    expect(s.state).toBe("gave-up");
    await s.stop();
  });

  it("running out of memory is a crash", async () => {
    const s = start({
      worker:
        kind === "thread"
          ? make("echo.mjs", { resourceLimits: { maxOldGenerationSizeMb: 24 } })
          : make("echo.mjs", { execArgv: ["--max-old-space-size=24"] }),
    });
    const crashes: unknown[] = [];
    s.on("crash", ({ cause }) => crashes.push(cause));
    expect(await s.send({ op: "oom-first", n: 3 })).toEqual({ n: 3, deliveries: 2 });
    expect(crashes).toHaveLength(1);
    if (kind === "thread") {
      expect(((crashes[0] as Error).cause as { code?: string }).code).toBe("ERR_WORKER_OUT_OF_MEMORY");
    } else {
      // V8 aborts the process: SIGABRT, or exit code 134 on some systems.
      const exit = crashes[0] as WorkerExitError;
      expect(exit.signal === "SIGABRT" || exit.code === 134).toBe(true);
    }
    await s.stop();
  }, 20_000);

  it("a PermanentError fails one message; its cause crosses with name and code", async () => {
    const s = start({ worker: make("echo.mjs") });
    const error = (await s.send({ op: "permanent", text: "out of range" }).catch((e: unknown) => e)) as Error;
    expect(error.name).toBe("RangeError");
    expect(error.message).toBe("out of range");
    expect((error as { code?: string }).code).toBe("E_RANGE");
    expect(s.metrics.crashes).toBe(0);
    await s.stop();
  });

  it("a message or a reply that cannot be cloned fails that message only", async () => {
    const s = start({ worker: make("echo.mjs") });
    s.on("dead-letter", () => {});
    const bad = await s.send({ op: "echo", n: 1, fn: () => {} } as Op).catch((e: unknown) => e);
    expect((bad as Error).message).toMatch(/could not be cloned/);
    const badReply = await s.send({ op: "function-reply" }).catch((e: unknown) => e);
    expect((badReply as Error).message).toMatch(/could not be cloned/);
    expect((await s.send({ op: "echo", n: 2 })).n).toBe(2);
    expect(s.metrics.crashes).toBe(0);
    await s.stop();
  });

  it("a poison message is dead-lettered after maxDeliveries; the others get their replies", async () => {
    const s = start({ worker: make("echo.mjs"), maxDeliveries: 3 });
    const results = await Promise.allSettled([
      s.send({ op: "echo", n: 1 }),
      s.send({ op: "exit-always" }),
      s.send({ op: "echo", n: 2 }),
    ]);
    expect(results[0]).toMatchObject({ status: "fulfilled", value: { n: 1 } });
    expect(results[1]).toMatchObject({ status: "rejected", reason: expect.any(MessageDeadLetteredError) });
    expect(results[2]).toMatchObject({ status: "fulfilled", value: { n: 2, deliveries: 1 } });
    expect(s.metrics.crashes).toBe(3);
    await s.stop();
  });

  it("ackTimeout kills a worker that hangs", async () => {
    const s = start({ worker: make("echo.mjs"), ackTimeout: 300, maxDeliveries: 2 });
    const crashes: unknown[] = [];
    s.on("crash", ({ cause }) => crashes.push(cause));
    const [hung, fine] = await Promise.allSettled([s.send({ op: "hang" }), s.send({ op: "echo", n: 1 })]);
    expect(hung).toMatchObject({ status: "rejected", reason: expect.any(MessageDeadLetteredError) });
    expect(fine).toMatchObject({ status: "fulfilled", value: { n: 1 } });
    expect((crashes[0] as Error).name).toBe("TimeoutError");
    await s.stop();
  });

  it("stop drains, lets onStop run, and leaves no worker behind", async () => {
    const dir = mkdtempSync(join(tmpdir(), "robustly-stop-"));
    const file = join(dir, "stopped");
    const env = { ...process.env, FIXTURE_STOP_FILE: file };
    const threadsBefore = threadCount();
    const s = start({ worker: make("echo.mjs", { env }), instances: 3 });
    const pids = new Set<number>();
    s.on("start", ({ pid }) => pid !== undefined && pids.add(pid));
    try {
      const sent = Array.from({ length: 30 }, (_, n) => s.send({ op: "sleep", n, ms: 5 }));
      await sleep(1);
      await s.stop();
      expect((await Promise.all(sent)).map((r) => r.n)).toEqual(Array.from({ length: 30 }, (_, n) => n));
      expect(s.state).toBe("stopped");
      // Each worker's onStop ran (the last one to write wins: it handled some of the 30).
      expect(existsSync(file)).toBe(true);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    if (kind === "process") {
      expect(pids.size).toBe(3);
      await expectAllGone(pids);
    } else {
      expect(threadCount()).toBeLessThanOrEqual(threadsBefore);
    }
  });
});

describe("process workers: SIGKILL", () => {
  it("a worker killed with SIGKILL is a crash; its unacknowledged message is delivered again", async () => {
    const s = start({ worker: kinds.process("echo.mjs") });
    const crashes: WorkerExitError[] = [];
    s.on("crash", ({ cause }) => crashes.push(cause as WorkerExitError));
    const first = (await s.send({ op: "echo", n: 0 })).pid;
    const slow = s.send({ op: "sleep", n: 1, ms: 5000 });
    await sleep(100);
    process.kill(first, "SIGKILL");
    expect(await slow).toEqual({ n: 1 });
    expect(crashes[0]?.signal).toBe("SIGKILL");
    expect(crashes[0]?.message).toBe("The process worker was killed by SIGKILL");
    const pids = [first, s.workers[0]?.pid as number];
    await s.stop({ drain: false });
    await expectAllGone(pids);
  }, 15_000);
});

describe("crash storms: 10,000 messages, nothing lost, nothing answered twice", () => {
  const N = 10_000;

  type Reply = { id: number; double: number };

  /**
   * SIGKILLs the worker at random moments, at most `max` times: mostly within 100 ms after it became ready
   * (it has done some work), sometimes within 80 ms of its start (before it is ready). Kills only the
   * current incarnation's own pid, never a pid that may have been reused.
   */
  function killAtRandom(s: Supervisor<number, Reply>, max: number) {
    const pids = new Set<number>();
    let kills = 0;
    let done = false;
    const killed = new Set<number>();
    const kill = (pid: number) => {
      // Each process once: until its exit is seen, the supervisor still lists a killed process as current.
      if (done || kills >= max || killed.has(pid)) return;
      if (s.workers[0]?.pid !== pid || procState(pid) === undefined) return;
      killed.add(pid);
      kills += 1;
      process.kill(pid, "SIGKILL");
    };
    s.on("start", ({ pid }) => {
      if (pid === undefined) return;
      pids.add(pid);
      if (Math.random() < 0.2) setTimeout(() => kill(pid), Math.random() * 80);
    });
    s.on("ready", () => {
      const pid = s.workers[0]?.pid;
      if (pid !== undefined) setTimeout(() => kill(pid), Math.random() * 100);
    });
    return {
      pids,
      get kills() {
        return kills;
      },
      stop() {
        done = true;
      },
    };
  }

  /** Sends N numbers through `send`; checks each sender heard once, and counts the acknowledgements per id. */
  async function storm(
    s: Supervisor<number, Reply>,
    send: (track: (p: Promise<Reply>) => void) => Promise<void>,
  ) {
    const acks = new Map<number, number>();
    s.on("ack", ({ id }) => acks.set(id, (acks.get(id) ?? 0) + 1));
    const promises: Promise<Reply>[] = [];
    const settled: number[] = [];
    await send((p) => {
      const i = promises.length;
      promises.push(p);
      settled.push(0);
      const count = () => {
        settled[i] = (settled[i] ?? 0) + 1;
      };
      p.then(count, count);
    });
    const results = await Promise.allSettled(promises);
    expect(promises).toHaveLength(N);
    expect(settled.every((c) => c === 1)).toBe(true);
    return { results, acks };
  }

  it("a child process killed with SIGKILL at random moments: every sender gets its reply; no zombie remains", async () => {
    const s = start<number, Reply>({
      worker: processWorker(fixture("storm.mjs"), { execArgv: [] }),
      concurrency: 8,
      maxRestarts: -1,
      maxDeliveries: -1,
      poisonAfter: 1000,
      maxPending: -1,
    });
    const killer = killAtRandom(s, 25);
    const began = Date.now();
    const { results, acks } = await storm(s, async (track) => {
      for (let i = 0; i < N; i++) track(s.send(i));
    });
    killer.stop();
    const { pids, kills } = killer;
    results.forEach((r, i) => {
      expect(r.status).toBe("fulfilled");
      if (r.status === "fulfilled") expect(r.value.double).toBe(2 * i);
    });
    expect(acks.size).toBe(N);
    expect([...acks.values()].every((c) => c === 1)).toBe(true);
    const m = s.metrics;
    expect(m.acknowledged).toBe(N);
    expect(m.crashes).toBe(kills);
    expect(kills).toBeGreaterThanOrEqual(3);
    await s.stop();
    await expectAllGone(pids);
    // Bounded: a few seconds on a slow machine.
    expect(Date.now() - began).toBeLessThan(25_000);
  }, 30_000);

  it("a worker thread that exits at random moments: every sender gets its reply; no thread remains", async () => {
    const threadsBefore = threadCount();
    const s = start<number, Reply>({
      worker: threadWorker(fixture("storm.mjs"), { execArgv: [], workerData: { exitWithinMs: 150 } }),
      maxRestarts: -1,
      maxDeliveries: -1,
      poisonAfter: 1000,
      maxPending: -1,
    });
    const { results, acks } = await storm(s, async (track) => {
      for (let i = 0; i < N; i++) track(s.send(i));
    });
    results.forEach((r, i) => {
      expect(r.status).toBe("fulfilled");
      if (r.status === "fulfilled") expect(r.value.double).toBe(2 * i);
    });
    expect(acks.size).toBe(N);
    expect(s.metrics.acknowledged).toBe(N);
    await s.stop();
    expect(threadCount()).toBeLessThanOrEqual(threadsBefore);
  }, 30_000);

  it("with maxPending small, under SIGKILLs: the drops are exactly those reported, the rest get their replies", async () => {
    const s = start<number, Reply>({
      worker: processWorker(fixture("storm.mjs"), { execArgv: [] }),
      concurrency: 4,
      maxPending: 64,
      maxRestarts: -1,
      maxDeliveries: -1,
      poisonAfter: 1000,
    });
    const dropped = new Set<number>();
    s.on("drop", ({ message }) => dropped.add(message));
    const killer = killAtRandom(s, 20);
    const { results, acks } = await storm(s, async (track) => {
      await new Promise<void>((resolve) => s.on("ready", () => resolve()));
      // Bursts of 25 every 5 ms: the worker keeps up, except while it restarts.
      for (let i = 0; i < N; i++) {
        track(s.send(i));
        if (i % 25 === 24) await sleep(5);
      }
    });
    killer.stop();
    let fulfilled = 0;
    results.forEach((r, i) => {
      if (r.status === "fulfilled") {
        fulfilled += 1;
        expect(r.value.double).toBe(2 * i);
        expect(dropped.has(i)).toBe(false);
      } else {
        expect(r.reason).toBeInstanceOf(MessageDroppedError);
        expect((r.reason as MessageDroppedError<number>).payload).toBe(i);
        expect(dropped.has(i)).toBe(true);
      }
    });
    expect(fulfilled + dropped.size).toBe(N);
    expect(dropped.size).toBeGreaterThan(0);
    expect(acks.size).toBe(fulfilled);
    expect(s.metrics).toMatchObject({ acknowledged: fulfilled, dropped: dropped.size, pending: 0 });
    // A kill sent just after the last reply is seen as a crash a moment later, when the process's exit arrives.
    const deadline = Date.now() + 5000;
    while (s.metrics.crashes < killer.kills && Date.now() < deadline) await sleep(10);
    expect(s.metrics.crashes).toBe(killer.kills);
    await s.stop();
    await expectAllGone(killer.pids);
  }, 30_000);
});

describe("serveWorker", () => {
  it("outside a supervised worker it says so", () => {
    const out = execFileSync(process.execPath, [fixture("outside.mjs")], { encoding: "utf8" });
    expect(out.trim()).toBe(
      "serveWorker must run in a worker started by threadWorker or processWorker: there is no parent port and no IPC channel",
    );
    expect(() => serveWorker(42 as never)).toThrow("serveWorker: handler must be a function; got number");
  });
});
