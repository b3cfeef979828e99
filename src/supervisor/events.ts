/**
 * The supervisor's events, in the one event model (`Events`): a listener that throws or rejects becomes
 * one warning line and never breaks the supervisor's state machine.
 */
import { Events, messageOf, warn } from "../core/events.js";

/** The supervisor's emitter: `Events`, reporting a listener's failure as a supervisor warning. */
export class Emitter<M extends object> extends Events<M & Record<string, unknown>> {
  constructor() {
    super(reportListenerError);
  }
}

function reportListenerError(error: unknown, event: string): void {
  warn(
    `a supervisor "${event}" listener threw (the supervisor went on): ${messageOf(error)}`,
    "RobustlySupervisorWarning",
  );
}
