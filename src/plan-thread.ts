// A plan made in a worker thread. Reading, mapping, checking and batching take most of an upload's
// CPU, and sending takes the rest; run in one thread they add up, so `track upload` plans in a
// worker (plan-worker.ts) and sends from the main thread. The worker posts each request as UTF-8
// JSON with its items' origins as typed arrays (handed over, not copied), rejected rows, and a copy
// of the plan's summary after each chunk of rows; it plans at most `window` requests ahead of the
// sender.
import { Worker } from 'node:worker_threads';
import { InputError } from './errors.js';
import type { InputEncoding } from './input/decode.js';
import type { InputFormat } from './input/source.js';
import type { ColumnMap } from './mapping/column-map.js';
import { csvRowObject, type CsvPlan } from './mapping/csv-rows.js';
import type { BatchLimits } from './model/limits.js';
import type { ItemLines, ItemOrigin, PlannedRequest, RejectRecord } from './model/plan.js';
import { ARRAY_NAMES, type ArrayName } from './model/types.js';
import type { Plan, PlanOptions } from './plan.js';
import { countRejected, emptySummary, type PlanSummary } from './plan-summary.js';

/** What the worker is started with (structured-cloneable). */
export interface WorkerPlanData {
  inputs: string[];
  format?: InputFormat;
  encoding?: InputEncoding;
  kind?: ArrayName;
  map?: ColumnMap;
  limits?: BatchLimits;
  maxBodyBytes?: number;
  /** Per input file, the line ranges to leave out (rows an earlier run settled). */
  skip: Array<[string, Array<[number, number]>]>;
  /** Per input file, lines of several items an earlier run settled in part, and the items it settled. */
  skipItems: ReadonlyMap<string, ReadonlyMap<number, ReadonlySet<number>>>;
  /** Per input file, the line ranges to reject unsent (see PlanOptions.rejectRow). */
  reject: Array<[string, Array<[number, number]>]>;
  /**
   * How far the worker may run ahead: requests and rejected rows posted and not yet taken by the
   * main thread, in messages and in bytes (of request JSON and CSV cells).
   */
  window: { messages: number; bytes: number };
}

/**
 * The origins of a request's items (attributes, then events, then purchases) as parallel columns;
 * typed arrays and one text cost little to copy between threads.
 */
export interface EncodedOrigins {
  /** How many items each array holds. */
  counts: number[];
  /** Index into the inputs. */
  files: Int32Array;
  lines: Float64Array;
  /** For a CSV row, the id of its csv-plan message (the row has a cell for each of the plan's columns); -1 for another row. */
  plans: Int32Array;
  /** The rows that are not CSV rows, in order, and for each its item's place in its line (-1: its line's only item). */
  rows: unknown[];
  rowItems: number[];
  /** The cells of the CSV rows, in order, as one text in UTF-8, and the length of each in characters. */
  cells: Uint8Array;
  cellLengths: Uint32Array;
}

export type ToMain =
  | { type: 'csv-plan'; id: number; keys: Array<string | undefined>; width: number }
  | { type: 'request'; seq: number; json: Uint8Array; origins: EncodedOrigins; userKeys: Float64Array }
  | { type: 'reject'; record: RejectRecord }
  | { type: 'line-items'; file: string; line: number; items: number }
  | { type: 'progress'; file: string; bytes: number; summary: PlanSummary }
  | { type: 'done'; summary: PlanSummary }
  /** The answer to a 'summary' message: the plan's counts as they are now. */
  | { type: 'summary'; summary: PlanSummary }
  | { type: 'error'; name: string; message: string; file?: string; line?: number; summary: PlanSummary };

/** `taken`: the main thread has taken this many counted messages (requests, rejected rows) and bytes. */
export type ToWorker =
  | { type: 'taken'; messages: number; bytes: number }
  /** The main thread is stopping and asks for the plan's counts as they are. */
  | { type: 'summary' };

/** Options a threaded plan can take: no standard input, and rows to skip given as ranges. */
export interface ThreadedPlanOptions extends Omit<PlanOptions, 'stdin' | 'skipRow' | 'rejectRow'> {
  /** Per input file, the rows to leave out as [first, last] line ranges. */
  skip?: ReadonlyMap<string, Array<[number, number]>>;
  /** Per input file, the rows to reject unsent as [first, last] line ranges. */
  reject?: ReadonlyMap<string, Array<[number, number]>>;
  /** Per input file, the items of lines of several to leave out (see PlanOptions.skipItem). */
  skipItems?: ReadonlyMap<string, ReadonlyMap<number, ReadonlySet<number>>>;
  /** Stop reading at once: the worker is ended and nothing more it posted is handed on. */
  stopSignal?: AbortSignal;
}

/**
 * Requests the worker has planned wait in this thread until sent. A shallow window keeps the sender
 * fed (the worker plans faster than it sends) while few of them live long enough to be promoted:
 * at 64 messages, peak RSS rose by up to 20 MB; at 8, the sender sometimes waited.
 */
const WINDOW = { messages: 16, bytes: 8 * 1024 * 1024 };
const YOUNG_GENERATION_MB = 12;
/**
 * V8 lets a heap grow to four times what survived its last full collection when the heap may grow
 * past 2 GB, and to under twice that below it: rows of 20,000 cells, held until their request is
 * full, took the worker's heap to 180 MB with no bound and to 60 MB with this one. The worker holds
 * at most a request or two and the rows of a chunk of input, far below it.
 */
const OLD_GENERATION_MB = 1024;
/** The worker's module beside this one; run from the TypeScript sources (the tests), the built one. */
const WORKER = import.meta.url.endsWith('.ts') ? new URL('../dist/plan-worker.js', import.meta.url) : new URL('./plan-worker.js', import.meta.url);

// a cell may begin with U+FEFF (two files joined, say): it is text here, not a byte-order mark to drop
const utf8 = new TextDecoder('utf-8', { ignoreBOM: true });

/** A request's CSV cells, decoded only when a row is asked for. */
class CellText {
  #text: string | undefined;
  constructor(
    private readonly bytes: Uint8Array,
    readonly lengths: Uint32Array,
  ) {}

  get text(): string {
    return (this.#text ??= utf8.decode(this.bytes));
  }
}

/** A CSV row's origin whose row object is built only when asked for (a rejected item). */
class CellsOrigin implements ItemOrigin {
  constructor(
    readonly file: string,
    readonly line: number,
    private readonly plan: Pick<CsvPlan, 'keys' | 'width'>,
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
    return csvRowObject(this.plan, cells);
  }

  toJSON(): ItemOrigin {
    return { file: this.file, line: this.line, row: this.row };
  }
}

/** The same plan as planRequests(), made in a worker thread; the requests carry their JSON text. */
export function planInWorker(options: ThreadedPlanOptions): Plan {
  const summary: PlanSummary = emptySummary();
  const data: WorkerPlanData = {
    inputs: [...options.inputs],
    format: options.format,
    encoding: options.encoding,
    kind: options.kind,
    map: options.map,
    limits: options.limits,
    maxBodyBytes: options.maxBodyBytes,
    skip: [...(options.skip ?? new Map())],
    reject: [...(options.reject ?? new Map())],
    skipItems: options.skipItems ?? new Map(),
    window: WINDOW,
  };

  async function* requests(): AsyncGenerator<PlannedRequest> {
    // a row's objects die within a chunk of input, read 16 KiB at a time here, so a young generation
    // capped at 12 MiB (the default grows several times larger) serves as well and keeps two heaps
    // within 150 MB
    const resourceLimits = { maxYoungGenerationSizeMb: YOUNG_GENERATION_MB, maxOldGenerationSizeMb: OLD_GENERATION_MB };
    const worker = new Worker(WORKER, { workerData: data, resourceLimits });
    // messages in arrival order: an array with a moving head, since shift() is linear
    let inbox: ToMain[] = [];
    let head = 0;
    let failure: Error | undefined;
    let exited = false;
    let wake: (() => void) | undefined;
    const stopped = (): boolean => options.stopSignal?.aborted === true;
    const onStop = (): void => wake?.();
    options.stopSignal?.addEventListener('abort', onStop);
    worker.on('message', (message: ToMain) => {
      inbox.push(message);
      wake?.();
    });
    worker.on('error', (error) => {
      failure ??= error;
      wake?.();
    });
    worker.on('exit', () => {
      exited = true;
      wake?.();
    });
    // what has been taken, told to the worker a batch at a time (and before waiting for more)
    let taken = { messages: 0, bytes: 0 };
    const acknowledge = (): void => {
      if (taken.messages === 0) return;
      worker.postMessage({ type: 'taken', ...taken } satisfies ToWorker);
      taken = { messages: 0, bytes: 0 };
    };
    const took = (bytes: number): void => {
      taken = { messages: taken.messages + 1, bytes: taken.bytes + bytes };
      if (taken.messages >= WINDOW.messages / 4 || taken.bytes >= WINDOW.bytes / 4) acknowledge();
    };
    /** The worker's counts, but the rejected rows as handed on here (the worker may have posted more). */
    const adopt = (from: PlanSummary): void => {
      Object.assign(summary, from, { requests: summary.requests, rejected: summary.rejected, rejectReasons: summary.rejectReasons });
    };
    const plans = new Map<number, Pick<CsvPlan, 'keys' | 'width'>>();
    const decode = (encoded: EncodedOrigins): PlannedRequest['origins'] => {
      const origins: PlannedRequest['origins'] = { attributes: [], events: [], purchases: [] };
      const cellText = new CellText(encoded.cells, encoded.cellLengths);
      let item = 0;
      let row = 0;
      let cell = 0;
      let at = 0;
      ARRAY_NAMES.forEach((kind, k) => {
        for (let end = item + encoded.counts[k]; item < end; item += 1) {
          const file = options.inputs[encoded.files[item]];
          const line = encoded.lines[item];
          const csv = encoded.plans[item] === -1 ? undefined : plans.get(encoded.plans[item]);
          if (csv === undefined) {
            const place = encoded.rowItems[row]!;
            origins[kind].push(place === -1 ? { file, line, row: encoded.rows[row++] } : { file, line, row: encoded.rows[row++], item: place });
            continue;
          }
          // a row in a request has a cell for every column: rows of another width were rejected
          origins[kind].push(new CellsOrigin(file, line, csv, cellText, at, cell, csv.width));
          for (const last = cell + csv.width; cell < last; cell += 1) at += encoded.cellLengths[cell];
        }
      });
      return origins;
    };
    /**
     * On a stop, the worker's own count of what it read: the last one it posted may be older than
     * requests already sent. What it posted meanwhile is let go (its rows are neither sent nor settled).
     */
    const lastCount = async (): Promise<void> => {
      if (exited || failure !== undefined) return;
      worker.postMessage({ type: 'summary' } satisfies ToWorker);
      const deadline = Date.now() + 1_000;
      for (;;) {
        for (; head < inbox.length; head += 1) {
          const message = inbox[head];
          if (message.type === 'summary' || message.type === 'done' || message.type === 'error') {
            adopt(message.summary);
            return;
          }
        }
        if (exited || Date.now() >= deadline) return;
        await new Promise<void>((resolve) => {
          wake = resolve;
          setTimeout(resolve, 50).unref();
        });
        wake = undefined;
      }
    };
    try {
      for (;;) {
        if (stopped()) return await lastCount();
        if (head === inbox.length) {
          if (failure !== undefined) throw failure;
          if (exited) throw new Error('the planning thread stopped before it was done');
          inbox = [];
          head = 0;
          acknowledge();
          await new Promise<void>((resolve) => (wake = resolve));
          wake = undefined;
          continue;
        }
        const message = inbox[head];
        // taken messages are let go at once: the inbox empties only when the worker pauses
        (inbox as Array<ToMain | undefined>)[head] = undefined;
        head += 1;
        if (head >= 1024) {
          inbox = inbox.slice(head);
          head = 0;
        }
        switch (message.type) {
          case 'csv-plan':
            plans.set(message.id, { keys: message.keys, width: message.width });
            break;
          case 'reject':
            await options.onReject?.(message.record);
            countRejected(summary, message.record.errors);
            took(0);
            break;
          case 'line-items':
            options.onLineItems?.(message.file, message.line, message.items);
            break;
          case 'progress':
            adopt(message.summary);
            options.onBytesRead?.(message.bytes);
            options.onProgress?.({ file: message.file, rows: summary.rows, requests: summary.requests });
            break;
          case 'request': {
            summary.requests += 1;
            took(message.json.byteLength + message.origins.cells.byteLength);
            yield new ThreadedRequest(message, decode, options.inputs);
            break;
          }
          case 'summary':
          case 'done':
            adopt(message.summary);
            if (message.type === 'done') return;
            break;
          case 'error': {
            adopt(message.summary);
            const error = message.name === 'InputError' ? new InputError(message.message) : new Error(message.message);
            throw Object.assign(error, { file: message.file, line: message.line });
          }
        }
      }
    } finally {
      options.stopSignal?.removeEventListener('abort', onStop);
      await worker.terminate();
    }
  }

  return { requests: requests(), summary };
}

/**
 * A request planned in the worker: the sender uses its JSON bytes and settles it by its lines; the
 * body is parsed, and the origins built, only if asked for (a rejected item, a line of several items).
 */
class ThreadedRequest implements PlannedRequest {
  readonly seq: number;
  readonly json: Uint8Array;
  readonly userKeys: Float64Array;
  readonly lines: ItemLines;
  #encoded: EncodedOrigins;
  #decode: (encoded: EncodedOrigins) => PlannedRequest['origins'];
  #origins: PlannedRequest['origins'] | undefined;

  constructor(
    message: Extract<ToMain, { type: 'request' }>,
    decode: (encoded: EncodedOrigins) => PlannedRequest['origins'],
    files: readonly string[],
  ) {
    this.seq = message.seq;
    this.json = message.json;
    this.userKeys = message.userKeys;
    this.lines = { counts: message.origins.counts, files, fileOf: message.origins.files, lines: message.origins.lines };
    this.#encoded = message.origins;
    this.#decode = decode;
  }

  get origins(): PlannedRequest['origins'] {
    return (this.#origins ??= this.#decode(this.#encoded));
  }

  get body(): PlannedRequest['body'] {
    return JSON.parse(utf8.decode(this.json)) as PlannedRequest['body'];
  }
}
