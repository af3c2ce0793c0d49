// Input files -> one stream of plain values: each file as it begins, the requests to send, the rows
// rejected on the way, the RequestLines whose items travel apart, and a tally of every chunk of rows
// read. Every row is accounted for: in a request, rejected, or left out (resume). The same stream
// comes from a plan made in this thread or in the worker thread (planInWorker).
import type { Readable } from 'node:stream';
import { createBatcher, DEFAULT_MAX_BODY_BYTES, soloBodyBytes } from '../batch/batcher.js';
import type { Delimiter } from '../input/csv.js';
import type { InputEncoding } from '../input/decode.js';
import type { RemoteInputs } from '../input/remote.js';
import { InputError, SourceError } from '../errors.js';
import { formatOf, STDIN, type InputFormat } from '../input/source.js';
import { itemErrors, itemWarnings } from '../mapping/check.js';
import { droppedFieldRow, withoutInvalidFields } from '../mapping/drop-fields.js';
import type { ColumnMap } from '../mapping/column-map.js';
import { grouped } from '../mapping/header-notes.js';
import { dataPoints } from '../model/data-points.js';
import type { CellOptions } from '../mapping/export-cells.js';
import { identityHash, identityOf, type Identity } from '../model/identity.js';
import { resolveLimits, type BatchLimits } from '../model/limits.js';
import { rejectRecord, type ItemOrigin, type PlannedRequest, type RejectRecord } from '../model/request.js';
import { ARRAY_NAMES, type ArrayName } from '../model/types.js';
import { createRangeSet, type RangeSet } from '../records/range-set.js';
import type { ResumeSkips } from '../records/journal.js';
import { LEARN_NONE, type LearnMark } from '../records/learn-record.js';
import type { ColumnCounts, createDelta, DeltaOptions } from './delta.js';
import { createEncodingTally } from './encoding-note.js';
import type { RejectBatch } from './reject-batch.js';
import { shardOf, type Shard } from './shard.js';
import { csvChunks, csvTypeNotes } from './plan-csv.js';
import { ndjsonChunks } from './plan-ndjson.js';

/** Why a row an earlier run left in flight is rejected rather than sent again (--on-unknown reject). */
const IN_DOUBT =
  'outcome unknown: the run before stopped while this row was in flight, so it may have been applied; not sent again (--on-unknown reject)';

/** How CSV text is read beyond its annotations, and what is done with an invalid field: plain values, as they cross to the planning thread. */
export interface ReadingOptions extends CellOptions {
  /** --delimiter; detected from each CSV file's header line when not given. */
  delimiter?: Delimiter;
  /** --drop-invalid-fields: an attributes row is sent without its invalid fields, each written to the rejects file. */
  dropInvalidFields?: boolean;
}

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
  /** Told once a file's bytes are all read: whether some text beyond ASCII was valid UTF-8 (for the encoding note). */
  textRead?: (beyondAscii: boolean) => void;
  /** Columns the map names that no file input has: standard input's header must have them (or the run stops). */
  mapColumnsOfStdin?: readonly string[];
  /** Delimiters, times, phones, lists, invalid fields. */
  reading?: ReadingOptions;
  /** Default: the `mau` profile. */
  limits?: BatchLimits;
  /** Largest request body in bytes of JSON (default 4,000,000, under the 4 MiB servers accept). */
  maxBodyBytes?: number;
  /** What an earlier run settled (resume), and the rows it left in doubt to reject unsent. */
  skips?: ResumeSkips;
  /** Bytes read from a file at a time (default 64 KiB); the rows of a chunk live until it is planned. */
  chunkBytes?: number;
  /** Bytes of a file planned at a time, when fewer than are read at a time (not gzipped input). */
  pieceBytes?: number;
  /** Where `-` reads from (a plan in this thread only). */
  stdin?: Readable;
  /** Stop reading: the plan ends after the chunk it is on (a plan in this thread only). */
  stopSignal?: AbortSignal;
  /** Compare with the delta state and leave out what the target acknowledged (--delta, --dedupe-events). */
  delta?: DeltaOptions;
  /** Keep only the rows whose user falls in this shard (--shard K/N); the others are counted and left out. */
  shard?: Shard;
  /** The objects in storage among the inputs, and how to reach them. */
  remote?: RemoteInputs;
}

/**
 * A warning on an item that is sent all the same (unless left out as unchanged), with the line of
 * the file where its row begins (and its `row`, when that is its place: a JSON array's element).
 */
export interface PlanWarning {
  line: number;
  row?: number;
  message: string;
  /** The item it is on was left out as unchanged (--delta, --dedupe-events): not sent. */
  unsent?: true;
}

/** A warning on the item of `origin`, named where a person finds its row. */
const warningOf = (origin: ItemOrigin, message: string): PlanWarning => (origin.fileLine === undefined ? { line: origin.line, message } : { line: origin.fileLine, row: origin.line, message });

/** What a plan yields, in order. `R` is the request's form: plain in this thread, decoded from the worker's bytes there. */
export type PlanEvent<R = PlannedRequest> =
  /** An input file begins. */
  | { type: 'file'; file: string; format: InputFormat }
  /** A CSV file's header was read: the kind of its rows, and what a person should know of its columns. */
  | { type: 'header'; file: string; kind: ArrayName; notes: string[] }
  /** A note on a file; `files`: on so many files read through one header, `file` the first of them (their columns' types). */
  | { type: 'note'; file: string; note: string; files?: number }
  /** The tally of a chunk of rows: rows read and left out, items planned, warnings, and the bytes read for them. */
  | {
      type: 'read';
      file: string;
      bytes: number;
      rows: number;
      skipped: number;
      skippedItems: number;
      /** Of the rows skipped, those of a file an earlier run settled whole: counted, and not read again. */
      unread: number;
      /** The chunk is that of a file an earlier run settled whole (which may hold no row). */
      settledWhole?: true;
      items: Record<ArrayName, number>;
      /** Valid items left out whole because the target acknowledged them (delta); and the data points planned and left out. */
      unchanged: number;
      /** Rows (and items of RequestLines) of users in other shards (--shard), left out. */
      otherShards: number;
      points: number;
      avoided: number;
      warnings: PlanWarning[];
      /** Of the attributes --delta compared: per attribute, values sent as changed, left out as unchanged, sent as null. */
      columns?: ColumnCounts;
    }
  /** An item of a RequestLine left out whole because the target acknowledged it: settled without sending. */
  | { type: 'unchanged'; file: string; line: number; item: number }
  /** Rows left out whole because the target acknowledged them (delta), as [first, last] line ranges: settled without sending. */
  | { type: 'unchanged-rows'; file: string; lines: Array<[number, number]> }
  /** A RequestLine: how many of its items are planned (before any of them is rejected or sent). */
  | { type: 'line-items'; file: string; line: number; items: number }
  | { type: 'reject'; record: RejectRecord }
  /** A field left out of a row that is sent without it (--drop-invalid-fields), for the rejects file. */
  | { type: 'dropped-field'; record: RejectRecord }
  /** Rejects and dropped fields of a chunk, each as its line of the rejects file: the planning thread hands them on so (reject-batch.ts). */
  | { type: 'rejects'; batch: RejectBatch }
  | { type: 'request'; request: R }
  /** Every row of every input was read: it comes right after the last input's last tally, before that chunk's requests. */
  | { type: 'read-all' };

/** What mapping a row's cells found beside its item. */
export interface MappedCells {
  /** Cells that could not be read, each `field: reason`. */
  errors?: string[];
  /** The fields of those cells. */
  failed?: string[];
  /**
   * The attributes the item sets to null because their cells were empty (--empty-as-null), not
   * because a cell said null: the delta plan can send those only where the state holds a value.
   */
  emptied?: readonly string[];
}

/** What the readers of CSV and NDJSON files tell the planner of each row, and take its events from. */
export interface RowPlanner {
  /** Counts a data row; true when an earlier run settled it (it is left out). */
  row(file: string, line: number): boolean;
  /** Why a row is to be rejected unsent: an earlier run sent it and never saw it settled (--on-unknown reject). */
  inDoubt(file: string, line: number): string | undefined;
  /** The items of a RequestLine that an earlier run settled, by their place. */
  settledItems(file: string, line: number): ReadonlySet<number> | undefined;
  /** A RequestLine of which `planned` items are planned, and `skipped` left out. */
  requestLine(file: string, line: number, planned: number, skipped: number): void;
  /** Rejects a row, or one item of a RequestLine (`item`: its place). */
  /** `fileLine`: the line of the file where the row begins, when `line` is not it (a JSON array's element). */
  reject(file: string, line: number, kind: RejectRecord['kind'], row: unknown, errors: readonly string[], item?: number, fileLine?: number): void;
  /** Checks an item and batches it, or rejects its row. `bytesBound` is at least the bytes of the item's JSON. */
  take(kind: ArrayName, item: unknown, origin: ItemOrigin, bytesBound: number, mapped?: MappedCells): void;
  /** Counts bytes read from an input (before gunzip). */
  bytesRead(bytes: number): void;
  /** The events of the rows handled since the last call: the tally, then RequestLines, rejects, completed requests. */
  chunk(file: string): PlanEvent[];
}

const rangeSets = (ranges: ReadonlyMap<string, Array<[number, number]>> | undefined): Map<string, RangeSet> => {
  const sets = new Map<string, RangeSet>();
  for (const [file, list] of ranges ?? []) {
    const set = createRangeSet();
    for (const [start, end] of list) set.add(start, end);
    if (set.size > 0) sets.set(file, set);
  }
  return sets;
};

type Delta = ReturnType<typeof createDelta>;

function createRowPlanner(options: PlanOptions, delta: Delta | undefined): RowPlanner & { finish(): PlannedRequest[]; settledWhole(rows: number): void } {
  const limits = options.limits ?? resolveLimits();
  const maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const batcher = createBatcher({ limits, maxBodyBytes });
  const settled = rangeSets(options.skips?.rows);
  const inDoubt = rangeSets(options.skips?.inDoubt);
  const settledItems = options.skips?.items;
  const dropInvalid = options.reading?.dropInvalidFields === true;

  // An item's exact JSON size is needed only when it could matter: below this bound, even a full
  // request of such items stays within maxBodyBytes.
  const maxItems = limits.maxTotal ?? (limits.maxPerArray === undefined ? Infinity : 3 * limits.maxPerArray);
  const smallItemBytes = maxBodyBytes / maxItems;
  /** The largest item of each kind that a request holding nothing else can carry. */
  const largestItem = Object.fromEntries(ARRAY_NAMES.map((kind) => [kind, maxBodyBytes - soloBodyBytes({ kind, bytes: 0 })])) as Record<ArrayName, number>;

  // Rows are handled synchronously, a chunk at a time, so a row costs no promise of its own; what
  // they give is handed on as the chunk's events.
  const newTally = () => ({
    bytes: 0,
    rows: 0,
    skipped: 0,
    skippedItems: 0,
    unread: 0,
    items: { attributes: 0, events: 0, purchases: 0 },
    unchanged: 0,
    otherShards: 0,
    points: 0,
    avoided: 0,
    warnings: [] as PlanWarning[],
  });
  let tally = newTally();
  let lines: PlanEvent[] = [];
  let rejects: PlanEvent[] = [];
  /** The chunk's rows left out as unchanged, as line ranges (a chunk reads one file, in order). */
  let unchangedRows: Array<[number, number]> = [];
  const ready: PlannedRequest[] = [];
  let anonymous = 0;
  /** The chunk is a file's an earlier run settled whole (settledWhole). */
  let wholeFile = false;
  /** A request given out by the batcher, with the learn record of its items (a delta plan: each item's mark is its batch tag). */
  const complete = (request: PlannedRequest): PlannedRequest => {
    if (delta === undefined) return request;
    const record = delta.recordWriter();
    const marks = (request.tags ?? []) as Array<LearnMark | undefined>;
    let i = 0;
    for (const kind of ARRAY_NAMES) {
      for (const item of (request.body[kind] ?? []) as Array<Record<string, unknown>>) record.add(marks[i++] ?? LEARN_NONE, item);
    }
    return { ...request, tags: undefined, learn: record.finish() };
  };

  /** An item checked and valid: left out if the target holds it (delta), else batched; whether it was batched. */
  const place = (kind: ArrayName, item: Record<string, unknown>, identity: Identity, origin: ItemOrigin, itemBytes: number, emptied?: readonly string[]): boolean => {
    let record = item;
    let bytes = itemBytes;
    let learn: LearnMark | undefined;
    if (delta !== undefined) {
      const verdict = delta.item(kind, record, identity, emptied);
      tally.avoided += verdict.avoided;
      if (verdict.item === undefined) {
        tally.unchanged += 1;
        if (origin.item !== undefined) lines.push({ type: 'unchanged', file: origin.file, line: origin.line, item: origin.item });
        else if (unchangedRows.length > 0 && unchangedRows[unchangedRows.length - 1][1] === origin.line - 1) unchangedRows[unchangedRows.length - 1][1] = origin.line;
        else unchangedRows.push([origin.line, origin.line]);
        return false;
      }
      // an item cut down is smaller: measured again where its size could matter
      if (verdict.item !== record && bytes > smallItemBytes) bytes = Buffer.byteLength(JSON.stringify(verdict.item));
      record = verdict.item;
      learn = verdict.learn;
    }
    tally.items[kind] += 1;
    const points = dataPoints(kind, record, identity.by);
    tally.points += points;
    // push-token imports name no user: each is a user of its own, numbered below zero (hashes are not)
    const userKey = identity.by === 'anonymous' ? -(anonymous += 1) : identityHash(identity);
    const done = batcher.add({ kind, item: record, origin, userKey, bytes, points, tag: learn });
    for (const request of done) ready.push(complete(request));
    return true;
  };
  const reject: RowPlanner['reject'] = (file, line, kind, row, errors, item, fileLine) => {
    rejects.push({ type: 'reject', record: rejectRecord(file, line, kind, row, [...errors], item, fileLine) });
  };

  const { shard } = options;
  /**
   * Leaves out a row (or an item of a RequestLine) of another shard: settled here without sending. A
   * row is that shard's, not this one's: it counts in otherShards instead of rows, so the rows of the
   * shards' summaries add up to the file's (a RequestLine counts in each shard that holds its items).
   */
  const otherShard = (file: string, line: number, item: number | undefined): void => {
    tally.otherShards += 1;
    if (item === undefined) tally.rows -= 1;
    else lines.push({ type: 'unchanged', file, line, item });
  };
  /** Whether an item, valid or not, belongs to another shard: by the identifier it uses (anonymous: shard 1). */
  const inOtherShard = (kind: ArrayName, item: unknown): boolean =>
    shard !== undefined && shard.count > 1 && shardOf(typeof item === 'object' && item !== null ? identityOf(item as Record<string, unknown>, kind) : { by: 'anonymous' }, shard.count) !== shard.index;

  return {
    row(file, line) {
      tally.rows += 1;
      if (settled.get(file)?.has(line) !== true) return false;
      tally.skipped += 1;
      return true;
    },
    inDoubt: (file, line) => (inDoubt.get(file)?.has(line) === true ? IN_DOUBT : undefined),
    settledItems: (file, line) => settledItems?.get(file)?.get(line),
    requestLine(file, line, planned, skipped) {
      if (planned === 0) {
        tally.skipped += 1;
        return;
      }
      tally.skippedItems += skipped;
      lines.push({ type: 'line-items', file, line, items: planned });
    },
    // a row that cannot become an item names no user: shard 1 rejects it, the others leave it out
    reject: (file, line, kind, row, errors, item, fileLine) =>
      shard !== undefined && shard.index !== 1 ? otherShard(file, line, item) : reject(file, line, kind, row, errors, item, fileLine),
    take(kind, item, origin, bytesBound, mapped) {
      // before it is checked: each row is sent or rejected by exactly one shard
      if (inOtherShard(kind, item)) return otherShard(origin.file, origin.line, origin.item);
      const warned = tally.warnings.length;
      const errors = itemErrors(kind, item, mapped);
      if (errors.length > 0) {
        const kept = dropInvalid && kind === 'attributes' ? withoutInvalidFields(item as Record<string, unknown>, errors, mapped?.failed) : undefined;
        if (kept === undefined) return reject(origin.file, origin.line, kind, origin.row, errors, origin.item, origin.fileLine);
        item = kept.item;
        const row = origin.row;
        for (const { field, errors: fieldErrors } of kept.dropped) {
          const part = droppedFieldRow(row, kept.item, field);
          const record: RejectRecord = { file: origin.file, line: origin.line, ...(origin.item === undefined ? {} : { item: origin.item }), kind, column: part.column, value: part.value, row: part.row, errors: fieldErrors };
          rejects.push({ type: 'dropped-field', record });
          tally.warnings.push(warningOf(origin, `${field}: left out of the row sent (--drop-invalid-fields; in the rejects file): ${fieldErrors[0].slice(field.length).replace(/^[^:]*: /, '')}`));
        }
        // the bound was of the row with every cell; what is left is smaller
      }
      let bytes = bytesBound <= smallItemBytes ? bytesBound : Buffer.byteLength(JSON.stringify(item));
      if (bytes > largestItem[kind]) {
        const tooBig = `row: the item is ${bytes} bytes as JSON; a request body may be at most ${maxBodyBytes} bytes`;
        return reject(origin.file, origin.line, kind, origin.row, [tooBig], origin.item, origin.fileLine);
      }
      const record = item as Record<string, unknown>;
      const identity = identityOf(record, kind);
      for (const message of itemWarnings(kind, record, identity.by)) tally.warnings.push(warningOf(origin, message));
      // the warnings of an item left out as unchanged are on what was not sent
      if (!place(kind, record, identity, origin, bytes, mapped?.emptied)) for (let i = warned; i < tally.warnings.length; i += 1) tally.warnings[i].unsent = true;
    },
    bytesRead(bytes) {
      tally.bytes += bytes;
    },
    settledWhole(rows) {
      tally.rows += rows;
      tally.skipped += rows;
      tally.unread += rows;
      wholeFile = true;
    },
    chunk(file) {
      const columns = delta?.takeColumns();
      const events: PlanEvent[] = [{ type: 'read', file, ...tally, ...(columns === undefined ? {} : { columns }), ...(wholeFile ? { settledWhole: true as const } : {}) }, ...lines, ...rejects];
      wholeFile = false;
      if (unchangedRows.length > 0) events.push({ type: 'unchanged-rows', file, lines: unchangedRows });
      for (const request of ready.splice(0)) events.push({ type: 'request', request });
      tally = newTally();
      lines = [];
      rejects = [];
      unchangedRows = [];
      return events;
    },
    finish: () => batcher.finish().map(complete),
  };
}

/** Plans the requests for the inputs, in this thread. Inputs are opened as the events are consumed. */
export async function* planEvents(options: PlanOptions): AsyncGenerator<PlanEvent> {
  for await (const events of planChunks(options)) yield* events;
}

/** The events of planEvents(), a chunk of input at a time (the planning thread posts them so). */
export async function* planChunks(options: PlanOptions): AsyncGenerator<PlanEvent[]> {
  // the state is opened only for a delta plan: it loads SQLite
  const delta = options.delta === undefined ? undefined : await (await import('./delta.js')).openDelta(options.delta, options.inputs, options.shard?.count);
  try {
    yield* plan(options, delta);
  } finally {
    delta?.close();
  }
}

/**
 * The note on a file of rows that set a user otherwise than an earlier row of the run sent (--delta):
 * the state learns the last value, so the next run finds an earlier row changed, and sends it again.
 * Only what the run found is counted: not a row whose earlier one matched the state (it was not
 * sent), nor one whose user the run no longer held (sent-in-run.ts), so the count may differ between
 * runs of one file.
 */
function restatedNote(rows: number): string {
  const them = rows === 1 ? 'row sets an attribute' : 'rows set an attribute';
  return (
    `${grouped(rows)} ${them} of a user to another value than an earlier row of the same user this run sent: ` +
    `--delta sends a user's rows that differ so on every run, an unchanged re-upload too (the state holds the last value, ` +
    `which an earlier row differs from); with one row a user (the last), a re-upload sends nothing`
  );
}

async function* plan(options: PlanOptions, delta: Delta | undefined): AsyncGenerator<PlanEvent[]> {
  const planner = createRowPlanner(options, delta);
  const formats = options.inputs.map((file) => formatOf(file, options.format));
  const stopped = (): boolean => options.stopSignal?.aborted === true;
  const encoding = createEncodingTally(options.encoding);
  let reading: string | undefined;
  let readAll = false;
  try {
    for (const [i, file] of options.inputs.entries()) {
      reading = file;
      yield [{ type: 'file', file, format: formats[i] }];
      const read = { ...options, textRead: (beyondAscii: boolean) => encoding.textRead(file, beyondAscii) };
      let rows = 0;
      // the last input's last chunk is told before its requests, so a stop among them knows every row was read
      const chunks = fileChunks(file, formats[i], planner, read);
      for await (const [events, last] of i === options.inputs.length - 1 && file !== STDIN ? markedLast(chunks) : unmarked(chunks)) {
        if (last) {
          readAll = true;
          events.splice(events.findIndex((event) => event.type === 'read') + 1, 0, { type: 'read-all' });
        }
        for (const event of events) {
          if (event.type === 'read') rows += event.rows;
          else if (event.type === 'reject') encoding.rejected(file, event.record.errors);
        }
        yield events;
        // (what the files read so far counted of their columns' types is noted all the same)
        if (stopped()) return yield* typeNotes(planner);
      }
      const note = encoding.note(file, rows);
      if (note !== undefined) yield [{ type: 'note', file, note }];
      const restated = delta?.takeRestated() ?? 0;
      if (restated > 0) yield [{ type: 'note', file, note: restatedNote(restated) }];
    }
  } catch (error) {
    // an input that stops the plan (damaged, cut short) leaves the notes of the files read before it
    yield* typeNotes(planner);
    // one that breaks off stops the run after the rows read before the break are sent: they are
    // whole and valid, as those of the requests already full were
    if (brokeOff(error, reading)) yield* lastRequests(planner);
    throw error;
  } finally {
    if (options.remote !== undefined) await (await import('../input/remote.js')).closeRemoteStores();
  }
  if (!readAll) yield [{ type: 'read-all' }];
  yield* typeNotes(planner);
  yield* lastRequests(planner);
}

/** Each chunk with whether it is the last: one is held until the next comes (standard input is not held back so). */
async function* markedLast<T>(chunks: AsyncIterable<T>): AsyncGenerator<[T, boolean]> {
  let held: T | undefined;
  let holding = false;
  try {
    for await (const chunk of chunks) {
      if (holding) yield [held as T, false];
      held = chunk;
      holding = true;
    }
  } catch (error) {
    // the rows read before an input broke off are handed on all the same
    if (holding) yield [held as T, false];
    throw error;
  }
  if (holding) yield [held as T, true];
}

async function* unmarked<T>(chunks: AsyncIterable<T>): AsyncGenerator<[T, boolean]> {
  for await (const chunk of chunks) yield [chunk, false];
}

/** Whether an error is the input being read breaking off (not the state's, say, nor a usage error). */
const brokeOff = (error: unknown, file: string | undefined): boolean => (error instanceof InputError || error instanceof SourceError) && error.file === file;

/** The requests still being filled, as the plan's last events. */
function* lastRequests(planner: ReturnType<typeof createRowPlanner>): Generator<PlanEvent[]> {
  const last = planner.finish();
  if (last.length > 0) yield last.map((request): PlanEvent => ({ type: 'request', request }));
}

/** The notes on the types of the CSV columns read, counted over every file of each header. */
function* typeNotes(planner: RowPlanner): Generator<PlanEvent[]> {
  const notes = csvTypeNotes(planner);
  if (notes.length > 0) yield notes;
}

/** The events of one input, read as its format says; one an earlier run settled whole is not read again. */
function fileChunks(file: string, format: InputFormat, planner: ReturnType<typeof createRowPlanner>, options: PlanOptions): AsyncIterable<PlanEvent[]> {
  const settled = options.skips?.whole?.get(file);
  if (settled !== undefined) return settledChunks(file, settled, planner);
  if (format === 'csv') return csvChunks(file, planner, options);
  if (format === 'parquet') return parquetChunks(file, planner, options);
  return ndjsonChunks(file, planner, options, format === 'json');
}

/** A Parquet file's events; its mapping is loaded for Parquet inputs only. */
async function* parquetChunks(file: string, planner: RowPlanner, options: PlanOptions): AsyncGenerator<PlanEvent[]> {
  yield* (await import('./plan-parquet.js')).parquetChunks(file, planner, options);
}

/** A file whose every row an earlier run settled: counted as skipped, unread. */
async function* settledChunks(file: string, rows: number, planner: ReturnType<typeof createRowPlanner>): AsyncGenerator<PlanEvent[]> {
  yield [{ type: 'note', file, note: `every row was settled by an earlier run; not read again` }];
  planner.settledWhole(rows);
  yield planner.chunk(file);
}
