// A --db file another program holds a write lock on (an open transaction of its own): a request that
// must write is answered 500 saying so, naming the file, and nothing of it is applied; reads go on,
// and so do writes once the lock is let go.
import Database from 'better-sqlite3';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { postJson } from '../helpers/cli.js';
import { useServers } from '../helpers/servers.js';

const servers = useServers();

it('answers a write 500 naming the file and its lock, and applies it once the lock is gone', async () => {
  const db = join(servers.tmp.dir, 'held.sqlite');
  const emu = await servers.emulator({ db });
  expect((await postJson(`${emu.url}/users/track`, 'k', { attributes: [{ external_id: 'a', plan: 'free' }] })).status).toBe(201);

  const other = new Database(db);
  try {
    other.exec('BEGIN EXCLUSIVE');
    const refused = await postJson(`${emu.url}/users/track`, 'k', { attributes: [{ external_id: 'a', plan: 'pro' }] });
    expect(refused.status).toBe(500);
    const message = `the emulator cannot apply the request: the database ${db} is locked by another program (SQLITE_BUSY: database is locked)`;
    expect(refused.body).toEqual({ message, errors: [message] });
    // the log says the same
    expect(emu.requests({ limit: 1 })[0]).toMatchObject({ status: 500, message });
    // reads are answered beside the lock
    const read = await postJson(`${emu.url}/users/export/ids`, 'k', { external_ids: ['a'] });
    expect(read.body.users[0].custom_attributes).toEqual({ plan: 'free' });
  } finally {
    other.exec('ROLLBACK');
    other.close();
  }
  expect((await postJson(`${emu.url}/users/track`, 'k', { attributes: [{ external_id: 'a', plan: 'pro' }] })).status).toBe(201);
  const after = await postJson(`${emu.url}/users/export/ids`, 'k', { external_ids: ['a'] });
  expect(after.body.users[0].custom_attributes).toEqual({ plan: 'pro' });
});
