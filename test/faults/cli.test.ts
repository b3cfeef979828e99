// The command line against what a real system does to it: signals of every kind, commands that leave
// processes behind, servers that redirect or do not answer, and files that are not what they seem. Real
// processes, short real timeouts, generous bounds.
import {
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { startLoad } from "../../src/cli/load.js";
import { runPlot } from "../../src/cli/plot.js";
import { killLeftovers, leftovers, runCli, script, startCli } from "../support/commands.js";

let dir: string;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "robustly-faults-"));
});
afterEach(() => {
  killLeftovers(dir);
  rmSync(dir, { recursive: true, force: true });
});

// Records its pid and its background sleep's, says it is ready, and waits. Like any script run without
// job control, its background sleep ignores SIGINT and SIGQUIT: only the kill after the grace ends it.
const WAITING = "echo $$ >> pids; echo ready; sleep 30 & echo $! >> pids; wait";

describe("robustly run and signals", () => {
  it.each([
    ["SIGHUP", 129],
    ["SIGQUIT", 131],
  ] as const)(
    "%s to robustly reaches the command's whole process group, and robustly exits with %i",
    async (signal, status) => {
      const waiting = script(dir, "waiting", WAITING);
      const run = startCli(dir, "run", ["--grace", "500ms", "--backoff", "none", "--", waiting]);
      try {
        await run.waitFor("ready");
        run.child.kill(signal);
        expect(await run.exited).toEqual({ code: status, signal: null });
        expect(await leftovers(dir)).toEqual([]);
      } finally {
        run.child.kill("SIGKILL");
      }
    },
  );

  it("SIGTERM during the sleep between attempts exits 143, not the last attempt's code", async () => {
    const failing = script(dir, "failing", "exit 1");
    const run = startCli(dir, "run", [
      "--backoff",
      "constant",
      "--base",
      "30s",
      "--jitter",
      "none",
      "--",
      failing,
    ]);
    try {
      await run.waitFor("retrying in 30 s");
      run.child.kill("SIGTERM");
      expect(await run.exited).toEqual({ code: 143, signal: null });
    } finally {
      run.child.kill("SIGKILL");
    }
  });

  it("--timeout: once the command's process group is gone, robustly exits without waiting out the grace", async () => {
    const hang = script(dir, "hang", "echo $$ >> pids; sleep 30 & echo $! >> pids; wait");
    const started = performance.now();
    const run = runCli(dir, "run", [
      "--timeout",
      "300ms",
      "--grace",
      "20s",
      "--max-retries",
      "0",
      "--",
      hang,
    ]);
    const elapsed = performance.now() - started;
    expect(run.status).toBe(124);
    // Both processes die of the SIGTERM at once; the 20 s grace is for a command that ignores it.
    expect(elapsed).toBeLessThan(12_000);
    expect(await leftovers(dir)).toEqual([]);
  });

  it("a failed attempt's background processes are ended before the next attempt starts", async () => {
    const leaves = script(
      dir,
      "leaves",
      [
        "c=$(cat count 2>/dev/null || echo 0); c=$((c+1)); echo $c > count",
        "if [ $c -eq 1 ]; then sleep 30 >/dev/null 2>&1 & echo $! > background; echo $! >> pids; exit 1; fi",
        // Still there and not a zombie (which init may take a while to reap): it runs beside this attempt.
        's=$(cut -d" " -f3 "/proc/$(cat background)/stat" 2>/dev/null)',
        '[ -n "$s" ] && [ "$s" != Z ] && echo overlap > overlap',
        "exit 0",
      ].join("\n"),
    );
    const run = runCli(dir, "run", ["--backoff", "none", "--max-retries", "1", "--", leaves]);
    expect(run.status).toBe(0);
    expect(readFileSync(join(dir, "count"), "utf8").trim()).toBe("2");
    expect(existsSync(join(dir, "overlap"))).toBe(false);
    expect(await leftovers(dir)).toEqual([]);
  });
});

/** An HTTP server on 127.0.0.1 that answers every request with `status` and `headers`; counts them. */
async function loopbackServer(status: number, headers: Record<string, string> = {}) {
  let requests = 0;
  const server: Server = createServer((_req, res) => {
    requests += 1;
    res.writeHead(status, headers).end();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/`,
    port,
    requests: () => requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

const LOAD = ["--clients", "2", "--think", "10ms", "--timeout", "500ms", "--interval", "10s"];

describe("robustly load never leaves loopback, and says when nothing answered", () => {
  it("a redirect away from loopback is refused with a clear error, not followed, and the exit is non-zero", async () => {
    // TEST-NET-1: an address that is not loopback, and that nothing answers.
    const server = await loopbackServer(302, { location: "http://192.0.2.1/elsewhere" });
    const run = startCli(dir, "load", ["--url", server.url, "--duration", "3s", ...LOAD]);
    try {
      const { code } = await run.exited;
      expect(code).toBe(1);
      expect(run.output.stderr).toContain(
        `robustly: ${server.url} redirected to http://192.0.2.1/elsewhere, which is not on a loopback address: robustly load never leaves loopback`,
      );
      expect(server.requests()).toBeGreaterThan(0);
    } finally {
      run.child.kill("SIGKILL");
      await server.close();
    }
  });

  it("against a port where nothing listens, the exit is non-zero and says that nothing answered", async () => {
    const gone = await loopbackServer(200);
    await gone.close();
    const run = startCli(dir, "load", ["--url", gone.url, "--duration", "1s", ...LOAD]);
    try {
      const { code } = await run.exited;
      expect(code).toBe(1);
      expect(run.output.stderr).toMatch(
        new RegExp(
          `^robustly: nothing answered at ${gone.url.replace(/\./g, "\\.")}: \\d+ attempts, none got an HTTP answer\n$`,
        ),
      );
    } finally {
      run.child.kill("SIGKILL");
    }
  });

  it("a redirect to another loopback URL is still followed", async () => {
    const target = await loopbackServer(200);
    const server = await loopbackServer(307, { location: `${target.url}moved` });
    const load = startLoad({ url: server.url, clients: 2, think: 10, timeout: 1000 });
    try {
      const deadline = performance.now() + 10_000;
      while (load.snapshot().ok < 3 && performance.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    } finally {
      const summary = await load.stop();
      await Promise.all([server.close(), target.close()]);
      expect(summary.errors).toBe(0);
      expect(target.requests()).toBeGreaterThanOrEqual(3);
    }
  });
});

/** `robustly plot --out DIR` of one small policy chart (policy.svg and index.html), and `more` flags. */
async function plotInto(out: string, ...more: string[]): Promise<number> {
  const quiet = new Writable({ write: (_chunk, _encoding, done) => done() });
  return runPlot(
    ["--out", out, "--backoff", "constant", "--jitter", "none", "--retries", "3", ...more],
    quiet,
  );
}

describe("robustly plot --out replaces only its own charts, never through a symbolic link", () => {
  it("a file that is not a chart robustly plot wrote is refused unless --force; its own charts are replaced", async () => {
    const out = join(dir, "plots");
    mkdirSync(out);
    writeFileSync(join(out, "index.html"), "my notes\n");
    await expect(plotInto(out)).rejects.toThrow(
      `${join(out, "index.html")} exists and is not a file robustly plot wrote; pass --force to replace it`,
    );
    expect(readFileSync(join(out, "index.html"), "utf8")).toBe("my notes\n");
    expect(readdirSync(out)).toEqual(["index.html"]);
    expect(await plotInto(out, "--force")).toBe(0);
    expect(readFileSync(join(out, "index.html"), "utf8")).toContain("<!doctype html>");
    // What it wrote itself it replaces without --force, and it leaves no temporary file behind.
    expect(await plotInto(out)).toBe(0);
    expect(readdirSync(out).sort()).toEqual(["index.html", "policy.svg"]);
  });

  it("a symbolic link, as a chart's file or as --out itself, is never followed", async () => {
    const victim = join(dir, "victim.txt");
    writeFileSync(victim, "precious\n");
    const out = join(dir, "plots");
    mkdirSync(out);
    symlinkSync(victim, join(out, "policy.svg"));
    await expect(plotInto(out)).rejects.toThrow(
      `${join(out, "policy.svg")} is a symbolic link: robustly plot never writes through one; pass --force to replace the link itself`,
    );
    expect(readFileSync(victim, "utf8")).toBe("precious\n");
    expect(await plotInto(out, "--force")).toBe(0);
    expect(readFileSync(victim, "utf8")).toBe("precious\n");
    expect(lstatSync(join(out, "policy.svg")).isSymbolicLink()).toBe(false);

    const real = join(dir, "real");
    mkdirSync(real);
    symlinkSync(real, join(dir, "linked"));
    for (const force of [[], ["--force"]]) {
      await expect(plotInto(join(dir, "linked"), ...force)).rejects.toThrow(
        `--out ${join(dir, "linked")} is a symbolic link: robustly plot never follows one; name the directory itself`,
      );
    }
    expect(readdirSync(real)).toEqual([]);
  });
});
