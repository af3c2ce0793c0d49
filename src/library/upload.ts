// upload() of the library: what `track upload` runs (or, with dryRun, `track upload --dry-run`), with
// its options in camelCase and inputs that may be rows in memory. It returns the summary, throws the
// named errors, and never exits the process, reads its standard input or writes to its output.
import { Readable } from 'node:stream';
import { InputError, UsageError } from '../errors.js';
import { INPUT_ENCODINGS } from '../input/decode.js';
import { STDIN } from '../input/source.js';
import { validateColumnMap } from '../mapping/column-map.js';
import {
  country,
  delimiter,
  positiveInteger,
  s3Endpoint,
  seconds,
  sendOptionsFrom,
  separator,
  timeZone,
  UPLOAD_DEFAULTS,
  uploadOptionsFrom,
  wholeNumber,
  type UploadFlags,
} from '../upload/run-options.js';
import type { DeliveryNotice, DeliveryProgress } from '../transport/index.js';
import type { ReadProgress, UploadSummary } from '../upload/upload.js';
import type { RejectRecord } from '../model/request.js';
import { startedHere } from './fixture.js';
import { speaking, uploadWords } from './words.js';

/** Rows in memory: each is what an NDJSON line holds (an item, or a request-shaped object). */
export type Rows = Iterable<unknown> | AsyncIterable<unknown>;

/** The flags of `track upload` in camelCase (`--max-total` is `maxTotal`), and what a library adds. */
export interface UploadCallOptions extends Partial<Omit<UploadFlags, 'map' | 'json' | 'summaryFile' | 'quiet'>> {
  /** Paths, `s3://` and `https://` URLs, or rows in memory (all inputs of a call are one or the other). */
  inputs: ReadonlyArray<string | Rows>;
  /** A --map file to read, or the map itself: `{ "Zip": "zip:string", "Notes": null }`. */
  map?: string | Record<string, string | null>;
  /** Where TRACK_URL, TRACK_API_KEY, TRACK_RATE_STORE, TRACK_SHARD_INDEX... are read; default process.env. */
  env?: NodeJS.ProcessEnv;
  /** Stop reading, let requests in flight finish and save the journal (what Ctrl-C does); the summary says interrupted. */
  signal?: AbortSignal;
  onReadProgress?: (progress: ReadProgress) => void;
  onDeliveryProgress?: (progress: DeliveryProgress) => void;
  onNotice?: (notice: DeliveryNotice) => void;
  onReject?: (record: RejectRecord) => void;
}

type Check = (value: string) => unknown;
const oneOf =
  (flag: string, choices: readonly string[]): Check =>
  (value) => {
    if (!choices.includes(value)) throw new UsageError(`${flag}: expected one of ${choices.join(', ')}, got "${value}"`);
    return value;
  };

/** The checks the command line gives each option's value (a number is checked as its text). */
const CHECKS: Record<string, Check | 'boolean' | 'text' | 'library'> = {
  inputs: 'library',
  map: 'library',
  env: 'library',
  signal: 'library',
  onReadProgress: 'library',
  onDeliveryProgress: 'library',
  onNotice: 'library',
  onReject: 'library',
  dryRun: 'boolean',
  url: 'text',
  apiKey: 'text',
  format: oneOf('format', ['csv', 'ndjson', 'json', 'parquet']),
  s3Endpoint,
  encoding: oneOf('encoding', INPUT_ENCODINGS),
  kind: oneOf('kind', ['attributes', 'events', 'purchases']),
  delimiter,
  defaultCountry: country,
  arraySeparator: separator,
  timezone: timeZone,
  dateOrder: oneOf('dateOrder', ['mdy', 'dmy']),
  dropInvalidFields: 'boolean',
  emptyAsNull: 'boolean',
  limits: oneOf('limits', ['mau', 'legacy']),
  maxTotal: positiveInteger('maxTotal'),
  maxPerArray: positiveInteger('maxPerArray'),
  rejects: 'text',
  rejectsFormat: oneOf('rejectsFormat', ['ndjson', 'csv']),
  out: 'text',
  delta: 'boolean',
  state: 'text',
  dedupeEvents: 'boolean',
  full: 'boolean',
  shard: 'text',
  rate: wholeNumber('rate', 1),
  hourly: wholeNumber('hourly', 1),
  concurrency: wholeNumber('concurrency', 1),
  retries: wholeNumber('retries', 0),
  requestTimeout: seconds('requestTimeout'),
  onUnknown: oneOf('onUnknown', ['retry', 'reject']),
  journal: 'library',
  resume: 'boolean',
  restart: 'boolean',
  resumeOrStart: 'boolean',
  rateStore: 'text',
  rateStoreKey: 'text',
};

/** The options as the command line's flags, each checked as the command line checks it (an unknown name is refused, as a typo). */
function flagsOf(options: UploadCallOptions): UploadFlags {
  // the defaults commander lays under the flags (--state's is taken only with --delta or --dedupe-events)
  const { state: _state, progressInterval: _interval, ...defaults } = UPLOAD_DEFAULTS;
  const flags: Record<string, unknown> = { ...defaults };
  for (const [name, value] of Object.entries(options)) {
    const check = CHECKS[name];
    if (check === undefined) throw new UsageError(`upload(): unknown option ${name}`);
    if (value === undefined || check === 'library') continue;
    if (check === 'boolean' && typeof value !== 'boolean') throw new UsageError(`upload(): ${name} is true or false, got ${JSON.stringify(value)}`);
    if (check !== 'boolean' && typeof value !== 'string' && typeof value !== 'number') throw new UsageError(`upload(): ${name} is a ${check === 'text' ? 'string' : 'string or number'}, got ${JSON.stringify(value)}`);
    flags[name] = typeof check === 'function' ? check(String(value)) : value;
  }
  if (typeof options.map === 'string') flags.map = options.map;
  if (options.journal !== undefined && options.journal !== false && typeof options.journal !== 'string') throw new UsageError('upload(): journal is a path, or false for none');
  flags.journal = options.journal;
  return flags as unknown as UploadFlags;
}

/** Rows in memory as NDJSON lines, one input after another; a row JSON cannot write is an error naming it. */
async function* ndjsonLines(inputs: readonly Rows[]): AsyncGenerator<string> {
  for (const [i, rows] of inputs.entries()) {
    let n = 0;
    let unwritable: UsageError | undefined;
    try {
      for await (const row of rows) {
        n++;
        let line: string | undefined;
        try {
          line = JSON.stringify(row);
        } catch (error) {
          throw (unwritable = new UsageError(`upload(): inputs[${i}], row ${n}: cannot be written as JSON (${(error as Error).message})`));
        }
        yield `${line ?? 'null'}\n`;
      }
    } catch (error) {
      if (error === unwritable) throw error;
      // the caller's own failure (its database, its generator): an input that broke off, with the error as its cause
      throw Object.assign(new InputError(`upload(): inputs[${i}] failed after ${n === 1 ? '1 row' : `${n} rows`}: ${(error as Error)?.message ?? String(error)}`), { cause: error });
    }
  }
}

const isRows = (input: unknown): input is Rows =>
  typeof input === 'object' && input !== null && (Symbol.iterator in input || Symbol.asyncIterator in input);

/**
 * Runs an upload as `track upload` does. Rows in memory are read as one NDJSON stream, named `-` in
 * the summary and the rejects file, lines counted across the inputs in order (none resumes: like
 * standard input, they cannot be read again). A run that a fatal error stopped throws that error
 * (UsageError, InputError, DeliveryError, OutputError, SourceError) with the summary as its
 * `summary`; rejected rows and a stop by `signal` are told by the summary, but a stop that comes
 * while an object in storage is listed, or read before anything is planned, which throws a
 * StoppedError.
 */
export function upload(options: UploadCallOptions): Promise<UploadSummary> {
  const inMemory = Array.isArray(options?.inputs) && options.inputs.some(isRows);
  return speaking(WORDS, () => uploadCall(options), inMemory ? 'rows in memory' : undefined);
}

/** The flags in upload()'s words: `--max-total` is `maxTotal`. */
const WORDS = uploadWords(Object.keys(CHECKS));

async function uploadCall(options: UploadCallOptions): Promise<UploadSummary> {
  if (typeof options !== 'object' || options === null || Array.isArray(options)) throw new UsageError('upload(): give one object of options: upload({ inputs: ["users.csv"], url, apiKey })');
  if (!Array.isArray(options.inputs) || options.inputs.length === 0) throw new UsageError('upload(): give inputs: paths, URLs, or rows in memory');
  const env = options.env ?? process.env;
  const flags = flagsOf(options);
  const inMemory = options.inputs.filter(isRows);
  const named = options.inputs.filter((input): input is string => typeof input === 'string');
  if (inMemory.length + named.length !== options.inputs.length) throw new UsageError('upload(): each input is a path, a URL or an iterable of rows');
  if (inMemory.length > 0 && named.length > 0) throw new UsageError('upload(): give paths and URLs, or rows in memory, not both in one call');
  if (named.includes(STDIN)) throw new UsageError('upload(): standard input (-) is not read by the library; give the rows as an iterable');
  if (inMemory.length > 0) flags.format = 'ndjson';
  const run = uploadOptionsFrom(inMemory.length > 0 ? [STDIN] : named, flags, env);
  if (typeof options.map === 'object' && options.map !== null) {
    const map = validateColumnMap(options.map);
    if (!map.ok) throw new UsageError(`upload(): map:\n  ${map.problems.join('\n  ')}`);
    run.map = map.map;
  }
  const send = flags.dryRun === true ? undefined : sendOptionsFrom(flags, env);
  // an emulator of this process forgets everything at its close: a journal per port would pile up beside the inputs
  if (send !== undefined && options.journal === undefined && startedHere(send.url)) send.noJournal = true;
  const { upload: runUpload } = await import('../upload/upload.js');
  const summary = await runUpload({
    ...run,
    stdin: inMemory.length > 0 ? Readable.from(ndjsonLines(inMemory)) : undefined,
    stopSignal: options.signal,
    onProgress: options.onReadProgress,
    onReject: options.onReject,
    send: send === undefined ? undefined : { ...send, onProgress: options.onDeliveryProgress, onNotice: options.onNotice },
  });
  const fatal = summary.delivery?.fatal ?? summary.fatal;
  // not enumerable: the summary holds the error (its fatal), and JSON.stringify(error.summary) must not meet a cycle
  if (fatal !== undefined) throw Object.defineProperty(fatal, 'summary', { value: summary, enumerable: false, configurable: true, writable: true });
  return summary;
}
