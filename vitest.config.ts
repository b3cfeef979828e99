import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

export default defineConfig({
  resolve: {
    alias: {
      "robustly/testing": fileURLToPath(new URL("./src/testing.ts", import.meta.url)),
      "robustly/sim": fileURLToPath(new URL("./src/sim/index.ts", import.meta.url)),
      robustly: fileURLToPath(new URL("./src/index.ts", import.meta.url)),
    },
  },
  test: {
    include: ["src/**/*.test.ts", "test/**/*.test.ts"],
    exclude: process.env.ROBUSTLY_NESTED
      ? ["test/readme.test.ts", "**/node_modules/**"]
      : ["**/node_modules/**"],
    testTimeout: 30_000,
  },
});
