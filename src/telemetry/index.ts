/**
 * `robustly/telemetry`: the OpenTelemetry bridge, on an entry point of its own. Neither its code nor its
 * types import `@opentelemetry/api`: the application passes in its own MeterLike (and trace).
 */
export {
  type AttributesLike,
  type CounterLike,
  type HistogramLike,
  type MeterLike,
  openTelemetry,
  type SpanLike,
  type Telemetry,
  type TelemetryOptions,
} from "./otel.js";
