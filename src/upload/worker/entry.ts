// The planning thread: plans the inputs with planChunks(), as a plan in the main thread would, and
// posts each chunk's events through wire.ts, so that reading and sending use a core each.
import { workerData } from 'node:worker_threads';
import { planChunks, type PlanOptions } from '../plan.js';
import { serveInWorker, type Posting } from './in-worker.js';
import { createEncoder, type WireMessage } from './wire.js';

/** What a planning thread started ahead of its plan is told (startPlanner): its plan has a delta stage (--delta, --dedupe-events). */
export interface StartedPlanner {
  delta: boolean;
}

/** What the planning thread is started with: the plan's options that cross threads. */
export type WorkerPlanOptions = Omit<PlanOptions, 'stdin' | 'stopSignal'>;

/** Rows of a chunk live until it is planned: small chunks let them die young (see YOUNG_GENERATION_MB). */
const CHUNK_BYTES = 16 * 1024;
/**
 * A file is read this much at a time, and planned a chunk at a time: fewer, larger reads cost less.
 * (Posting several chunks' events in one message as well saved no CPU, and kept more in flight: the
 * peak RSS of a 1M-row upload rose 4 MB.)
 */
const READ_BYTES = 4 * CHUNK_BYTES;

async function* postings(options: WorkerPlanOptions): AsyncGenerator<Posting<WireMessage[]>> {
  const encode = createEncoder(options.inputs);
  for await (const events of planChunks({ ...options, chunkBytes: READ_BYTES, pieceBytes: CHUNK_BYTES })) {
    const posting = encode(events);
    if (posting !== undefined) yield posting;
  }
}

// a thread started ahead for a plan with a delta stage loads it while it waits for its plan (which imports it)
if ((workerData as StartedPlanner | undefined)?.delta === true) void import('../delta.js').catch(() => undefined);

await serveInWorker(postings);
