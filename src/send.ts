// `track upload` over the network: the planned requests of upload() delivered by the transport,
// with the resume journal of the target wrapped around both (rows it settled are skipped on
// --resume; a run the journal already holds is not sent again by accident).
import { basename, dirname, join, resolve } from 'node:path';
import { UsageError } from './errors.js';
import { STDIN, checkReadable } from './input/source.js';
import { createTrackClient, deliver, resolveEndpoint, type DeliveryNotice, type DeliveryProgress, type DeliverySummary } from './transport/index.js';
import { findJournal, identifyFile, openJournal, rowsInDoubt, type ParsedJournal } from './transport/journal.js';
import { upload, type UploadOptions, type UploadSummary } from './upload.js';

export interface SendOptions extends Omit<UploadOptions<DeliverySummary>, 'dryRun' | 'deliver' | 'journal'> {
  url: string;
  apiKey: string;
  /** Requests in flight at once. */
  concurrency?: number;
  /** Most requests started in any one-second window; undefined for the transport's default. */
  rate?: number;
  /** Most requests started in any hour. */
  hourly?: number;
  /** Tries after the first for 5xx, network errors and unknown outcomes. */
  retries?: number;
  onUnknown?: 'retry' | 'reject';
  /** The journal file; default `<first input>.<target>.journal` beside it. */
  journalPath?: string;
  /** Skip the rows an earlier run's journal settled, and add to its rejects file. */
  resume?: boolean;
  /** Start over even though the journal holds a run of the same inputs to the same target. */
  restart?: boolean;
  /** Stop reading, let requests in flight finish, save the journal. */
  stopSignal?: AbortSignal;
  /** Cut requests in flight off too. */
  abortSignal?: AbortSignal;
  onDeliveryProgress?: (progress: DeliveryProgress) => void;
  onNotice?: (notice: DeliveryNotice) => void;
}

/** The target as a file-name part: `https://rest.example.com:8443/v2` -> `rest.example.com-8443-v2`. */
export function targetSlug(endpoint: URL): string {
  const prefix = endpoint.pathname.replace(/\/users\/track$/, '');
  const text = `${endpoint.hostname}${endpoint.port === '' ? '' : `-${endpoint.port}`}${prefix}`;
  return text.replace(/[^A-Za-z0-9.]+/g, '-').replace(/^-+|-+$/g, '');
}

/** `users.csv.gz` to `http://127.0.0.1:4000` -> `users.127.0.0.1-4000.journal` beside it: each target resumes its own run. */
export function defaultJournalPath(firstInput: string, endpoint: URL): string {
  const name = basename(firstInput).replace(/\.gz$/i, '').replace(/\.[^.]+$/, '');
  return join(dirname(firstInput), `${name}.${targetSlug(endpoint)}.journal`);
}

const count = (n: number): string => n.toLocaleString('en-US');
const when = (iso: string): string => iso.replace('T', ' ').replace(/:\d\d(\.\d+)?Z$/, ' UTC');

/** What an earlier run's journal holds, in a sentence. */
export function journalStory(found: ParsedJournal): string {
  const settled = found.files.reduce((n, f) => n + f.settled.size, 0);
  const total = found.files.every((f) => f.rows !== undefined) ? found.files.reduce((n, f) => n + (f.rows ?? 0), 0) : undefined;
  const of = total === undefined ? `${count(settled)} rows settled` : `${count(settled)} of ${count(total)} rows settled`;
  if (found.end?.complete === true) return `completed on ${when(found.end.at)} (${of})`;
  if (found.end !== undefined) return `was stopped on ${when(found.end.at)} with ${of}`;
  const inFlight = found.files.reduce((n, f) => n + rowsInDoubt(f).size, 0);
  return `was interrupted (killed or crashed) with ${of}${inFlight > 0 ? ` and ${count(inFlight)} in flight` : ''}`;
}

/**
 * Refuses a run the journal already holds (the same inputs, unchanged, to the same target) unless
 * --resume or --restart says what to do with it. Returns a note when it replaces a journal of
 * other inputs.
 */
async function checkRerun(journalPath: string, target: string, inputs: readonly string[], options: SendOptions): Promise<string | undefined> {
  if (options.resume === true || options.restart === true) return undefined;
  let found: ParsedJournal | undefined;
  try {
    found = await findJournal(journalPath);
  } catch (error) {
    throw new UsageError(`the journal ${journalPath} cannot be read (${(error as Error).message}); give --restart to replace it, or another --journal`);
  }
  if (found === undefined) return undefined;
  if (found.target !== undefined && found.target !== target) {
    throw new UsageError(
      `the journal ${journalPath} holds an upload to ${found.target}, not to ${target}; give another --journal (or none: each target keeps its own), or --restart to replace it`,
    );
  }
  const identities = await Promise.all(inputs.map((file) => identifyFile(file)));
  const byPath = new Map(found.files.map((f) => [f.identity.path, f.identity]));
  const same =
    found.files.length === identities.length &&
    identities.every((now) => {
      const was = byPath.get(now.path);
      return was !== undefined && was.size === now.size && was.mtimeMs === now.mtimeMs;
    });
  if (!same) return `the journal ${journalPath} of an earlier upload of other inputs (or of these files before they changed) was replaced`;
  const files = inputs.join(', ');
  throw new UsageError(
    `an upload of ${files} to ${target} ${journalStory(found)}; its journal is ${journalPath}.\n` +
      'Running it again would send those rows again (events and purchases would be stored twice). Give --resume to send\n' +
      'only the rows not settled yet, or --restart to start over and send every row again.',
  );
}

export async function send(options: SendOptions): Promise<UploadSummary<DeliverySummary>> {
  const endpoint = resolveEndpoint(options.url); // a bad URL is a usage error before anything is read
  const target = `${endpoint.origin}${endpoint.pathname}`;
  if (options.inputs.length === 0) throw new UsageError('give at least one input file (or - for standard input)');
  if (options.resume === true && options.restart === true) throw new UsageError('give --resume or --restart, not both');
  const fromStdin = options.inputs.includes(STDIN);
  if (fromStdin && options.resume === true) throw new UsageError('--resume cannot be used with standard input (-): it cannot be read again');
  const journalPath = options.journalPath ?? defaultJournalPath(options.inputs[0], endpoint);
  if (!fromStdin && options.inputs.some((file) => resolve(file) === resolve(journalPath))) {
    throw new UsageError(`--journal ${journalPath} is also an input file`);
  }
  // the same messages as a dry run for a missing or unreadable input, before the journal looks at it
  for (const file of options.inputs) await checkReadable(file);
  // standard input cannot be read again, so a run that reads it keeps no journal
  const note = fromStdin ? undefined : await checkRerun(journalPath, target, options.inputs, options);
  const client = createTrackClient({ url: options.url, apiKey: options.apiKey, connections: options.concurrency });
  try {
    const summary = await upload<DeliverySummary>({
      ...options,
      dryRun: false,
      rejectInDoubt: options.onUnknown === 'reject',
      journal: fromStdin
        ? undefined
        : {
            resume: options.resume === true,
            open: (beforeSettling) =>
              openJournal({ path: journalPath, files: options.inputs, target, resume: options.resume === true, beforeSettling }),
          },
      deliver: (requests, io) =>
        deliver(requests, {
          client,
          concurrency: options.concurrency,
          rate: options.rate,
          hourly: options.hourly,
          retries: options.retries,
          onUnknown: options.onUnknown,
          journal: io.journal,
          beforeFirstPost: io.beforeFirstPost,
          inDoubtRows: io.inDoubtRows,
          onReject: io.onReject,
          onProgress: options.onDeliveryProgress,
          onNotice: options.onNotice,
          stopSignal: options.stopSignal,
          abortSignal: options.abortSignal,
        }),
    });
    if (note !== undefined) summary.notes.push(note);
    return summary;
  } finally {
    await client.close();
  }
}
