// Placeholder, replaced by the real command.
export async function runLoad(_argv: readonly string[]): Promise<number> {
  throw new Error("robustly load is not built yet");
}
