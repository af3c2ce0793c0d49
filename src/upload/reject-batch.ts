// A chunk's rejects as they cross from the planning thread: each already the line the rejects file
// gets, all of them in one buffer of UTF-8 handed over, with what the sending thread needs of each
// (its file, line, item and column, for the journal and a resumed run) in typed arrays, and their
// reasons counted. One reject a message of nested objects cost more to clone than to plan; and the
// lines wait outside the heap until the rejects file is synced (rejectsLedger), where text kept that
// long was moved to the old generation, a hundred MB of it in an all-rejected file. A rejected row's
// record is read back from its line only where a record is asked for (CSV rejects, the onReject hook).
import { fileLineOf, withFileLine, type RejectRecord } from '../model/request.js';
import { reasonOf } from './summary.js';

export interface RejectBatch {
  /** The lines one after another, each JSON.stringify(record) and its line feed, as UTF-8 (its own buffer, to hand over). */
  bytes: Uint8Array;
  /** Where each line ends in `bytes`, after its line feed. */
  ends: Uint32Array;
  /** The files named, each once; `fileOf` indexes it. */
  files: string[];
  fileOf: Int32Array;
  lines: Float64Array;
  /** Each record's item, -1 for none. */
  items: Int32Array;
  /** 1 for a field dropped from a row that is sent (a 'dropped-field' event), 0 for a row rejected. */
  dropped: Uint8Array;
  /** Each record's column (dropped fields), when any has one. */
  columns?: Array<string | undefined>;
  /** Each record's line of the file where its row begins (withFileLine), when any has one other than its `line`. */
  fileLines?: Float64Array;
  /** The rows rejected (not dropped fields), and how many of them have each reason (each once a row). */
  rejected: number;
  reasons: Map<string, number>;
}

/** How many records a batch holds. */
export const batchSize = (batch: RejectBatch): number => batch.ends.length;

const utf8 = new TextEncoder();
const utf8Text = new TextDecoder();

/** The i-th record's line, without its line feed. */
export function batchLine(batch: RejectBatch, i: number): string {
  return utf8Text.decode(batch.bytes.subarray(i === 0 ? 0 : batch.ends[i - 1], batch.ends[i] - 1));
}

/** The i-th record, read back from its line (told the line of the file where its row begins, when that is not its `line`). */
export function batchRecord(batch: RejectBatch, i: number): RejectRecord {
  const record = JSON.parse(batchLine(batch, i)) as RejectRecord;
  const fileLine = batch.fileLines?.[i];
  return fileLine === undefined || fileLine === record.line ? record : withFileLine(record, fileLine);
}

/** What a resumed run and the journal know a record by. */
export function batchKey(batch: RejectBatch, i: number): Pick<RejectRecord, 'file' | 'line' | 'item' | 'column'> {
  const item = batch.items[i];
  const column = batch.columns?.[i];
  return { file: batch.files[batch.fileOf[i]], line: batch.lines[i], ...(item === -1 ? {} : { item }), ...(column === undefined ? {} : { column }) };
}

/**
 * A value that JSON text carries as structured cloning would (plain objects and arrays of strings,
 * finite numbers, booleans and null): a row read from CSV or JSON is; one of typed Parquet values
 * (a bigint, bytes, a date) crosses as a record, as before, and so does one holding -0 (an NDJSON
 * `-0`, a Parquet double), which JSON would hand the onReject hook as 0.
 */
function isPlain(value: unknown, depth = 0): boolean {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return true;
  if (typeof value === 'number') return Number.isFinite(value) && !Object.is(value, -0);
  if (typeof value !== 'object' || depth > 8) return false;
  if (Array.isArray(value)) return value.every((element) => isPlain(element, depth + 1));
  if (Object.getPrototypeOf(value) !== Object.prototype) return false;
  for (const key in value) if (!isPlain((value as Record<string, unknown>)[key], depth + 1)) return false;
  return true;
}

/** Gathers a chunk's rejects into a batch; `add` refuses one whose record is not plain (it crosses as it is). */
export function createRejectBatcher() {
  let lines: string[] = [];
  let files: string[] = [];
  let fileOf: number[] = [];
  let numbers: number[] = [];
  let items: number[] = [];
  let dropped: number[] = [];
  let columns: Array<string | undefined> | undefined;
  let fileLines: number[] | undefined;
  let rejected = 0;
  let reasons = new Map<string, number>();
  return {
    add(record: RejectRecord, isDropped: boolean): boolean {
      const { file, line, item, column, errors } = record;
      if (typeof file !== 'string' || !Number.isFinite(line) || !Array.isArray(errors) || !isPlain(record.row) || (record.value !== undefined && !isPlain(record.value))) return false;
      if (Object.keys(record).some((key) => (record as unknown as Record<string, unknown>)[key] === undefined)) return false;
      lines.push(JSON.stringify(record));
      let index = files.lastIndexOf(file);
      if (index === -1) index = files.push(file) - 1;
      fileOf.push(index);
      numbers.push(line);
      items.push(item ?? -1);
      dropped.push(isDropped ? 1 : 0);
      if (column !== undefined) (columns ??= new Array<string | undefined>(lines.length - 1).fill(undefined)).push(column);
      else columns?.push(undefined);
      const fileLine = fileLineOf(record);
      if (fileLine !== line) (fileLines ??= numbers.slice(0, -1)).push(fileLine);
      else fileLines?.push(line);
      if (!isDropped) {
        rejected += 1;
        // each reason once a row, as the summary counts them (its bound on reasons applies as they are added to it)
        for (const reason of errors.length === 1 ? [reasonOf(errors[0])] : new Set(errors.map(reasonOf))) reasons.set(reason, (reasons.get(reason) ?? 0) + 1);
      }
      return true;
    },
    /** The records gathered since the last call, as a batch (undefined: none). */
    take(): RejectBatch | undefined {
      if (lines.length === 0) return undefined;
      // a line of JSON holds no line feed of its own, and no byte of a longer UTF-8 character is one
      const bytes = utf8.encode(`${lines.join('\n')}\n`);
      const ends = new Uint32Array(lines.length);
      for (let i = 0, at = -1; i < lines.length; i += 1) ends[i] = (at = bytes.indexOf(0x0a, at + 1)) + 1;
      const batch: RejectBatch = {
        bytes,
        ends,
        files,
        fileOf: Int32Array.from(fileOf),
        lines: Float64Array.from(numbers),
        items: Int32Array.from(items),
        dropped: Uint8Array.from(dropped),
        ...(columns === undefined ? {} : { columns }),
        ...(fileLines === undefined ? {} : { fileLines: Float64Array.from(fileLines) }),
        rejected,
        reasons,
      };
      lines = [];
      files = [];
      fileOf = [];
      numbers = [];
      items = [];
      dropped = [];
      columns = undefined;
      fileLines = undefined;
      rejected = 0;
      reasons = new Map();
      return batch;
    },
  };
}
