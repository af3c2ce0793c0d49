// Group commit: the requests of one turn of the event loop share one transaction and one commit.
import { fatalBody } from '../model/index.js';
import type { EmulatorRequest, EmulatorResponse } from './handler.js';
import { storeFailure, type Store } from './store.js';

/**
 * Group commit: requests whose bodies arrive in the same turn of the event loop are handled inside
 * one outer transaction (each request still in its own savepoint), and all are answered after it
 * commits. Under load this spends one commit on several requests. A batch that may write takes the
 * write lock as it begins, waiting (busy_timeout) for another program's write to end (`track
 * cleanup`); one it cannot get is not waited for again. A request whose handling throws is
 * answered 500 with the reason, alone: what it wrote was in its own savepoint, undone, and the others
 * stand. When the commit fails (a full disk), or SQLite rolls the whole transaction back, nothing of
 * the batch was applied and every request in it is answered 500.
 */
export function groupCommitter(store: Store, handle: (request: EmulatorRequest) => EmulatorResponse, log: (line: string) => void) {
  let queue: { request: EmulatorRequest; resolve: (r: EmulatorResponse) => void }[] = [];
  const handleAlone = (request: EmulatorRequest): EmulatorResponse => {
    try {
      // in a savepoint of its own: a 500 means nothing of the request was applied
      return store.transaction(() => handle(request));
    } catch (error) {
      // after some failed writes (SQLITE_FULL, SQLITE_IOERR) SQLite rolls the whole transaction back:
      // the requests before this one are undone, and those after it must not commit alone
      if (!store.transactionOpen) throw error;
      const message = `the emulator cannot answer ${request.method} ${request.path}: ${storeFailure(error, store.path)}`;
      log(`error: ${message}`);
      return { status: 500, headers: {}, body: fatalBody(message) };
    }
  };
  const flush = (): void => {
    const batch = queue;
    queue = [];
    let responses: EmulatorResponse[];
    try {
      // a batch of reads alone goes on beside another program's write; one that may write waits for it,
      // and if it is still held, runs without it: the reads are answered, each write 500 saying why
      const reads = batch.every(({ request }) => request.method === 'GET' || request.method === 'HEAD' || request.path === '/users/export/ids');
      let began = false;
      const attempt = (readsOnly: boolean): EmulatorResponse[] =>
        store.transaction(() => {
          began = true;
          return batch.map((entry) => {
            const response = handleAlone(entry.request);
            if (!store.transactionOpen) throw new Error('SQLite rolled the transaction back after a failed write');
            return response;
          });
        }, { reads: readsOnly });
      try {
        responses = attempt(reads);
      } catch (error) {
        if (began || !String((error as { code?: unknown }).code).startsWith('SQLITE_BUSY')) throw error;
        responses = attempt(true);
      }
    } catch (error) {
      const message = storeFailure(error, store.path);
      // a locked or damaged file names itself; anything else is a write that failed (a full disk)
      const named = message.startsWith('the database ');
      log(`error: ${named ? message : `cannot write the database ${store.path}: ${message}`}; ${batch.length} request(s) answered 500 and not applied`);
      const failed: EmulatorResponse = { status: 500, headers: {}, body: fatalBody(`the emulator cannot ${named ? 'answer' : 'write its database'}: ${message}`) };
      responses = batch.map(() => failed);
    }
    batch.forEach((entry, i) => entry.resolve(responses[i]));
  };
  return (request: EmulatorRequest): Promise<EmulatorResponse> =>
    new Promise((resolve) => {
      if (queue.length === 0) setImmediate(flush);
      queue.push({ request, resolve });
    });
}
