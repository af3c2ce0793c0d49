// `track upload` and `track validate`: input files -> rows -> checked items -> planned requests,
// then a dry run (count them, optionally write them out) or a delivery (the sender plugs in as
// `deliver`). Every row is accounted for: in a request, in the rejects file, or skipped on resume.
import { access, constants, readFile, stat, truncate } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { UsageError } from './errors.js';
import { openNdjsonWriter, removeStaleFile, type NdjsonWriter } from './input/ndjson-writer.js';
import { checkReadable, formatOf, inputBytes, STDIN } from './input/source.js';
import { validateColumnMap, type ColumnMap } from './mapping/column-map.js';
import type { PlannedRequest, RejectRecord } from './model/plan.js';
import type { Plan, PlanOptions } from './plan.js';
import type { PlanSummary } from './plan-summary.js';
import { planInWorker } from './plan-thread.js';
import type { Journal } from './transport/resume/journal.js';
import { lineLedger } from './transport/resume/line-ledger.js';

export type { FileSummary, PlanSummary } from './plan-summary.js';
export type { Plan, PlanOptions } from './plan.js';

/** What a deliverer gets besides the requests: where refused items go, and the journal's hooks. */
export interface DeliverIo {
  onReject: (record: RejectRecord) => Promise<void>;
  /** Awaited before a request is first posted: its rows are recorded as sent, and it is written to --out. */
  beforeFirstPost?: (request: PlannedRequest) => Promise<void>;
  /** Records the rows behind a settled request (see openJournal). */
  journal?: { record(request: PlannedRequest): void; flush(): Promise<void> };
  /** How many rows of a request an earlier run left in doubt (sent, never settled). */
  inDoubtRows?: (request: PlannedRequest) => number;
  /** A request recorded as sent that certainly was not applied (never left, refused unapplied). */
  notApplied?: (request: PlannedRequest) => void;
  /** Rows sent again after an outcome that could not be known: recorded, in case this run is killed before it reports them. */
  sentAgain?: (rows: number) => void;
  /** Rows earlier runs sent again and never reported: this run's possibly duplicated starts from them. */
  carriedDuplicates?: number;
}

/** Sends planned requests and hands back the items the server refused; the network sender is one. */
export type Deliver<D = unknown> = (requests: AsyncIterable<PlannedRequest>, io: DeliverIo) => Promise<D>;

export interface UploadOptions<D = unknown> extends Omit<PlanOptions, 'onReject' | 'map' | 'skipRow' | 'skipItem' | 'rejectRow' | 'onLineItems'> {
  /** Plan only: nothing is sent. */
  dryRun: boolean;
  /** A --map file (JSON) to read; or give `map` itself. */
  mapFile?: string;
  map?: ColumnMap;
  /** The rejects file (NDJSON); default `<first input>.rejects.ndjson` beside it. Left only when a row was rejected. */
  rejectsPath?: string;
  /** Write each request body here, one a line: in a dry run every planned one, in a delivery each as it is first sent. */
  outPath?: string;
  /** The sender, for a run that is not a dry run. */
  deliver?: Deliver<D>;
  /**
   * The resume journal of a delivery from files: opened once every check has passed, with the
   * rejects file open (rows it settles wait for their reject lines to be on disk). With `resume`,
   * the rows it settled are skipped and the rejects file is added to.
   */
  journal?: { resume: boolean; open(beforeSettling: () => Promise<void>): Promise<Journal> };
  /** Rows the journal says an earlier run left in flight are rejected unsent, not sent again (--on-unknown reject). */
  rejectInDoubt?: boolean;
  /** Plan in a worker thread while this one sends (a delivery from files, not standard input). */
  thread?: boolean;
  /** Stop reading (the delivery is stopping, or Ctrl-C in a dry run). */
  stopSignal?: AbortSignal;
}

export interface UploadSummary<D = unknown> extends PlanSummary {
  /** The rejects file, when anything was written to it. */
  rejectsPath?: string;
  outPath?: string;
  elapsedMs: number;
  /** What `deliver` returned. */
  delivery?: D;
  /** The run was stopped (stopSignal) before it read every row. */
  interrupted: boolean;
  /** What stopped the run outside the delivery: an output file that cannot be written, a plan that failed. */
  fatal?: Error;
}

export const SENDING_UNAVAILABLE = 'upload() sends only through a deliver function; send() supplies the network one';

/** `users.csv.gz` -> `users.rejects.ndjson` beside it; standard input -> `stdin.rejects.ndjson` here. */
export function defaultRejectsPath(firstInput: string): string {
  if (firstInput === STDIN) return 'stdin.rejects.ndjson';
  const name = basename(firstInput).replace(/\.gz$/i, '').replace(/\.[^.]+$/, '');
  return join(dirname(firstInput), `${name}.rejects.ndjson`);
}

/** Reads and checks a --map file. */
export async function readColumnMap(path: string): Promise<ColumnMap> {
  let json: unknown;
  try {
    json = JSON.parse(await readFile(path, 'utf8'));
  } catch (error) {
    const e = error as NodeJS.ErrnoException;
    throw new UsageError(`--map ${path}: ${e.code === 'ENOENT' ? 'no such file' : e.code ?? `is not valid JSON (${e.message})`}`);
  }
  const result = validateColumnMap(json);
  if (!result.ok) throw new UsageError(`--map ${path}:\n  ${result.problems.join('\n  ')}`);
  return result.map;
}

/** True when `path` names one of `files`: the same path, or the same file through a link. */
export async function isOneOf(path: string, files: readonly string[]): Promise<boolean> {
  const others = files.filter((file) => file !== STDIN);
  if (others.some((file) => resolve(file) === resolve(path))) return true;
  const info = await stat(path).catch(() => undefined);
  if (info === undefined) return false;
  for (const file of others) {
    const other = await stat(file).catch(() => undefined);
    if (other !== undefined && other.dev === info.dev && other.ino === info.ino) return true;
  }
  return false;
}

/** A file the run will write: it must be writable now, though it is created only when written to. */
export async function checkWritable(flag: string, path: string): Promise<void> {
  const exists = await stat(path).then((info) => {
    if (info.isDirectory()) throw new UsageError(`${flag} ${path} is a directory`);
    return true;
  }, () => false);
  try {
    await access(exists ? path : dirname(resolve(path)), constants.W_OK);
  } catch (error) {
    throw new UsageError(`cannot write ${flag} ${path} (${(error as NodeJS.ErrnoException).code ?? String(error)})`);
  }
}

/** Reads the header of every CSV input that is a file, so a bad one stops the run before anything is sent. */
async function checkHeaders(options: UploadOptions<unknown>, map: ColumnMap | undefined): Promise<void> {
  const csvFiles = options.inputs.filter((file) => file !== STDIN && formatOf(file, options.format) === 'csv');
  if (csvFiles.length === 0) return;
  const { readCsv } = await import('./input/csv.js');
  const { csvHeaderProblem } = await import('./plan.js');
  for (const file of csvFiles) {
    for await (const records of readCsv(inputBytes(file), file, { encoding: options.encoding })) {
      if (records.length === 0) continue;
      const problem = csvHeaderProblem(records[0], file, { kind: options.kind, map });
      if (problem !== undefined) throw problem;
      break;
    }
  }
}

const rejectKey = (record: Pick<RejectRecord, 'file' | 'line' | 'item'>): string => `${record.line}\u0000${record.item ?? ''}\u0000${record.file}`;

/**
 * The rejects file a resumed run adds to: a last line cut short by a kill is cut off (its row was not
 * settled, so it is rejected again), and the rows it holds already are returned, so that a row
 * rejected again after a kill is not written twice.
 */
async function rejectsSoFar(path: string): Promise<Set<string>> {
  // a device or a pipe named as the rejects file holds no earlier rows, and may never end
  if ((await stat(path).catch(() => undefined))?.isFile() !== true) return new Set();
  let text: Buffer;
  try {
    text = await readFile(path);
  } catch {
    return new Set();
  }
  const whole = text.lastIndexOf(0x0a) + 1;
  if (whole < text.length) await truncate(path, whole);
  const keys = new Set<string>();
  for (const line of text.subarray(0, whole).toString('utf8').split('\n')) {
    if (line === '') continue;
    try {
      const record = JSON.parse(line) as Partial<RejectRecord>;
      if (typeof record.file === 'string' && typeof record.line === 'number') keys.add(rejectKey(record as RejectRecord));
    } catch {
      // a line someone edited: it stays as it is, and its row is simply written again when rejected
    }
  }
  return keys;
}

/** Makes a writer that opens its file only when the first line comes, so a failed run leaves an earlier file as it was. */
function lazyWriter(path: string, what: string, append: boolean): NdjsonWriter & { open(): Promise<void> } {
  let writer: Promise<NdjsonWriter> | undefined;
  const get = (): Promise<NdjsonWriter> => (writer ??= openNdjsonWriter(path, what, { append }));
  let count = 0;
  return {
    path,
    get count() {
      return count;
    },
    /** Opens (creates, or empties) the file with no line written. */
    async open() {
      await get();
    },
    async writeLine(json) {
      count += 1;
      await (await get()).writeLine(json);
    },
    async write(value) {
      count += 1;
      await (await get()).write(value);
    },
    async sync() {
      if (writer !== undefined) await (await writer).sync();
    },
    async close(closing) {
      if (writer !== undefined) await (await writer).close(closing);
      // nothing written in a run that went through: an earlier run's file would mislead
      else if (closing?.removeIfEmpty === true) await removeStaleFile(path);
    },
  };
}

const asError = (error: unknown): Error => (error instanceof Error ? error : new Error(String(error)));

export async function upload<D = unknown>(options: UploadOptions<D>): Promise<UploadSummary<D>> {
  const started = performance.now();
  const { deliver } = options;
  const delivering = !options.dryRun && deliver !== undefined;
  if (!options.dryRun && deliver === undefined) throw new UsageError(SENDING_UNAVAILABLE);

  // 1. check everything a person can get wrong, before any file is written or anything sent
  if (options.inputs.length === 0) throw new UsageError('give at least one input file (or - for standard input)');
  if (options.inputs.filter((file) => file === STDIN).length > 1) throw new UsageError('standard input (-) can be read only once');
  for (const file of options.inputs) formatOf(file, options.format);
  for (const file of options.inputs) await checkReadable(file);
  const map = options.mapFile !== undefined ? await readColumnMap(options.mapFile) : options.map;
  const rejectsPath = options.rejectsPath ?? defaultRejectsPath(options.inputs[0]);
  for (const [flag, path] of [['--rejects', rejectsPath], ['--out', options.outPath]] as const) {
    if (path !== undefined && (await isOneOf(path, options.inputs))) throw new UsageError(`${flag} ${path} is also an input file`);
  }
  if (options.outPath !== undefined && (await isOneOf(options.outPath, [rejectsPath]))) {
    throw new UsageError(`--out and --rejects name the same file ${rejectsPath}`);
  }
  await checkWritable('--rejects', rejectsPath);
  if (options.outPath !== undefined) await checkWritable('--out', options.outPath);
  await checkHeaders(options, map);

  // 2. outputs: the rejects file and --out open with their first line; the journal after the rejects file
  const resume = options.journal?.resume === true;
  const rejects = lazyWriter(rejectsPath, 'rejects', resume);
  const out = options.outPath === undefined ? undefined : lazyWriter(options.outPath, 'requests', false);
  const journal = delivering ? await options.journal?.open(() => rejects.sync()) : undefined;
  const ledger = journal === undefined ? undefined : lineLedger(journal);

  // 3. the plan: rows an earlier run settled are left out
  const written = resume ? await rejectsSoFar(rejectsPath) : undefined;
  const onReject = (record: RejectRecord): Promise<void> =>
    written !== undefined && written.size > 0 && written.has(rejectKey(record)) ? Promise.resolve() : rejects.write(record);
  const onPlanReject = async (record: RejectRecord): Promise<void> => {
    await onReject(record);
    // a row refused before sending is settled too: a resumed run must not refuse it again
    ledger?.rejected(record);
  };
  const skipItems = journal === undefined ? undefined : new Map(options.inputs.map((file) => [file, journal.settledItems(file)]));
  const rejectInDoubt = journal !== undefined && journal.inDoubt > 0 && options.rejectInDoubt === true;
  const planOptions = { ...options, map, onReject: onPlanReject, onLineItems: ledger?.expect };
  const plan: Plan =
    delivering && options.thread !== false && !options.inputs.includes(STDIN)
      ? planInWorker({
          ...planOptions,
          skip: new Map(options.inputs.map((file) => [file, journal?.settledRanges(file) ?? []])),
          reject: rejectInDoubt ? new Map(options.inputs.map((file) => [file, journal.inDoubtRanges(file)])) : undefined,
          skipItems,
        })
      : // loaded here only: a threaded plan keeps the CSV parser and the validator out of this thread
        (await import('./plan.js')).planRequests({
          ...planOptions,
          skipRow: journal === undefined ? undefined : (file, line) => journal.skipRow(file, line),
          rejectRow: rejectInDoubt ? (file, line) => journal.inDoubtRow(file, line) : undefined,
          skipItem: journal === undefined ? undefined : (file, line, item) => journal.settledItems(file).get(line)?.has(item) ?? false,
        });
  let readAll = false;
  async function* planned(): AsyncGenerator<PlannedRequest> {
    yield* plan.requests;
    readAll = true;
  }

  // 4. deliver, or drain the plan (a dry run)
  let delivery: D | undefined;
  let fatal: Error | undefined;
  try {
    if (delivering) {
      delivery = await deliver!(planned(), {
        onReject,
        journal: ledger?.journal,
        inDoubtRows: journal === undefined || journal.inDoubt === 0 ? undefined : (request) => journal.inDoubtRows(request),
        notApplied: journal === undefined ? undefined : (request) => journal.notApplied(request),
        sentAgain: journal === undefined ? undefined : (rows) => journal.sentAgain(rows),
        carriedDuplicates: journal?.unreported,
        beforeFirstPost:
          journal === undefined && out === undefined
            ? undefined
            : async (request) => {
                await journal?.sending(request);
                try {
                  await out?.writeLine(request.json ?? JSON.stringify(request.body));
                } catch (error) {
                  journal?.notApplied(request);
                  throw error;
                }
              },
      });
    } else {
      for await (const request of planned()) {
        await out?.write(request.body);
        if (options.stopSignal?.aborted === true) break;
      }
    }
  } catch (error) {
    fatal = asError(error);
  }
  const deliveryFatal = (delivery as { fatal?: Error } | undefined)?.fatal;

  // 5. close: what fails here is the run's fatal error, not a lost summary
  const went = fatal === undefined && deliveryFatal === undefined;
  const closing = async (close: () => Promise<void> | undefined): Promise<void> => {
    try {
      await close();
    } catch (error) {
      fatal ??= asError(error);
    }
  };
  // --out holds every request of a run that went through, none included: an empty file, not an earlier run's
  if (out !== undefined && out.count === 0 && went) await closing(() => out.open());
  await closing(() => out?.close());
  await closing(() => rejects.close({ removeIfEmpty: went && !resume }));
  await closing(() => {
    if (journal === undefined) return undefined;
    const settledAll = readAll && went && !isIncomplete(delivery);
    const rowsRead = readAll ? new Map(plan.summary.files.map((f) => [f.file, f.rows])) : undefined;
    return journal.close({ complete: settledAll, rowsRead });
  });
  // 6. the summary
  return {
    ...plan.summary,
    rejectsPath: rejects.count > 0 ? rejectsPath : undefined,
    outPath: out !== undefined && (out.count > 0 || went) ? options.outPath : undefined,
    elapsedMs: Math.round(performance.now() - started),
    delivery,
    interrupted: !readAll && options.stopSignal?.aborted === true,
    fatal,
  };
}

/** A delivery that left requests unsettled (stopped, aborted, failed). */
function isIncomplete(delivery: unknown): boolean {
  const d = delivery as { requestsAbandoned?: number; stopped?: boolean; aborted?: boolean; fatal?: Error } | undefined;
  return d !== undefined && ((d.requestsAbandoned ?? 0) > 0 || d.stopped === true || d.aborted === true || d.fatal !== undefined);
}
