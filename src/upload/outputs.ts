// The files a run writes besides the journal: the rejects file and --out. Each opens with its first
// line, so a run that fails its checks leaves an earlier run's file as it was; a resumed run adds to
// its rejects file without writing a row twice.
import { once } from 'node:events';
import { appendFile, readFile, stat, truncate } from 'node:fs/promises';
import { openNdjsonWriter, removeStaleFile, type NdjsonWriter } from '../input/ndjson-writer.js';
import { OutputError, UsageError } from '../errors.js';
import { isStream, linkTarget } from '../file-folder.js';
import type { RemoteInputs } from '../input/remote.js';
import { checkWritable, isOneOf } from './check.js';
import { formatOf } from '../input/source.js';
import type { RejectRecord } from '../model/request.js';
import { batchRecord, batchSize, type RejectBatch } from './reject-batch.js';
import type { UploadOptions } from './upload-options.js';

/** How the rejects file is written: NDJSON records, or CSV rows (csv-rejects.ts). */
export type RejectsFormat = 'ndjson' | 'csv';

/** A file of lines opened with its first one; `writeBatch` writes a batch of rejects at once. */
export type LinesFile = NdjsonWriter & { open(): Promise<void>; writeBatch(batch: RejectBatch): Promise<void> };

export const rejectKey = (record: Pick<RejectRecord, 'file' | 'line' | 'item' | 'column'>): string =>
  `${record.line}\u0000${record.item ?? ''}\u0000${record.column ?? ''}\u0000${record.file}`;

/**
 * The rejects file a resumed run adds to: a last line cut short by a kill is cut off (its row was not
 * settled, so it is rejected again), and the rows it holds already are returned, so that a row
 * rejected again after a kill is not written twice.
 */
export async function rejectsSoFar(path: string, format: RejectsFormat = 'ndjson'): Promise<Set<string>> {
  // a device or a pipe named as the rejects file holds no earlier rows, and may never end; nor does
  // standard output sent to a file (`--rejects /dev/stdout >> log`): the file is the run's output
  if ((await stat(path).catch(() => undefined))?.isFile() !== true || isStream(linkTarget(path))) return new Set();
  let text: Buffer;
  try {
    text = await readFile(path);
  } catch {
    return new Set();
  }
  let whole = text.lastIndexOf(0x0a) + 1;
  if (whole < text.length) {
    // a last line without its end: cut short by a kill, or a whole reject saved without its line
    // break (an editor, a spreadsheet): a whole one is kept, and ended
    // (a CSV file's first line is its header, checked before: checkRejectsHeader)
    if ((format === 'ndjson' || whole > 0) && (await isWholeReject(text, whole, format))) {
      await appendFile(path, '\n');
      text = Buffer.concat([text, Buffer.from('\n')]);
      whole = text.length;
    } else await truncate(path, whole);
  }
  const keys = new Set<string>();
  if (format === 'csv') {
    const { csvRejectKeys } = await import('./csv-rejects.js');
    for (const record of csvRejectKeys(text.subarray(0, whole).toString('utf8'))) keys.add(rejectKey(record));
    return keys;
  }
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

/** The text after `whole` is a reject as the file's format writes one (CSV: under the header of its first line). */
async function isWholeReject(text: Buffer, whole: number, format: RejectsFormat): Promise<boolean> {
  const tail = text.subarray(whole).toString('utf8');
  if (format === 'csv') {
    const { isWholeCsvReject } = await import('./csv-rejects.js');
    return isWholeCsvReject(text.subarray(0, text.indexOf(0x0a) + 1).toString('utf8'), tail);
  }
  try {
    const record = JSON.parse(tail) as Partial<RejectRecord>;
    return typeof record.file === 'string' && typeof record.line === 'number';
  } catch {
    return false;
  }
}

/**
 * What a resumed run says of the rejects it counted that the rejects file held already (rows the run
 * before rejected, or fields it dropped, and left unsettled when it stopped): counted again, since
 * this run rejected or dropped them again, but not written twice.
 */
export function heldNote(held: number, path: string): string[] {
  if (held === 0) return [];
  const what = held === 1 ? '1 of the rejected rows and dropped fields counted here was' : `${held} of the rejected rows and dropped fields counted here were`;
  return [`${what} in ${path} already, from the run this one resumes: not written again`];
}

/** The rejects of a run as the journal settles them (see rejectsLedger). */
export interface RejectsLedger {
  /** Writes a reject, unless the file holds it already (a resumed run's); throws when the file cannot take it. */
  write(record: RejectRecord): Promise<void>;
  /** Writes a batch of rejects as write() does each, in one write. */
  writeBatch(batch: RejectBatch): Promise<void>;
  /**
   * The journal's `beforeSettling`: syncs the file, and returns the rejects written since the last
   * sync when it cannot (a full disk), for the journal to carry instead.
   */
  settle(): Promise<RejectRecord[] | undefined>;
  /** Writes the rejects an earlier run's journal carried that the file does not hold yet; how many. */
  writeOwed(records: readonly unknown[]): Promise<number>;
  /** Rejects counted by this run and not written, as the file held them already. */
  readonly held: number;
}

/**
 * The rejects file as the journal sees it. A row that needs a reject line settles once the line is on
 * disk; a rejects file that cannot be written (a full disk) must not hold back the settling of rows
 * whose outcome is known, nor make a resume send again rows the server accepted. So until the file is
 * synced its rejects are kept here too, and when it cannot be, the journal carries them (`owed`) and
 * settles the rows; a resumed run writes them first. `written`: the rejects the file holds already.
 */
export function rejectsLedger(writer: LinesFile, written: Set<string>, journaled: boolean): RejectsLedger {
  let held = 0;
  // a batch is kept as its lines, and read back into records only when the journal must carry them
  let unsynced: Array<RejectRecord | RejectBatch> = [];
  const write = async (record: RejectRecord): Promise<void> => {
    if (written.size > 0 && written.has(rejectKey(record))) {
      held += 1;
      return;
    }
    // kept before it is written: a write that fails leaves it owed
    if (journaled) unsynced.push(record);
    await writer.write(record);
  };
  return {
    write,
    async writeBatch(batch) {
      // a resumed run leaves out the rejects its file holds: one at a time
      if (written.size > 0) {
        for (let i = 0; i < batchSize(batch); i += 1) await write(batchRecord(batch, i));
        return;
      }
      if (journaled) unsynced.push(batch);
      await writer.writeBatch(batch);
    },
    async settle() {
      const taken = unsynced;
      unsynced = [];
      try {
        await writer.sync();
        return undefined;
      } catch {
        // the run stops on the file's error where it was written; here the rows settle all the same
        return taken.flatMap((kept) => ('bytes' in kept ? Array.from({ length: batchSize(kept) }, (_, i) => batchRecord(kept, i)) : [kept]));
      }
    },
    async writeOwed(records) {
      let count = 0;
      for (const record of records as RejectRecord[]) {
        const key = rejectKey(record);
        if (written.has(key)) continue;
        await writer.write(record);
        // the rows of some are planned again (rejected before sending, they were not settled): not written twice
        written.add(key);
        count += 1;
      }
      return count;
    },
    get held() {
      return held;
    },
  };
}

/** What a resumed run says of the rejects the run before could not write, written now. */
export function owedNote(count: number, path: string): string[] {
  if (count === 0) return [];
  return [`${count === 1 ? '1 reject' : `${count.toLocaleString('en-US')} rejects`} the run before could not write (its rejects file was full) ${count === 1 ? 'was' : 'were'} written to ${path} now, from its journal`];
}

/** Makes a writer that opens its file only when the first line comes, so a failed run leaves an earlier file as it was. */
export function lazyWriter(path: string, what: string, append: boolean): LinesFile {
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
    async writeBatch(batch) {
      count += batchSize(batch);
      // one write of the lines: the writer adds the last line feed
      await (await get()).writeLine(batch.bytes.subarray(0, -1));
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

/** `--out -`: the request bodies go to standard output (and the summary to standard error). */
export const STDOUT = '-';

/** The rejects file and --out must be files of their own, in folders this run can write. */
export async function checkOutputs(inputs: readonly string[], rejectsPath: string, outPath: string | undefined): Promise<void> {
  const out = outPath === STDOUT ? undefined : outPath;
  for (const [flag, path] of [['--rejects', rejectsPath], ['--out', out]] as const) {
    if (path !== undefined && (await isOneOf(path, inputs))) throw new UsageError(`${flag} ${path} is also an input file`);
  }
  if (out !== undefined && (await isOneOf(out, [rejectsPath]))) throw new UsageError(`--out and --rejects name the same file ${rejectsPath}`);
  await checkWritable('--rejects', rejectsPath);
  if (out !== undefined) await checkWritable('--out', out);
}

/** The --out writer: a file opened with its first line, or standard output. */
export function outWriter(path: string): NdjsonWriter & { open(): Promise<void> } {
  return path === STDOUT ? stdoutWriter() : lazyWriter(path, 'requests', false);
}

/**
 * Request bodies on standard output, with backpressure. A reader that goes away (`| head`) fails the
 * next write with a message, not a stack trace; standard output itself is left open.
 */
function stdoutWriter(): NdjsonWriter & { open(): Promise<void> } {
  const stream = process.stdout;
  let count = 0;
  let failure: OutputError | undefined;
  const failed = (error: NodeJS.ErrnoException): void => {
    const why = error.code === 'EPIPE' ? 'EPIPE (its reader closed it)' : (error.code ?? error.message);
    failure ??= new OutputError(`cannot write the requests to standard output: ${why}`, STDOUT);
  };
  stream.on('error', failed);
  const writeLine = async (json: string | Uint8Array): Promise<void> => {
    if (failure !== undefined) throw failure;
    count += 1;
    const line = typeof json === 'string' ? `${json}\n` : Buffer.concat([json, Buffer.from('\n')]);
    // once() also settles on 'error', and leaves no listener behind either way
    if (!stream.write(line, (error) => error && failed(error))) await once(stream, 'drain').catch(() => undefined);
    if (failure !== undefined) throw failure;
  };
  return {
    path: STDOUT,
    get count() {
      return count;
    },
    open: async () => undefined,
    writeLine,
    write: (value) => writeLine(JSON.stringify(value)),
    // a pipe or a terminal: nothing to sync
    sync: async () => {
      if (failure !== undefined) throw failure;
    },
    close: async () => {
      stream.off('error', failed);
      if (failure !== undefined) throw failure;
    },
  };
}

/** CSV rejects hold rows of CSV inputs only: checked with the other inputs, before anything is opened. */
export function checkRejectsFormat(options: Pick<UploadOptions, 'rejectsFormat' | 'inputs' | 'format'>): void {
  if (options.rejectsFormat !== 'csv') return;
  const other = options.inputs.find((file) => formatOf(file, options.format) !== 'csv');
  if (other !== undefined) {
    const format = { ndjson: 'NDJSON', json: 'JSON', parquet: 'Parquet', csv: 'CSV' }[formatOf(other, options.format)];
    throw new UsageError(`--rejects-format csv writes rows of CSV inputs; ${other} is ${format} (leave its rejects as NDJSON)`);
  }
}

/** The rejects file's writer: NDJSON records, or with --rejects-format csv, CSV rows (the module loaded only then). */
export function rejectsWriter(
  path: string,
  append: boolean,
  options: Pick<UploadOptions, 'rejectsFormat' | 'inputs' | 'format' | 'encoding' | 'kind' | 'map' | 'reading'> & { remote?: RemoteInputs },
): LinesFile {
  const lines = lazyWriter(path, 'rejects', append);
  if (options.rejectsFormat !== 'csv') return lines;
  let rows = 0;
  let writeRow: Promise<(record: RejectRecord) => Promise<void>> | undefined;
  return {
    path,
    get count() {
      return rows;
    },
    open: () => lines.open(),
    async write(value) {
      rows += 1;
      await (await (writeRow ??= import('./csv-rejects.js').then((m) => m.csvRejectLines(lines, append, options))))(value as RejectRecord);
    },
    writeLine: (json) => lines.writeLine(json),
    // a CSV row is made of each record, read back from its line
    async writeBatch(batch) {
      for (let i = 0; i < batchSize(batch); i += 1) await this.write(batchRecord(batch, i));
    },
    sync: () => lines.sync(),
    close: (closing) => lines.close(closing),
  };
}
