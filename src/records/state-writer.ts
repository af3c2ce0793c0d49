// What a delivery writes to the delta state, holding the file for the whole run (a lock beside it,
// so a second run on it is refused at once): the writing itself is done in a thread of its own
// (state-writer-thread.ts, state-file-writer.ts), so that the disk never holds up the sending.
// Forgetting what a request sends of users the state may know is done, and waited for, before the
// request is posted; what the server accepted is handed over and learned meanwhile.
import { Worker } from 'node:worker_threads';
import { InputError, OutputError, UsageError } from '../errors.js';
import { lockState } from './state-file.js';
import { namesKnownUsers } from './learn-record.js';

/** What a delivery writes: before a request is posted, and once the server accepted its items. */
export interface StateWriter {
  /** Forgets what a request is about to send of users the state may know: the promise settles once it is written. */
  sending(learn: Uint8Array): Promise<void> | undefined;
  /** Records the request's accepted items but those the server refused (their places in the body). */
  accepted(learn: Uint8Array, rejected: ReadonlySet<number>): void;
  /** Writes what is waiting, saves the index and gives the file back. */
  close(): Promise<void>;
}

/**
 * What the writer's thread is told. Accepted records cross as text, one character a byte: the
 * thread's heap lets a text go at its next small collection, where a buffer handed over would wait
 * for a full one (tens of megabytes of them, in a run of a million users).
 */
export type ToWriter =
  | { type: 'sending'; id: number; learn: Uint8Array }
  | { type: 'accepted'; records: Array<{ learn: string; rejected: number[] }> }
  | { type: 'close' };
export type FromWriter =
  | { type: 'ready' }
  | { type: 'checked' }
  | { type: 'done'; id: number }
  | { type: 'learned'; records: number }
  | { type: 'closed' }
  | { type: 'failed'; error: { name: string; message: string; path?: string } };

/** Accepted records handed over together (or after ACCEPTED_MS). */
const ACCEPTED_AT_ONCE = 16;
const ACCEPTED_MS = 20;
/** Records the thread may have waiting before the next request waits for it (memory stays bounded when the disk is slow). */
const MAX_BEHIND = 256;

/** The thread's module beside this one (the built one when this runs from the TypeScript sources, in the tests). */
const ENTRY = import.meta.url.endsWith('.ts') ? new URL('../../dist/records/state-writer-thread.js', import.meta.url) : new URL('./state-writer-thread.js', import.meta.url);

function revive(error: { name: string; message: string; path?: string }): Error {
  if (error.name === 'UsageError') return new UsageError(error.message);
  if (error.name === 'InputError') return new InputError(error.message);
  if (error.name === 'OutputError') return new OutputError(error.message, error.path ?? '');
  return Object.assign(new Error(error.message), { name: error.name });
}

/**
 * Takes the state file for a delivery to `target` (a second run on it is refused: StateInUseError)
 * and opens it in the writer's thread, creating it when needed.
 */
export async function openStateWriter(path: string, target: string): Promise<StateWriter> {
  const release = lockState(path);
  // a small heap: the thread holds little but the index, which is not on it
  const worker = new Worker(ENTRY, { workerData: { path, target }, resourceLimits: { maxYoungGenerationSizeMb: 4 } });
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
  const fail = (error: Error): void => {
    failure ??= error;
    checkFailed?.(failure);
    for (const { reject } of waiting.values()) reject(failure);
    waiting.clear();
    wakeUp();
    onClosed?.(failure);
  };
  const ready = new Promise<void>((resolve, reject) => {
    worker.on('message', (message: FromWriter) => {
      if (message.type === 'ready') resolve();
      else if (message.type === 'checked') {
        isChecked = true;
        checkedOk?.();
      } else if (message.type === 'done') {
        waiting.get(message.id)?.resolve();
        waiting.delete(message.id);
      } else if (message.type === 'learned') {
        behind -= message.records;
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

  let batch: ToWriter & { type: 'accepted' } = { type: 'accepted', records: [] };
  let timer: NodeJS.Timeout | undefined;
  const handOver = (): void => {
    if (timer !== undefined) clearTimeout(timer);
    timer = undefined;
    if (batch.records.length === 0) return;
    const message = batch;
    batch = { type: 'accepted', records: [] };
    behind += message.records.length;
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
    // what was accepted before is learned first, then forgotten; the record is copied (it is learned later)
    handOver();
    const id = nextId++;
    worker.postMessage({ type: 'sending', id, learn } satisfies ToWriter);
    return hold(new Promise<void>((resolve, reject) => waiting.set(id, { resolve, reject })));
  };
  return {
    sending(learn) {
      // nothing is posted before the file was found sound
      return isChecked ? forget(learn) : hold(checked).then(() => forget(learn));
    },
    accepted(learn, rejected) {
      if (failure !== undefined) throw failure;
      batch.records.push({ learn: Buffer.from(learn.buffer, learn.byteOffset, learn.byteLength).toString('latin1'), rejected: [...rejected] });
      if (batch.records.length >= ACCEPTED_AT_ONCE) handOver();
      else timer ??= setTimeout(handOver, ACCEPTED_MS).unref();
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
}
