// The worker thread of a threaded plan (see plan-thread.ts): reads, maps, checks and batches the
// inputs with planRequests() and posts each request to the main thread as JSON text, so reading
// and sending use a core each. Everything it posts is plain data.
import { parentPort, workerData } from 'node:worker_threads';
import { createRangeSet, type RangeSet } from './transport/range-set.js';
import { CsvRowOrigin } from './mapping/csv-rows.js';
import type { PlannedRequest, RejectRecord } from './model/plan.js';
import { ARRAY_NAMES } from './model/types.js';
import { planRequests } from './plan.js';
import type { EncodedOrigins, ToMain, ToWorker, WorkerPlanData } from './plan-thread.js';

const port = parentPort;
if (port === null) throw new Error('plan-worker.js runs only as a worker thread');
const data = workerData as WorkerPlanData;
const post = (message: ToMain): void => port.postMessage(message);

let credit = data.window;
let stopping = false;
let wake: (() => void) | undefined;
port.on('message', (message: ToWorker) => {
  if (message.type === 'credit') credit += message.requests;
  else stopping = true;
  wake?.();
});

const skipped = new Map<string, RangeSet>();
for (const [file, ranges] of data.skip) {
  const set = createRangeSet();
  for (const [start, end] of ranges) set.add(start, end);
  skipped.set(file, set);
}

/** CSV plans already described to the main thread, by the header keys they carry. */
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

/** A request's origins as a few typed arrays and one text, which cost little to copy between threads. */
function encode(request: PlannedRequest): EncodedOrigins {
  const all = ARRAY_NAMES.flatMap((kind) => request.origins[kind]);
  let cellCount = 0;
  for (const origin of all) if (origin instanceof CsvRowOrigin) cellCount += origin.cells.length;
  const encoded: EncodedOrigins = {
    counts: ARRAY_NAMES.map((kind) => request.origins[kind].length),
    files: new Int32Array(all.length),
    lines: new Float64Array(all.length),
    plans: new Int32Array(all.length),
    rows: [],
    cells: '',
    cellLengths: new Uint32Array(cellCount),
  };
  let cell = 0;
  all.forEach((origin, i) => {
    encoded.files[i] = fileIndex(origin.file);
    encoded.lines[i] = origin.line;
    if (!(origin instanceof CsvRowOrigin)) {
      encoded.plans[i] = -1;
      encoded.rows.push(origin.row);
      return;
    }
    let id = plansSent.get(origin.plan);
    if (id === undefined) {
      id = plansSent.size;
      plansSent.set(origin.plan, id);
      post({ type: 'csv-plan', id, keys: origin.plan.keys, width: origin.plan.width, cells: origin.cells.length });
    }
    encoded.plans[i] = id;
    for (const text of origin.cells) {
      encoded.cells += text;
      encoded.cellLengths[cell] = text.length;
      cell += 1;
    }
  });
  return encoded;
}

let bytes = 0;
const plan = planRequests({
  inputs: data.inputs,
  format: data.format,
  kind: data.kind,
  map: data.map,
  limits: data.limits,
  maxBodyBytes: data.maxBodyBytes,
  skipRow: skipped.size === 0 ? undefined : (file, line) => skipped.get(file)?.has(line) ?? false,
  onReject: (record: RejectRecord) => post({ type: 'reject', record: { ...record } }),
  onLineItems: (file, line, items) => post({ type: 'line-items', file, line, items }),
  onBytesRead: (read) => (bytes += read),
  onProgress: (progress) => {
    post({ type: 'progress', file: progress.file, bytes, summary: plan.summary });
    bytes = 0;
  },
});

try {
  for await (const request of plan.requests) {
    while (credit === 0 && !stopping) await new Promise<void>((resolve) => (wake = resolve));
    if (stopping) break;
    credit -= 1;
    post({ type: 'request', seq: request.seq, json: JSON.stringify(request.body), origins: encode(request), userKeys: Float64Array.from(request.userKeys) });
  }
  post({ type: 'done', summary: plan.summary });
} catch (error) {
  const e = error as Error & { file?: string; line?: number };
  post({ type: 'error', name: e.name, message: e.message, file: e.file, line: e.line });
}
port.close();
