// What a delivery writes to the delta state, holding the file for the whole run (a lock beside it,
// so a second run on it is refused at once): the writing itself is done in a thread of its own
// (state-writer-thread.ts, state-file-writer.ts), so that the disk never holds up the sending.
// Forgetting what a request sends of users the state may know is done, and waited for, before the
// request is posted; what the server accepted is handed over and learned meanwhile.
import { Worker } from 'node:worker_threads';
import { StartedWorker } from '../started-worker.js';
import { InputError, OutputError, UsageError } from '../errors.js';
import { lockState } from './state-file.js';
import { inDoubtRecord, namesKnownUsers } from './learn-record.js';

/**
 * What a delivery writes: before a request is posted, and once the server accepted its items. A
 * learn record may be a view of a larger buffer (the planning thread's chunk, a slab of records): what
 * the writer keeps of it, it copies.
 */
export interface StateWriter {
  /** Forgets what a request is about to send of users the state may know: the promise settles once it is written. */
  sending(learn: Uint8Array): Promise<void> | undefined;
  /**
   * Records the request's accepted items but those the server refused (their places in the body):
   * the promise settles once they are written to the file (it fails with the writer).
   */
  accepted(learn: Uint8Array, rejected: ReadonlySet<number>): Promise<void>;
  /** Holds in doubt what a request whose outcome stays unknown set (inDoubtRecord), as accepted() learns a record. */
  inDoubt(learn: Uint8Array): Promise<void>;
  /** Writes what is waiting, saves the index and gives the file back. */
  close(): Promise<void>;
  /** The target had learned before the state kept API keys (an earlier version's file): it is now tied to the run's key. */
  readonly adopted: boolean;
}

/**
 * Accepted records as they cross, a batch at a time: each was copied in the ring both threads share
 * (RING_BYTES, used in turn), or, when the ring had no room for it, goes as text, one character a
 * byte. Neither is a buffer handed over: the thread's heap would keep one until its next full
 * collection (tens of megabytes of them, in a run of a million users), where a text goes at the next
 * small one. `places` holds, for each record in turn: where it starts in the ring (-1: it is the
 * next of `texts`), its length, what it takes of the ring (`span`: with the end of the ring it left
 * unused when it went round; 0 for a text), how many items the server refused, and their places in
 * the body. Numbers in one typed array, not an object a record: the batch is copied across in one
 * piece, where objects are cloned field by field on both sides.
 */
export interface HandedRecords {
  type: 'accepted';
  count: number;
  places: Int32Array;
  texts: string[];
}
/** The first thing the writer's thread is told: the file, the target, the run's key, and the ring (see HandedRecords). */
export interface OpenWriter {
  path: string;
  target: string;
  key: string | undefined;
  ring: SharedArrayBuffer;
}
/** What the writer's thread is told next. */
export type ToWriter =
  | { type: 'sending'; id: number; learn: Uint8Array }
  | HandedRecords
  | { type: 'close' };
export type FromWriter =
  | { type: 'ready'; adopted: boolean }
  | { type: 'checked' }
  | { type: 'done'; id: number }
  | { type: 'learned'; records: number; ringBytes: number }
  | { type: 'closed' }
  | { type: 'failed'; error: { name: string; message: string; path?: string } };

/**
 * Accepted records handed over together (or after ACCEPTED_MS): a message costs the sending thread
 * 70-110 µs, hardly more for 64 records than for 16 (1,251 of them took 90-115 ms of a first run of
 * 1,000,000 rows at 16 a message; at 64, 319 took 35 ms), and wakes the writer's thread, which on two
 * busy cores takes one from the planning thread: at 128, half as many (paired with the message's
 * other change, an unpaced first run of 1,000,000 rows took 3% less time; at the default rate the
 * timer hands over about 30 at a time all the same). MAX_BEHIND holds two of them.
 */
const ACCEPTED_AT_ONCE = 128;
const ACCEPTED_MS = 20;
/** Records the thread may have waiting before the next request waits for it (memory stays bounded when the disk is slow). */
const MAX_BEHIND = 256;
/** The ring accepted records are copied in (see HandedRecords): room for MAX_BEHIND requests of about 10 kB. */
const RING_BYTES = 4 * 1024 * 1024;

/** Places records in the ring in turn, while the room the writer gave back lets it. */
export function ringOf(size: number) {
  const shared = new SharedArrayBuffer(size);
  const bytes = new Uint8Array(shared);
  let head = 0;
  let used = 0;
  return {
    shared,
    /** Copies a record into the ring: where, and what it takes of it; undefined when it has no room. */
    place(record: Uint8Array): { at: number; length: number; span: number } | undefined {
      const length = record.byteLength;
      // an empty ring starts again at its start
      if (used === 0) head = 0;
      const wraps = head + length > size;
      const at = wraps ? 0 : head;
      const span = wraps ? size - head + length : length;
      if (used + span > size) return undefined;
      bytes.set(record, at);
      head = at + length;
      used += span;
      return { at, length, span };
    },
    /** The writer read records that took this much. */
    free(span: number): void {
      used -= span;
    },
  };
}

/** The thread's module beside this one (the built one when this runs from the TypeScript sources, in the tests). */
const ENTRY = import.meta.url.endsWith('.ts') ? new URL('../../dist/records/state-writer-thread.js', import.meta.url) : new URL('./state-writer-thread.js', import.meta.url);
// a small heap: the thread holds little but the index, which is not on it
const LIMITS = { maxYoungGenerationSizeMb: 4 };

/**
 * The writer's thread started before the run is checked: its modules load (about a tenth of a second)
 * while the run's checks go on, where the plan would wait for them. It touches no file until
 * openStateWriter takes it.
 */
export const startStateWriter = (): StartedWorker => new StartedWorker(ENTRY, LIMITS);

function revive(error: { name: string; message: string; path?: string }): Error {
  if (error.name === 'UsageError') return new UsageError(error.message);
  if (error.name === 'InputError') return new InputError(error.message);
  if (error.name === 'OutputError') return new OutputError(error.message, error.path ?? '');
  return Object.assign(new Error(error.message), { name: error.name });
}

/**
 * Takes the state file for a delivery to `target` (a second run on it is refused: StateInUseError)
 * and opens it in the writer's thread, creating it when needed. `key` is the fingerprint of the
 * run's API key (keyFingerprint): a target the state learned through other keys only is refused, a
 * usage error (state-keys.ts). `ahead`: the writer's thread, started before the run was checked.
 */
export async function openStateWriter(path: string, target: string, key?: string, ahead?: StartedWorker): Promise<StateWriter> {
  const release = lockState(path);
  const ring = ringOf(RING_BYTES);
  const taken = ahead?.take();
  const started = taken !== undefined && taken.failure === undefined && !taken.exited;
  // one that failed to start is let go: a thread started now says why
  if (taken !== undefined && !started) void taken.worker.terminate();
  const worker = started ? taken.worker : new Worker(ENTRY, { resourceLimits: LIMITS });
  // it keeps the process going until it is ready
  worker.ref();
  worker.postMessage({ path, target, key, ring: ring.shared } satisfies OpenWriter);
  let failure: Error | undefined;
  const waiting = new Map<number, { resolve: () => void; reject: (error: Error) => void }>();
  /** Accepted records handed over and not learned yet, and who waits for them to be fewer. */
  let behind = 0;
  let caughtUp: Array<() => void> = [];
  const wakeUp = (): void => {
    const woken = caughtUp;
    caughtUp = [];
    for (const wake of woken) wake();
  };
  /** The thread keeps the process going only while something waits on it. */
  let waiters = 0;
  const hold = async <T>(work: Promise<T>): Promise<T> => {
    if (waiters++ === 0) worker.ref();
    try {
      return await work;
    } finally {
      if (--waiters === 0) worker.unref();
    }
  };
  let nextId = 0;
  let onClosed: ((error?: Error) => void) | undefined;
  /** The whole file was checked (see StateFileWriter.check): nothing is posted before. */
  let isChecked = false;
  let checkedOk: (() => void) | undefined;
  let checkFailed: ((error: Error) => void) | undefined;
  const checked = new Promise<void>((resolve, reject) => {
    checkedOk = resolve;
    checkFailed = reject;
  });
  checked.catch(() => undefined);
  /** Who waits for each accepted record handed over, in order, to be written (the thread learns them in order). */
  const learning: Array<{ resolve: () => void; reject: (error: Error) => void }> = [];
  const fail = (error: Error): void => {
    failure ??= error;
    checkFailed?.(failure);
    for (const { reject } of learning.splice(0)) reject(failure);
    for (const { reject } of waiting.values()) reject(failure);
    waiting.clear();
    wakeUp();
    onClosed?.(failure);
  };
  let adopted = false;
  const ready = new Promise<void>((resolve, reject) => {
    worker.on('message', (message: FromWriter) => {
      if (message.type === 'ready') {
        adopted = message.adopted;
        resolve();
      }
      else if (message.type === 'checked') {
        isChecked = true;
        checkedOk?.();
      } else if (message.type === 'done') {
        waiting.get(message.id)?.resolve();
        waiting.delete(message.id);
      } else if (message.type === 'learned') {
        behind -= message.records;
        ring.free(message.ringBytes);
        for (const { resolve } of learning.splice(0, message.records)) resolve();
        if (behind <= MAX_BEHIND / 2) wakeUp();
      } else if (message.type === 'closed') onClosed?.();
      else {
        reject(revive(message.error));
        fail(revive(message.error));
      }
    });
    worker.on('error', (error) => {
      reject(error);
      fail(error);
    });
    worker.on('exit', () => {
      reject(new Error('the state writer stopped before it was ready'));
      fail(new OutputError(`--state ${path}: its writer stopped before the run was done`, path));
    });
  });
  try {
    await ready;
  } catch (error) {
    release();
    await worker.terminate();
    throw error;
  }
  worker.unref();

  /** The records accepted and not handed over yet: their count, numbers and texts (see HandedRecords). */
  let count = 0;
  let places: number[] = [];
  let texts: string[] = [];
  let timer: NodeJS.Timeout | undefined;
  const handOver = (): void => {
    if (timer !== undefined) clearTimeout(timer);
    timer = undefined;
    if (count === 0) return;
    const message: HandedRecords = { type: 'accepted', count, places: Int32Array.from(places), texts };
    behind += count;
    count = 0;
    places = [];
    texts = [];
    worker.postMessage(message);
  };
  /** Waits while the thread is far behind. */
  const keepUp = async (): Promise<void> => {
    while (behind > MAX_BEHIND && failure === undefined) await hold(new Promise<void>((resolve) => caughtUp.push(resolve)));
    if (failure !== undefined) throw failure;
  };
  const forget = (learn: Uint8Array): Promise<void> | undefined => {
    if (failure !== undefined) throw failure;
    if (!namesKnownUsers(learn)) return behind > MAX_BEHIND ? keepUp() : undefined;
    // what was accepted before is learned first, then forgotten; the record is copied (it is learned
    // later), alone: one carved from a slab of records would take the whole slab with it
    handOver();
    const id = nextId++;
    worker.postMessage({ type: 'sending', id, learn: learn.byteLength === learn.buffer.byteLength ? learn : learn.slice() } satisfies ToWriter);
    return hold(new Promise<void>((resolve, reject) => waiting.set(id, { resolve, reject })));
  };
  const writer: StateWriter = {
    adopted,
    sending(learn) {
      // nothing is posted before the file was found sound
      return isChecked ? forget(learn) : hold(checked).then(() => forget(learn));
    },
    inDoubt(learn) {
      const held = inDoubtRecord(learn);
      return writer.accepted(held.learn, held.activities);
    },
    accepted(learn, rejected) {
      if (failure !== undefined) throw failure;
      const placed = ring.place(learn);
      if (placed === undefined) {
        places.push(-1, learn.byteLength, 0);
        texts.push(Buffer.from(learn.buffer, learn.byteOffset, learn.byteLength).toString('latin1'));
      } else places.push(placed.at, placed.length, placed.span);
      places.push(rejected.size);
      for (const index of rejected) places.push(index);
      count += 1;
      const written = new Promise<void>((resolve, reject) => learning.push({ resolve, reject }));
      if (count >= ACCEPTED_AT_ONCE) handOver();
      else timer ??= setTimeout(handOver, ACCEPTED_MS).unref();
      return written;
    },
    async close() {
      try {
        await hold(checked);
        if (failure !== undefined) throw failure;
        handOver();
        await hold(
          new Promise<void>((resolve, reject) => {
            onClosed = (error) => (error === undefined ? resolve() : reject(error));
            worker.postMessage({ type: 'close' } satisfies ToWriter);
          }),
        );
      } finally {
        if (timer !== undefined) clearTimeout(timer);
        await worker.terminate();
        release();
      }
    },
  };
  return writer;
}
