// Headless Chromium for the browser tests: Debian's /usr/bin/chromium, started in a process group of its
// own with a fresh profile and no background networking (this machine has no network beyond loopback),
// and killed with everything it started.
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { CHROMIUM } from "../../scripts/test-tools.js";

export { CHROMIUM };

export interface Browser {
  readonly child: ChildProcess;
  /** Resolves with the exit code; rejects after the time allowed. */
  readonly done: Promise<number>;
  /** Kills the browser and whatever it started, if still running, and removes its profile. */
  close(): void;
}

/**
 * Starts headless Chromium with `args` after the usual flags; it has `ms` to exit by itself. With
 * `devtools`, it is driven through the DevTools protocol over a pipe (its file descriptors 3 and 4, see
 * `connectDevTools` in devtools.ts) instead of by its command line alone.
 */
export function startChromium(args: readonly string[], ms: number, devtools = false): Browser {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `${CHROMIUM} is missing: this test needs Debian's chromium, which npm test's pretest installs (apt-get install -y chromium)`,
    );
  }
  const profile = mkdtempSync(join(tmpdir(), "robustly-chromium-"));
  const child = spawn(
    CHROMIUM,
    [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      `--user-data-dir=${profile}`,
      ...(devtools ? ["--remote-debugging-pipe"] : []),
      ...args,
    ],
    {
      detached: true,
      stdio: devtools ? ["ignore", "ignore", "pipe", "pipe", "pipe"] : ["ignore", "ignore", "pipe"],
    },
  );
  let stderr = "";
  child.stderr?.on("data", (chunk) => {
    stderr += String(chunk);
  });
  const done = new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`chromium took over ${ms} ms\n${stderr}`)), ms);
    child.on("error", (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.on("exit", (code) => {
      clearTimeout(timer);
      resolve(code ?? -1);
    });
  });
  // The caller may never await `done` (a page that reports back is killed instead).
  done.catch(() => {});
  return {
    child,
    done,
    close() {
      if (child.pid !== undefined && child.exitCode === null && child.signalCode === null) {
        try {
          process.kill(-child.pid, "SIGKILL");
        } catch {
          child.kill("SIGKILL");
        }
      }
      rmSync(profile, { recursive: true, force: true, maxRetries: 5 });
    },
  };
}
