// The worker thread of a threaded plan (see plan-thread.ts): reads, maps, checks and batches the
// inputs with planRequests() and posts each request to the main thread as UTF-8 JSON, so reading
// and sending use a core each. Everything it posts is plain data; the bytes of a request are
// transferred.
import { parentPort, workerData } from 'node:worker_threads';
import { createRangeSet, type RangeSet } from './transport/resume/range-set.js';
import { CsvRowOrigin } from './mapping/csv-rows.js';
import type { PlannedRequest, RejectRecord } from './model/plan.js';
import { ARRAY_NAMES } from './model/types.js';
import { planRequests } from './plan.js';
import type { EncodedOrigins, ToMain, ToWorker, WorkerPlanData } from './plan-thread.js';

const port = parentPort;
if (port === null) throw new Error('plan-worker.js runs only as a worker thread');
const data = workerData as WorkerPlanData;
const post = (message: ToMain, transfer?: ArrayBuffer[]): void => port.postMessage(message, transfer);

// flow control: what is posted and not yet taken by the main thread, in messages and in bytes
let unacknowledged = { messages: 0, bytes: 0 };
let wake: (() => void) | undefined;
port.on('message', (message: ToWorker) => {
  if (message.type === 'summary') {
    post({ type: 'summary', summary: plan.summary });
    return;
  }
  unacknowledged = { messages: unacknowledged.messages - message.messages, bytes: unacknowledged.bytes - message.bytes };
  wake?.();
});

/** Posts a request or a rejected row, first waiting while the main thread has too much of them to take. */
async function postCounted(message: ToMain, bytes: number, transfer?: ArrayBuffer[]): Promise<void> {
  while (unacknowledged.messages > 0 && (unacknowledged.messages >= data.window.messages || unacknowledged.bytes >= data.window.bytes)) {
    await new Promise<void>((resolve) => (wake = resolve));
    wake = undefined;
  }
  unacknowledged = { messages: unacknowledged.messages + 1, bytes: unacknowledged.bytes + bytes };
  post(message, transfer);
}

/** Per file, the lines of the given ranges. */
function linesOf(ranges: Array<[string, Array<[number, number]>]>): Map<string, RangeSet> {
  const sets = new Map<string, RangeSet>();
  for (const [file, list] of ranges) {
    const set = createRangeSet();
    for (const [start, end] of list) set.add(start, end);
    if (set.size > 0) sets.set(file, set);
  }
  return sets;
}
const skipped = linesOf(data.skip);
const rejected = linesOf(data.reject);

/** CSV plans already described to the main thread, and the id each was given. */
const plansSent = new Map<object, number>();

/** The file index of an origin's file: most origins in a row share one. */
let lastFile = '';
let lastFileIndex = -1;
const fileIndex = (file: string): number => {
  if (file !== lastFile) {
    lastFile = file;
    lastFileIndex = data.inputs.indexOf(file);
  }
  return lastFileIndex;
};

const utf8 = new TextEncoder();
const EMPTY = new Uint8Array(0);

/** A request's origins as a few typed arrays and one text, which cost little to copy between threads. */
function encode(request: PlannedRequest): EncodedOrigins {
  const all = ARRAY_NAMES.flatMap((kind) => request.origins[kind]);
  let cellCount = 0;
  for (const origin of all) if (origin instanceof CsvRowOrigin) cellCount += origin.width;
  const encoded: EncodedOrigins = {
    counts: ARRAY_NAMES.map((kind) => request.origins[kind].length),
    files: new Int32Array(all.length),
    lines: new Float64Array(all.length),
    plans: new Int32Array(all.length),
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
      encoded.plans[i] = -1;
      encoded.rows.push(origin.row);
      encoded.rowItems.push(origin.item ?? -1);
      return;
    }
    let id = plansSent.get(origin.plan);
    if (id === undefined) {
      id = plansSent.size;
      plansSent.set(origin.plan, id);
      post({ type: 'csv-plan', id, keys: origin.plan.keys, width: origin.plan.width });
    }
    encoded.plans[i] = id;
    cells = origin.appendCells(cells, encoded.cellLengths, cell);
    cell += origin.width;
  });
  if (cells !== '') encoded.cells = utf8.encode(cells);
  return encoded;
}

let bytes = 0;
const plan = planRequests({
  inputs: data.inputs,
  format: data.format,
  encoding: data.encoding,
  kind: data.kind,
  map: data.map,
  limits: data.limits,
  maxBodyBytes: data.maxBodyBytes,
  // the rows of a chunk live until it is planned: small chunks let them die young (see YOUNG_GENERATION_MB)
  chunkBytes: 16 * 1024,
  skipRow: skipped.size === 0 ? undefined : (file, line) => skipped.get(file)?.has(line) ?? false,
  rejectRow: rejected.size === 0 ? undefined : (file, line) => rejected.get(file)?.has(line) ?? false,
  skipItem: data.skipItems.size === 0 ? undefined : (file, line, item) => data.skipItems.get(file)?.get(line)?.has(item) ?? false,
  onReject: (record: RejectRecord) => postCounted({ type: 'reject', record: { ...record } }, 0),
  onLineItems: (file, line, items) => post({ type: 'line-items', file, line, items }),
  onBytesRead: (read) => (bytes += read),
  onProgress: (progress) => {
    post({ type: 'progress', file: progress.file, bytes, summary: plan.summary });
    bytes = 0;
  },
});

try {
  for await (const request of plan.requests) {
    // as bytes of their own, handed over rather than copied: the sending thread makes no string of them
    const json = utf8.encode(JSON.stringify(request.body));
    const origins = encode(request);
    const userKeys = Float64Array.from(request.userKeys);
    const transfer = [json, userKeys, origins.files, origins.lines, origins.plans, origins.cellLengths].map((a) => a.buffer as ArrayBuffer);
    if (origins.cells !== EMPTY) transfer.push(origins.cells.buffer as ArrayBuffer);
    await postCounted({ type: 'request', seq: request.seq, json, origins, userKeys }, json.byteLength + origins.cells.byteLength, transfer);
  }
  post({ type: 'done', summary: plan.summary });
} catch (error) {
  const e = error as Error & { file?: string; line?: number };
  post({ type: 'error', name: e.name, message: e.message, file: e.file, line: e.line, summary: plan.summary });
}
port.close();
