// Drives the emulator's handler in-process: no port, no socket.
import { createHandler, type EmulatorResponse } from '../../src/emulator/handler.js';
import { resolveOptions, type EmulatorOptions } from '../../src/emulator/options.js';
import { Store } from '../../src/emulator/store.js';

export const KEY = 'test-key';

export interface TestHandler {
  store: Store;
  post(path: string, body: unknown, headers?: Record<string, string>): EmulatorResponse;
  track(body: unknown): { status: number; body: Record<string, any> };
  /** The exported users for a query, asserting the export itself succeeded. */
  users(query: Record<string, unknown>): Record<string, any>[];
  user(externalId: string): Record<string, any> | undefined;
  close(): void;
}

export function testHandler(options: EmulatorOptions = {}): TestHandler {
  const resolved = resolveOptions({ apiKeys: [KEY], ...options });
  const store = new Store(':memory:');
  const handler = createHandler({ ...resolved, store, log: options.log });
  const post = (path: string, body: unknown, headers: Record<string, string> = {}): EmulatorResponse => {
    const response = handler.handle({
      method: 'POST',
      path,
      headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json', ...headers },
      // a Buffer goes as its bytes, text as UTF-8, anything else as its JSON
      body: Buffer.isBuffer(body) ? body : Buffer.from(typeof body === 'string' ? body : JSON.stringify(body)),
    });
    // a body answered in pieces is read whole, as a client would
    return response.chunks === undefined ? response : { ...response, body: JSON.parse(Buffer.concat([...response.chunks].map((c) => (typeof c === 'string' ? Buffer.from(c) : c))).toString('utf8')) };
  };
  const track = (body: unknown) => {
    const r = post('/users/track', body);
    return { status: r.status, body: r.body as Record<string, any> };
  };
  const users = (query: Record<string, unknown>) => {
    const r = post('/users/export/ids', query);
    if (r.status !== 201) throw new Error(`export answered ${r.status}: ${JSON.stringify(r.body)}`);
    return (r.body as { users: Record<string, any>[] }).users;
  };
  return {
    store,
    post,
    track,
    users,
    user: (externalId) => users({ external_ids: [externalId] })[0],
    close: () => store.close(),
  };
}
