// Every flag the commands take: the parsers they share, the flags of each command as its action
// receives them, their defaults written once, and how they become the options of a run (defaults <-
// environment <- flags).
import { Option, type Command } from 'commander';
import { UsageError } from '../errors.js';
import { DELIMITERS, type Delimiter } from '../input/delimiters.js';
import { INPUT_ENCODINGS, type InputEncoding } from '../input/decode.js';
import type { InputFormat } from '../input/source.js';
import type { DateOrder } from '../mapping/times.js';
import { countryCode, isTimeZoneName } from '../model/places.js';
import { resolveLimits, type LimitProfileName } from '../model/limits.js';
import type { ArrayName } from '../model/types.js';
import { DEFAULT_CONCURRENCY, DEFAULT_RATE, DEFAULT_REQUEST_TIMEOUT_S, DEFAULT_RETRIES } from '../transport/defaults.js';
import { DEFAULT_HOST, DEFAULT_MAX_ACCEPTED_BODY_BYTES, DEFAULT_RATE_LIMIT, DEFAULT_REQUEST_LOG_SIZE } from '../emulator/defaults.js';
import type { SendOptions, UploadOptions } from '../upload/upload.js';
import type { OutputFlags } from './output/run-outputs.js';

/** Gathers the values of a repeatable flag, in the order given. */
export const collect = (value: string, previous: string[] = []): string[] => [...previous, value];

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

/** Seconds above 0 (fractions allowed, at most a day), or a usage error naming the flag. */
export function seconds(flag: string): (value: string) => number {
  return (value) => {
    const n = Number(value);
    if (value.trim() === '' || !Number.isFinite(n) || n <= 0 || n > 86_400) throw new UsageError(`${flag}: expected seconds above 0 (at most 86400), got "${value}"`);
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
  /** Run this command through the shell with the emulator, then stop; exit with its status. */
  exec?: string;
  seed?: string[];
  s3Endpoint?: string;
  requestLog: number;
}

/**
 * The defaults of `track emulate`, given to commander, which shows them in the help and lays the
 * flags given over them (defaults <- flags: no environment variable applies to the emulator).
 */
export const EMULATE_DEFAULTS = {
  port: 4000,
  host: DEFAULT_HOST,
  db: './track-emulator.sqlite',
  limits: 'mau',
  rateLimit: DEFAULT_RATE_LIMIT,
  failRate: 0,
  dropRate: 0,
  maxBody: DEFAULT_MAX_ACCEPTED_BODY_BYTES,
  requestLog: DEFAULT_REQUEST_LOG_SIZE,
} as const satisfies Partial<EmulateFlags>;

/** The flags of `track validate`, and of `track upload` for reading: how to read the files and batch them. */
export interface ReadFlags extends OutputFlags {
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
  quiet?: boolean;
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
} as const satisfies Partial<UploadFlags>;

/** --delimiter: one of the four, a tab also written `\t` or `tab`. */
function delimiter(value: string): Delimiter {
  const found = value === '\\t' || value.toLowerCase() === 'tab' ? '\t' : value;
  if (!(DELIMITERS as readonly string[]).includes(found)) throw new UsageError(`--delimiter: expected one of , ; \\t |, got "${value}"`);
  return found as Delimiter;
}

/** --default-country: an ISO 3166 alpha-2 code, in either case. */
function country(value: string): string {
  const code = value.toUpperCase();
  if (!/^[A-Z]{2}$/.test(code) || countryCode(code) !== code) {
    throw new UsageError(`--default-country: expected an ISO 3166 alpha-2 country code such as US or DE, got "${value}"`);
  }
  return code;
}

function timeZone(value: string): string {
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
 * chain itself, and the client's notice about Node versions to come is none of the person's business.
 */
export function storageFrom(flags: { s3Endpoint?: string }, env: NodeJS.ProcessEnv): { s3Endpoint?: string } {
  env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  const fromEnv = env.AWS_ENDPOINT_URL_S3 || env.AWS_ENDPOINT_URL || undefined;
  const endpoint = flags.s3Endpoint ?? (fromEnv === undefined ? undefined : s3Endpoint(fromEnv));
  return endpoint === undefined ? {} : { s3Endpoint: endpoint };
}

function separator(value: string): string {
  const found = value === '\\t' ? '\t' : value;
  if (found.length !== 1) throw new UsageError(`--array-separator: expected one character such as ; or |, got "${value}"`);
  return found;
}

/** What the inputs of `track upload` and `track validate` may be. */
export const INPUTS_HELP =
  'CSV, NDJSON or JSON files (.csv, .ndjson, .jsonl, .json, each optionally .gz) or Parquet files (.parquet); ' +
  's3://bucket/key, s3://bucket/prefix/ or s3://bucket/prefix/*.parquet (every object it names, in key order); https:// URLs of objects; - reads standard input';

export function addReadOptions(command: Command): Command {
  return command
    .addOption(new Option('--format <format>', 'read every input as this format (needed for -)').choices(['csv', 'ndjson', 'json', 'parquet']))
    .option('--s3-endpoint <url>', 'an S3-compatible store for s3:// inputs (MinIO, R2, GCS), addressed path-style (or AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL)', s3Endpoint)
    .addOption(
      new Option('--encoding <encoding>', 'the encoding of every input; latin1 is ISO-8859-1 (0x80 is U+0080, not €)')
        .choices([...INPUT_ENCODINGS])
        .default(UPLOAD_DEFAULTS.encoding),
    )
    .addOption(
      new Option('--kind <kind>', 'what the rows are (default: from the columns of each file, or the fields of each line)').choices([
        'attributes',
        'events',
        'purchases',
      ]),
    )
    .option('--map <file>', 'JSON file that renames and types CSV and Parquet columns: {"Zip": "zip:string", "Notes": null}')
    .option('--delimiter <char>', "between CSV cells: , ; \\t or | (default: the one each file's header line uses)", delimiter)
    .option('--default-country <code>', 'read phone numbers without a country code in this country (ISO 3166 alpha-2, e.g. US); sent in E.164', country)
    .option('--array-separator <char>', 'split :array, :add and :remove cells that are not JSON arrays on this character, e.g. ;', separator)
    .option('--timezone <zone>', 'IANA time zone of times written without an offset', timeZone, UPLOAD_DEFAULTS.timezone)
    .addOption(new Option('--date-order <order>', 'how slashed dates such as 03/04/2023 are read: month first or day first').choices(['mdy', 'dmy']))
    .option('--drop-invalid-fields', "send an attributes row without its invalid fields (not its identifier); each goes to the rejects file")
    .option('--empty-as-null', 'an empty CSV cell (or a Parquet null) of an attributes row sends null for its attribute, removing it (never an identifier; events and purchases are never cleared)')
    .addOption(new Option('--limits <profile>', 'batch limit profile: mau (50 items a request) or legacy (75 per array)').choices(['mau', 'legacy']).default(UPLOAD_DEFAULTS.limits))
    .option('--max-total <n>', 'at most this many items in a request, across the arrays', positiveInteger('--max-total'))
    .option('--max-per-array <n>', 'at most this many items in each array of a request', positiveInteger('--max-per-array'))
    .option('--rejects <file>', 'where rejected rows go (default: <first input>.rejects.ndjson, or .rejects.csv, beside it)')
    .addOption(
      new Option('--rejects-format <format>', 'the rejects file as NDJSON, or as CSV with the header and _file, _line, _kind, _column, _errors (CSV inputs)')
        .choices(['ndjson', 'csv'])
        .default(UPLOAD_DEFAULTS.rejectsFormat),
    )
    .option('--out <file>', 'also write each request body to this file (- for standard output, the summary then to standard error), one a line: in a dry run each planned one, in an upload each as it is sent')
    .option('--json', 'print the summary as JSON')
    .option('--delta', 'send only the attributes whose values the target has not acknowledged (kept in --state)')
    .option('--state <file>', `what each target acknowledged, for --delta and --dedupe-events (default: "${UPLOAD_DEFAULTS.state}")`)
    .option('--dedupe-events', 'leave out events and purchases the target already acknowledged (same user, name, time and fields)')
    .option('--full', 'with --delta: send every attribute and refresh the state (after profiles changed elsewhere)');
}

/** The flags of what watches a run (progress events, the events file, GitHub Actions; an upload's report and metrics push). */
export function addOutputOptions(command: Command, upload: boolean): Command {
  command
    .addOption(new Option('--progress <format>', 'progress on stderr: human lines, or ndjson (one JSON event a line: docs/progress-events.schema.json)').choices(['human', 'ndjson']).default('human'))
    .option('--progress-interval <seconds>', 'seconds between progress lines and progress events', wholeNumber('--progress-interval', 1, 3600), UPLOAD_DEFAULTS.progressInterval)
    .option('--events <file>', 'also write the progress events (NDJSON) to this file; the human progress stays')
    .option('--no-ci-output', 'in GitHub Actions (GITHUB_ACTIONS=true), write no step summary, step outputs or annotations');
  if (!upload) return command;
  return command
    .option('--report <file>', 'write a self-contained HTML page of the run when it ends: figures, throughput, waits, retries, rejects, data points')
    .option('--metrics-push <url>', "push the upload's counters to a Prometheus Pushgateway while it runs and at its end (e.g. http://127.0.0.1:9091)");
}

/** The flags of the target and pace, for the estimate of `track validate` (upload declares them itself). */
export function addPaceOptions(command: Command): Command {
  return command
    .option('--url <url>', 'the target whose --state --delta reads (or TRACK_URL)')
    .option('--rate <n>', 'most requests started in any one second, for the estimate', wholeNumber('--rate', 1), UPLOAD_DEFAULTS.rate)
    .option('--hourly <n>', 'most requests started in any hour, for the estimate', wholeNumber('--hourly', 1));
}

/** What to read and how, from the flags; where to send is sendOptionsFrom's (a dry run's --delta reads the state of --url or TRACK_URL). */
export function uploadOptionsFrom(files: string[], flags: ReadFlags, env: NodeJS.ProcessEnv = {}): UploadOptions {
  if (flags.full === true && flags.delta !== true) throw new UsageError('--full goes with --delta: it sends every attribute and refreshes the state');
  if (flags.state !== undefined && flags.delta !== true && flags.dedupeEvents !== true) {
    throw new UsageError('--state is the state of --delta and --dedupe-events: give one of them, or leave --state out');
  }
  const delta =
    flags.delta === true || flags.dedupeEvents === true
      ? {
          statePath: flags.state ?? UPLOAD_DEFAULTS.state,
          attributes: flags.delta === true,
          activities: flags.dedupeEvents === true,
          full: flags.full === true,
          url: flags.url ?? (env.TRACK_URL || undefined),
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
  };
}

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
  };
}
