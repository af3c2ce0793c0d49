// The sending defaults a person sees: the CLI shows them in its help, so they live in a module that
// loads nothing else.

/** Requests in flight at once. */
export const DEFAULT_CONCURRENCY = 8;
/** The emulator's default burst limit is 3,000 requests per 3 s; 1,000 in any 1 s window never exceeds it. */
export const DEFAULT_RATE = 1_000;
/** Tries after the first for 5xx, network errors and unknown outcomes. */
export const DEFAULT_RETRIES = 5;
/** Seconds a request may take before its outcome counts as unknown (--request-timeout). */
export const DEFAULT_REQUEST_TIMEOUT_S = 60;
