// Drives the emulator's handler in-process: no port, no socket.
import { createHandler, type EmulatorResponse, type HandlerConfig } from '../../src/emulator/handler.js';
import { resolveOptions, type EmulatorOptions } from '../../src/emulator/options.js';
import { Store } from '../../src/emulator/store.js';

export const KEY = 'test-key';

export interface TestHandler {
  store: Store;
  post(path: string, body: unknown, headers?: Record<string, string>): EmulatorResponse;
  /** Any method on a URL path with its query string; no key unless headers give one. */
  call(method: string, url: string, options?: { headers?: Record<string, string>; body?: string }): EmulatorResponse;
  handler: ReturnType<typeof createHandler>;
  track(body: unknown): { status: number; body: Record<string, any> };
  /** The exported users for a query, asserting the export itself succeeded. */
  users(query: Record<string, unknown>): Record<string, any>[];
  user(externalId: string): Record<string, any> | undefined;
  close(): void;
}

/** A body answered in pieces (the export, the request log), read whole, as a client would. */
function whole(response: EmulatorResponse): EmulatorResponse {
  if (response.chunks === undefined) return response;
  return { ...response, body: JSON.parse(Buffer.concat([...response.chunks].map((c) => (typeof c === 'string' ? Buffer.from(c) : c))).toString('utf8')) };
}

export function testHandler(options: EmulatorOptions & Pick<HandlerConfig, 'fixtureKeyRequired'> = {}): TestHandler {
  const resolved = resolveOptions({ apiKeys: [KEY], ...options });
  const store = new Store(':memory:');
  const handler = createHandler({ ...resolved, store, log: options.log, seed: resolved.seedRequests, fixtureKeyRequired: options.fixtureKeyRequired });
  const post = (path: string, body: unknown, headers: Record<string, string> = {}): EmulatorResponse => {
    const response = handler.handle({
      method: 'POST',
      path,
      headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json', ...headers },
      // a Buffer goes as its bytes, text as UTF-8, anything else as its JSON
      body: Buffer.isBuffer(body) ? body : Buffer.from(typeof body === 'string' ? body : JSON.stringify(body)),
    });
    return whole(response);
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
  const call: TestHandler['call'] = (method, url, { headers = {}, body = '' } = {}) => {
    const at = url.indexOf('?');
    return whole(
      handler.handle({
        method,
        path: at === -1 ? url : url.slice(0, at),
        query: at === -1 ? undefined : url.slice(at + 1),
        headers,
        body: Buffer.from(body),
      }),
    );
  };
  return {
    store,
    handler,
    post,
    call,
    track,
    users,
    user: (externalId) => users({ external_ids: [externalId] })[0],
    close: () => store.close(),
  };
}
