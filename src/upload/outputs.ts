// The files a run writes besides the journal: the rejects file and --out. Each opens with its first
// line, so a run that fails its checks leaves an earlier run's file as it was; a resumed run adds to
// its rejects file without writing a row twice.
import { readFile, stat, truncate } from 'node:fs/promises';
import { openNdjsonWriter, removeStaleFile, type NdjsonWriter } from '../input/ndjson-writer.js';
import { UsageError } from '../errors.js';
import type { RemoteInputs } from '../input/remote.js';
import { formatOf } from '../input/source.js';
import type { RejectRecord } from '../model/request.js';
import type { UploadOptions } from './upload.js';

/** How the rejects file is written: NDJSON records, or CSV rows (csv-rejects.ts). */
export type RejectsFormat = 'ndjson' | 'csv';

export const rejectKey = (record: Pick<RejectRecord, 'file' | 'line' | 'item' | 'column'>): string =>
  `${record.line}\u0000${record.item ?? ''}\u0000${record.column ?? ''}\u0000${record.file}`;

/**
 * The rejects file a resumed run adds to: a last line cut short by a kill is cut off (its row was not
 * settled, so it is rejected again), and the rows it holds already are returned, so that a row
 * rejected again after a kill is not written twice.
 */
export async function rejectsSoFar(path: string, format: RejectsFormat = 'ndjson'): Promise<Set<string>> {
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

/** Makes a writer that opens its file only when the first line comes, so a failed run leaves an earlier file as it was. */
export function lazyWriter(path: string, what: string, append: boolean): NdjsonWriter & { open(): Promise<void> } {
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
): NdjsonWriter & { open(): Promise<void> } {
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
    sync: () => lines.sync(),
    close: (closing) => lines.close(closing),
  };
}
