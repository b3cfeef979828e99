// `npm test`'s pretest (scripts/test-tools.ts): what it decides for a machine, with the machine's answers
// injected, so no test here runs apt-get.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { CHROMIUM, type Machine, plan, TOOLS } from "../scripts/test-tools.js";

/** A machine that has `programs` and runs as root or not. */
const machine = (programs: readonly string[], root = true): Machine => ({
  has: (program) => programs.includes(program),
  isRoot: () => root,
});

const everything = ["redis-server", "redis-cli", CHROMIUM, "apt-get"];

describe("the pretest's plan", () => {
  it("does nothing when every program is there", () => {
    expect(plan(machine(everything))).toEqual({ action: "ready" });
    expect(plan(machine(everything, false))).toEqual({ action: "ready" });
  });

  it("installs what is missing with apt-get, non-interactively, saying so in one line", () => {
    const decided = plan(machine(["redis-cli", "apt-get"]));
    expect(decided).toEqual({
      action: "install",
      message: expect.stringMatching(/^pretest: installing redis-server, chromium with apt-get for /),
      packages: ["redis-server", "chromium"],
      commands: [
        ["apt-get", "update", "-q"],
        ["apt-get", "install", "-y", "-q", "--no-install-recommends", "redis-server", "chromium"],
      ],
    });
    if (decided.action === "install") expect(decided.message).not.toContain("\n");
  });

  it("names each package once, when two missing programs come from one package", () => {
    const tools = [...TOOLS, { program: "redis-benchmark", debianPackage: "redis-tools", neededBy: "x" }];
    const decided = plan(machine(["redis-server", CHROMIUM, "apt-get"]), tools);
    expect(decided.action === "install" && decided.packages).toEqual(["redis-tools"]);
  });

  it("fails with the exact command to run when not root", () => {
    const decided = plan(machine(["redis-server", "redis-cli", "apt-get"], false));
    expect(decided).toEqual({
      action: "fail",
      message: expect.stringContaining(
        "sudo DEBIAN_FRONTEND=noninteractive sh -c 'apt-get update -q && apt-get install -y -q --no-install-recommends chromium'",
      ),
    });
  });

  it("fails naming the packages when there is no apt-get, root or not", () => {
    for (const root of [true, false]) {
      const decided = plan(machine([CHROMIUM], root));
      expect(decided.action).toBe("fail");
      if (decided.action === "fail") {
        expect(decided.message).toContain("no apt-get");
        expect(decided.message).toContain("redis-server, redis-tools");
        expect(decided.message).not.toContain("\n");
      }
    }
  });

  it("runs before `npm test`, and continuous integration installs nothing by itself", () => {
    const pkg = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8"));
    expect(pkg.scripts.pretest).toBe("tsx scripts/test-tools.ts");
    const ci = readFileSync(new URL("../.ci/run", import.meta.url), "utf8");
    expect(ci).toContain("npm test");
    expect(ci).not.toMatch(/apt-get|chromium|redis-server/);
  });
});
