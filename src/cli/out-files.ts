/**
 * Writing a command's files into a directory the user names (`robustly plot --out DIR`) without harm: a
 * file is replaced only when the command wrote it before (it carries the command's mark) or `--force` says
 * so; a symbolic link is never followed, neither the directory's nor a file's; and each file is written
 * whole to a temporary file beside it and renamed over the old one, so that no reader sees half a file.
 */
import { randomBytes } from "node:crypto";
import { constants, type Stats } from "node:fs";
import { access, stat as fsStat, lstat, mkdir, open, rename, rm, rmdir, writeFile } from "node:fs/promises";
import { basename, dirname, join, resolve } from "node:path";
import { UsageError } from "./args.js";

/** The bytes of a file read to find the mark: it sits near the start. */
const HEAD = 4096;

/** The Stats of `path` itself (a link, not its target), or undefined when nothing is there. */
async function stat(path: string): Promise<Stats | undefined> {
  try {
    return await lstat(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
}

/** Whether the regular file at `path` starts with `mark` within its first bytes (not through a link). */
async function marked(path: string, mark: string): Promise<boolean> {
  let file: Awaited<ReturnType<typeof open>> | undefined;
  try {
    file = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW);
    const { buffer, bytesRead } = await file.read(Buffer.alloc(HEAD), 0, HEAD, 0);
    return buffer.subarray(0, bytesRead).toString("utf8").includes(mark);
  } catch {
    return false;
  } finally {
    await file?.close();
  }
}

/** Creates `dir` (and its parents) unless it exists; refuses one that is a symbolic link. */
export async function outDir(dir: string, command: string): Promise<void> {
  if ((await stat(dir))?.isSymbolicLink()) {
    throw new UsageError(
      `--out ${dir} is a symbolic link: ${command} never follows one; name the directory itself`,
    );
  }
  await makeDir(dir);
}

/** The most directory levels `makeDir` makes for one path. */
const MAX_LEVELS = 64;

/**
 * Makes `dir` and its missing parents one level at a time, and returns those it made, outermost first.
 * Not `mkdir(…, { recursive: true })`: on a file system that refuses oddly (/proc answers ENOENT to a new
 * entry) Node's recursive mkdir retries for ever; here each level is tried once and the first refusal
 * is thrown.
 */
export async function makeDir(dir: string): Promise<string[]> {
  const missing: string[] = [];
  for (let path = resolve(dir); path !== dirname(path); path = dirname(path)) {
    const found = await statOrCode(path);
    // Something is there (a file above makes the next mkdir fail with ENOTDIR) or the path cannot be read.
    if (found !== "ENOENT" && found !== "ENOTDIR") break;
    if (missing.length === MAX_LEVELS) throw new Error(`${dir}: over ${MAX_LEVELS} directories to make`);
    missing.unshift(path);
  }
  const made: string[] = [];
  for (const path of missing) {
    try {
      await mkdir(path);
      made.push(path);
    } catch (error) {
      // Made meanwhile by someone else: fine, when it is a directory.
      if ((error as NodeJS.ErrnoException).code === "EEXIST" && (await fsStat(path)).isDirectory()) continue;
      throw error;
    }
  }
  return made;
}

/**
 * Runs `write` (a command writing its files into `dir`), saying any file-system error as one line naming
 * the flag and the path (a UsageError: exit status 2, no stack trace), e.g. when the directory vanished or
 * stopped being writable after the check.
 */
export async function writingTo<T>(flag: string, dir: string, write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (error) {
    if (typeof (error as NodeJS.ErrnoException).code !== "string") throw error;
    throw new UsageError(`${flag} ${dir}: cannot write (${(error as Error).message})`);
  }
}

/**
 * Checks that `path` may be written: nothing is there, or a regular file carrying `mark` (one this
 * command wrote), or anything but a directory with `force`. Throws a UsageError saying why not.
 */
export async function mayReplace(path: string, mark: string, force: boolean, command: string): Promise<void> {
  const found = await stat(path);
  if (found === undefined) return;
  if (found.isDirectory())
    throw new UsageError(`${path} is a directory: ${command} cannot write its file there`);
  if (force) return;
  if (found.isSymbolicLink()) {
    throw new UsageError(
      `${path} is a symbolic link: ${command} never writes through one; pass --force to replace the link itself`,
    );
  }
  if (!found.isFile() || !(await marked(path, mark))) {
    throw new UsageError(`${path} exists and is not a file ${command} wrote; pass --force to replace it`);
  }
}

/**
 * Writes `text` to `path` through a new temporary file beside it (created exclusively, so never through a
 * link planted there), renamed over whatever is at `path`: a link there is replaced, not followed.
 */
export async function replaceFile(path: string, text: string): Promise<void> {
  const temp = join(dirname(path), `.${basename(path)}.${randomBytes(6).toString("hex")}.tmp`);
  try {
    await writeFile(temp, text, { flag: "wx", mode: 0o644 });
    await rename(temp, path);
  } catch (error) {
    await rm(temp, { force: true });
    throw error;
  }
}

/** The Stats of what `path` names (through links), or the error code that stopped stat. */
async function statOrCode(path: string): Promise<Stats | string> {
  try {
    return await fsStat(path);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code ?? "an error";
  }
}

const writable = (path: string) =>
  access(path, constants.W_OK | constants.X_OK).then(
    () => true,
    () => false,
  );

/**
 * Why the directory `dir` cannot take a command's files, or undefined when it can: it exists and is a
 * writable directory in which none of `files` is a directory, or it is missing and its nearest existing
 * ancestor is a writable directory (the command makes the rest); and then, since permissions do not tell
 * everything (/sys and /proc refuse even root), the directory and a file in it can really be made. The
 * probe removes what it made.
 */
export async function outDirProblem(dir: string, files: readonly string[] = []): Promise<string | undefined> {
  return (await pathProblem(dir, files)) ?? (await probe(dir));
}

/** Makes `dir` (as `makeDir` does) and a temporary file in it, then removes both; or says why it cannot. */
async function probe(dir: string): Promise<string | undefined> {
  let made: string[] = [];
  try {
    made = await makeDir(dir);
  } catch (error) {
    return `it cannot be made (${(error as Error).message})`;
  }
  const file = join(dir, `.robustly-probe.${randomBytes(6).toString("hex")}.tmp`);
  try {
    await writeFile(file, "", { flag: "wx" });
    await rm(file, { force: true });
    return undefined;
  } catch (error) {
    return `a file cannot be written in it (${(error as Error).message})`;
  } finally {
    for (const path of made.reverse()) await rmdir(path).catch(() => undefined);
  }
}

/** What the file system's modes and types say against `dir` (see `outDirProblem`). */
async function pathProblem(dir: string, files: readonly string[]): Promise<string | undefined> {
  const target = resolve(dir);
  for (let path = target; ; path = dirname(path)) {
    const found = await statOrCode(path);
    // ENOTDIR: a file sits somewhere above; going up finds it and says so.
    if (found === "ENOENT" || found === "ENOTDIR") continue;
    const what = path === target ? "it" : path;
    if (typeof found === "string") return `${what} cannot be read (${found})`;
    if (!found.isDirectory()) return `${what} is not a directory`;
    if (!(await writable(path)))
      return path === target ? "it is not writable" : `${path} is not writable, so it cannot be made`;
    if (path !== target) return undefined;
    for (const file of files) {
      const inside = await statOrCode(join(path, file));
      if (typeof inside !== "string" && inside.isDirectory()) return `${join(dir, file)} is a directory`;
    }
    return undefined;
  }
}

/**
 * Checks, before any work, that the directory `dir` given by `flag` can take the command's files (see
 * `outDirProblem`); else throws a UsageError naming the flag, the path and why.
 */
export async function checkOutDir(flag: string, dir: string, files: readonly string[] = []): Promise<void> {
  const problem = await outDirProblem(dir, files);
  if (problem !== undefined) throw new UsageError(`${flag} ${dir}: ${problem}`);
}
