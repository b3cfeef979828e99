/** Thrown, at once, by a call while the circuit is open (or half-open with its probes taken). */
export class BrokenCircuitError extends Error {
  override readonly name = "BrokenCircuitError";
  /** ms until the breaker lets a probe through (0 when half-open). */
  readonly retryAfter: number;
  constructor(retryAfter: number, message?: string) {
    super(message ?? `the circuit is open; it lets a probe through in ${Math.ceil(retryAfter)} ms`);
    this.retryAfter = retryAfter;
  }
}
