// A plan's events as they cross between threads, and back. A request goes as its body's UTF-8 JSON
// and its items' origins as a few typed arrays and one text (handed over, not copied); a CSV row's
// origin is rebuilt here from its cells only when its row is asked for (a rejected item). This is
// the only place the typed arrays exist: what comes out is a PlanEvent like any other.
import { csvRowObject, CsvRowOrigin, type CsvHeader } from '../../mapping/csv-rows.js';
import type { ItemOrigin, PlannedRequest } from '../../model/request.js';
import { ARRAY_NAMES } from '../../model/types.js';
import type { ItemLines, RequestToSend } from '../../transport/request.js';
import type { PlanEvent } from '../plan.js';
import type { Posting } from './in-worker.js';

/**
 * The origins of a request's items (attributes, then events, then purchases) as parallel columns;
 * typed arrays and one text cost little to copy between threads.
 */
interface EncodedOrigins {
  /** How many items each array holds. */
  counts: number[];
  /** Index into the inputs. */
  files: Int32Array;
  lines: Float64Array;
  /** For a CSV row, the id of its header (the row has a cell for each of its columns); -1 for another row. */
  headers: Int32Array;
  /** The rows that are not CSV rows, in order, and for each its item's place in its line (-1: its line's only item). */
  rows: unknown[];
  rowItems: number[];
  /** The cells of the CSV rows, in order, as one text in UTF-8, and the length of each in characters. */
  cells: Uint8Array;
  cellLengths: Uint32Array;
}

type CsvHeaderShape = Pick<CsvHeader, 'keys' | 'width'>;

/** What crosses: any event but a request as it is; a request encoded; a CSV header once, before its rows' requests. */
export type WireMessage =
  | Exclude<PlanEvent, { type: 'request' }>
  | { type: 'csv-header'; id: number; keys: Array<string | undefined>; width: number }
  | { type: 'request'; seq: number; json: Uint8Array; origins: EncodedOrigins; userKeys: Float64Array; points: Float64Array; learn?: Uint8Array };

const utf8 = new TextEncoder();
// a cell may begin with U+FEFF (two files joined, say): it is text here, not a byte-order mark to drop
const utf8Text = new TextDecoder('utf-8', { ignoreBOM: true });
const EMPTY = new Uint8Array(0);

/** Turns the worker's events into postings; `inputs` are the plan's files, which origins name by index. */
export function createEncoder(inputs: readonly string[]): (event: PlanEvent) => Array<Posting<WireMessage>> {
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

  const encodeOrigins = (request: PlannedRequest, before: Array<Posting<WireMessage>>): EncodedOrigins => {
    const all = ARRAY_NAMES.flatMap((kind) => request.origins[kind]);
    let cellCount = 0;
    for (const origin of all) if (origin instanceof CsvRowOrigin) cellCount += origin.width;
    const encoded: EncodedOrigins = {
      counts: ARRAY_NAMES.map((kind) => request.origins[kind].length),
      files: new Int32Array(all.length),
      lines: new Float64Array(all.length),
      headers: new Int32Array(all.length),
      rows: [],
      rowItems: [],
      cells: EMPTY,
      cellLengths: new Uint32Array(cellCount),
    };
    let cells = '';
    let cell = 0;
    all.forEach((origin, i) => {
      encoded.files[i] = fileIndex(origin.file);
      encoded.lines[i] = origin.line;
      if (!(origin instanceof CsvRowOrigin)) {
        encoded.headers[i] = -1;
        encoded.rows.push(origin.row);
        encoded.rowItems.push(origin.item ?? -1);
        return;
      }
      let id = headersSent.get(origin.header);
      if (id === undefined) {
        id = headersSent.size;
        headersSent.set(origin.header, id);
        before.push({ value: { type: 'csv-header', id, keys: origin.header.keys, width: origin.header.width }, bytes: 0 });
      }
      encoded.headers[i] = id;
      cells = origin.appendCells(cells, encoded.cellLengths, cell);
      cell += origin.width;
    });
    if (cells !== '') encoded.cells = utf8.encode(cells);
    return encoded;
  };

  return (event) => {
    if (event.type === 'reject') return [{ value: { type: 'reject', record: { ...event.record } }, bytes: 0 }];
    if (event.type !== 'request') return [{ value: event, bytes: 0 }];
    const { request } = event;
    // as bytes of their own, handed over rather than copied: the sending thread makes no string of them
    const json = utf8.encode(JSON.stringify(request.body));
    const postings: Array<Posting<WireMessage>> = [];
    const origins = encodeOrigins(request, postings);
    const userKeys = Float64Array.from(request.userKeys);
    const points = Float64Array.from(request.points ?? []);
    const { learn } = request;
    const transfer = [json, userKeys, points, origins.files, origins.lines, origins.headers, origins.cellLengths].map((a) => a.buffer as ArrayBuffer);
    if (origins.cells !== EMPTY) transfer.push(origins.cells.buffer as ArrayBuffer);
    if (learn !== undefined) transfer.push(learn.buffer as ArrayBuffer);
    const value = { type: 'request' as const, seq: request.seq, json, origins, userKeys, points, learn };
    postings.push({ value, bytes: json.byteLength + origins.cells.byteLength + (learn?.byteLength ?? 0), transfer });
    return postings;
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
  #encoded: EncodedOrigins;
  #decode: (encoded: EncodedOrigins) => RequestToSend['origins'];
  #origins: RequestToSend['origins'] | undefined;

  constructor(message: Extract<WireMessage, { type: 'request' }>, decode: (encoded: EncodedOrigins) => RequestToSend['origins'], files: readonly string[]) {
    this.seq = message.seq;
    this.body = message.json;
    this.userKeys = message.userKeys;
    this.points = message.points;
    this.learn = message.learn;
    this.lines = { counts: message.origins.counts, files, fileOf: message.origins.files, lines: message.origins.lines };
    this.#encoded = message.origins;
    this.#decode = decode;
  }

  get origins(): RequestToSend['origins'] {
    return (this.#origins ??= this.#decode(this.#encoded));
  }
}

/** Turns what the worker posted back into events; undefined for a message that is not one (a CSV header). */
export function createDecoder(inputs: readonly string[]): (message: WireMessage) => PlanEvent<RequestToSend> | undefined {
  const headers = new Map<number, CsvHeaderShape>();
  const decodeOrigins = (encoded: EncodedOrigins): RequestToSend['origins'] => {
    const origins: Record<(typeof ARRAY_NAMES)[number], ItemOrigin[]> = { attributes: [], events: [], purchases: [] };
    const cellText = new CellText(encoded.cells, encoded.cellLengths);
    let item = 0;
    let row = 0;
    let cell = 0;
    let at = 0;
    ARRAY_NAMES.forEach((kind, k) => {
      for (let end = item + encoded.counts[k]; item < end; item += 1) {
        const file = inputs[encoded.files[item]];
        const line = encoded.lines[item];
        const header = encoded.headers[item] === -1 ? undefined : headers.get(encoded.headers[item]);
        if (header === undefined) {
          const place = encoded.rowItems[row]!;
          origins[kind].push(place === -1 ? { file, line, row: encoded.rows[row++] } : { file, line, row: encoded.rows[row++], item: place });
          continue;
        }
        // a row in a request has a cell for every column: rows of another width were rejected
        origins[kind].push(new CellsOrigin(file, line, header, cellText, at, cell, header.width));
        for (const last = cell + header.width; cell < last; cell += 1) at += encoded.cellLengths[cell];
      }
    });
    return origins;
  };
  return (message) => {
    switch (message.type) {
      case 'csv-header':
        headers.set(message.id, { keys: message.keys, width: message.width });
        return undefined;
      case 'request':
        return { type: 'request', request: new DecodedRequest(message, decodeOrigins, inputs) };
      default:
        return message;
    }
  };
}
