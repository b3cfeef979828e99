import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

export default defineConfig({
  resolve: {
    alias: {
      "robustly/testing": fileURLToPath(new URL("./src/testing.ts", import.meta.url)),
      "robustly/steps": fileURLToPath(new URL("./src/pipeline/steps.ts", import.meta.url)),
      "robustly/backoff": fileURLToPath(new URL("./src/backoff/strategies.ts", import.meta.url)),
      "robustly/jitter": fileURLToPath(new URL("./src/jitter/strategies.ts", import.meta.url)),
      "robustly/sim": fileURLToPath(new URL("./src/sim/index.ts", import.meta.url)),
      "robustly/telemetry": fileURLToPath(new URL("./src/telemetry/index.ts", import.meta.url)),
      "robustly/fetch": fileURLToPath(new URL("./src/http/index.ts", import.meta.url)),
      "robustly/supervisor": fileURLToPath(new URL("./src/supervisor/index.ts", import.meta.url)),
      "robustly/redis": fileURLToPath(new URL("./src/store/redis.ts", import.meta.url)),
      robustly: fileURLToPath(new URL("./src/index.ts", import.meta.url)),
    },
  },
  test: {
    include: ["src/**/*.test.ts", "test/**/*.test.ts"],
    exclude: ["**/node_modules/**"],
    testTimeout: 30_000,
    // Hooks that start real processes (a redis-server) get as long as a test: on a busy two-core machine
    // one took over 10 s to answer.
    hookTimeout: 30_000,
    // One test file at a time: the real-time tests (a real server paused with SIGSTOP, commands killed on
    // timeouts, a browser) measure what happens within seconds;
    // run side by side on a two-core machine they would starve each other.
    fileParallelism: false,
  },
});
