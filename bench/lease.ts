/**
 * What the shared budget's leases cost a process: the share of its retry requests refused only because
 * its lease ran out before the next exchange, while one budget of the same options, fed the same requests
 * and the retries the shared one granted, would still have allowed them. One process, default options
 * (ratio 0.2, 10 per second, window 10 s, syncEvery 100 ms), Poisson arrivals, 120 s of virtual time, a store
 * answering after 0 or 10 ms. Deterministic (a seeded random and a virtual clock): `npm run bench` runs it
 * last, or `node --import tsx bench/lease.ts`.
 */
import { memoryStore, retryBudget, type Store, seededRandom } from "../src/index.js";
import { VirtualClock } from "../src/testing.js";

/** `inner`, answering after `latency` ms on `clock`. */
function slow(inner: Store, clock: VirtualClock, latency: number): Store {
  const later = <T>(run: () => Promise<T>) =>
    latency === 0
      ? run()
      : new Promise<T>((resolve, reject) => clock.setTimer(latency, () => run().then(resolve, reject)));
  return {
    name: "slow",
    read: (key) => later(() => inner.read(key)),
    write: (key, version, value, expire) => later(() => inner.write(key, version, value, expire)),
    close: () => inner.close(),
  };
}

async function refusedWithRoom(requestsPerSecond: number, retriesPerSecond: number, latency: number) {
  const clock = new VirtualClock(1_000_000);
  const random = seededRandom(7);
  const shared = retryBudget({ store: slow(memoryStore({ clock }), clock, latency), key: "k", clock });
  const alone = retryBudget({ clock });
  const ready = shared.ready();
  await clock.advance(50);
  await ready;
  // Knuth's method for a Poisson draw with the given mean.
  const poisson = (mean: number) => {
    const limit = Math.exp(-mean);
    let k = 0;
    let p = random();
    while (p > limit) {
      k += 1;
      p *= random();
    }
    return k;
  };
  let asked = 0;
  let refused = 0;
  let withRoom = 0;
  for (let ms = 0; ms < 120_000; ms++) {
    for (let i = poisson(requestsPerSecond / 1000); i > 0; i--) {
      shared.request();
      alone.request();
    }
    for (let i = poisson(retriesPerSecond / 1000); i > 0; i--) {
      if (ms < 2000) continue; // the first two seconds warm the lease's sizing up
      asked += 1;
      if (shared.tryRetry()) alone.tryRetry();
      else {
        refused += 1;
        if (alone.available) withRoom += 1;
      }
    }
    await clock.advance(1);
  }
  const closed = shared.close();
  await clock.advance(1000);
  await closed;
  return { asked, refused, withRoom };
}

const lines = ["requests/s  retries/s  store latency  retries asked  refused  refused with room"];
for (const [requests, retries] of [
  [100, 1],
  [100, 10],
  [1000, 100],
] as const) {
  for (const latency of [0, 10]) {
    const r = await refusedWithRoom(requests, retries, latency);
    lines.push(
      `${String(requests).padStart(10)}  ${String(retries).padStart(9)}  ${`${latency} ms`.padStart(13)}  ${String(r.asked).padStart(13)}  ${String(r.refused).padStart(7)}  ${`${r.withRoom} (${((100 * r.withRoom) / r.asked).toFixed(2)}%)`.padStart(17)}`,
    );
  }
}
process.stdout.write(`${lines.join("\n")}\n`);
