// Placeholder, replaced by the real report writer.
import type { SimulationResult } from "../sim/simulate.js";
export async function writeReport(_result: SimulationResult, _dir: string): Promise<string[]> {
  throw new Error("--report is not built yet");
}
