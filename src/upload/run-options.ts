// How the flags of `track upload` and `track validate` become the options of a run, for the command
// line (src/cli/options.ts declares them to commander) and the library's upload() alike: the checks
// of each value, the flags as camelCase names, their defaults written once, and the translation
// (defaults <- environment <- flags).
import { UsageError } from '../errors.js';
import { DELIMITERS, type Delimiter } from '../input/delimiters.js';
import { INPUT_ENCODINGS, type InputEncoding } from '../input/decode.js';
import type { InputFormat } from '../input/source.js';
import type { DateOrder } from '../mapping/times.js';
import { countryCode, isTimeZoneName } from '../model/places.js';
import { resolveLimits, type LimitProfileName } from '../model/limits.js';
import type { ArrayName } from '../model/types.js';
import { DEFAULT_CONCURRENCY, DEFAULT_RATE, DEFAULT_REQUEST_TIMEOUT_S, DEFAULT_RETRIES } from '../transport/defaults.js';
import { parseShard, shardTag, type Shard } from './shard.js';
import type { SendOptions, UploadOptions } from './upload-options.js';

export { INPUT_ENCODINGS };

export function number(name: string): (value: string) => number {
  return (value) => {
    const n = Number(value);
    if (value.trim() === '' || !Number.isFinite(n)) throw new UsageError(`${name}: expected a number, got "${value}"`);
    return n;
  };
}

/** A whole number of at least `min` (and at most `max`), or a usage error naming the flag. */
export function wholeNumber(flag: string, min: number, max = Number.MAX_SAFE_INTEGER): (value: string) => number {
  return (value) => {
    const n = Number(value);
    if (!/^[0-9]+$/.test(value.trim()) || !Number.isSafeInteger(n) || n < min || n > max) {
      const range = max === Number.MAX_SAFE_INTEGER ? `of at least ${min}` : `from ${min} to ${max}`;
      throw new UsageError(`${flag}: expected a whole number ${range}, got "${value}"`);
    }
    return n;
  };
}

export const positiveInteger = (flag: string): ((value: string) => number) => wholeNumber(flag, 1);

/**
 * A file a run writes (`instead`: how else to have it where the person may have wanted it): `-`
 * stands for standard output to --out alone, so here it is refused rather than taken as a file named
 * so in the current folder (`./-` names one).
 */
export function fileFlag(flag: string, instead = ''): (value: string) => string {
  return (value) => {
    if (value === '-') throw new UsageError(`${flag} -: only --out writes to standard output; give a file path${instead} (./- for a file named -)`);
    return value;
  };
}

/** Seconds above 0 (fractions allowed, at most a day), or a usage error naming the flag. */
export function seconds(flag: string): (value: string) => number {
  return (value) => {
    const n = Number(value);
    if (value.trim() === '' || !Number.isFinite(n) || n <= 0 || n > 86_400) throw new UsageError(`${flag}: expected seconds above 0 (at most 86400), got "${value}"`);
    return n;
  };
}

/** The flags of `track validate`, and of `track upload` for reading: how to read the files and batch them. */
export interface ReadFlags {
  format?: InputFormat;
  s3Endpoint?: string;
  encoding: InputEncoding;
  kind?: ArrayName;
  map?: string;
  delimiter?: Delimiter;
  defaultCountry?: string;
  arraySeparator?: string;
  timezone?: string;
  dateOrder?: DateOrder;
  dropInvalidFields?: boolean;
  emptyAsNull?: boolean;
  limits: LimitProfileName;
  maxTotal?: number;
  maxPerArray?: number;
  rejects?: string;
  rejectsFormat: 'ndjson' | 'csv';
  out?: string;
  json?: boolean;
  /** Sending only what changed (and, for validate, the target and pace of the estimate). */
  delta?: boolean;
  state?: string;
  dedupeEvents?: boolean;
  full?: boolean;
  url?: string;
  rate: number;
  hourly?: number;
  /** Also write the --json summary here (for a scheduler, or `track report`). */
  summaryFile?: string;
  /** `K/N` or `auto/N`: keep the rows whose user falls in shard K of N. */
  shard?: string;
}

/** The flags of `track upload`. */
export interface UploadFlags extends ReadFlags {
  dryRun?: boolean;
  apiKey?: string;
  concurrency: number;
  retries: number;
  requestTimeout: number;
  onUnknown: 'retry' | 'reject';
  /** A path, or false for --no-journal. */
  journal?: string | false;
  resume?: boolean;
  restart?: boolean;
  resumeOrStart?: boolean;
  quiet?: boolean;
  rateStore?: string;
  rateStoreKey?: string;
}

/** The defaults of `track validate` and `track upload`, which commander shows in the help. */
export const UPLOAD_DEFAULTS = {
  encoding: 'utf-8',
  rejectsFormat: 'ndjson',
  timezone: 'UTC',
  limits: 'mau',
  concurrency: DEFAULT_CONCURRENCY,
  rate: DEFAULT_RATE,
  retries: DEFAULT_RETRIES,
  requestTimeout: DEFAULT_REQUEST_TIMEOUT_S,
  onUnknown: 'retry',
  state: './track-state.sqlite',
  progressInterval: 5,
} as const satisfies Partial<UploadFlags> & { progressInterval: number };

/** --delimiter: one of the four, a tab also written `\t` or `tab`. */
export function delimiter(value: string): Delimiter {
  const found = value === '\\t' || value.toLowerCase() === 'tab' ? '\t' : value;
  if (!(DELIMITERS as readonly string[]).includes(found)) throw new UsageError(`--delimiter: expected one of , ; \\t |, got "${value}"`);
  return found as Delimiter;
}

/** --default-country: an ISO 3166 alpha-2 code, in either case. */
export function country(value: string): string {
  const code = value.toUpperCase();
  if (!/^[A-Z]{2}$/.test(code) || countryCode(code) !== code) {
    throw new UsageError(`--default-country: expected an ISO 3166 alpha-2 country code such as US or DE, got "${value}"`);
  }
  return code;
}

export function timeZone(value: string): string {
  if (value !== 'UTC' && !isTimeZoneName(value)) throw new UsageError(`--timezone: expected an IANA time zone such as Europe/Berlin or UTC, got "${value}"`);
  return value;
}

/** --s3-endpoint: an http(s) URL. */
export function s3Endpoint(value: string): string {
  if (!/^https?:\/\/[^/\s]+/i.test(value)) throw new UsageError(`--s3-endpoint: expected the store's URL, such as http://127.0.0.1:9000, got "${value}"`);
  return value;
}

/**
 * How s3:// inputs reach their store: --s3-endpoint over AWS_ENDPOINT_URL_S3 over AWS_ENDPOINT_URL
 * (S3 itself when none is given). Credentials and the region the client reads from the standard
 * chain itself. `env` is only read (a library caller's object is theirs).
 */
export function storageFrom(flags: { s3Endpoint?: string }, env: NodeJS.ProcessEnv): { s3Endpoint?: string } {
  const fromEnv = env.AWS_ENDPOINT_URL_S3 || env.AWS_ENDPOINT_URL || undefined;
  const endpoint = flags.s3Endpoint ?? (fromEnv === undefined ? undefined : s3Endpoint(fromEnv));
  return endpoint === undefined ? {} : { s3Endpoint: endpoint };
}

export function separator(value: string): string {
  const found = value === '\\t' ? '\t' : value;
  if (found.length !== 1) throw new UsageError(`--array-separator: expected one character such as ; or |, got "${value}"`);
  return found;
}

/**
 * What to read and how, from the flags; where to send is sendOptionsFrom's (a dry run's --delta reads
 * the state of --url or TRACK_URL, and checks the key of --api-key or TRACK_API_KEY, when given, is
 * one the state learned it through).
 */
export function uploadOptionsFrom(files: string[], flags: ReadFlags & { apiKey?: string }, env: NodeJS.ProcessEnv = {}): UploadOptions {
  if (flags.full === true && flags.delta !== true) throw new UsageError('--full goes with --delta: it sends every attribute and refreshes the state');
  if (flags.state !== undefined && flags.delta !== true && flags.dedupeEvents !== true) {
    throw new UsageError('--state is the state of --delta and --dedupe-events: give one of them, or leave --state out');
  }
  const shard = flags.shard === undefined ? undefined : parseShard(flags.shard, env);
  const delta =
    flags.delta === true || flags.dedupeEvents === true
      ? {
          statePath: flags.state ?? defaultStatePath(shard),
          attributes: flags.delta === true,
          activities: flags.dedupeEvents === true,
          full: flags.full === true,
          url: flags.url ?? (env.TRACK_URL || undefined),
          apiKey: flags.apiKey ?? (env.TRACK_API_KEY || undefined),
        }
      : undefined;
  return {
    delta,
    inputs: files,
    storage: storageFrom(flags, env),
    format: flags.format,
    encoding: flags.encoding,
    kind: flags.kind,
    mapFile: flags.map,
    reading: {
      delimiter: flags.delimiter,
      defaultCountry: flags.defaultCountry,
      arraySeparator: flags.arraySeparator,
      timeZone: flags.timezone === 'UTC' ? undefined : flags.timezone,
      dateOrder: flags.dateOrder,
      dropInvalidFields: flags.dropInvalidFields === true ? true : undefined,
      emptyAsNull: flags.emptyAsNull === true ? true : undefined,
    },
    rejectsFormat: flags.rejectsFormat,
    limits: resolveLimits(flags.limits, { maxTotal: flags.maxTotal, maxPerArray: flags.maxPerArray }),
    rejectsPath: flags.rejects,
    outPath: flags.out,
    shard,
  };
}

/** The state's default file: one for each shard of a sharded run (`./track-state.shard-2-of-4.sqlite`), which holds its own users. */
const defaultStatePath = (shard: Shard | undefined): string =>
  shard === undefined ? UPLOAD_DEFAULTS.state : UPLOAD_DEFAULTS.state.replace(/\.sqlite$/, `.${shardTag(shard)}.sqlite`);

/** Loopback names: an emulator started by `track emulate --exec` listens on one of them. */
const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]']);

/**
 * Whether `url` is the emulator `track emulate --exec` started for the command this process runs in:
 * it sets TRACK_EMULATOR_URL in the command's environment (and only there), and the emulator
 * listens on a loopback address and a port of its own. A run to it keeps no journal by default: the
 * emulator forgets everything when the command ends, and its next port would leave another journal.
 */
export function isExecEmulator(url: string, emulatorUrl: string | undefined): boolean {
  if (emulatorUrl === undefined || emulatorUrl === '') return false;
  try {
    const target = new URL(url);
    const emulator = new URL(emulatorUrl);
    return target.origin === emulator.origin && LOOPBACK.has(target.hostname);
  } catch {
    return false;
  }
}

/** Where and how to send: the flags over the environment (TRACK_URL, TRACK_API_KEY); both must be given one way. */
export function sendOptionsFrom(flags: UploadFlags, env: NodeJS.ProcessEnv): SendOptions {
  const url = flags.url ?? (env.TRACK_URL || undefined);
  const apiKey = flags.apiKey ?? (env.TRACK_API_KEY || undefined);
  if (url === undefined) throw new UsageError('give the service URL with --url or TRACK_URL (or use --dry-run)');
  if (apiKey === undefined) throw new UsageError('give the API key with --api-key or TRACK_API_KEY (or use --dry-run)');
  return {
    url,
    apiKey,
    concurrency: flags.concurrency,
    rate: flags.rate,
    hourly: flags.hourly,
    retries: flags.retries,
    requestTimeoutMs: flags.requestTimeout * 1000,
    onUnknown: flags.onUnknown,
    journalPath: typeof flags.journal === 'string' ? flags.journal : undefined,
    noJournal: flags.journal === false || (flags.journal === undefined && isExecEmulator(url, env.TRACK_EMULATOR_URL)),
    resume: flags.resume === true,
    restart: flags.restart === true,
    resumeOrStart: flags.resumeOrStart === true,
    rateStore: flags.rateStore ?? (env.TRACK_RATE_STORE || undefined),
    rateStoreKey: flags.rateStoreKey,
  };
}
