/**
 * `robustly/telemetry`: the OpenTelemetry bridge, on an entry point of its own so that the main entry's
 * types never mention `@opentelemetry/api` (an optional peer dependency).
 */
export { openTelemetry, type Telemetry, type TelemetryOptions } from "./otel.js";
