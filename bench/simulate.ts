/**
 * The simulator's speed, against its goals: the event queue alone (at 1,000 and at 1,000,000 pending
 * events), events per second through the full outage model, the default outage with every strategy,
 * 100,000 clients (time and peak memory, in a process of its own), the contention scenario at 10,000
 * clients, and the speed-up of worker threads on AWS's contention sweep. Each goal prints its measured
 * value and PASS or FAIL.
 *
 * Run with `npm run bench` (after the call-overhead benchmark) or `node --import tsx bench/simulate.ts`
 * (after `npm run build`). Measures the compiled `dist/` build, as published. `--quick` skips the
 * 100,000-client and 10,000-client runs.
 */
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import os from "node:os";
import { resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const url = (path: string) => pathToFileURL(resolve(root, "dist", path)).href;
if (!existsSync(resolve(root, "dist", "sim", "threads.js"))) {
  throw new Error("dist/ is missing or stale: run `npm run build` first");
}
const { Simulation } = (await import(url("sim/engine.js"))) as typeof import("../src/sim/engine.js");
const { simulate } = (await import(url("sim/simulate.js"))) as typeof import("../src/sim/simulate.js");
const { simulateInThreads } = (await import(url("sim/threads.js"))) as typeof import("../src/sim/threads.js");
const quick = process.argv.includes("--quick");

const out: string[] = [];
const say = (line: string) => {
  out.push(line);
  process.stderr.write(`${line}\n`);
};
const verdict = (ok: boolean) => (ok ? "PASS" : "FAIL");
const millions = (events: number, ms: number) => ((events / ms) * 1000) / 1e6;

/**
 * The best of `times` runs, in wall time and in CPU time (of the whole process): on a machine busy with
 * other work, wall time includes waiting for a core, and CPU time is the better measure of the code.
 */
async function best<T>(
  times: number,
  run: () => T | Promise<T>,
): Promise<{ ms: number; cpuMs: number; value: T }> {
  let bestMs = Number.POSITIVE_INFINITY;
  let bestCpu = Number.POSITIVE_INFINITY;
  let value: T | undefined;
  for (let i = 0; i < times; i++) {
    const cpu = process.cpuUsage();
    const start = performance.now();
    value = await run();
    bestMs = Math.min(bestMs, performance.now() - start);
    const used = process.cpuUsage(cpu);
    bestCpu = Math.min(bestCpu, (used.user + used.system) / 1000);
  }
  return { ms: bestMs, cpuMs: bestCpu, value: value as T };
}

say(
  `Node ${process.version} on ${os.platform()}-${os.arch()}, ${os.availableParallelism()} CPUs (${os.cpus()[0]?.model ?? "unknown"}), load average ${os
    .loadavg()
    .map((l) => l.toFixed(1))
    .join(" ")}`,
);

// 1. The event queue and loop alone: `pending` timers that each reschedule themselves at a random delay.
for (const pending of [1000, 1_000_000]) {
  const events = 3_000_000;
  const { ms, cpuMs } = await best(3, () => {
    const sim = new Simulation(1);
    let left = events;
    const tick = () => {
      if (--left > 0) sim.after(sim.random() * 100, tick);
    };
    for (let i = 0; i < pending; i++) sim.after(sim.random() * 100, tick);
    sim.run(Number.POSITIVE_INFINITY);
    return sim.events;
  });
  say(
    `engine alone, ${pending.toLocaleString("en-US")} pending: ${events.toLocaleString("en-US")} events in ${ms.toFixed(0)} ms = ${millions(events, ms).toFixed(2)} million events/s (best of 3; ${millions(events, cpuMs).toFixed(2)} million per CPU second)`,
  );
}

// 2. The default outage scenario, every strategy: what `robustly simulate` runs with no flags.
{
  const { ms, cpuMs, value } = await best(3, () => simulate());
  const events = value.runs.reduce((sum, r) => sum + r.events, 0);
  const rate = millions(events, ms);
  say(
    `goal: events through the full outage model >= 2 million/s: ${rate.toFixed(2)} million/s (${events.toLocaleString("en-US")} events in ${ms.toFixed(0)} ms, best of 3; ${millions(events, cpuMs).toFixed(2)} million per CPU second) ${verdict(rate >= 2)}`,
  );
  say(
    `goal: the 1,000-client outage with every strategy (${value.runs.length}) < 1 s: ${(ms / 1000).toFixed(2)} s ${verdict(ms < 1000)}`,
  );
  for (const r of value.runs) {
    say(
      `  ${r.strategy.padEnd(20)} ${r.events.toLocaleString("en-US").padStart(9)} events, recovered: ${r.recovered}`,
    );
  }
}

// 3. 100,000 clients, the default outage with every strategy, in a process of its own for its peak memory.
if (!quick) {
  const script = `
    const { simulate } = await import(${JSON.stringify(url("sim/simulate.js"))});
    const start = performance.now();
    const result = simulate({ clients: [100000] });
    const ms = performance.now() - start;
    const events = result.runs.reduce((sum, r) => sum + r.events, 0);
    const { userCPUTime, systemCPUTime, maxRSS } = process.resourceUsage();
    console.log(JSON.stringify({ ms, cpuMs: (userCPUTime + systemCPUTime) / 1000, events, maxRss: maxRSS * 1024 }));`;
  let measured: { ms: number; cpuMs: number; events: number; maxRss: number } | undefined;
  let failure = "";
  try {
    // A heap limit of 2 GiB: a run that needs more fails the goal at once instead of swapping.
    const text = execFileSync(
      process.execPath,
      ["--max-old-space-size=2048", "--input-type=module", "-e", script],
      {
        encoding: "utf8",
        stdio: ["ignore", "pipe", "pipe"],
        maxBuffer: 1 << 20,
      },
    );
    measured = JSON.parse(text);
  } catch (error) {
    failure =
      String((error as { stderr?: string }).stderr ?? error)
        .split("\n")
        .find((l) => /memory|Error/.test(l)) ?? "failed";
  }
  if (measured === undefined) {
    say(`goal: 100,000 clients, every strategy, < 60 s and < 2 GB: did not finish (${failure}) FAIL`);
  } else {
    const gb = measured.maxRss / 2 ** 30;
    say(
      `goal: 100,000 clients, every strategy, < 60 s and < 2 GB: ${(measured.ms / 1000).toFixed(1)} s (${(measured.cpuMs / 1000).toFixed(1)} s CPU), peak RSS ${gb.toFixed(2)} GiB, ${measured.events.toLocaleString("en-US")} events = ${millions(measured.events, measured.ms).toFixed(2)} million/s ${verdict(measured.ms < 60_000 && gb < 2)}`,
    );
  }
}

// 4. Contention: each strategy alone as the clients grow. The writes are the model's own work (every
// conflict is a simulated write that lost a race), so how they grow is the model's; what the engine
// adds is the time per event. At 10,000 clients, each strategy whose writes grow slower than n^1.8
// runs; the others (no backoff, and a jitter that resets to 0) grow as n² and would take ~10⁸ events.
{
  const { SCENARIOS } = (await import(url("sim/simulate.js"))) as typeof import("../src/sim/simulate.js");
  const counts = quick ? [1000, 2000] : [1000, 2000, 4000];
  const cpuMs = (from: NodeJS.CpuUsage) => {
    const used = process.cpuUsage(from);
    return (used.user + used.system) / 1000;
  };
  const one = (strategy: string, n: number) => {
    const cpu = process.cpuUsage();
    const start = performance.now();
    // One run (one seed) per point: the scenario's default averages 100.
    const run = simulate({ scenario: "contention", clients: [n], strategies: [strategy], runs: 1 }).runs[0];
    if (run === undefined) throw new Error("no run");
    return { ms: performance.now() - start, cpu: cpuMs(cpu), events: run.events, writes: run.work };
  };
  const growth: { strategy: string; exponent: number }[] = [];
  for (const { name } of SCENARIOS.contention) {
    const rows = counts.map((n) => ({ n, ...one(name, n) }));
    const [a, b] = rows.slice(-2) as [(typeof rows)[number], (typeof rows)[number]];
    const exponent = Math.log(b.writes / a.writes) / Math.log(b.n / a.n);
    growth.push({ strategy: name, exponent });
    say(
      `contention, ${name}: ${rows
        .map(
          (r) =>
            `${r.n.toLocaleString("en-US")} clients ${Math.round(r.writes).toLocaleString("en-US")} writes, ${r.events.toLocaleString("en-US")} events, ${((r.cpu * 1e6) / r.events).toFixed(0)} ns CPU each`,
        )
        .join("; ")}; writes grow as n^${exponent.toFixed(2)}`,
    );
  }
  if (!quick) {
    let all = true;
    for (const { strategy, exponent } of growth) {
      if (exponent >= 1.8) {
        all = false;
        say(
          `goal: contention, 10,000 clients, ${strategy} < 10 s: not run, its writes grow as n^${exponent.toFixed(2)} (the model's own work) FAIL`,
        );
        continue;
      }
      const r = one(strategy, 10_000);
      all &&= r.ms < 10_000;
      say(
        `goal: contention, 10,000 clients, ${strategy} < 10 s: ${(r.ms / 1000).toFixed(1)} s (${(r.cpu / 1000).toFixed(1)} s CPU), ${r.events.toLocaleString("en-US")} events ${verdict(r.ms < 10_000)}`,
      );
    }
    say(`goal: contention, 10,000 clients, every strategy < 10 s: ${verdict(all)}`);
  }
}

// 5. AWS's contention sweep, 19 client counts (10 to 100 by 5) × 100 runs: one thread, then one per core.
// `process.cpuUsage` counts every thread of the process: on a machine busy with other work, where wall
// time says little, CPU time shows what the threads cost over one thread, and what the speed-up would be
// with the cores to themselves (the CPU time shared evenly among them).
{
  const sweep = {
    scenario: "contention" as const,
    clients: Array.from({ length: 19 }, (_, i) => 10 + 5 * i),
    runs: quick ? 10 : 100,
  };
  const jobs = os.availableParallelism();
  const timed = async <T>(run: () => T | Promise<T>) => {
    const cpu = process.cpuUsage();
    const start = performance.now();
    const value = await run();
    const used = process.cpuUsage(cpu);
    return { ms: performance.now() - start, cpu: (used.user + used.system) / 1000, value };
  };
  const one = await timed(() => simulate(sweep));
  const many = await timed(() => simulateInThreads(sweep, { jobs }));
  const same = JSON.stringify(one.value) === JSON.stringify(many.value);
  const speedUp = one.ms / many.ms;
  const idle = one.cpu / (many.cpu / jobs);
  say(
    `goal: the contention sweep (19 client counts × ${sweep.runs} runs, ${one.value.runs.length} points) on ${jobs} threads >= 1.8× one thread: ${(one.ms / 1000).toFixed(1)} s / ${(many.ms / 1000).toFixed(1)} s = ${speedUp.toFixed(2)}× wall; CPU ${(one.cpu / 1000).toFixed(1)} s on one thread, ${(many.cpu / 1000).toFixed(1)} s on ${jobs} (${idle.toFixed(2)}× with the cores to themselves); same result: ${same} ${verdict(speedUp >= 1.8 && same)}`,
  );
}

process.stdout.write(`${out.join("\n")}\n`);
