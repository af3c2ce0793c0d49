// A worker thread started ahead of its work (the planning thread, the delta state's writer), shared
// by upload/ and records/ as lock-file.ts is.
import { Worker, type ResourceLimits } from 'node:worker_threads';

/**
 * A worker started before its work is known: its modules load while this thread does what comes
 * first (checking a run, opening its files), and whoever takes it (inWorker() for the plan,
 * openStateWriter() for the delta state) hands it its work in its first message. Until then it does
 * not hold the process open; one never taken is let go with release().
 */
export class StartedWorker {
  readonly #worker: Worker;
  #failure: Error | undefined;
  #exited = false;
  #taken = false;

  /** `workerData`: what the worker may do while it waits (load what its work will need), as the worker reads it. */
  constructor(url: URL, resourceLimits?: ResourceLimits, workerData?: unknown) {
    this.#worker = new Worker(url, { resourceLimits, workerData });
    // what befell it before it was taken is told to whoever takes it, who listens from then on
    this.#worker.on('error', (error) => (this.#failure ??= error));
    this.#worker.on('exit', () => (this.#exited = true));
    this.#worker.unref();
  }

  /** The worker (once), and what became of it so far. */
  take(): { worker: Worker; failure: Error | undefined; exited: boolean } {
    if (this.#taken) throw new Error('a started worker is taken once');
    this.#taken = true;
    this.#worker.ref();
    return { worker: this.#worker, failure: this.#failure, exited: this.#exited };
  }

  /** Ends the worker unless it was taken (whoever took it ends it when done). */
  release(): void {
    if (!this.#taken) void this.#worker.terminate();
  }
}
