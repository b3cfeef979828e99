// Drops the comments tsc copies into dist/*.js, as the last step of the build. The declarations keep theirs
// (an editor shows them), and go-to-definition leads through the declaration maps into src/, which ships:
// the comments in the compiled files helped no one and were a quarter of the package. esbuild rewrites
// each module as it is (same ESM, `target: esnext`, no minifying), keeping the `#!` line and the
// `@__PURE__` marks bundlers read.
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { transformSync } from "esbuild";

const dist = fileURLToPath(new URL("../dist", import.meta.url));
for (const entry of readdirSync(dist, { recursive: true, withFileTypes: true })) {
  if (!entry.isFile() || !entry.name.endsWith(".js")) continue;
  const file = join(entry.parentPath, entry.name);
  const { code } = transformSync(readFileSync(file, "utf8"), {
    format: "esm",
    target: "esnext",
    loader: "js",
    legalComments: "inline",
    sourcefile: file,
  });
  writeFileSync(file, code);
}
