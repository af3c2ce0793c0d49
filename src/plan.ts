// Input files -> rows -> checked items -> planned requests. Every row is accounted for: in a
// request, handed to onReject, or skipped (resume). upload() runs this, here or in a worker thread.
import type { Readable } from 'node:stream';
import { createBatcher, DEFAULT_MAX_BODY_BYTES, soloBodyBytes } from './batch/batcher.js';
import { InputError } from './errors.js';
import { readCsv, type CsvRecord } from './input/csv.js';
import type { InputEncoding } from './input/decode.js';
import { readNdjson } from './input/ndjson.js';
import { formatOf, inputBytes, type InputFormat } from './input/source.js';
import { itemErrors, itemWarnings } from './mapping/check.js';
import type { ColumnMap } from './mapping/column-map.js';
import { csvRowObject, CsvRowOrigin, jsonBytesBound, mapCsvRow, planCsv, widthProblem, type CsvPlan } from './mapping/csv-rows.js';
import { createLineMapper } from './mapping/ndjson-lines.js';
import { identityHash, identityOf } from './model/identity.js';
import { resolveLimits, type BatchLimits } from './model/limits.js';
import { rejectRecord, type ItemOrigin, type PlannedRequest, type RejectRecord } from './model/plan.js';
import { ARRAY_NAMES, type ArrayName } from './model/types.js';
import { count, countRejected, emptySummary, type FileSummary, type PlanSummary } from './plan-summary.js';

export type { FileSummary, PlanSummary } from './plan-summary.js';

const MAX_WARNING_EXAMPLES = 10;
/** Why a row an earlier run left in flight is rejected rather than sent again (--on-unknown reject). */
export const IN_DOUBT =
  'outcome unknown: the run before stopped while this row was in flight, so it may have been applied; not sent again (--on-unknown reject)';

export interface PlanOptions {
  /** Input files in order; `-` is standard input. */
  inputs: readonly string[];
  /** Overrides the format the file names suggest (required for `-`). */
  format?: InputFormat;
  /** --encoding: how every input's bytes are read (default utf-8). */
  encoding?: InputEncoding;
  /** The kind of every CSV row and NDJSON item line; inferred per file (CSV) or per line (NDJSON) when absent. */
  kind?: ArrayName;
  /** --map: renames and types CSV columns. */
  map?: ColumnMap;
  /** Default: the `mau` profile. */
  limits?: BatchLimits;
  /** Largest request body in bytes of JSON (default 4,000,000, under the 4 MiB servers accept). */
  maxBodyBytes?: number;
  /** Where `-` reads from. */
  stdin?: Readable;
  /** Rows to leave out, such as those an earlier run already delivered (resume). */
  skipRow?: (file: string, line: number) => boolean;
  /**
   * Rows to reject unsent: an earlier run posted them and stopped before their answer came, so
   * they may have been applied (a resume with --on-unknown reject).
   */
  rejectRow?: (file: string, line: number) => boolean;
  /** Items of a line of several to leave out: those an earlier run delivered before it stopped. */
  skipItem?: (file: string, line: number, item: number) => boolean;
  /** Receives each rejected row; awaited, so a slow file slows reading rather than filling memory. */
  onReject?: (record: RejectRecord) => void | Promise<void>;
  /** Told of each NDJSON line that yields more than one item (a request-shaped line), before its items: how many are planned. */
  onLineItems?: (file: string, line: number, items: number) => void;
  /** Receives the number of bytes read from an input (before gunzip), as they are read. */
  onBytesRead?: (bytes: number) => void;
  /** Bytes read from a file at a time (default 64 KiB); the rows of a chunk live until it is planned. */
  chunkBytes?: number;
  /** Called as reading goes on (after each chunk of rows). */
  onProgress?: (progress: { file: string; rows: number; requests: number }) => void;
  /** Stop reading: the plan ends after the chunk it is on. */
  stopSignal?: AbortSignal;
}

export interface Plan {
  /** The planned requests, in order; reading the files happens as this is consumed. */
  requests: AsyncIterable<PlannedRequest>;
  /** Filled in as `requests` is consumed; complete once it is done. */
  summary: PlanSummary;
}

/** Why a CSV file's first record cannot be its header, as the error to stop the run with; undefined when it can. */
export function csvHeaderProblem(record: CsvRecord, file: string, options: Pick<PlanOptions, 'kind' | 'map'>): InputError | undefined {
  if ('error' in record) return new InputError(`the header cannot be read: ${record.error}`, file, record.line);
  if (record.undecodable !== undefined) {
    return new InputError(`the header cannot be read: column ${record.undecodable.cell + 1}: ${record.undecodable.message}`, file, record.line);
  }
  const result = planCsv(record.cells, { kind: options.kind, map: options.map });
  if (!result.ok) return new InputError(`the header cannot be used:\n  ${result.problems.join('\n  ')}`, file, record.line);
  return undefined;
}

/** Plans the requests for the inputs. Inputs are opened as the requests are consumed. */
export function planRequests(options: PlanOptions): Plan {
  const summary = emptySummary();
  const limits = options.limits ?? resolveLimits();
  const maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const batcher = createBatcher({ limits, maxBodyBytes });
  const formats = options.inputs.map((file) => formatOf(file, options.format));

  // Rows are handled synchronously, a chunk at a time; the chunk's rejects and completed requests
  // are handed on after it, so a row costs no promise of its own.
  const rejects: RejectRecord[] = [];
  let anonymous = 0;
  const ready: PlannedRequest[] = [];

  /** `item`: the item's place in a line of several (see ItemOrigin.item). */
  const reject = (file: string, line: number, kind: RejectRecord['kind'], row: unknown, errors: readonly string[], item?: number): void => {
    countRejected(summary, errors);
    rejects.push(rejectRecord(file, line, kind, row, [...errors], item));
  };

  // An item's exact JSON size is needed only when it could matter: below this bound, even a full
  // request of such items stays within maxBodyBytes.
  const maxItems = limits.maxTotal ?? (limits.maxPerArray === undefined ? Infinity : 3 * limits.maxPerArray);
  const smallItemBytes = maxBodyBytes / maxItems;
  /** The largest item of each kind that a request holding nothing else can carry. */
  const largestItem = Object.fromEntries(
    ARRAY_NAMES.map((kind) => [kind, maxBodyBytes - soloBodyBytes({ kind, bytes: 0 })]),
  ) as Record<ArrayName, number>;

  /**
   * Checks an item and hands it to the batcher, or rejects its row. `bytesBound` is at least the
   * bytes of the item's JSON.
   */
  const take = (
    kind: ArrayName,
    item: unknown,
    origin: ItemOrigin,
    bytesBound: number,
    mapped?: { errors?: string[]; failed?: string[] },
  ): void => {
    const errors = itemErrors(kind, item, mapped);
    if (errors.length > 0) {
      reject(origin.file, origin.line, kind, origin.row, errors, origin.item);
      return;
    }
    const bytes = bytesBound <= smallItemBytes ? bytesBound : Buffer.byteLength(JSON.stringify(item));
    if (bytes > largestItem[kind]) {
      reject(
        origin.file,
        origin.line,
        kind,
        origin.row,
        [`row: the item is ${bytes} bytes as JSON; a request body may be at most ${maxBodyBytes} bytes`],
        origin.item,
      );
      return;
    }
    const record = item as Record<string, unknown>;
    const identity = identityOf(record);
    for (const warning of itemWarnings(kind, record, identity.by)) {
      summary.warnings += 1;
      count(summary.warningReasons, warning);
      if (summary.warningExamples.length < MAX_WARNING_EXAMPLES) summary.warningExamples.push(`${origin.file}:${origin.line}: ${warning}`);
    }
    summary.items[kind] += 1;
    // push-token imports name no user: each is a user of its own, numbered below zero (hashes are not)
    const userKey = identity.by === 'anonymous' ? -(anonymous += 1) : identityHash(identity);
    const done = batcher.add({ kind, item: record, origin, userKey, bytes });
    if (done.length > 0) ready.push(...done);
  };

  const stopped = (): boolean => options.stopSignal?.aborted === true;

  /** After each chunk: the rejects go out (awaited), then the requests it completed. */
  async function* handOn(file: string): AsyncGenerator<PlannedRequest> {
    // told first: the requests may wait long to be taken (a sender held by a rate limit)
    options.onProgress?.({ file, rows: summary.rows, requests: summary.requests + ready.length });
    for (const record of rejects.splice(0)) await options.onReject?.(record);
    for (const request of ready.splice(0)) {
      summary.requests += 1;
      yield request;
    }
  }

  /** Counts a data row; true when it is to be left out (an earlier run settled it). */
  const countRow = (fileSummary: FileSummary, line: number): boolean => {
    fileSummary.rows += 1;
    summary.rows += 1;
    if (options.skipRow?.(fileSummary.file, line) !== true) return false;
    summary.skipped += 1;
    return true;
  };

  async function* csvFile(file: string, fileSummary: FileSummary): AsyncGenerator<PlannedRequest> {
    let plan: CsvPlan | undefined;
    const bytes = inputBytes(file, options.stdin, options.onBytesRead, options.chunkBytes);
    for await (const records of readCsv(bytes, file, { encoding: options.encoding })) {
      for (const record of records) {
        if (plan === undefined) {
          const problem = csvHeaderProblem(record, file, options);
          if (problem !== undefined) throw problem;
          const result = planCsv((record as { cells: string[] }).cells, { kind: options.kind, map: options.map });
          if (!result.ok) throw new Error('unreachable: the header was checked');
          plan = result.plan;
          fileSummary.kind = plan.kind;
          summary.notes.push(...result.notes.map((note) => `${file}: ${note}`));
          continue;
        }
        if (countRow(fileSummary, record.line)) continue;
        if ('error' in record) {
          reject(file, record.line, plan.kind, record.text ?? null, [record.error]);
          continue;
        }
        if (record.undecodable !== undefined && options.rejectRow?.(file, record.line) !== true) {
          const { cell, message } = record.undecodable;
          reject(file, record.line, plan.kind, csvRowObject(plan, record.cells), [`${plan.keys[cell] ?? `column ${cell + 1}`}: ${message}`]);
          continue;
        }
        const wrong = options.rejectRow?.(file, record.line) === true ? IN_DOUBT : widthProblem(plan, record.cells);
        if (wrong !== undefined) {
          reject(file, record.line, plan.kind, csvRowObject(plan, record.cells), [wrong]);
          continue;
        }
        const mapped = mapCsvRow(plan, record.cells);
        const origin = new CsvRowOrigin(file, record.line, plan, record.cells);
        take(plan.kind, mapped.item, origin, jsonBytesBound(plan, record.cells), mapped);
      }
      yield* handOn(file);
      if (stopped()) return;
    }
    if (plan === undefined) summary.notes.push(`${file}: is empty (no header row)`);
  }

  async function* ndjsonFile(file: string, fileSummary: FileSummary): AsyncGenerator<PlannedRequest> {
    const itemsOf = createLineMapper({ kind: options.kind });
    const bytes = inputBytes(file, options.stdin, options.onBytesRead, options.chunkBytes);
    for await (const records of readNdjson(bytes, { encoding: options.encoding })) {
      for (const record of records) {
        if (countRow(fileSummary, record.line)) continue;
        if ('error' in record) {
          reject(file, record.line, options.kind ?? 'unknown', record.text, [record.error]);
          continue;
        }
        const entries = itemsOf(record.value);
        const several = entries.length > 1;
        // an earlier run that stopped part way through such a line delivered some of its items
        const skip = several ? options.skipItem : undefined;
        const settled = (place: number): boolean => skip?.(file, record.line, place) === true;
        if (skip !== undefined) {
          const left = entries.filter((_, place) => !settled(place)).length;
          if (left === 0) {
            summary.skipped += 1;
            continue;
          }
          summary.skippedItems += entries.length - left;
          options.onLineItems?.(file, record.line, left);
        } else if (several) options.onLineItems?.(file, record.line, entries.length);
        const inDoubt = options.rejectRow?.(file, record.line) === true;
        entries.forEach((entry, place) => {
          if (settled(place)) return;
          const item = several ? place : undefined;
          if (inDoubt) reject(file, record.line, entry.kind, entry.row, [IN_DOUBT], item);
          else if (!('item' in entry)) reject(file, record.line, entry.kind, entry.row, entry.errors, item);
          else {
            const origin: ItemOrigin = item === undefined ? { file, line: record.line, row: entry.row } : { file, line: record.line, row: entry.row, item };
            take(entry.kind, entry.item, origin, 6 * record.chars, entry);
          }
        });
      }
      yield* handOn(file);
      if (stopped()) return;
    }
  }

  async function* requests(): AsyncGenerator<PlannedRequest> {
    for (const [i, file] of options.inputs.entries()) {
      const fileSummary: FileSummary = { file, format: formats[i], rows: 0 };
      summary.files.push(fileSummary);
      const planned = formats[i] === 'csv' ? csvFile(file, fileSummary) : ndjsonFile(file, fileSummary);
      yield* planned;
      if (stopped()) return;
    }
    for (const request of batcher.finish()) {
      summary.requests += 1;
      yield request;
    }
  }

  return { requests: requests(), summary };
}
