// A plan made in a worker thread. Reading, mapping, checking and batching take most of an upload's
// CPU, and sending takes the rest; run in one thread they add up, so `track upload` plans in a
// worker (entry.ts) and sends from the main thread. The events are those of planEvents().
import { InputError } from '../../errors.js';
import type { RequestToSend } from '../../transport/request.js';
import type { PlanEvent } from '../plan.js';
import type { StartedPlanner, WorkerPlanOptions } from './entry.js';
import type { ResourceLimits } from 'node:worker_threads';
import { StartedWorker } from '../../started-worker.js';
import { inWorker, type RelayedError } from './in-worker.js';
import { acrossThreads } from '../../input/remote.js';
import { createDecoder, type WireMessage } from './wire.js';

/**
 * Events the worker has posted wait in this thread until taken, a chunk of input's to a message (a
 * few requests of small rows). A shallow window keeps the sender fed (the worker plans faster than
 * it sends) while few of them live long enough to be promoted: at 64 requests, peak RSS rose by up
 * to 20 MB; at 8, the sender sometimes waited.
 */
const WINDOW = { messages: 6, bytes: 8 * 1024 * 1024 };
/**
 * A row's objects die within a chunk of input, read 16 KiB at a time there, so a young generation
 * capped at 12 MiB (the default grows several times larger) serves as well and keeps two heaps
 * within 150 MB.
 */
const YOUNG_GENERATION_MB = 12;
/**
 * A --delta plan allocates more a row (its users' keys, the verdicts): in 12 MiB, rows waiting in
 * open requests lived through two collections and were moved to the old heap (300 MB of them in a
 * million rows), and collecting took a third of the thread's time. 24 MiB keeps them young; 32
 * collects them 163 times in a first run of 1,000,000 rows where 24 did 286 times (230 ms against
 * 270), for 15-20 MB more at the peak: a first run of 10,000,000 rows peaked at 258-268 MB with 32
 * and 241-243 MB with 24 (and 4 slabs of entries kept, parted-entries.ts), under the 250 MB a run
 * is to stay within; a first run of 1,000,000 rows took 1.2% longer (10 pairs).
 */
const DELTA_YOUNG_GENERATION_MB = 24;
/**
 * V8 lets a heap grow to four times what survived its last full collection when the heap may grow
 * past 2 GB, and to under twice that below it: rows of 20,000 cells, held until their request is
 * full, took the worker's heap to 180 MB with no bound and to 60 MB with this one. The worker holds
 * at most a request or two and the rows of a chunk of input, far below it.
 */
const OLD_GENERATION_MB = 1024;
/**
 * The worker's module beside this one. A worker thread runs JavaScript only, so when this module
 * runs from the TypeScript sources (the tests), the built one is loaded (the tests build it first).
 */
const ENTRY = import.meta.url.endsWith('.ts') ? new URL('../../../dist/upload/worker/entry.js', import.meta.url) : new URL('./entry.js', import.meta.url);

const revive = (relayed: RelayedError): Error => {
  const error = relayed.name === 'InputError' ? new InputError(relayed.message) : new Error(relayed.message);
  return Object.assign(error, { file: relayed.file, line: relayed.line });
};

/** The planning thread's heap: its young generation as a --delta plan (`delta`) needs it, or another. */
const limits = (delta: boolean): ResourceLimits => ({ maxYoungGenerationSizeMb: delta ? DELTA_YOUNG_GENERATION_MB : YOUNG_GENERATION_MB, maxOldGenerationSizeMb: OLD_GENERATION_MB });

/**
 * A planning thread started before its plan is known, for planInWorker() (`delta`: the plan compares
 * attributes, with --delta): it loads its modules while the run is checked, the delta stage's too
 * (the state's driver among them) for a plan that has one (`deltaStage`: --delta, --dedupe-events).
 */
export const startPlanner = (delta: boolean, deltaStage = delta): StartedWorker => new StartedWorker(ENTRY, limits(delta), { delta: deltaStage } satisfies StartedPlanner);

/**
 * The events of planEvents(options), planned in a worker thread (`started`: one startPlanner() gave
 * for this plan, or one is started now); `stopSignal` ends it at once.
 */
export async function* planInWorker(options: WorkerPlanOptions & { stopSignal?: AbortSignal; started?: StartedWorker }): AsyncGenerator<PlanEvent<RequestToSend>> {
  const { stopSignal, started, ...given } = options;
  // the run's stop does not cross: the thread ends with the plan
  const data = { ...given, remote: acrossThreads(given.remote) };
  const decode = createDecoder(options.inputs);
  const messages = inWorker<WireMessage[]>(ENTRY, {
    data,
    window: WINDOW,
    resourceLimits: limits(data.delta?.attributes === true),
    started,
    stopSignal,
    name: 'the planning thread',
    revive,
  });
  for await (const message of messages) {
    // a chunk's events cross together: a stop among them hands on none of the rest
    for (const event of decode(message)) {
      if (stopSignal?.aborted === true) return;
      yield event;
    }
  }
}
