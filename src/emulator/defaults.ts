// The emulator's defaults a person sees: the CLI shows them in its help, so they live in a module
// that loads nothing else.

/** Where it listens unless told: this machine only. */
export const DEFAULT_HOST = '127.0.0.1';
/** Requests per window per key (the real service's burst limit). */
export const DEFAULT_RATE_LIMIT = '3000/3s';
/** The largest request body the emulator accepts (the batcher keeps its requests under a smaller size of its own). */
export const DEFAULT_MAX_ACCEPTED_BODY_BYTES = 4 * 1024 * 1024;
/** Requests the request log (GET /_track/requests) keeps, newest first. */
export const DEFAULT_REQUEST_LOG_SIZE = 10_000;
/** The most requests the request log may be asked to keep (its slots are allocated at start). */
export const MAX_REQUEST_LOG_SIZE = 1_000_000;
