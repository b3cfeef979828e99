/**
 * `robustly/testing`: deterministic time and randomness, for robustly's tests and for its users' tests.
 */
export { type Random, seededRandom } from "./core/random.js";
export { VirtualClock } from "./testing/virtual-clock.js";
