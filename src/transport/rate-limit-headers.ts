// Reads the server's rate-limit headers (decisions.md "Wire format"): X-RateLimit-Limit,
// -Remaining, -Reset (epoch seconds, or seconds remaining when below 10^9) and Retry-After.

/** Response headers by lower-case name. */
export type HeaderMap = Readonly<Record<string, string | undefined>>;

export interface RateLimitInfo {
  limit?: number;
  remaining?: number;
  /** Milliseconds from now until the binding window resets. */
  resetInMs?: number;
}

/** A Reset value below this is seconds remaining, not an epoch time (decisions.md). */
const EPOCH_THRESHOLD = 1e9;
/** Below this much disagreement the local clock is trusted over the server's whole-second Date. */
const SKEW_TOLERANCE_MS = 2_000;

function count(value: string | undefined): number | undefined {
  if (value === undefined || !/^\s*\d+\s*$/.test(value)) return undefined;
  return Number(value);
}

function seconds(value: string | undefined): number | undefined {
  if (value === undefined || !/^\s*\d+(\.\d+)?\s*$/.test(value)) return undefined;
  return Number(value);
}

/**
 * The server's idea of now, in wall-clock ms. The Date header only has whole seconds, so it is
 * used only when the clocks clearly disagree; then epoch times from the server are read against it.
 */
export function serverNow(headers: HeaderMap, wallNowMs: number): number {
  const date = headers.date === undefined ? Number.NaN : Date.parse(headers.date);
  if (Number.isNaN(date) || Math.abs(date - wallNowMs) <= SKEW_TOLERANCE_MS) return wallNowMs;
  return date;
}

/** Milliseconds until a Reset value, read as seconds remaining (< 10^9) or epoch seconds. */
export function parseReset(value: string | undefined, nowMs: number): number | undefined {
  const s = seconds(value);
  if (s === undefined) return undefined;
  if (s < EPOCH_THRESHOLD) return s * 1000;
  return Math.max(0, s * 1000 - nowMs);
}

/** Milliseconds to wait from a Retry-After value: delta seconds or an HTTP date. */
export function parseRetryAfter(value: string | undefined, nowMs: number): number | undefined {
  if (value === undefined) return undefined;
  const s = seconds(value);
  if (s !== undefined) return s * 1000;
  // an HTTP date names its month; Date.parse alone would take "-3" for a year
  const at = /[a-z]{3}/i.test(value) ? Date.parse(value) : Number.NaN;
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, at - nowMs);
}

export function parseRateLimit(headers: HeaderMap, wallNowMs: number): RateLimitInfo {
  const now = serverNow(headers, wallNowMs);
  return {
    limit: count(headers['x-ratelimit-limit']),
    remaining: count(headers['x-ratelimit-remaining']),
    resetInMs: parseReset(headers['x-ratelimit-reset'], now),
  };
}

/** How long a 429 asks to wait: Retry-After, else the window's reset, else undefined. */
export function rateLimitWaitMs(headers: HeaderMap, wallNowMs: number): number | undefined {
  const now = serverNow(headers, wallNowMs);
  return parseRetryAfter(headers['retry-after'], now) ?? parseReset(headers['x-ratelimit-reset'], now);
}
