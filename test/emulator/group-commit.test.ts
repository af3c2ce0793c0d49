// Requests committed together: when SQLite rolls the whole transaction back after a failed write (a
// full database), no request of the batch is applied, each is answered 500, and the failure is logged.
// A request whose handling throws is answered 500 with the reason, alone: the others stand.
import type Database from 'better-sqlite3';
import { afterEach, expect, it } from 'vitest';
import { createHandler, type EmulatorRequest } from '../../src/emulator/handler.js';
import { resolveOptions } from '../../src/emulator/options.js';
import { groupCommitter } from '../../src/emulator/group-commit.js';
import { Store } from '../../src/emulator/store.js';

const store = new Store(':memory:');
afterEach(() => store.close());

function request(tag: string, n: number): EmulatorRequest {
  const notes = Object.fromEntries(Array.from({ length: 20 }, (_, k) => [`note_${k}`, `${k}`.padEnd(250, 'x')]));
  const body = { attributes: Array.from({ length: n }, (_, i) => ({ external_id: `${tag}-${i}`, ...notes })) };
  return {
    method: 'POST',
    path: '/users/track',
    headers: { authorization: 'Bearer k', 'content-type': 'application/json' },
    body: Buffer.from(JSON.stringify(body)),
  };
}

it('applies nothing of a batch that SQLite rolled back, answers each request 500 and logs why', async () => {
  const lines: string[] = [];
  const log = (line: string): void => void lines.push(line);
  const handler = createHandler({ ...resolveOptions({ apiKeys: ['k'] }), store, log });
  const submit = groupCommitter(store, handler.handle, log);
  // the driver is the store's own business; a test may reach it to make the database "full"
  const db = (store as unknown as { db: Database.Database }).db;
  db.pragma(`max_page_count = ${(db.pragma('page_count', { simple: true }) as number) + 2}`);

  // submitted in one turn: one batch. The first fills the database and SQLite rolls the whole
  // transaction back; the second must not then be committed on its own.
  const [big, small] = await Promise.all([submit(request('big', 50)), submit(request('small', 1))]);
  expect(big.status).toBe(500);
  expect(small.status).toBe(500);
  expect(small.body).toEqual({ message: expect.stringContaining('cannot write its database'), errors: [expect.any(String)] });
  expect(store.profileByExternalId('big-0')).toBeUndefined();
  expect(store.profileByExternalId('small-0')).toBeUndefined();
  expect(lines.join('\n')).toMatch(/database or disk is full/);
  expect(lines.join('\n')).toMatch(/cannot write the database :memory:.*2 request\(s\) answered 500 and not applied/);

  db.pragma('max_page_count = 1073741823');
  expect((await submit(request('small', 1))).status).toBe(201);
  expect(store.profileByExternalId('small-0')).toBeDefined();
});

it('answers 500 with the reason only the request whose handling threw, and commits the others of its batch', async () => {
  const lines: string[] = [];
  const log = (line: string): void => void lines.push(line);
  const own = new Store(':memory:');
  const handler = createHandler({ ...resolveOptions({ apiKeys: ['k'] }), store: own, log });
  // a page that cannot be made (as a request log entry too deep to write out was)
  const handle = (r: EmulatorRequest) => {
    if (r.path === '/_track/broken') throw new RangeError('Maximum call stack size exceeded');
    if (r.path === '/_track/half') {
      // fails after it wrote: what it wrote is undone with it
      handler.handle(request('half', 1));
      throw new Error('failed after writing');
    }
    return handler.handle(r);
  };
  const submit = groupCommitter(own, handle, log);
  const broken: EmulatorRequest = { method: 'GET', path: '/_track/broken', headers: {}, body: Buffer.alloc(0) };
  // submitted in one turn: one batch
  const half: EmulatorRequest = { ...broken, path: '/_track/half' };
  const [before, failed, after, halfDone] = await Promise.all([submit(request('before', 1)), submit(broken), submit(request('after', 1)), submit(half)]);
  expect(halfDone).toMatchObject({ status: 500, body: { message: 'the emulator cannot answer GET /_track/half: failed after writing' } });
  expect(own.profileByExternalId('half-0')).toBeUndefined();
  expect(failed).toMatchObject({ status: 500, body: { message: 'the emulator cannot answer GET /_track/broken: Maximum call stack size exceeded' } });
  expect(before.status).toBe(201);
  expect(after.status).toBe(201);
  expect(own.profileByExternalId('before-0')).toBeDefined();
  expect(own.profileByExternalId('after-0')).toBeDefined();
  own.close();
  expect(lines).toEqual([
    'error: the emulator cannot answer GET /_track/broken: Maximum call stack size exceeded',
    'error: the emulator cannot answer GET /_track/half: failed after writing',
  ]);
});
