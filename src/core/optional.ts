/**
 * Optional peer packages (ioredis, vega, vega-lite), loaded on demand. When one is not installed, the
 * error says in one line what needs it and what to install, instead of the loader's stack trace.
 */

/** An optional package that is not installed; the message is one line ending in the npm command. */
export class MissingPackageError extends Error {
  override readonly name = "MissingPackageError";
  readonly packages: readonly string[];

  constructor(packages: readonly string[], neededBy: string, options?: ErrorOptions) {
    const plural = packages.length > 1 ? "s" : "";
    super(
      `${neededBy} needs the optional package${plural} ${packages.join(" and ")}: npm install ${packages.join(" ")}`,
      options,
    );
    this.packages = packages;
  }
}

/** Whether `error` (or what caused it) says a module could not be found. */
export function isModuleNotFound(error: unknown): boolean {
  for (let e = error, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth += 1) {
    const code = (e as { code?: unknown }).code;
    if (code === "ERR_MODULE_NOT_FOUND" || code === "MODULE_NOT_FOUND") return true;
    if (/Cannot find (package|module)|Failed to (resolve|load url)/i.test(e.message)) return true;
  }
  return false;
}

/**
 * Runs `load` (the package's own `import(…)`, written where it is needed, so bundlers see it); a package
 * that is not found becomes a MissingPackageError naming `packages`; any other failure passes unchanged.
 */
export async function loadOptional<T>(
  packages: readonly string[],
  neededBy: string,
  load: () => Promise<T>,
): Promise<T> {
  try {
    return await load();
  } catch (error) {
    if (isModuleNotFound(error)) throw new MissingPackageError(packages, neededBy, { cause: error });
    throw error;
  }
}
