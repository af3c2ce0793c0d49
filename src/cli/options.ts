// Every flag the commands take, declared to commander: the emulator's flags and defaults here; the
// flags of reading and uploading, their checks, defaults and translation into a run's options in
// src/upload/run-options.ts, which the library's upload() shares.
import { Option, type Command } from 'commander';
import { INPUT_ENCODINGS } from '../input/decode.js';
import type { LimitProfileName } from '../model/limits.js';
import { DEFAULT_HOST, DEFAULT_MAX_ACCEPTED_BODY_BYTES, DEFAULT_RATE_LIMIT, DEFAULT_REQUEST_LOG_SIZE } from '../emulator/defaults.js';
import {
  country,
  delimiter,
  fileFlag,
  positiveInteger,
  s3Endpoint,
  separator,
  timeZone,
  UPLOAD_DEFAULTS,
  wholeNumber,
  type ReadFlags as RunReadFlags,
  type UploadFlags as RunUploadFlags,
} from '../upload/run-options.js';
import type { OutputFlags } from './output/run-outputs.js';

export { fileFlag, isExecEmulator, number, positiveInteger, s3Endpoint, seconds, sendOptionsFrom, storageFrom, UPLOAD_DEFAULTS, uploadOptionsFrom, wholeNumber } from '../upload/run-options.js';

/** The flags of `track validate`, and of `track upload` for reading, with what watches the run. */
export type ReadFlags = RunReadFlags & OutputFlags;
/** The flags of `track upload`. */
export type UploadFlags = RunUploadFlags & OutputFlags;

/** Gathers the values of a repeatable flag, in the order given. */
export const collect = (value: string, previous: string[] = []): string[] => [...previous, value];

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
    .option('--rejects <file>', "where rejected rows go (default: the first input's name and .rejects.ndjson, or .rejects.csv, beside it: users.csv.rejects.ndjson; a shard's users.csv.shard-2-of-4.rejects.ndjson; validate and --dry-run write users.csv.check.rejects.ndjson and never touch an upload's)", fileFlag('--rejects'))
    .addOption(
      new Option('--rejects-format <format>', 'the rejects file as NDJSON, or as CSV with the header and _file, _line, _kind, _column, _errors (CSV inputs)')
        .choices(['ndjson', 'csv'])
        .default(UPLOAD_DEFAULTS.rejectsFormat),
    )
    .option('--out <file>', 'also write each request body to this file (- for standard output, the summary then to standard error), one a line: in a dry run each planned one, in an upload each as it is sent')
    .option('--json', 'print the summary as JSON: one object, also when the run fails or is refused (exitStatus, fatal.message)')
    .option('--delta', 'send only the attributes whose values the target has not acknowledged (kept in --state)')
    .option('--state <file>', `what each target acknowledged, for --delta and --dedupe-events, and through which API keys: an upload with another key stops until \`track state --add-key\` records it (default: "${UPLOAD_DEFAULTS.state}")`, fileFlag('--state'))
    .option('--dedupe-events', 'leave out events and purchases the target already acknowledged (same user, name, time and fields)')
    .option('--full', 'with --delta: send every attribute and refresh the state (after profiles changed elsewhere)')
    .option('--summary-file <file>', 'also write the --json summary (with the exit status) to this file, also when the run fails or is stopped; `track report` adds shards\' summaries', fileFlag('--summary-file', ', or --json for the summary on standard output'))
    .option('--shard <K/N>', 'keep only the rows whose user falls in shard K of N (1 <= K <= N; auto/N takes K from JOB_COMPLETION_INDEX or TRACK_SHARD_INDEX, 0-based); --rate and --hourly stay the account\'s limits, shared');
}

/** The flags of what watches a run (progress events, the events file, GitHub Actions; an upload's report and metrics push). */
export function addOutputOptions(command: Command, upload: boolean): Command {
  command
    .addOption(new Option('--progress <format>', 'progress on stderr: human lines, or ndjson (one JSON event a line: docs/progress-events.schema.json)').choices(['human', 'ndjson']).default('human'))
    .option('--progress-interval <seconds>', 'seconds between progress lines and progress events', wholeNumber('--progress-interval', 1, 3600), UPLOAD_DEFAULTS.progressInterval)
    .option('--events <file>', 'also write the progress events (NDJSON) to this file; the human progress stays', fileFlag('--events', ', or --progress ndjson for the events on standard error'))
    .option('--no-ci-output', 'in GitHub Actions (GITHUB_ACTIONS=true), write no step summary, step outputs or annotations');
  if (!upload) return command;
  return command
    .option('--report <file>', 'write a self-contained HTML page of the run when it ends: figures, throughput, waits, retries, rejects, data points', fileFlag('--report'))
    .option('--metrics-push <url>', "push the upload's counters to a Prometheus Pushgateway while it runs and at its end (e.g. http://127.0.0.1:9091)");
}

/** The flags of the target and pace, for the estimate of `track validate` (upload declares them itself). */
export function addPaceOptions(command: Command): Command {
  return command
    .option('--url <url>', 'the target whose --state --delta reads (or TRACK_URL)')
    .option('--rate <n>', 'most requests started in any one second, for the estimate', wholeNumber('--rate', 1), UPLOAD_DEFAULTS.rate)
    .option('--hourly <n>', 'most requests started in any hour, for the estimate', wholeNumber('--hourly', 1));
}
