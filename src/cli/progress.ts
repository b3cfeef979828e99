/**
 * A progress bar on standard error, for runs longer than a second, and only when standard error is a
 * terminal (never in a pipe, a file or CI logs).
 */
export interface Progress {
  update(fraction: number, label: string): void;
  done(): void;
}

export function progressBar(stream: NodeJS.WriteStream = process.stderr, delayMs = 1000): Progress {
  if (!stream.isTTY) return { update() {}, done() {} };
  const started = performance.now();
  let shown = false;
  let last = 0;
  return {
    update(fraction, label) {
      const now = performance.now();
      if (now - started < delayMs || now - last < 100) return;
      last = now;
      shown = true;
      const width = 30;
      const filled = Math.round(Math.min(Math.max(fraction, 0), 1) * width);
      const bar = `${"█".repeat(filled)}${"░".repeat(width - filled)}`;
      stream.write(
        `\r${bar} ${(fraction * 100).toFixed(0).padStart(3)}% ${label}`.slice(0, (stream.columns ?? 80) - 1),
      );
    },
    done() {
      if (shown) stream.write("\r\x1b[2K");
    },
  };
}
