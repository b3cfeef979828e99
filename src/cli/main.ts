#!/usr/bin/env node
/**
 * The `robustly` command: `simulate` (the default job), `serve` and `load`.
 */
import { readFileSync } from "node:fs";
import { MissingPackageError } from "../core/optional.js";
import { UsageError } from "./args.js";

/** The errors that are the user's to fix, said in one line without a stack trace. */
const isUsers = (error: unknown): error is Error =>
  error instanceof UsageError ||
  error instanceof MissingPackageError ||
  (error instanceof Error && error.name === "OptionError");

/** The package's version, read from its package.json (two folders up, from src/cli or dist/cli). */
function version(): string {
  const pkg = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as {
    version: string;
  };
  return pkg.version;
}

const COMMANDS = {
  simulate: "compare retry strategies against a simulated struggling server (virtual time)",
  schedule: "show the delays a retry policy sleeps, and the total delays of common strategies",
  run: "run a command and retry it by a policy when it fails",
  plot: "draw every backoff and jitter strategy, or a policy's delays (SVG and an HTML page)",
  serve: "run a slow-under-load server over HTTP on 127.0.0.1",
  load: "run real clients that retry against a server, printing ok/error/timeout rates",
} as const;

const HELP = `robustly: reach unreliable resources robustly

Usage: robustly <command> [options]

${Object.entries(COMMANDS)
  .map(([name, what]) => `  ${name.padEnd(10)} ${what}`)
  .join("\n")}

robustly <command> --help lists a command's options; robustly --version prints the version.
`;

async function main(argv: readonly string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (command === "--version" || command === "-v") {
    process.stdout.write(`robustly ${version()}\n`);
    return 0;
  }
  if (command === undefined || command === "-h" || command === "--help" || command === "help") {
    process.stdout.write(HELP);
    return command === undefined ? 2 : 0;
  }
  switch (command) {
    case "simulate":
      return (await import("./simulate.js")).runSimulate(rest);
    case "schedule":
      return (await import("./schedule.js")).runSchedule(rest);
    case "run":
      return (await import("./run.js")).runRun(rest);
    case "plot":
      return (await import("./plot.js")).runPlot(rest);
    case "serve":
      return (await import("./serve.js")).runServe(rest);
    case "load":
      return (await import("./load.js")).runLoad(rest);
    default:
      throw new UsageError(
        `unknown command "${command}"; the commands are ${Object.keys(COMMANDS).join(", ")}`,
      );
  }
}

main(process.argv.slice(2)).then(
  (status) => {
    process.exitCode = status;
  },
  (error: unknown) => {
    // A mistake on the command line, a bad option or a missing optional package: one line, no stack trace.
    if (isUsers(error)) {
      process.stderr.write(`robustly: ${error.message}\n`);
      process.exitCode = 2;
    } else {
      process.stderr.write(
        `robustly: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
      );
      process.exitCode = 1;
    }
  },
);
