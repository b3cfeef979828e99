// Marks each bin of package.json executable once the build has written it. npm sets the run bit on the bins of
// a package it installs, but not on the root package's own in a clone, where `npm ci` builds dist/ through
// prepare: without it `npx robustly` there says "Permission denied". A bin without a shebang fails the build.
import { chmodSync, readFileSync, statSync } from "node:fs";

const root = new URL("../", import.meta.url);
const { bin = {} } = JSON.parse(readFileSync(new URL("package.json", root), "utf8"));
for (const path of typeof bin === "string" ? [bin] : Object.values(bin)) {
  const file = new URL(path, root);
  if (!readFileSync(file, "utf8").startsWith("#!/usr/bin/env node\n")) {
    throw new Error(`${path} does not start with "#!/usr/bin/env node"`);
  }
  chmodSync(file, statSync(file).mode | 0o111);
}
