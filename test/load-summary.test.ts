/**
 * `robustly load`'s summary counts every request it started: those still in progress when the load
 * stopped are said, not silently missing. A server on loopback that never answers keeps every request
 * in progress.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, expect, it } from "vitest";
import { startLoad } from "../src/cli/load.js";
import { within } from "./support/drive.js";

let server: Server | undefined;
afterEach(async () => {
  server?.closeAllConnections();
  await new Promise<void>((resolve) => server?.close(() => resolve()) ?? resolve());
  server = undefined;
});

it("the summary counts the requests still in progress when the load stopped", async () => {
  let arrived = 0;
  let heard!: () => void;
  const enough = new Promise<void>((resolve) => {
    heard = resolve;
  });
  server = createServer(() => {
    // Never answers: the request stays in progress until the load stops.
    arrived += 1;
    if (arrived === 3) heard();
  });
  await new Promise<void>((resolve) => server?.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  const load = startLoad({ url: `http://127.0.0.1:${port}/`, clients: 3, think: 1, timeout: 60_000 });
  await within(10_000, "three requests at the server", enough);
  const summary = await within(10_000, "the load to stop", load.stop());
  expect(summary.requests).toBe(3);
  expect(summary.stopped).toBe(3);
  expect(summary.ok + summary.errors + summary.timedOut).toBe(0);
  expect(summary.inFlight).toBe(0);
});
