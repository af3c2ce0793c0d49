// The checkpointer thread's lifetime, from the store's side: started with the store, stopped before it closes.
import { Worker } from 'node:worker_threads';

export interface CheckpointerData {
  path: string;
  intervalMs: number;
}

/** Run from TypeScript sources (the tests), the worker is taken from the build. */
const CHECKPOINTER = import.meta.url.endsWith('.ts')
  ? new URL('../../dist/emulator/checkpointer.js', import.meta.url)
  : new URL('./checkpointer.js', import.meta.url);
const CHECKPOINT_INTERVAL_MS = 100;
/**
 * Log pages after which the writing connection checkpoints itself (SQLite's default is 1000). With the
 * checkpointer thread keeping up, this only restarts a log that never caught up under steady load.
 */
const WRITER_CHECKPOINT_PAGES = 8000;
const DEFAULT_CHECKPOINT_PAGES = 1000;
/** How long stop() lets a checkpoint in progress finish before ending the thread. */
const CHECKPOINTER_STOP_MS = 5000;

export interface CheckpointThread {
  /** Stops the thread and waits for its connection to close; the writer then checkpoints as by default. */
  stop(): Promise<void>;
  /** Asks the thread to stop without waiting for it (the store is closing). */
  end(): void;
}

/**
 * Moves checkpoints of the database at `path` to a worker thread; should it fail, the writer
 * checkpoints as SQLite does by default. `setWriterCheckpointPages` sets the writing connection's
 * own automatic checkpoint (wal_autocheckpoint).
 */
export function startCheckpointThread(path: string, setWriterCheckpointPages: (pages: number) => void): CheckpointThread {
  const data: CheckpointerData = { path, intervalMs: CHECKPOINT_INTERVAL_MS };
  const worker = new Worker(CHECKPOINTER, { workerData: data });
  worker.unref();
  let running = true;
  const fallBack = (): void => {
    if (!running) return;
    running = false;
    setWriterCheckpointPages(DEFAULT_CHECKPOINT_PAGES);
  };
  worker.on('error', fallBack);
  worker.on('exit', fallBack);
  setWriterCheckpointPages(WRITER_CHECKPOINT_PAGES);
  return {
    async stop() {
      if (!running) return;
      running = false;
      await new Promise<void>((resolve) => {
        const stuck = setTimeout(() => void worker.terminate(), CHECKPOINTER_STOP_MS);
        worker.once('exit', () => {
          clearTimeout(stuck);
          resolve();
        });
        worker.postMessage('stop');
      });
      setWriterCheckpointPages(DEFAULT_CHECKPOINT_PAGES);
    },
    end() {
      if (!running) return;
      running = false;
      worker.postMessage('stop');
    },
  };
}
