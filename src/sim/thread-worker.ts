/**
 * The worker side of `simulateInThreads`: plans the simulation it is given (as the main thread did) and
 * runs the units it is sent, one at a time, answering each with its tally.
 */
import { parentPort, workerData } from "node:worker_threads";
import { plan } from "./simulate.js";
import type { FromThread, ToThread } from "./threads.js";

const port = parentPort;
if (port === null) throw new Error("thread-worker.js runs only in a worker thread of simulateInThreads");
const planned = plan((workerData as { options: Parameters<typeof plan>[0] }).options);
const send = (message: FromThread) => port.postMessage(message);
port.on("message", async ({ unit }: ToThread) => {
  const tally = await planned.run(unit, (fraction) => send({ unit, fraction }));
  send({ unit, tally });
});
