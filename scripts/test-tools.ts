/**
 * `npm test`'s `pretest`: the programs some tests start for real, found or installed before the suite runs.
 * The shared-state tests start their own `redis-server` (and build a cluster with `redis-cli`); the browser
 * tests drive Debian's Chromium. When one is missing, this says in one line what it installs, installs it
 * with apt-get, non-interactively; when it cannot (not root, or no apt-get), it fails with the command to
 * run. No test is skipped for want of a program: the suite either has them all or does not start.
 * Continuous integration (`.ci/run`) runs it too, through `npm test`.
 */
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { pathToFileURL } from "node:url";

/** Where the browser tests look for Chromium (Debian's package puts it there). */
export const CHROMIUM = "/usr/bin/chromium";

/** A program the tests need, and the Debian package that has it. */
export interface Tool {
  /** A command looked up on the PATH, or an absolute path. */
  readonly program: string;
  readonly debianPackage: string;
  /** Which tests need it, for the message. */
  readonly neededBy: string;
}

export const TOOLS: readonly Tool[] = [
  { program: "redis-server", debianPackage: "redis-server", neededBy: "the shared-state tests" },
  { program: "redis-cli", debianPackage: "redis-tools", neededBy: "the Redis Cluster tests" },
  { program: CHROMIUM, debianPackage: "chromium", neededBy: "the browser tests" },
];

/** What the plan needs to know about the machine: injected, so the decisions are tested without apt. */
export interface Machine {
  /** Whether `program` (a command on the PATH or an absolute path) is there. */
  has(program: string): boolean;
  /** Whether this process may install packages (runs as root). */
  isRoot(): boolean;
}

export type Plan =
  | { readonly action: "ready" }
  | {
      readonly action: "install";
      /** The one line said before installing. */
      readonly message: string;
      readonly packages: readonly string[];
      /** The commands to run, each an argv. */
      readonly commands: readonly (readonly string[])[];
    }
  | { readonly action: "fail"; readonly message: string };

const unique = (items: readonly string[]) => [...new Set(items)];

/** The apt-get commands that install `packages`. */
export function aptCommands(packages: readonly string[]): string[][] {
  return [
    ["apt-get", "update", "-q"],
    ["apt-get", "install", "-y", "-q", "--no-install-recommends", ...packages],
  ];
}

const shell = (commands: readonly (readonly string[])[], prefix = "") =>
  commands.map((argv) => `${prefix}${argv.join(" ")}`).join(" && ");

/** What to do on `machine` so that every tool in `tools` is there. */
export function plan(machine: Machine, tools: readonly Tool[] = TOOLS): Plan {
  const missing = tools.filter((tool) => !machine.has(tool.program));
  if (missing.length === 0) return { action: "ready" };
  const packages = unique(missing.map((tool) => tool.debianPackage));
  const what = missing.map((tool) => `${tool.program} (${tool.neededBy})`).join(", ");
  const commands = aptCommands(packages);
  if (!machine.has("apt-get")) {
    return {
      action: "fail",
      message: `pretest: missing ${what}; this machine has no apt-get: install the Debian packages ${packages.join(", ")} or their equivalents, then run npm test again`,
    };
  }
  if (!machine.isRoot()) {
    return {
      action: "fail",
      message: `pretest: missing ${what}; install them with: sudo DEBIAN_FRONTEND=noninteractive sh -c '${shell(commands)}'`,
    };
  }
  return {
    action: "install",
    message: `pretest: installing ${packages.join(", ")} with apt-get for ${what}`,
    packages,
    commands,
  };
}

/** The machine this runs on. */
export const thisMachine: Machine = {
  has: (program) =>
    program.startsWith("/")
      ? existsSync(program)
      : spawnSync("sh", ["-c", 'command -v "$1"', "sh", program], { stdio: "ignore" }).status === 0,
  isRoot: () => process.getuid?.() === 0,
};

/** Carries out the plan for this machine; returns the exit status. */
function main(): number {
  const decided = plan(thisMachine);
  if (decided.action === "ready") return 0;
  if (decided.action === "fail") {
    process.stderr.write(`${decided.message}\n`);
    return 1;
  }
  process.stderr.write(`${decided.message}\n`);
  for (const argv of decided.commands) {
    const [command, ...args] = argv as [string, ...string[]];
    const run = spawnSync(command, args, {
      stdio: ["ignore", "ignore", "inherit"],
      env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" },
    });
    if (run.status !== 0) {
      process.stderr.write(`pretest: ${argv.join(" ")} failed (status ${run.status}); run it by hand\n`);
      return 1;
    }
  }
  // Debian's package starts a system-wide server; the tests start their own, on free ports.
  if (decided.packages.includes("redis-server") && thisMachine.has("service")) {
    spawnSync("service", ["redis-server", "stop"], { stdio: "ignore" });
  }
  const still = TOOLS.filter((tool) => !thisMachine.has(tool.program)).map((tool) => tool.program);
  if (still.length > 0) {
    process.stderr.write(`pretest: ${still.join(", ")} still missing after apt-get install\n`);
    return 1;
  }
  return 0;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) process.exitCode = main();
