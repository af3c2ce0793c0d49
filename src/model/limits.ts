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

/** The limits in words, for a start line or a log line: "mau (at most 50 items a request across the arrays)". */
export function describeLimits(profile: LimitProfileName, limits: BatchLimits): string {
  const rules: string[] = [];
  if (limits.maxTotal !== undefined) rules.push(`at most ${limits.maxTotal} items a request across the arrays`);
  if (limits.maxPerArray !== undefined) rules.push(`at most ${limits.maxPerArray} items in each array`);
  const base = LIMIT_PROFILES[profile];
  const custom = limits.maxTotal !== base.maxTotal || limits.maxPerArray !== base.maxPerArray;
  return `${profile}${custom ? ' with explicit limits' : ''} (${rules.length === 0 ? 'no batch limit' : rules.join(', ')})`;
}

/**
 * The flags that would let a request of these array sizes through, as alternatives a person can pick
 * from: `--limits legacy`, or the explicit numbers (`--max-total 75`).
 */
export function flagsToAllow(counts: Readonly<Record<ArrayName, number>>, profile: LimitProfileName, limits: BatchLimits): string[] {
  const total = counts.attributes + counts.events + counts.purchases;
  const largest = Math.max(counts.attributes, counts.events, counts.purchases);
  const choices: string[] = [];
  if (profile !== 'legacy' && limitViolation(counts, { ...LIMIT_PROFILES.legacy, maxTotal: limits.maxTotal === LIMIT_PROFILES[profile].maxTotal ? undefined : limits.maxTotal }) === undefined) {
    choices.push('--limits legacy');
  }
  const explicit: string[] = [];
  if (limits.maxTotal !== undefined && total > limits.maxTotal) explicit.push(`--max-total ${total}`);
  if (limits.maxPerArray !== undefined && largest > limits.maxPerArray) explicit.push(`--max-per-array ${largest}`);
  if (explicit.length > 0) choices.push(explicit.join(' '));
  return choices;
}
