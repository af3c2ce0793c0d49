// A --db file another program writes to (`track cleanup` beside a running emulator, or any program with
// a transaction open): each waits for the other's write to end, up to 5 s; a write still locked out
// after that is answered 500 saying so, naming the file, and nothing of it is applied, while reads go on.
import Database from 'better-sqlite3';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { Store } from '../../src/emulator/store.js';
import { BIN, postJson, ROOT, spawnEmulator, type RunningEmulator } from '../helpers/cli.js';
import { useServers } from '../helpers/servers.js';

const servers = useServers();
let child: RunningEmulator | undefined;
afterEach(async () => {
  child?.proc.kill('SIGTERM');
  await child?.exited;
  child = undefined;
});

/** Holds the file's write lock from another connection for `ms`, as another program's transaction would. */
function holdWriteLock(db: string, ms: number): Promise<void> {
  const other = new Database(db);
  other.exec('BEGIN IMMEDIATE');
  return new Promise((resolve) =>
    setTimeout(() => {
      other.exec('ROLLBACK');
      other.close();
      resolve();
    }, ms),
  );
}

it('applies a request that comes while another program writes, once that write ends', async () => {
  const db = join(servers.tmp.dir, 'shared.sqlite');
  child = await spawnEmulator(['--db', db, '--api-key', 'k']);
  expect((await postJson(`${child.url}/users/track`, 'k', { attributes: [{ external_id: 'a', plan: 'free' }] })).status).toBe(201);
  const released = holdWriteLock(db, 300);
  const [write, read] = await Promise.all([
    postJson(`${child.url}/users/track`, 'k', { attributes: [{ external_id: 'a', plan: 'pro' }] }),
    postJson(`${child.url}/users/export/ids`, 'k', { external_ids: ['a'] }),
  ]);
  await released;
  expect(write).toMatchObject({ status: 201, body: { message: 'success' } });
  expect(read.status).toBe(201);
  const after = await postJson(`${child.url}/users/export/ids`, 'k', { external_ids: ['a'] });
  expect(after.body.users[0].custom_attributes).toEqual({ plan: 'pro' });
});

it('lets track cleanup delete while another program writes, once that write ends', async () => {
  const db = join(servers.tmp.dir, 'cleanup.sqlite');
  const store = new Store(db);
  store.transaction(() => {
    for (let i = 0; i < 3; i += 1) store.createProfile({ pushImport: true });
  });
  store.close();
  // held past the time a process takes to start and open the file
  const released = holdWriteLock(db, 2000);
  const cleanup = spawn(process.execPath, [BIN, 'cleanup', '--db', db], { cwd: ROOT });
  let out = '';
  cleanup.stdout.on('data', (d: Buffer) => (out += d.toString()));
  cleanup.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const code = await new Promise<number | null>((resolve) => cleanup.on('exit', resolve));
  await released;
  expect(out).toMatch(/^deleted 3 push-import profile/);
  expect(code).toBe(0);
});

it('stops track cleanup, exit 3, naming the file, when another program holds its lock for over 5 s', async () => {
  const db = join(servers.tmp.dir, 'held-cleanup.sqlite');
  const store = new Store(db);
  store.transaction(() => store.createProfile({ pushImport: true }));
  store.close();
  const released = holdWriteLock(db, 7000);
  const cleanup = spawn(process.execPath, [BIN, 'cleanup', '--db', db], { cwd: ROOT });
  let stderr = '';
  cleanup.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const code = await new Promise<number | null>((resolve) => cleanup.on('exit', resolve));
  await released;
  expect(stderr).toBe(
    `track: the database ${db} is locked by another program (SQLITE_BUSY: database is locked) for over 5 s: nothing was deleted; run it again once that program's write has ended\n`,
  );
  expect(code).toBe(3);
  const after = new Store(db);
  expect(after.pushImportCount()).toBe(1);
  after.close();
}, 30_000);

it('answers a write locked out for over 5 s 500, naming the file and its lock; reads go on', async () => {
  const db = join(servers.tmp.dir, 'held.sqlite');
  const emu = await servers.emulator({ db });
  expect((await postJson(`${emu.url}/users/track`, 'k', { attributes: [{ external_id: 'a', plan: 'free' }] })).status).toBe(201);

  const other = new Database(db);
  try {
    other.exec('BEGIN EXCLUSIVE');
    // this emulator runs in the test's own process: it waits its 5 s with the lock still held
    const refused = await postJson(`${emu.url}/users/track`, 'k', { attributes: [{ external_id: 'a', plan: 'pro' }] });
    expect(refused.status).toBe(500);
    const message = `the emulator cannot apply the request: the database ${db} is locked by another program (SQLITE_BUSY: database is locked)`;
    expect(refused.body).toEqual({ message, errors: [message] });
    expect(emu.requests({ limit: 1 })[0]).toMatchObject({ status: 500, message });
    const read = await postJson(`${emu.url}/users/export/ids`, 'k', { external_ids: ['a'] });
    expect(read.body.users[0].custom_attributes).toEqual({ plan: 'free' });
  } finally {
    other.exec('ROLLBACK');
    other.close();
  }
  expect((await postJson(`${emu.url}/users/track`, 'k', { attributes: [{ external_id: 'a', plan: 'pro' }] })).status).toBe(201);
}, 30_000);
