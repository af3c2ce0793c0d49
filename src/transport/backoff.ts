// How long to wait before trying a failed request again: exponential, capped, with full jitter
// so that many clients failing together do not come back together.

export interface BackoffPolicy {
  /** Ceiling of the first delay, in ms. */
  baseMs: number;
  /** No delay is longer than this, in ms. */
  capMs: number;
}

export const DEFAULT_BACKOFF: Readonly<BackoffPolicy> = { baseMs: 500, capMs: 30_000 };

/** The ceiling for the nth consecutive failure (1-based): min(cap, base * 2^(n-1)). */
export function backoffCeiling(failure: number, policy: BackoffPolicy): number {
  const exponent = Math.min(Math.max(failure - 1, 0), 52);
  return Math.min(policy.capMs, policy.baseMs * 2 ** exponent);
}

/** A delay drawn uniformly from [0, ceiling) ("full jitter"). */
export function backoffDelay(failure: number, policy: BackoffPolicy, random: () => number = Math.random): number {
  return Math.floor(random() * backoffCeiling(failure, policy));
}
