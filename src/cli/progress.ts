/**
 * A progress bar on standard error, for runs longer than a second, and only when standard error is a
 * terminal (never in a pipe, a file or CI logs). The long commands (`simulate`, `load`) draw it unless
 * `--quiet` is given.
 */
export interface Progress {
  /** Redraws the line: a bar filled to `fraction` (none when unknown) and `label`. */
  update(fraction: number | undefined, label: string): void;
  /** Clears the line; the next update draws it again (so other output can be written between). */
  done(): void;
}

/** The progress that draws nothing: for a pipe, and for `--quiet`. */
export const NO_PROGRESS: Progress = { update() {}, done() {} };

export function progressBar(stream: NodeJS.WriteStream = process.stderr, delayMs = 1000): Progress {
  if (!stream.isTTY) return NO_PROGRESS;
  const started = performance.now();
  let shown = false;
  let last = 0;
  return {
    update(fraction, label) {
      const now = performance.now();
      if (now - started < delayMs || now - last < 100) return;
      last = now;
      shown = true;
      let line = label;
      if (fraction !== undefined) {
        const width = 30;
        const part = Math.min(Math.max(fraction, 0), 1);
        const filled = Math.round(part * width);
        const bar = `${"█".repeat(filled)}${"░".repeat(width - filled)}`;
        line = `${bar} ${(part * 100).toFixed(0).padStart(3)}% ${label}`;
      }
      stream.write(`\r\x1b[2K${line.slice(0, (stream.columns ?? 80) - 1)}`);
    },
    done() {
      if (shown) stream.write("\r\x1b[2K");
      shown = false;
    },
  };
}

/** The progress of a long command: a bar on `stream` when it is a terminal, none with `--quiet`. */
export const commandProgress = (stream: NodeJS.WriteStream, quiet: boolean): Progress =>
  quiet ? NO_PROGRESS : progressBar(stream);
