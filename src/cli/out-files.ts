/**
 * Writing a command's files into a directory the user names (`robustly plot --out DIR`) without harm: a
 * file is replaced only when the command wrote it before (it carries the command's mark) or `--force` says
 * so; a symbolic link is never followed, neither the directory's nor a file's; and each file is written
 * whole to a temporary file beside it and renamed over the old one, so that no reader sees half a file.
 */
import { randomBytes } from "node:crypto";
import { constants, type Stats } from "node:fs";
import { lstat, mkdir, open, rename, rm, writeFile } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
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
  await mkdir(dir, { recursive: true });
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
