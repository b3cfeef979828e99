/**
 * The simulated servers. Each takes requests (`request()` returns an `Outcome` that settles when it
 * answers), records what it is offered and what it answers in time in a `Recorder`, and keeps its
 * concurrency: the requests inside it, abandoned ones included.
 */
export { ConflictError, type Pause, type Server, ServerError } from "./servers/base.js";
export { CapacityServer, type CapacityServerOptions } from "./servers/capacity.js";
export { FlakyServer, type FlakyServerOptions } from "./servers/flaky.js";
export { LatencyServer, type LatencyServerOptions } from "./servers/latency.js";
export { ThrottledError, ThrottledStore, type ThrottledStoreOptions } from "./servers/throttled-store.js";
export { VersionedStore, type VersionedStoreOptions } from "./servers/versioned-store.js";
