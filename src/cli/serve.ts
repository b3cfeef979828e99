// Placeholder, replaced by the real command.
export async function runServe(_argv: readonly string[]): Promise<number> {
  throw new Error("robustly serve is not built yet");
}
