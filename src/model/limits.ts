// Batch limit profiles (spec section 8; decisions.md "Batch limits: two profiles").
import type { ArrayName } from './types.js';

export type LimitProfileName = 'mau' | 'legacy';

export interface BatchLimits {
  /** Most items across the three arrays together, or undefined for no such cap. */
  maxTotal?: number;
  /** Most items in any one array, or undefined for no such cap. */
  maxPerArray?: number;
}

export const LIMIT_PROFILES: Readonly<Record<LimitProfileName, Readonly<BatchLimits>>> = {
  mau: { maxTotal: 50 },
  legacy: { maxPerArray: 75 },
};

export function isLimitProfileName(value: string): value is LimitProfileName {
  return Object.hasOwn(LIMIT_PROFILES, value);
}

/** A named profile with explicit numbers laid over it. */
export function resolveLimits(profile: LimitProfileName = 'mau', overrides: BatchLimits = {}): BatchLimits {
  const base = LIMIT_PROFILES[profile];
  return {
    maxTotal: overrides.maxTotal ?? base.maxTotal,
    maxPerArray: overrides.maxPerArray ?? base.maxPerArray,
  };
}

/** The reason a request with these array sizes breaks the limits, or undefined when it fits. */
export function limitViolation(counts: Readonly<Record<ArrayName, number>>, limits: BatchLimits): string | undefined {
  const total = counts.attributes + counts.events + counts.purchases;
  if (limits.maxTotal !== undefined && total > limits.maxTotal) {
    return `request has ${total} items; at most ${limits.maxTotal} are allowed across attributes, events and purchases`;
  }
  if (limits.maxPerArray !== undefined) {
    for (const name of ['attributes', 'events', 'purchases'] as const) {
      if (counts[name] > limits.maxPerArray) {
        return `${name} has ${counts[name]} items; at most ${limits.maxPerArray} are allowed in one array`;
      }
    }
  }
  return undefined;
}
