/**
 * The worker side of `simulateInThreads`: plans the simulation it is given (as the main thread did) and
 * runs the units it is sent, a batch at a time, answering each batch with its tallies.
 */
import { parentPort, workerData } from "node:worker_threads";
import { plan } from "./simulate.js";
import type { FromThread, ThreadData, ToThread } from "./threads.js";

const port = parentPort;
if (port === null) throw new Error("thread-worker.js runs only in a worker thread of simulateInThreads");
const { options, progress } = workerData as ThreadData;
const planned = plan(options);
const send = (message: FromThread) => port.postMessage(message);
port.on("message", async ({ units }: ToThread) => {
  const tallies = [];
  for (const unit of units) {
    tallies.push(await planned.run(unit, progress ? (fraction) => send({ unit, fraction }) : undefined));
  }
  send({ units, tallies });
});
