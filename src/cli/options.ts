// Flag parsers the commands share, and the flags of `track emulate` with their defaults, written once.
import { UsageError } from '../errors.js';
import type { LimitProfileName } from '../model/limits.js';

/** Gathers the values of a repeatable flag, in the order given. */
export const collect = (value: string, previous: string[] = []): string[] => [...previous, value];

export function number(name: string): (value: string) => number {
  return (value) => {
    const n = Number(value);
    if (value.trim() === '' || !Number.isFinite(n)) throw new UsageError(`${name}: expected a number, got "${value}"`);
    return n;
  };
}

export function positiveInteger(flag: string): (value: string) => number {
  return (value) => {
    const n = Number(value);
    if (!/^[0-9]+$/.test(value.trim()) || !Number.isSafeInteger(n) || n < 1) {
      throw new UsageError(`${flag}: expected a whole number of at least 1, got "${value}"`);
    }
    return n;
  };
}

/** The flags of `track emulate` as its action receives them. */
export interface EmulateFlags {
  port: number;
  host: string;
  db: string;
  apiKey?: string[];
  blocklist?: string[];
  limits: LimitProfileName;
  maxTotal?: number;
  maxPerArray?: number;
  rateLimit: string;
  hourlyLimit?: number;
  failRate: number;
  dropRate: number;
  latency?: string;
  maxBody: number;
  quiet?: boolean;
}

/**
 * The defaults of `track emulate`, given to commander, which shows them in the help and lays the
 * flags given over them (defaults <- flags: no environment variable applies to the emulator).
 */
export const EMULATE_DEFAULTS = {
  port: 4000,
  host: '127.0.0.1',
  db: './track-emulator.sqlite',
  limits: 'mau',
  rateLimit: '3000/3s',
  failRate: 0,
  dropRate: 0,
  // the emulator's DEFAULT_MAX_ACCEPTED_BODY_BYTES, written out so that the help loads no emulator code
  maxBody: 4 * 1024 * 1024,
} as const satisfies Partial<EmulateFlags>;
