// Emulator options as a person writes them (CLI flags, library options) and their parsed form.
import { randomBytes } from 'node:crypto';
import { UsageError } from '../errors.js';
import { isLimitProfileName, resolveLimits, type BatchLimits, type ArrayName, type ItemOrigin, type LimitProfileName, type PlannedRequest } from '../model/index.js';
import { DEFAULT_HOST, DEFAULT_MAX_ACCEPTED_BODY_BYTES, DEFAULT_RATE_LIMIT, DEFAULT_REQUEST_LOG_SIZE, MAX_REQUEST_LOG_SIZE } from './defaults.js';
import type { FaultConfig } from './faults.js';
import type { RateLimitConfig } from './rate-limit.js';

export const DEFAULT_PERMISSIONS = ['users.track', 'users.export.ids'] as const;

/** A request to load before serving (and again after each reset), with where each item came from. */
export type SeedRequest = Pick<PlannedRequest, 'body' | 'origins'>;

/**
 * A seed request as the emulator keeps it for its life: the body as JSON bytes and each item's file
 * and line, not the parsed body and source rows (a 20 MB CSV seed held as objects took ~390 MB).
 */
export interface StoredSeed {
  json: Buffer;
  origins: Record<ArrayName, ReadonlyArray<{ file: string; line: number }>>;
}

export function storeSeed(seed: SeedRequest | StoredSeed): StoredSeed {
  if ('json' in seed) return seed;
  const where = (list: readonly ItemOrigin[]): { file: string; line: number }[] => list.map(({ file, line }) => ({ file, line }));
  return {
    json: Buffer.from(JSON.stringify(seed.body)),
    origins: { attributes: where(seed.origins.attributes), events: where(seed.origins.events), purchases: where(seed.origins.purchases) },
  };
}

export interface EmulatorOptions {
  /** Port to listen on; 0 (the default) picks a free one. */
  port?: number;
  host?: string;
  /** SQLite file, or ':memory:' (the default) to keep nothing. */
  db?: string;
  /** `KEY` grants users.track and users.export.ids; `KEY:PERM[,PERM...]` grants only those. */
  apiKeys?: string[];
  blocklist?: string[];
  limits?: LimitProfileName;
  /** Explicit batch limits laid over the profile. */
  batchLimits?: BatchLimits;
  /** Requests per window per key, e.g. `3000/3s` (the default). */
  rateLimit?: string;
  /** Requests per hour per key; off by default. */
  hourlyLimit?: number;
  /** Fraction (0..1) of requests answered 500 or 503. */
  failRate?: number;
  /** Fraction (0..1) of requests whose connection is closed without an answer. */
  dropRate?: number;
  /** Delay before answering: `MS` or `MIN-MAX` (or a number). */
  latency?: string | number;
  maxBodyBytes?: number;
  /** Most values an array-of-scalars attribute keeps. */
  arrayCap?: number;
  /** Milliseconds a client has to send a whole request before it is cut off. */
  requestTimeoutMs?: number;
  /** Receives one line per notable event (start, faults, errors); API keys never appear. */
  log?: (line: string) => void;
  /** Requests the request log (GET /_track/requests) keeps: 10,000 by default, 0 for none. */
  requestLog?: number;
  /** Requests applied before serving and again on each reset (the `seed` files of the library's startEmulator, planned). */
  seedRequests?: readonly (SeedRequest | StoredSeed)[];
}

export function parseApiKeys(specs: readonly string[]): Map<string, Set<string>> {
  const keys = new Map<string, Set<string>>();
  for (const spec of specs) {
    const at = spec.indexOf(':');
    const key = at === -1 ? spec : spec.slice(0, at);
    if (key.length === 0) throw new UsageError(`--api-key: the key is empty in "${at === -1 ? spec : `:${spec.slice(at + 1)}`}"`);
    const perms = at === -1 ? [...DEFAULT_PERMISSIONS] : spec.slice(at + 1).split(',').map((p) => p.trim()).filter(Boolean);
    keys.set(key, new Set(perms));
  }
  return keys;
}

/** `3000/3s` as a person writes it (not the rate-limit headers of a response, which the transport reads). */
export function parseRateLimitSpec(text: string): { requests: number; windowMs: number } {
  const m = /^(\d+)\s*\/\s*(\d+(?:\.\d+)?)?\s*(ms|s|m|h)$/.exec(text.trim());
  if (m === null || Number(m[1]) < 1) {
    throw new UsageError(`--rate-limit: expected requests per window such as 3000/3s or 100/1m, got "${text}"`);
  }
  const unit = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[m[3] as 'ms' | 's' | 'm' | 'h'];
  const windowMs = Number(m[2] ?? '1') * unit;
  if (windowMs <= 0) throw new UsageError(`--rate-limit: the window must be longer than 0, got "${text}"`);
  return { requests: Number(m[1]), windowMs };
}

export function parseLatency(value: string | number | undefined): { min: number; max: number } | undefined {
  if (value === undefined) return undefined;
  const m = /^(\d+)(?:-(\d+))?$/.exec(String(value).trim());
  if (m === null) throw new UsageError(`--latency: expected milliseconds such as 50 or a range such as 20-200, got "${value}"`);
  const min = Number(m[1]);
  const max = m[2] === undefined ? min : Number(m[2]);
  if (max < min) throw new UsageError(`--latency: the range ${value} ends before it starts`);
  return { min, max };
}

function fraction(name: string, value: number | undefined): number {
  const v = value ?? 0;
  if (!(v >= 0 && v <= 1)) throw new UsageError(`${name}: expected a fraction from 0 to 1, got ${value}`);
  return v;
}

export interface ResolvedOptions {
  port: number;
  host: string;
  db: string;
  keys: Map<string, Set<string>>;
  /** The key that was generated because none was given, if any. */
  generatedKey?: string;
  blocklist: Set<string>;
  /** The limit profile named (mau by default); `limits` lays any explicit numbers over it. */
  limitProfile: LimitProfileName;
  limits: BatchLimits;
  rateLimit: RateLimitConfig;
  faults: FaultConfig;
  maxBodyBytes: number;
  arrayCap: number;
  requestTimeoutMs: number;
  requestLogSize: number;
  seedRequests?: readonly StoredSeed[];
}

export function resolveOptions(options: EmulatorOptions): ResolvedOptions {
  const profile = options.limits ?? 'mau';
  if (!isLimitProfileName(profile)) throw new UsageError(`--limits: expected mau or legacy, got "${profile}"`);
  const port = options.port ?? 0;
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new UsageError(`--port: expected 0 to 65535, got ${options.port}`);
  const hourly = options.hourlyLimit;
  if (hourly !== undefined && !(Number.isInteger(hourly) && hourly > 0)) {
    throw new UsageError(`--hourly-limit: expected a whole number above 0, got ${hourly}`);
  }
  let generatedKey: string | undefined;
  let keySpecs = options.apiKeys ?? [];
  if (keySpecs.length === 0) {
    generatedKey = randomBytes(16).toString('hex');
    keySpecs = [generatedKey];
  }
  for (const [flag, value] of [['--max-total', options.batchLimits?.maxTotal], ['--max-per-array', options.batchLimits?.maxPerArray]] as const) {
    if (value !== undefined && !(Number.isSafeInteger(value) && value > 0)) throw new UsageError(`${flag}: expected a whole number of at least 1, got ${value}`);
  }
  const maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_ACCEPTED_BODY_BYTES;
  if (!(Number.isInteger(maxBodyBytes) && maxBodyBytes > 0)) throw new UsageError(`--max-body: expected a number of bytes above 0, got ${maxBodyBytes}`);
  const requestLogSize = options.requestLog ?? DEFAULT_REQUEST_LOG_SIZE;
  if (!(Number.isSafeInteger(requestLogSize) && requestLogSize >= 0 && requestLogSize <= MAX_REQUEST_LOG_SIZE)) {
    throw new UsageError(`--request-log: expected a whole number of requests from 0 to ${MAX_REQUEST_LOG_SIZE.toLocaleString('en-US')}, got ${requestLogSize}`);
  }
  // an empty path (an unset variable, `--db "$DB"`) is no database file: SQLite would keep a temporary one, unsaid
  if (options.db === '') throw new UsageError('--db: an empty path; give a file, or :memory: to keep nothing');
  const failRate = fraction('--fail-rate', options.failRate);
  const dropRate = fraction('--drop-rate', options.dropRate);
  if (failRate + dropRate > 1) throw new UsageError('--fail-rate and --drop-rate together exceed 1');
  return {
    port,
    host: options.host ?? DEFAULT_HOST,
    db: options.db ?? ':memory:',
    keys: parseApiKeys(keySpecs),
    generatedKey,
    blocklist: new Set(options.blocklist ?? []),
    limitProfile: profile,
    limits: resolveLimits(profile, options.batchLimits),
    rateLimit: { ...parseRateLimitSpec(options.rateLimit ?? DEFAULT_RATE_LIMIT), hourly },
    faults: { failRate, dropRate, latency: parseLatency(options.latency) },
    maxBodyBytes,
    arrayCap: options.arrayCap ?? 25,
    requestTimeoutMs: options.requestTimeoutMs ?? 30_000,
    requestLogSize,
    seedRequests: options.seedRequests?.map(storeSeed),
  };
}
