// `track upload` over the network: the planned requests of upload() delivered by the transport,
// with the resume journal wrapped around both (rows it settled are skipped on --resume).
import { basename, dirname, join, resolve } from 'node:path';
import { UsageError } from './errors.js';
import { STDIN, checkReadable } from './input/source.js';
import type { RejectRecord } from './model/plan.js';
import { createTrackClient, deliver, openJournal, resolveEndpoint, type DeliveryNotice, type DeliveryProgress, type DeliverySummary, type Journal, type SettledItems } from './transport/index.js';
import { upload, type UploadOptions, type UploadSummary } from './upload.js';

export interface SendOptions extends Omit<UploadOptions<DeliverySummary>, 'dryRun' | 'deliver' | 'skipRow' | 'appendRejects' | 'onRejectWritten' | 'workerPlan'> {
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
  /** The journal file; default `<first input>.journal` beside it. */
  journalPath?: string;
  /** Skip the rows an earlier run's journal settled, and add to its rejects file. */
  resume?: boolean;
  /** Stop reading, let requests in flight finish, save the journal. */
  stopSignal?: AbortSignal;
  /** Cut requests in flight off too. */
  abortSignal?: AbortSignal;
  onDeliveryProgress?: (progress: DeliveryProgress) => void;
  onNotice?: (notice: DeliveryNotice) => void;
  /** false: plan in this thread rather than a worker thread (default: a worker, for files). */
  thread?: boolean;
}

/** `users.csv.gz` -> `users.journal` beside it. */
export function defaultJournalPath(firstInput: string): string {
  const name = basename(firstInput).replace(/\.gz$/i, '').replace(/\.[^.]+$/, '');
  return join(dirname(firstInput), `${name}.journal`);
}

type Origins = SettledItems['origins'];

/**
 * The journal settles rows, but a request-shaped NDJSON line yields several items that may travel
 * in different requests. Such a line is recorded only once every one of its items has settled
 * (sent or rejected), so a resume never skips an item that was not delivered; until then each of
 * its items delivered is recorded on its own, so a resume does not send that one again.
 */
function lineLedger(journal: Journal) {
  const waiting = new Map<string, number>();
  const settle = (file: string, line: number): boolean => {
    const key = `${line}\u0000${file}`;
    const left = waiting.get(key);
    if (left === undefined) return true;
    if (left > 1) waiting.set(key, left - 1);
    else waiting.delete(key);
    return left === 1;
  };
  return {
    expect(file: string, line: number, items: number): void {
      waiting.set(`${line}\u0000${file}`, items);
    },
    /** A row rejected before sending. */
    rejected(record: RejectRecord): void {
      if (record.line <= 0) return;
      if (settle(record.file, record.line)) journal.recordRows(record.file, [record.line]);
      else if (record.item !== undefined) journal.recordItem(record.file, record.line, record.item);
    },
    /** What deliver() journals: the rows behind a settled request. */
    journal: {
      record(request: SettledItems): void {
        // no request-shaped line is waiting on items (a CSV, say): every row is settled as it is
        if (waiting.size === 0) return journal.record(request);
        const origins = request.origins;
        const ready = { attributes: [], events: [], purchases: [] } as { [K in keyof Origins]: Origins[K][number][] };
        for (const kind of ['attributes', 'events', 'purchases'] as const) {
          for (const origin of origins[kind]) {
            if (settle(origin.file, origin.line)) ready[kind].push(origin);
            else if (origin.item !== undefined) journal.recordItem(origin.file, origin.line, origin.item);
          }
        }
        journal.record({ origins: ready });
      },
      flush: () => journal.flush(),
    },
  };
}

export async function send(options: SendOptions): Promise<UploadSummary<DeliverySummary>> {
  resolveEndpoint(options.url); // a bad URL is a usage error before anything is read
  if (options.inputs.length === 0) throw new UsageError('give at least one input file (or - for standard input)');
  const fromStdin = options.inputs.includes(STDIN);
  if (fromStdin && options.resume === true) throw new UsageError('--resume cannot be used with standard input (-): it cannot be read again');
  const journalPath = options.journalPath ?? defaultJournalPath(options.inputs[0]);
  if (!fromStdin && options.inputs.some((file) => resolve(file) === resolve(journalPath))) {
    throw new UsageError(`--journal ${journalPath} is also an input file`);
  }
  // the same messages as a dry run for a missing or unreadable input, before the journal looks at it
  for (const file of options.inputs) await checkReadable(file);
  // standard input cannot be read again, so a run that reads it keeps no journal
  const journal: Journal | undefined = fromStdin
    ? undefined
    : await openJournal({ path: journalPath, files: options.inputs, resume: options.resume === true });
  const ledger = journal === undefined ? undefined : lineLedger(journal);
  const client = createTrackClient({ url: options.url, apiKey: options.apiKey, connections: options.concurrency });
  try {
    return await upload<DeliverySummary>({
      ...options,
      dryRun: false,
      skipRow: journal?.skipRow.bind(journal),
      skipItem: journal === undefined ? undefined : (file, line, item) => journal.settledItems(file).get(line)?.has(item) ?? false,
      // reading and sending each get a thread (and a core); upload() plans standard input in this one
      workerPlan:
        options.thread === false
          ? undefined
          : {
              skip: new Map(options.inputs.map((file) => [file, journal?.settledRanges(file) ?? []])),
              skipItems: new Map(options.inputs.map((file) => [file, journal?.settledItems(file) ?? new Map()])),
            },
      appendRejects: options.resume === true,
      // a row refused before sending is settled too: a resumed run must not refuse it again
      onRejectWritten: ledger?.rejected,
      onLineItems: ledger?.expect,
      deliver: (requests, io) =>
        deliver(requests, {
          client,
          concurrency: options.concurrency,
          rate: options.rate,
          hourly: options.hourly,
          retries: options.retries,
          onUnknown: options.onUnknown,
          journal: ledger?.journal,
          onReject: io.onReject,
          onProgress: options.onDeliveryProgress,
          onNotice: options.onNotice,
          stopSignal: options.stopSignal,
          abortSignal: options.abortSignal,
        }),
    });
  } finally {
    await journal?.close();
    await client.close();
  }
}
