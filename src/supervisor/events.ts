/**
 * The supervisor's events, in the one event model (`Events`): a listener that throws or rejects becomes
 * one warning line and never breaks the supervisor's state machine.
 */
import { Events } from "../core/events.js";

/** The supervisor's emitter: `Events`, reporting a listener's failure as a supervisor warning. */
export class Emitter<M extends object> extends Events<M & Record<string, unknown>> {
  constructor() {
    super(reportListenerError);
  }
}

function reportListenerError(error: unknown, event: string): void {
  const message = `a supervisor "${event}" listener threw (the supervisor went on): ${error instanceof Error ? error.message : String(error)}`;
  const proc = (globalThis as { process?: { emitWarning?: (w: string, o: object) => void } }).process;
  if (typeof proc?.emitWarning === "function") {
    const detail = error instanceof Error && error.stack !== undefined ? error.stack : undefined;
    proc.emitWarning(message, { type: "RobustlySupervisorWarning", detail });
  } else {
    console.error(`robustly: ${message}`);
  }
}
