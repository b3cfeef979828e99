// Prose a newcomer can follow: a page that speaks of "the note" names it, and counts in prose match the
// lists beside them.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("..", import.meta.url));
const TITLE = "Software Robustness and Timeout Retry Backoff Paradigms";
const pages = [
  "README.md",
  ...readdirSync(join(root, "docs"))
    .filter((f) => f.endsWith(".md"))
    .map((f) => join("docs", f)),
];

describe("the design note, named", () => {
  it.each(pages)("%s names the design note wherever it speaks of it", (page) => {
    const text = readFileSync(join(root, page), "utf8");
    if (/\b(the|The) (design )?note\b/.test(text)) expect(text).toContain(TITLE);
  });

  it("docs/entry-points.md lists the workers without a count", () => {
    const text = readFileSync(join(root, "docs/entry-points.md"), "utf8");
    expect(text).not.toMatch(/\b(two|three|four|five) kinds of worker/);
  });
});
