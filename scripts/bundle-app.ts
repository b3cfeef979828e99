/**
 * An app bundled as a browser app's bundler would bundle it (esbuild --bundle --minify --format=esm
 * --platform=browser): its minified output, and the bytes each module puts in it. `npm run size` and
 * test/bundle.test.ts measure with it, so that both bundle the same way.
 */
import { build } from "esbuild";

export interface BundledApp {
  /** The minified output. */
  readonly output: Uint8Array;
  /** Each module's path, as esbuild names it, and its bytes in the output, for those with any. */
  readonly modules: readonly { readonly path: string; readonly bytes: number }[];
}

/** Bundles `app` (JavaScript source), resolving its imports from `resolveDir` and `alias`. */
export async function bundleApp(
  app: string,
  resolveDir: string,
  alias: Record<string, string>,
): Promise<BundledApp> {
  const result = await build({
    stdin: { contents: app, resolveDir, loader: "js", sourcefile: "app.js" },
    bundle: true,
    minify: true,
    format: "esm",
    platform: "browser",
    write: false,
    metafile: true,
    logLevel: "silent",
    alias,
  });
  const output = result.outputFiles[0];
  if (output === undefined) throw new Error("esbuild wrote no output");
  const inputs = Object.values(result.metafile.outputs)[0]?.inputs ?? {};
  const modules = Object.entries(inputs)
    .map(([path, input]) => ({ path, bytes: input.bytesInOutput }))
    .filter((m) => m.bytes > 0 && m.path !== "app.js");
  return { output: output.contents, modules };
}
