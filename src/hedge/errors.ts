/**
 * What a hedged call's losing attempts are aborted with.
 */

/** The reason an attempt's signal is aborted with when the call no longer needs it. */
export class HedgeLostError extends Error {
  override readonly name = "HedgeLostError";
  /** The attempt that settled the call. */
  readonly settledBy: number;
  constructor(
    settledBy: number,
    message = `attempt ${settledBy} answered first; this attempt is not needed`,
  ) {
    super(message);
    this.settledBy = settledBy;
  }
}
