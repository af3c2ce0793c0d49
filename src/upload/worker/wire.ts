// A plan's events as they cross between threads, and back, a chunk of input's events in one
// message: its tally and RequestLines as they are, its rejects as one batch of their lines
// (reject-batch.ts), and its requests in one buffer, handed
// over rather than copied, each request's body (UTF-8 JSON) and its items' origins (lines, files,
// and a CSV row's cells as one text) one after another. Every message wakes the other thread and
// every buffer handed over has a cost of its own, so a chunk is one of each. A CSV row's origin is rebuilt here from its cells only when its
// row is asked for (a rejected item). This is the only place the buffer's layout exists: what comes
// out is a PlanEvent like any other.
import { csvRowObject, CsvRowOrigin, type CsvHeader } from '../../mapping/csv-rows.js';
import type { ItemOrigin, PlannedRequest } from '../../model/request.js';
import { ARRAY_NAMES } from '../../model/types.js';
import type { ItemLines, RequestToSend } from '../../transport/request.js';
import type { PlanEvent } from '../plan.js';
import { createRejectBatcher, type RejectBatch } from '../reject-batch.js';
import type { Posting } from './in-worker.js';

/**
 * A request's buffer holds, in order: the body's JSON, the CSV rows' cells as one text (both UTF-8),
 * then from an 8-byte boundary the user keys and data points (float64), each item's line (float64),
 * input and header (int32; a header of -1 for a row that is not a CSV row), each cell's length in
 * characters (uint32), and what the delta state learns. `sizes` gives the length of each part.
 */
interface EncodedRequest {
  type: 'request';
  seq: number;
  /** The chunk's buffer, and where this request's part of it begins. */
  buffer: ArrayBuffer;
  offset: number;
  /** Bytes of JSON, bytes of cells, user keys, data points, items, cells, bytes learned (-1: nothing to learn). */
  sizes: number[];
  /** How many items each array holds. */
  counts: number[];
  /** The rows that are not CSV rows, in order, and for each its item's place in its line (-1: its line's only item). */
  rows?: unknown[];
  rowItems?: number[];
  /** For each of those rows, the line of the file where it begins when `line` is not it (-1: it is); absent when none has one (ItemOrigin.fileLine). */
  rowFileLines?: number[];
}

type CsvHeaderShape = Pick<CsvHeader, 'keys' | 'width'>;

/** A request of a chunk, measured before the chunk's buffer is made, with what is written into it. */
interface Measured {
  message: EncodedRequest;
  request: PlannedRequest;
  all: ItemOrigin[];
  json: string;
  cells: string;
  cellLengths: Uint32Array;
  headers: Int32Array;
  /** Its part of the buffer, to an 8-byte boundary. */
  bytes: number;
}

/** What crosses: a chunk's other events together; a request encoded; a CSV header once, before its rows' requests. */
export type WireMessage =
  | { type: 'events'; events: Array<Exclude<PlanEvent, { type: 'request' }>> }
  | { type: 'csv-header'; id: number; keys: Array<string | undefined>; width: number }
  | EncodedRequest;

const utf8 = new TextEncoder();
// a cell may begin with U+FEFF (two files joined, say): it is text here, not a byte-order mark to drop
const utf8Text = new TextDecoder('utf-8', { ignoreBOM: true });
const EMPTY = new ArrayBuffer(0);

const align8 = (n: number): number => (n + 7) & ~7;

/** Where each part of a request's buffer begins, from its sizes. */
function layout(sizes: readonly number[], offset = 0) {
  const [json, cells, users, points, items, cellCount, learned] = sizes;
  const keys = offset + align8(json + cells);
  const pointsAt = keys + 8 * users;
  const lines = pointsAt + 8 * points;
  const files = lines + 8 * items;
  const headers = files + 4 * items;
  const lengths = headers + 4 * items;
  const learn = lengths + 4 * cellCount;
  return { cells: offset + json, keys, points: pointsAt, lines, files, headers, lengths, learn, end: learn + Math.max(learned, 0) };
}

/**
 * Turns each chunk of the worker's events into one posting (none for an empty chunk): every message
 * posted wakes the other thread, so a chunk's requests cross together. `inputs` are the plan's
 * files, which origins name by index.
 */
export function createEncoder(inputs: readonly string[]): (events: readonly PlanEvent[]) => Posting<WireMessage[]> | undefined {
  const rejects = createRejectBatcher();
  /** The chunk's batches of rejects, whose buffers are handed over with it. */
  let batches: RejectBatch[] = [];
  /** CSV headers already described to the other thread, and the id each was given. */
  const headersSent = new Map<object, number>();
  // most origins in a row share one file
  let lastFile = '';
  let lastFileIndex = -1;
  const fileIndex = (file: string): number => {
    if (file !== lastFile) {
      lastFile = file;
      lastFileIndex = inputs.indexOf(file);
    }
    return lastFileIndex;
  };
  const headerId = (header: CsvHeader, before: WireMessage[]): number => {
    let id = headersSent.get(header);
    if (id === undefined) {
      id = headersSent.size;
      headersSent.set(header, id);
      before.push({ type: 'csv-header', id, keys: header.keys, width: header.width });
    }
    return id;
  };

  /** A request's parts, measured: the chunk's buffer is made once every request of it is. */
  const measure = (request: PlannedRequest, messages: WireMessage[]): Measured => {
    const all: ItemOrigin[] = [];
    for (const kind of ARRAY_NAMES) for (const origin of request.origins[kind]) all.push(origin);
    let cellCount = 0;
    for (const origin of all) if (origin instanceof CsvRowOrigin) cellCount += origin.width;
    const cellLengths = new Uint32Array(cellCount);
    const rows: unknown[] = [];
    const rowItems: number[] = [];
    const rowFileLines: number[] = [];
    let fileLines = false;
    const headers = new Int32Array(all.length);
    let cells = '';
    let cell = 0;
    for (let i = 0; i < all.length; i += 1) {
      const origin = all[i];
      if (!(origin instanceof CsvRowOrigin)) {
        headers[i] = -1;
        rows.push(origin.row);
        rowItems.push(origin.item ?? -1);
        rowFileLines.push(origin.fileLine ?? -1);
        fileLines ||= origin.fileLine !== undefined;
        continue;
      }
      headers[i] = headerId(origin.header, messages);
      cells = origin.appendCells(cells, cellLengths, cell);
      cell += origin.width;
    }
    const json = JSON.stringify(request.body);
    const { learn, points = [] } = request;
    const sizes = [Buffer.byteLength(json), Buffer.byteLength(cells), request.userKeys.length, points.length, all.length, cellCount, learn?.byteLength ?? -1];
    const counts = ARRAY_NAMES.map((kind) => request.origins[kind].length);
    const message: EncodedRequest = { type: 'request', seq: request.seq, buffer: EMPTY, offset: 0, sizes, counts, ...(rows.length === 0 ? {} : { rows, rowItems }), ...(fileLines ? { rowFileLines } : {}) };
    return { message, request, all, json, cells, cellLengths, headers, bytes: align8(layout(sizes).end) };
  };

  /** Writes a measured request into the chunk's buffer at `offset`. */
  const write = (measured: Measured, buffer: ArrayBuffer, offset: number): void => {
    const { message, request, all } = measured;
    const { sizes } = message;
    const at = layout(sizes, offset);
    message.buffer = buffer;
    message.offset = offset;
    utf8.encodeInto(measured.json, new Uint8Array(buffer, offset, sizes[0]));
    if (measured.cells !== '') utf8.encodeInto(measured.cells, new Uint8Array(buffer, at.cells, sizes[1]));
    new Float64Array(buffer, at.keys, sizes[2]).set(request.userKeys);
    new Float64Array(buffer, at.points, sizes[3]).set(request.points ?? []);
    const lines = new Float64Array(buffer, at.lines, all.length);
    const files = new Int32Array(buffer, at.files, all.length);
    for (let i = 0; i < all.length; i += 1) {
      lines[i] = all[i].line;
      files[i] = fileIndex(all[i].file);
    }
    new Int32Array(buffer, at.headers, all.length).set(measured.headers);
    new Uint32Array(buffer, at.lengths, sizes[5]).set(measured.cellLengths);
    if (request.learn !== undefined) new Uint8Array(buffer, at.learn, request.learn.byteLength).set(request.learn);
  };

  return (events) => {
    const messages: WireMessage[] = [];
    const measured: Measured[] = [];
    // the events between requests cross together, in their place among them
    let others: Array<Exclude<PlanEvent, { type: 'request' }>> = [];
    const flush = (): void => {
      if (others.length > 0) messages.push({ type: 'events', events: others });
      others = [];
    };
    // a chunk's rejects cross as one batch of their lines, in their place among its other events
    const batched = (): void => {
      const batch = rejects.take();
      if (batch === undefined) return;
      others.push({ type: 'rejects', batch });
      batches.push(batch);
    };
    for (const event of events) {
      if (event.type === 'reject' || event.type === 'dropped-field') {
        if (rejects.add(event.record, event.type === 'dropped-field')) continue;
        batched();
        others.push({ type: event.type, record: { ...event.record } });
        continue;
      }
      batched();
      if (event.type !== 'request') {
        others.push(event);
        continue;
      }
      flush();
      const request = measure(event.request, messages);
      measured.push(request);
      messages.push(request.message);
    }
    batched();
    flush();
    if (messages.length === 0) return undefined;
    let requestBytes = 0;
    for (const request of measured) requestBytes += request.bytes;
    // the rejects' lines weigh against the window as the requests do
    let bytes = requestBytes;
    const transfer: ArrayBuffer[] = [];
    for (const batch of batches) {
      transfer.push(batch.bytes.buffer as ArrayBuffer);
      bytes += batch.bytes.byteLength;
    }
    batches = [];
    if (requestBytes === 0) return { value: messages, bytes, transfer };
    const buffer = new ArrayBuffer(requestBytes);
    let offset = 0;
    for (const request of measured) {
      write(request, buffer, offset);
      offset += request.bytes;
    }
    transfer.push(buffer);
    return { value: messages, bytes, transfer };
  };
}

/** A request's CSV cells, decoded only when a row is asked for. */
class CellText {
  #text: string | undefined;
  constructor(
    private readonly bytes: Uint8Array,
    readonly lengths: Uint32Array,
  ) {}

  get text(): string {
    return (this.#text ??= utf8Text.decode(this.bytes));
  }
}

/** A CSV row's origin whose row object is built only when asked for (a rejected item). */
class CellsOrigin implements ItemOrigin {
  constructor(
    readonly file: string,
    readonly line: number,
    private readonly header: CsvHeaderShape,
    /** The request's cells: this row's start at `at` of their text and are lengths[first...] long. */
    private readonly cells: CellText,
    private readonly at: number,
    private readonly first: number,
    private readonly count: number,
  ) {}

  get row(): Record<string, unknown> {
    const cells: string[] = [];
    const text = this.cells.text;
    let at = this.at;
    for (let i = this.first; i < this.first + this.count; i += 1) {
      const length = this.cells.lengths[i];
      cells.push(text.slice(at, at + length));
      at += length;
    }
    return csvRowObject(this.header, cells);
  }

  toJSON(): ItemOrigin {
    return { file: this.file, line: this.line, row: this.row };
  }
}

/** The views of a request's buffer, as the decoder reads it. */
interface RequestParts {
  files: Int32Array;
  lines: Float64Array;
  headers: Int32Array;
  cells: CellText;
  rows: unknown[];
  rowItems: number[];
  rowFileLines: number[] | undefined;
}

type DecodeOrigins = (counts: readonly number[], parts: RequestParts) => RequestToSend['origins'];

/**
 * A request planned in the worker: the sender posts its JSON bytes and settles it by its lines; the
 * origins are built only if asked for (a rejected item, a RequestLine).
 */
class DecodedRequest implements RequestToSend {
  readonly seq: number;
  readonly body: Uint8Array;
  readonly userKeys: Float64Array;
  readonly lines: ItemLines;
  readonly points: Float64Array;
  readonly learn: Uint8Array | undefined;
  #parts: RequestParts;
  #decode: DecodeOrigins;
  #origins: RequestToSend['origins'] | undefined;

  constructor(message: EncodedRequest, decode: DecodeOrigins, files: readonly string[]) {
    const { buffer, offset, sizes, counts } = message;
    const at = layout(sizes, offset);
    const items = sizes[4];
    this.seq = message.seq;
    this.body = new Uint8Array(buffer, offset, sizes[0]);
    this.userKeys = new Float64Array(buffer, at.keys, sizes[2]);
    this.points = new Float64Array(buffer, at.points, sizes[3]);
    // read where it lies: the state's writer copies what it keeps (state-writer.ts)
    this.learn = sizes[6] === -1 ? undefined : new Uint8Array(buffer, at.learn, sizes[6]);
    const fileOf = new Int32Array(buffer, at.files, items);
    const lines = new Float64Array(buffer, at.lines, items);
    this.lines = { counts, files, fileOf, lines };
    const cells = new CellText(new Uint8Array(buffer, at.cells, sizes[1]), new Uint32Array(buffer, at.lengths, sizes[5]));
    this.#parts = { files: fileOf, lines, headers: new Int32Array(buffer, at.headers, items), cells, rows: message.rows ?? [], rowItems: message.rowItems ?? [], rowFileLines: message.rowFileLines };
    this.#decode = decode;
  }

  get origins(): RequestToSend['origins'] {
    return (this.#origins ??= this.#decode(this.lines.counts, this.#parts));
  }
}

/** Turns what the worker posted for a chunk back into its events. */
export function createDecoder(inputs: readonly string[]): (messages: readonly WireMessage[]) => Array<PlanEvent<RequestToSend>> {
  const headers = new Map<number, CsvHeaderShape>();
  const decodeOrigins: DecodeOrigins = (counts, parts) => {
    const origins: Record<(typeof ARRAY_NAMES)[number], ItemOrigin[]> = { attributes: [], events: [], purchases: [] };
    let item = 0;
    let row = 0;
    let cell = 0;
    let at = 0;
    ARRAY_NAMES.forEach((kind, k) => {
      for (let end = item + counts[k]; item < end; item += 1) {
        const file = inputs[parts.files[item]];
        const line = parts.lines[item];
        const header = parts.headers[item] === -1 ? undefined : headers.get(parts.headers[item]);
        if (header === undefined) {
          const place = parts.rowItems[row]!;
          const fileLine = parts.rowFileLines?.[row] ?? -1;
          const origin: ItemOrigin = place === -1 ? { file, line, row: parts.rows[row++] } : { file, line, row: parts.rows[row++], item: place };
          if (fileLine !== -1) origin.fileLine = fileLine;
          origins[kind].push(origin);
          continue;
        }
        // a row in a request has a cell for every column: rows of another width were rejected
        origins[kind].push(new CellsOrigin(file, line, header, parts.cells, at, cell, header.width));
        for (const last = cell + header.width; cell < last; cell += 1) at += parts.cells.lengths[cell];
      }
    });
    return origins;
  };
  return (messages) => {
    const events: Array<PlanEvent<RequestToSend>> = [];
    for (const message of messages) {
      if (message.type === 'csv-header') headers.set(message.id, { keys: message.keys, width: message.width });
      else if (message.type === 'request') events.push({ type: 'request', request: new DecodedRequest(message, decodeOrigins, inputs) });
      else events.push(...message.events);
    }
    return events;
  };
}
