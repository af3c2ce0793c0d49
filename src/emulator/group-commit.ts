// Group commit: the requests of one turn of the event loop share one transaction and one commit.
import { fatalBody } from '../model/index.js';
import type { EmulatorRequest, EmulatorResponse } from './handler.js';
import type { Store } from './store.js';

/** SQLite's own words for a failed write: `SQLITE_FULL: database or disk is full`. */
function sqliteMessage(error: unknown): string {
  const { code, message } = error as { code?: unknown; message?: unknown };
  const text = typeof message === 'string' ? message : String(error);
  return typeof code === 'string' && code.startsWith('SQLITE_') ? `${code}: ${text}` : text;
}

/**
 * Group commit: requests whose bodies arrive in the same turn of the event loop are handled inside
 * one outer transaction (each request still in its own savepoint), and all are answered after it
 * commits. Under load this spends one commit on several requests. When the commit fails (a full
 * disk), nothing of the batch was applied and every request in it is answered 500.
 */
export function groupCommitter(store: Store, handle: (request: EmulatorRequest) => EmulatorResponse, log: (line: string) => void) {
  let queue: { request: EmulatorRequest; resolve: (r: EmulatorResponse) => void }[] = [];
  const flush = (): void => {
    const batch = queue;
    queue = [];
    let responses: EmulatorResponse[];
    try {
      responses = store.transaction(() =>
        batch.map((entry) => {
          const response = handle(entry.request);
          // after some failed writes (SQLITE_FULL, SQLITE_IOERR) SQLite rolls the whole transaction
          // back: the requests before this one are undone, and those after it must not commit alone
          if (!store.transactionOpen) throw new Error('SQLite rolled the transaction back after a failed write');
          return response;
        }),
      );
    } catch (error) {
      const message = sqliteMessage(error);
      log(`error: cannot write the database ${store.path}: ${message}; ${batch.length} request(s) answered 500 and not applied`);
      const failed: EmulatorResponse = { status: 500, headers: {}, body: fatalBody(`the emulator cannot write its database: ${message}`) };
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
