import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { createServer, Socket } from "node:net";

/** A real redis-server on a free loopback port, for as long as a test needs it. */
export interface RedisServer {
  readonly port: number;
  readonly url: string;
  /** Kills it at once (SIGKILL), as a crash would. */
  kill(): Promise<void>;
  /** Stops it answering (SIGSTOP): connections stay open and commands wait, as with a hung server. */
  pause(): void;
  /** Lets it answer again (SIGCONT). */
  resume(): void;
  /** Starts it again on the same port (empty: nothing is saved to disk). */
  start(): Promise<void>;
  /** Stops it for good. */
  stop(): Promise<void>;
}

export function haveRedisServer(): boolean {
  return spawnSync("redis-server", ["--version"], { stdio: "ignore" }).status === 0;
}

/** A server on loopback only, that saves nothing to disk and logs only warnings. */
function serverArguments(port: number): string[] {
  return [
    "--port",
    String(port),
    "--bind",
    "127.0.0.1",
    "--save",
    "",
    "--appendonly",
    "no",
    "--loglevel",
    "warning",
  ];
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => resolve(typeof address === "object" && address !== null ? address.port : 0));
    });
  });
}

/**
 * How long a redis-server may take to answer its first PING. A cluster starts three at once, and while the
 * rest of the suite runs on a two-core machine one of them took over 10 s to answer (the test alone: 5 s).
 */
const START_WITHIN = 30_000;

/** Resolves when the server answers PING, polling every 20 ms for up to `START_WITHIN` ms. */
async function answers(port: number): Promise<void> {
  const deadline = Date.now() + START_WITHIN;
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const socket = new Socket();
      socket.setTimeout(500);
      socket.once("data", (data) => {
        socket.destroy();
        resolve(data.toString().startsWith("+PONG"));
      });
      socket.once("error", () => resolve(false));
      socket.once("timeout", () => {
        socket.destroy();
        resolve(false);
      });
      socket.connect(port, "127.0.0.1", () => socket.write("PING\r\n"));
    });
    if (ok) return;
    if (Date.now() > deadline)
      throw new Error(`redis-server on port ${port} did not answer within ${START_WITHIN / 1000} s`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

export async function startRedisServer(): Promise<RedisServer> {
  if (!haveRedisServer()) {
    throw new Error(
      "redis-server is not installed: npm test's pretest installs it (Debian: apt-get install -y redis-server)",
    );
  }
  const port = await freePort();
  let child: ChildProcess | undefined;
  const exited = () =>
    new Promise<void>((resolve) => {
      if (child === undefined || child.exitCode !== null || child.signalCode !== null) resolve();
      else child.once("exit", () => resolve());
    });
  const server: RedisServer = {
    port,
    url: `redis://127.0.0.1:${port}`,
    async start() {
      child = spawn("redis-server", serverArguments(port), { stdio: "ignore" });
      await answers(port);
    },
    pause() {
      child?.kill("SIGSTOP");
    },
    resume() {
      child?.kill("SIGCONT");
    },
    async kill() {
      const done = exited();
      child?.kill("SIGKILL");
      await done;
    },
    async stop() {
      const done = exited();
      child?.kill("SIGCONT");
      child?.kill("SIGTERM");
      await done;
    },
  };
  await server.start();
  return server;
}

/** A Redis Cluster of three masters on free loopback ports, each with its own folder for its cluster state. */
export interface RedisCluster {
  readonly nodes: readonly { host: string; port: number }[];
  stop(): Promise<void>;
}

export async function startRedisCluster(): Promise<RedisCluster> {
  const { mkdtempSync, rmSync } = await import("node:fs");
  const { tmpdir } = await import("node:os");
  const { join } = await import("node:path");
  const dir = mkdtempSync(join(tmpdir(), "robustly-cluster-"));
  const ports = [await freePort(), await freePort(), await freePort()];
  const children = ports.map((port) =>
    spawn(
      "redis-server",
      [...serverArguments(port), "--cluster-enabled", "yes", "--cluster-config-file", `nodes-${port}.conf`],
      { cwd: dir, stdio: "ignore" },
    ),
  );
  const stop = async () => {
    await Promise.all(
      children.map(
        (child) =>
          new Promise<void>((resolve) => {
            if (child.exitCode !== null || child.signalCode !== null) resolve();
            else {
              child.once("exit", () => resolve());
              child.kill("SIGTERM");
            }
          }),
      ),
    );
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await Promise.all(ports.map((port) => answers(port)));
    const created = spawnSync(
      "redis-cli",
      [
        "--cluster",
        "create",
        ...ports.map((p) => `127.0.0.1:${p}`),
        "--cluster-replicas",
        "0",
        "--cluster-yes",
      ],
      { encoding: "utf8", timeout: 20_000 },
    );
    if (created.status !== 0)
      throw new Error(`redis-cli --cluster create failed: ${created.stdout}${created.stderr}`);
    // Wait until every node says the cluster is up.
    const deadline = Date.now() + 20_000;
    for (;;) {
      const ok = ports.every((port) =>
        spawnSync("redis-cli", ["-p", String(port), "cluster", "info"], { encoding: "utf8" }).stdout.includes(
          "cluster_state:ok",
        ),
      );
      if (ok) break;
      if (Date.now() > deadline) throw new Error("the Redis Cluster did not come up within 20 s");
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  } catch (error) {
    await stop();
    throw error;
  }
  return { nodes: ports.map((port) => ({ host: "127.0.0.1", port })), stop };
}
