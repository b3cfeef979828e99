import { simulate } from "./src/sim/simulate.ts";
for (const backlog of [256, 512, 1024]) {
  const r = simulate({ scenario: "outage", seed: 1, strategies: ["fixed", "exponential", "robustly"], latencyServer: { backlog } });
  for (const run of r.runs) {
    console.log(backlog, run.strategy.padEnd(12), run.recovered, run.recoveryTime, "peak", run.peakConcurrency, "c:", run.series.slice(46, 70).map((s) => s.concurrency).join(","));
    console.log("      ok:", run.series.slice(46, 70).map((s) => s.successes).join(","), " offered:", run.series.slice(46, 60).map((s) => s.offered).join(","));
  }
}
