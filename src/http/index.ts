/**
 * `robustly/fetch`: a retrying `fetch` (`robustFetch`, `withRetry`) and the `Retry-After` reader. Uses the
 * global `fetch`, so it runs wherever that exists; the same names are exported by `robustly`.
 */
export { type RetryAfterOptions, type RetryAfterSource, retryAfter } from "./retry-after.js";
export {
  FETCH_DEFAULTS,
  type FetchLike,
  isNetworkError,
  type RobustFetch,
  type RobustFetchOptions,
  robustFetch,
  withRetry,
} from "./robust-fetch.js";
