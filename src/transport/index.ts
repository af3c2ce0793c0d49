// The sending half of `track upload`: pacing, retry policy, the HTTP client
// and deliver(), which composes them.
export { deliver, DEFAULT_MAX_RATE_LIMIT_WAITS, DEFAULT_MAX_WAIT_MS } from './deliver.js';
export { DEFAULT_CONCURRENCY, DEFAULT_RATE, DEFAULT_RETRIES } from './defaults.js';
export type { DeliverOptions } from './deliver.js';
export type { DeliverySummary, DeliveryProgress, ItemTally } from './summary.js';
export type { DeliveryNotice, OnUnknown } from './send-request.js';
export { createTrackClient, resolveEndpoint, DEFAULT_TIMEOUT_MS } from './http-client.js';
export type { TrackClient, TrackClientOptions, PostResult } from './http-client.js';
export { createPacer, DEFAULT_WINDOW_MARGIN_MS } from './pacer.js';
export type { Pacer, PacerOptions } from './pacer.js';
export { requestJson, itemCounts } from './request.js';
export type { RequestToSend, SettledRequest, ItemLines, KindCounts } from './request.js';
export { backoffDelay, backoffCeiling, DEFAULT_BACKOFF } from './backoff.js';
export type { BackoffPolicy } from './backoff.js';
export { parseRateLimit, parseRetryAfter, parseReset, rateLimitWaitMs } from './rate-limit-headers.js';
export type { RateLimitInfo } from './rate-limit-headers.js';
export { classifyResult, serverMessage } from './retry-policy.js';
export type { Verdict } from './retry-policy.js';
export { systemClock } from './clock.js';
export type { Clock } from './clock.js';
