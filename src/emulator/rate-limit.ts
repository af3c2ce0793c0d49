// Per-key request limits in fixed windows: a burst window (default 3000 per 3 s) and an optional
// hourly cap (spec 8; decisions.md "Wire format" on the X-RateLimit-* headers).

export interface RateLimitConfig {
  /** Requests allowed per window. */
  requests: number;
  windowMs: number;
  /** Requests allowed per clock hour, or undefined for none. */
  hourly?: number;
}

export interface RateVerdict {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** UTC epoch seconds when the window that binds ends. */
  reset: number;
  /** Whole seconds until a refused request may be tried again. */
  retryAfter: number;
}

interface Window {
  start: number;
  count: number;
}

const HOUR_MS = 3_600_000;

/** The key's current window; a fresh one is remembered only when a request is counted in it. */
function windowAt(windows: Map<string, Window>, key: string, size: number, now: number, remember: boolean): Window {
  const start = Math.floor(now / size) * size;
  let w = windows.get(key);
  if (w === undefined || w.start !== start) {
    w = { start, count: 0 };
    if (remember) windows.set(key, w);
  }
  return w;
}

export class RateLimiter {
  private readonly burst = new Map<string, Window>();
  private readonly hour = new Map<string, Window>();

  constructor(private readonly config: RateLimitConfig) {}

  /** Describes the key's windows without counting a request. */
  peek(key: string, now: number = Date.now()): RateVerdict {
    return this.verdict(key, now, false);
  }

  /** Counts one request for the key if it fits, and describes the window with fewer requests left. */
  take(key: string, now: number = Date.now()): RateVerdict {
    return this.verdict(key, now, true);
  }

  private verdict(key: string, now: number, count: boolean): RateVerdict {
    const { requests, windowMs, hourly } = this.config;
    const burst = windowAt(this.burst, key, windowMs, now, count);
    const candidates = [{ w: burst, limit: requests, size: windowMs }];
    if (hourly !== undefined) candidates.push({ w: windowAt(this.hour, key, HOUR_MS, now, count), limit: hourly, size: HOUR_MS });
    const full = candidates.filter((c) => c.w.count >= c.limit);
    const allowed = full.length === 0;
    if (allowed && count) for (const c of candidates) c.w.count += 1;
    // the binding window: a full one that frees last, else the one with fewer requests left
    const binding = allowed
      ? candidates.reduce((a, b) => (b.limit - b.w.count < a.limit - a.w.count ? b : a))
      : full.reduce((a, b) => (b.w.start + b.size > a.w.start + a.size ? b : a));
    const endMs = binding.w.start + binding.size;
    return {
      allowed,
      limit: binding.limit,
      remaining: Math.max(0, binding.limit - binding.w.count),
      reset: Math.ceil(endMs / 1000),
      retryAfter: Math.max(1, Math.ceil((endMs - now) / 1000)),
    };
  }
}
