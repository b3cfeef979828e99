// Empties dist/ before a build, so a file whose source was removed or renamed is never packed.
import { rmSync } from "node:fs";

rmSync(new URL("../dist", import.meta.url), { recursive: true, force: true });
