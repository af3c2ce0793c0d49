// The planning thread: plans the inputs with planChunks(), as a plan in the main thread would, and
// posts each chunk's events through wire.ts, so that reading and sending use a core each.
import { planChunks, type PlanOptions } from '../plan.js';
import { serveInWorker, type Posting } from './in-worker.js';
import { createEncoder, type WireMessage } from './wire.js';

/** What the planning thread is started with: the plan's options that cross threads. */
export type WorkerPlanOptions = Omit<PlanOptions, 'stdin' | 'stopSignal'>;

/** Rows of a chunk live until it is planned: small chunks let them die young (see YOUNG_GENERATION_MB). */
const CHUNK_BYTES = 16 * 1024;
/**
 * A read, and a message posted, each wake another thread, which on a machine of two busy cores
 * takes this one off its core: a file is read, and its chunks' events posted, this many chunks at a
 * time (a read of 16 KiB and a message a chunk took a fifth of the thread's time, most of it waiting
 * for its core again).
 */
const CHUNKS_A_READ = 4;

async function* postings(options: WorkerPlanOptions): AsyncGenerator<Posting<WireMessage[]>> {
  const encode = createEncoder(options.inputs);
  let merged: Posting<WireMessage[]> | undefined;
  let chunks = 0;
  try {
    for await (const events of planChunks({ ...options, chunkBytes: CHUNKS_A_READ * CHUNK_BYTES, pieceBytes: CHUNK_BYTES })) {
      // each chunk is encoded as it is planned: what waits to be posted holds no rows
      const posting = encode(events);
      if (posting === undefined) continue;
      merged = merged === undefined ? posting : joined(merged, posting);
      if ((chunks += 1) < CHUNKS_A_READ) continue;
      yield merged;
      merged = undefined;
      chunks = 0;
    }
  } catch (error) {
    // what was planned before an error goes before it
    if (merged !== undefined) yield merged;
    throw error;
  }
  if (merged !== undefined) yield merged;
}

/** Two chunks' postings as one message. */
function joined(a: Posting<WireMessage[]>, b: Posting<WireMessage[]>): Posting<WireMessage[]> {
  return { value: [...a.value, ...b.value], bytes: a.bytes + b.bytes, transfer: [...(a.transfer ?? []), ...(b.transfer ?? [])] };
}

await serveInWorker(postings);
