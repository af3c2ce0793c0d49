// Runs a producer of values in a worker thread and hands its values to this one as an async
// iterable, the way a generator in this thread would: the worker runs at most a window of values
// ahead of the consumer, an error in it is thrown here, and a stop ends it. Nothing here knows what
// the values are; wire.ts turns them into what the consumer expects.
import { parentPort, type ResourceLimits } from 'node:worker_threads';
import { StartedWorker } from '../../started-worker.js';

/** A value posted by the worker, with the bytes it weighs against the window and the buffers handed over with it. */
export interface Posting<T> {
  value: T;
  bytes: number;
  transfer?: ArrayBuffer[];
}

/** An error thrown in the worker, as it crosses to this thread. */
export interface RelayedError {
  name: string;
  message: string;
  file?: string;
  line?: number;
}

export interface InWorkerOptions {
  /** What the worker's producer is called with (structured-cloneable). */
  data: unknown;
  /** How far the worker may run ahead: values posted and not yet taken, in count and in bytes. */
  window: { messages: number; bytes: number };
  resourceLimits?: ResourceLimits;
  /** Stop at once: the worker is ended and nothing more it posted is handed on. */
  stopSignal?: AbortSignal;
  /** What the thread is called in an error message (default: the worker thread). */
  name?: string;
  /** The error to throw here for one the worker relayed (default: an Error with its name and message). */
  revive?: (relayed: RelayedError) => Error;
  /** The worker, started already (at `url`, with the same resource limits); one is started here otherwise. */
  started?: StartedWorker;
}

/** Worker -> here: a value, the end, or an error. Here -> worker: its work (first), then values taken (and their bytes). */
type ToMain<T> = { value: T; bytes: number } | { done: true } | { error: RelayedError };
type Work = { data: unknown; window: InWorkerOptions['window'] };
type ToWorker = { messages: number; bytes: number };

const reviveError = (relayed: RelayedError): Error => Object.assign(new Error(relayed.message), relayed);

/** The values the worker at `url` produces (it calls serveInWorker), in order. */
export async function* inWorker<T>(url: URL, options: InWorkerOptions): AsyncGenerator<T> {
  const started = (options.started ?? new StartedWorker(url, options.resourceLimits)).take();
  const { worker } = started;
  // messages in arrival order: an array with a moving head, since shift() is linear
  let inbox: Array<ToMain<T> | undefined> = [];
  let head = 0;
  let failure = started.failure;
  let exited = started.exited;
  let wake: (() => void) | undefined;
  const stopped = (): boolean => options.stopSignal?.aborted === true;
  const onStop = (): void => wake?.();
  options.stopSignal?.addEventListener('abort', onStop);
  worker.on('message', (message: ToMain<T>) => {
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
  const window = options.window;
  let taken: ToWorker = { messages: 0, bytes: 0 };
  const acknowledge = (): void => {
    if (taken.messages === 0) return;
    worker.postMessage(taken);
    taken = { messages: 0, bytes: 0 };
  };
  try {
    // inside the try: work that cannot cross (not cloneable) ends the worker as any failure does
    worker.postMessage({ data: options.data, window: options.window } satisfies Work);
    for (;;) {
      if (stopped()) return;
      if (head === inbox.length) {
        if (failure !== undefined) throw failure;
        if (exited) throw new Error(`${options.name ?? 'the worker thread'} stopped before it was done`);
        inbox = [];
        head = 0;
        acknowledge();
        await new Promise<void>((resolve) => (wake = resolve));
        wake = undefined;
        continue;
      }
      const message = inbox[head]!;
      // taken messages are let go at once: the inbox empties only when the worker pauses
      inbox[head] = undefined;
      head += 1;
      if (head >= 1024) {
        inbox = inbox.slice(head);
        head = 0;
      }
      if ('done' in message) return;
      if ('error' in message) throw (options.revive ?? reviveError)(message.error);
      taken = { messages: taken.messages + 1, bytes: taken.bytes + message.bytes };
      if (taken.messages >= window.messages / 4 || taken.bytes >= window.bytes / 4) acknowledge();
      yield message.value;
    }
  } finally {
    options.stopSignal?.removeEventListener('abort', onStop);
    await worker.terminate();
  }
}

/**
 * The worker's side: posts what `produce` yields, waiting while the other thread has a window of it
 * not yet taken; then the end, or the error that ended it.
 */
export async function serveInWorker<D, T>(produce: (data: D) => AsyncIterable<Posting<T>>): Promise<void> {
  const port = parentPort;
  if (port === null) throw new Error('serveInWorker() runs only in a worker thread');
  // the work comes first (the worker may have been started before it was known: StartedWorker)
  const { data, window } = (await new Promise<Work>((resolve) => port.once('message', resolve))) as Work & { data: D };
  let unacknowledged = { messages: 0, bytes: 0 };
  let wake: (() => void) | undefined;
  port.on('message', (message: ToWorker) => {
    unacknowledged = { messages: unacknowledged.messages - message.messages, bytes: unacknowledged.bytes - message.bytes };
    wake?.();
  });
  try {
    for await (const posting of produce(data)) {
      while (unacknowledged.messages > 0 && (unacknowledged.messages >= window.messages || unacknowledged.bytes >= window.bytes)) {
        await new Promise<void>((resolve) => (wake = resolve));
        wake = undefined;
      }
      unacknowledged = { messages: unacknowledged.messages + 1, bytes: unacknowledged.bytes + posting.bytes };
      port.postMessage({ value: posting.value, bytes: posting.bytes } satisfies ToMain<T>, posting.transfer);
    }
    port.postMessage({ done: true } satisfies ToMain<T>);
  } catch (error) {
    const e = error as Error & { file?: string; line?: number };
    port.postMessage({ error: { name: e.name, message: e.message, file: e.file, line: e.line } } satisfies ToMain<T>);
  }
  port.close();
}
