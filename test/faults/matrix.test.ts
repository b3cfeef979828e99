// The reliability page (docs/reliability.md) lists the fault matrix: every file of test/faults/ is named there, and
// the count it gives is the number of faults it lists.
import { readdirSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";

const section = readFileSync(new URL("../../docs/reliability.md", import.meta.url), "utf8");

describe("the fault matrix of docs/reliability.md", () => {
  it("names every file of test/faults/", () => {
    const files = readdirSync(new URL(".", import.meta.url)).filter(
      (f) => f.endsWith(".test.ts") && f !== "matrix.test.ts",
    );
    expect(files.length).toBeGreaterThan(5);
    for (const file of files) expect(section).toContain(`\`${file}\``);
  });

  it("gives the count of the faults it lists, numbered 1 to N", () => {
    const count = Number(/(\d+) faults in all/.exec(section)?.[1]);
    const numbers = [...section.matchAll(/\((\d+)(?:, (\d+))?\)/g)].flatMap((m) =>
      m
        .slice(1)
        .filter((n) => n !== undefined)
        .map(Number),
    );
    expect(numbers).toEqual(Array.from({ length: count }, (_, i) => i + 1));
  });
});
