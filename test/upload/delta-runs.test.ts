// The delta state across runs, through the real CLI against `track emulate` on port 0: one run at a
// time per state file, rows possibly duplicated counted and settled across kills, a user's later row
// in a run, the re-run guard after a --delta run, and state files that are damaged, empty or of an
// earlier format.
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, linkSync, openSync, readFileSync, readdirSync, realpathSync, statSync, unlinkSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { readJournal, rowsInDoubt } from '../../src/records/journal.js';
import { valueHash } from '../../src/records/state-record.js';
import { rowDigest } from '../../src/records/state-rows.js';
import { BIN, postJson, runCliAsync, spawnEmulator, type RunningEmulator } from '../helpers/cli.js';
import { useServers } from '../helpers/servers.js';
import { isRoot, withSmallDisk } from '../helpers/small-disk.js';

const { tmp, faultServer } = useServers();
const emulators: RunningEmulator[] = [];
afterEach(async () => {
  for (const emu of emulators.splice(0)) {
    emu.proc.kill('SIGKILL');
    await emu.exited;
  }
});

/** `track emulate` on port 0, in memory, taking the key `k`. */
async function emulate(...args: string[]): Promise<RunningEmulator> {
  const emu = await spawnEmulator(['--db', ':memory:', '--api-key', 'k', '--quiet', ...args]);
  emulators.push(emu);
  return emu;
}

const write = (name: string, text: string): string => {
  const path = join(tmp.dir, name);
  writeFileSync(path, text);
  return path;
};
/** A state row of the one attribute `plan` (name id 1) holding `value`. */
const planRow = (value: string): Buffer => {
  const [h1, h2] = valueHash(value);
  const attrs = Buffer.alloc(12);
  attrs.writeUInt32LE(1, 0);
  attrs.writeInt32LE(h1, 4);
  attrs.writeInt32LE(h2, 8);
  return attrs;
};
const csv = (name: string, header: string, rows: Array<Array<string | number>>): string => write(name, `${header}\n${rows.map((r) => r.join(',')).join('\n')}\n`);
const up = (args: string[]) => runCliAsync(['upload', ...args, '--api-key', 'k'], { cwd: tmp.dir });
const json = async (args: string[]) => {
  const r = await up([...args, '--json']);
  expect([0, 1], r.stderr).toContain(r.status);
  return JSON.parse(r.stdout);
};
/** A run of `track upload` in the background. */
function startUpload(args: string[]): { proc: ChildProcess; exited: Promise<number | null> } {
  const proc = spawn(process.execPath, [BIN, 'upload', ...args, '--api-key', 'k', '--quiet'], { cwd: tmp.dir, stdio: 'ignore' });
  return { proc, exited: new Promise((resolve) => proc.on('exit', (code) => resolve(code))) };
}
const until = async (condition: () => boolean | Promise<boolean>, what: string): Promise<void> => {
  for (let i = 0; i < 2000; i += 1) {
    if (await condition()) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`waited too long for ${what}`);
};
/** How many requests the emulator's log holds. */
const requestsSeen = async (emu: RunningEmulator): Promise<number> => ((await (await fetch(`${emu.url}/_track/requests?limit=100000`)).json()) as { requests: unknown[] }).requests.length;
/** The users the emulator exports (50 a request, its limit). */
async function exported(emu: RunningEmulator, ids: string[]) {
  const users: Array<{ external_id: string; custom_attributes?: Record<string, unknown>; custom_events?: Array<{ name: string; count: number }> }> = [];
  for (let at = 0; at < ids.length; at += 50) {
    const body = { external_ids: ids.slice(at, at + 50), fields_to_export: ['external_id', 'custom_attributes', 'custom_events'] };
    users.push(...(await postJson(`${emu.url}/users/export/ids`, 'k', body)).body.users);
  }
  return users;
}
const journalOf = (prefix: string): string => join(tmp.dir, readdirSync(tmp.dir).find((name) => name.startsWith(`${prefix}.`) && name.endsWith('.journal'))!);
const users = (n: number, plan = 'free') => Array.from({ length: n }, (_, i) => [`u${i}`, plan, `u${i}@example.com`]);

describe('one run per state file', () => {
  it('holds the state file for the whole run: a second run on it is refused at once, exit 2, naming the file and the other run; a lock left by a killed run is taken over', async () => {
    const emu = await emulate('--latency', '20-40');
    const file = csv('users.csv', 'external_id,plan,email', users(4000));
    const other = csv('other.csv', 'external_id,plan,email', users(10, 'pro'));
    const lock = `${realpathSync(tmp.dir)}/track-state.sqlite.lock`;
    // (paced to 8 s at least, so that it still runs while two more commands start on a busy machine)
    const first = startUpload([file, '--url', emu.url, '--delta', '--rate', '10']);
    await until(() => existsSync(lock), 'the first run to take the state file');

    const second = await up([other, '--url', emu.url, '--delta']);
    expect(first.proc.exitCode).toBeNull();
    expect(second.status).toBe(2);
    expect(second.stderr).toContain(`--state ${realpathSync(tmp.dir)}/track-state.sqlite is in use by another run: pid ${first.proc.pid}, started`);
    expect(second.stderr).toMatch(/One run at a time on a state file: wait for that one to end, or give this run another --state/);
    // forgetting a target writes the file too: refused meanwhile
    const forget = await runCliAsync(['state', '--forget', emu.url], { cwd: tmp.dir });
    expect(forget.status).toBe(2);
    expect(forget.stderr).toMatch(/is in use by another run/);
    // which it is about: another state file is no way on for it
    expect(forget.stderr).toMatch(/One run at a time on a state file: wait for that one to end\.$/m);
    // refused before it read or sent anything: no journal, and the first run goes on to the end
    expect(readdirSync(tmp.dir).filter((name) => name.startsWith('other.') && name !== 'other.csv')).toEqual([]);
    expect(await first.exited).toBe(0);
    expect(existsSync(lock)).toBe(false);
    expect(await json([other, '--url', emu.url, '--delta'])).toMatchObject({ requests: 1 });

    // a run killed leaves its lock behind; its process is gone, so the next run takes it over
    const plans = csv('users.csv', 'external_id,plan,email', users(4000, 'team'));
    const killed = startUpload([plans, '--url', emu.url, '--delta']);
    await until(async () => (await requestsSeen(emu)) > 85, 'the killed run to send');
    killed.proc.kill('SIGKILL');
    await killed.exited;
    expect(existsSync(lock)).toBe(true);
    await json([plans, '--url', emu.url, '--delta', '--resume']);
    expect((await exported(emu, ['u0', 'u3999'])).map((u) => u.custom_attributes?.plan)).toEqual(['team', 'team']);
    expect(existsSync(lock)).toBe(false);
  }, 120_000);

  it('refuses a state file of two names (a hard link), whose other name would take a lock of its own: exit 2, nothing sent, under either name', async () => {
    const emu = await emulate();
    const file = csv('users.csv', 'external_id,plan,email', users(10));
    await json([file, '--url', emu.url, '--delta', '--state', 'state.sqlite']);
    linkSync(join(tmp.dir, 'state.sqlite'), join(tmp.dir, 'other-name.sqlite'));
    const sent = await requestsSeen(emu);
    for (const name of ['other-name.sqlite', 'state.sqlite']) {
      const r = await up([file, '--url', emu.url, '--delta', '--state', name, '--resume-or-start']);
      expect(r.status, r.stderr).toBe(2);
      expect(r.stderr).toContain(`${realpathSync(tmp.dir)}/${name} has 2 names (hard links), and the lock that keeps a second run off the state file is kept beside one of them only`);
      expect(r.stderr).toContain(`copy it to a file of its own (cp ${realpathSync(tmp.dir)}/${name} NEW)`);
    }
    expect(await requestsSeen(emu)).toBe(sent);
    // one name again: the state is used, and knows the users
    unlinkSync(join(tmp.dir, 'other-name.sqlite'));
    expect(await json([file, '--url', emu.url, '--delta', '--state', 'state.sqlite', '--resume-or-start'])).toMatchObject({ requests: 0 });
  }, 60_000);
});

describe('rows possibly duplicated, across kills', () => {
  const events = (n: number) =>
    write('events.ndjson', `${Array.from({ length: n }, (_, i) => JSON.stringify({ external_id: `u${i % 300}`, name: 'seen', time: new Date(Date.UTC(2024, 0, 1) + i * 1000).toISOString() })).join('\n')}\n`);
  const stored = async (emu: RunningEmulator): Promise<number> =>
    (await exported(emu, Array.from({ length: 300 }, (_, i) => `u${i}`))).reduce((n, u) => n + (u.custom_events ?? []).reduce((m, e) => m + e.count, 0), 0);

  it('--restart after kill -9 counts the rows the killed run left in doubt that it sends again: every event stored twice is among them', async () => {
    const emu = await emulate('--latency', '30-60');
    const file = events(6000);
    const killed = startUpload([file, '--url', emu.url, '--dedupe-events']);
    await until(async () => (await requestsSeen(emu)) > 20, 'the killed run to send');
    killed.proc.kill('SIGKILL');
    await killed.exited;
    const journal = await readJournal(journalOf('events'));
    const inDoubt = journal.files.reduce((n, f) => n + rowsInDoubt(f).size, 0);
    expect(inDoubt).toBeGreaterThan(0);

    const restart = await json([file, '--url', emu.url, '--dedupe-events', '--restart']);
    const twice = (await stored(emu)) - 6000;
    expect(restart.rowsPossiblyDuplicated).toBeGreaterThan(0);
    expect(restart.rowsPossiblyDuplicated).toBeLessThanOrEqual(inDoubt);
    expect(twice).toBeLessThanOrEqual(restart.rowsPossiblyDuplicated);
  }, 120_000);

  it('a --dedupe-events --resume settles the rows it leaves out because the state knows them, so the next --dedupe-events run goes (and sends nothing)', async () => {
    // the rows acknowledged just before the kill, learned by the state and not yet settled in the
    // journal, are what the resumed run leaves out: tried until a kill leaves some
    for (let attempt = 0; ; attempt += 1) {
      const emu = await emulate('--latency', '5-15');
      const file = events(6000);
      const own = ['--dedupe-events', '--state', `s${attempt}.sqlite`, '--journal', `j${attempt}.journal`];
      const killed = startUpload([file, '--url', emu.url, ...own]);
      await until(async () => (await requestsSeen(emu)) > 30 + attempt * 10, 'the killed run to send');
      killed.proc.kill('SIGKILL');
      await killed.exited;
      const resumed = await json([file, '--url', emu.url, ...own, '--resume']);
      if (resumed.unchanged === 0 && attempt < 4) continue;
      expect(resumed.unchanged).toBeGreaterThan(0);
      const journal = await readJournal(join(tmp.dir, `j${attempt}.journal`));
      expect(journal.files.reduce((n, f) => n + rowsInDoubt(f).size, 0)).toBe(0);
      expect(journal.end?.complete).toBe(true);
      const again = await json([file, '--url', emu.url, ...own]);
      expect(again).toMatchObject({ requests: 0, unchanged: 6000 });
      expect(await stored(emu)).toBeGreaterThanOrEqual(6000);
      return;
    }
  }, 240_000);
});

describe('a user named again in one --delta run', () => {
  it('sends a later row only what differs from what the run sends of the user, and the server ends with the last values', async () => {
    const emu = await emulate();
    const header = 'external_id,plan,company,seats';
    await json([csv('crm.csv', header, [['E-1', 'free', 'Acme', 3], ['E-2', 'free', 'Acme', 5]]), '--url', emu.url, '--delta']);
    const rows = [
      ['E-1', 'free', 'Acme', 3],
      ['E-2', 'team', 'Acme', 5],
      ['E-2', 'team', 'Globex', 5],
      ['E-3', 'pro', 'Initech', 1],
      ['E-2', 'team', 'Globex', 5],
      ['E-3', 'pro', 'Initech', 2],
    ];
    const out = join(tmp.dir, 'sent.ndjson');
    const run = await json([csv('crm.csv', header, rows), '--url', emu.url, '--delta', '--out', out]);
    const sent = readFileSync(out, 'utf8').trim().split('\n').flatMap((line) => JSON.parse(line).attributes);
    expect(sent).toEqual([
      { external_id: 'E-2', plan: 'team' },
      { external_id: 'E-2', company: 'Globex' },
      { external_id: 'E-3', plan: 'pro', company: 'Initech', seats: 1 },
      { external_id: 'E-3', seats: 2 },
    ]);
    expect(run).toMatchObject({ unchanged: 2, dataPoints: { sent: 6, avoided: 12 } });
    expect((await exported(emu, ['E-2', 'E-3'])).map((u) => u.custom_attributes)).toEqual([
      { plan: 'team', company: 'Globex', seats: 5 },
      { plan: 'pro', company: 'Initech', seats: 2 },
    ]);
    // the state learned what the server holds: the users' last rows are left to send nothing
    const last = csv('last.csv', header, [['E-1', 'free', 'Acme', 3], ['E-2', 'team', 'Globex', 5], ['E-3', 'pro', 'Initech', 2]]);
    expect(await json([last, '--url', emu.url, '--delta'])).toMatchObject({ requests: 0, unchanged: 3 });
  }, 60_000);

  it('says of a file whose rows set a user otherwise than an earlier row of theirs that each run sends them, an unchanged re-upload too', async () => {
    const emu = await emulate();
    const file = csv('dup.csv', 'external_id,first_name,plan', [['d-1', 'Ann', 'pro'], ['d-2', 'Bob', 'free'], ['d-1', 'Ann', 'team'], ['d-2', 'Bob', 'free']]);
    const note = /dup\.csv: 1 row sets an attribute of a user to another value than an earlier row of the same user this run sent: --delta sends a user's rows that differ so on every run/;
    const first = await json([file, '--url', emu.url, '--delta']);
    expect(first.notes).toEqual([expect.stringMatching(note)]);
    for (let run = 0; run < 2; run += 1) {
      const out = join(tmp.dir, `again-${run}.ndjson`);
      const again = await json([file, '--url', emu.url, '--delta', '--out', out]);
      const sent = readFileSync(out, 'utf8').trim().split('\n').flatMap((line) => JSON.parse(line).attributes);
      expect(sent).toEqual([
        { external_id: 'd-1', plan: 'pro' },
        { external_id: 'd-1', plan: 'team' },
      ]);
      expect(again.notes.filter((line: string) => note.test(line))).toHaveLength(1);
    }
    expect((await exported(emu, ['d-1'])).map((u) => u.custom_attributes)).toEqual([{ plan: 'team' }]);
    // a user named again with the same values is sent once, and told of by no note
    const same = csv('same.csv', 'external_id,first_name,plan', [['d-1', 'Ann', 'team'], ['d-2', 'Bob', 'free'], ['d-1', 'Ann', 'team']]);
    const once = await json([same, '--url', emu.url, '--delta']);
    expect(once).toMatchObject({ requests: 0 });
    expect(once.notes.filter((line: string) => /sets? an attribute of a user/.test(line))).toEqual([]);
  }, 60_000);

  it('never learns from a later row what the server refused of an earlier one: the next run sends it again', async () => {
    const faults = await faultServer();
    const file = csv('crm.csv', 'external_id,plan,company', [['E-2', 'team', 'Acme'], ['E-2', 'team', 'Globex']]);
    // the first E-2 item is refused by a minor error; the second, cut to its company, is accepted
    faults.script(() => ({ kind: 'minor', errors: [{ type: 'refused for the test', input_array: 'attributes', index: 0 }] }));
    await json([file, '--url', faults.url, '--delta']);
    expect(faults.received[0].body?.attributes).toEqual([{ external_id: 'E-2', plan: 'team', company: 'Acme' }, { external_id: 'E-2', company: 'Globex' }]);
    faults.script(() => undefined);
    await json([csv('again.csv', 'external_id,plan,company', [['E-2', 'team', 'Globex']]), '--url', faults.url, '--delta']);
    expect(faults.received[1].body?.attributes).toEqual([{ external_id: 'E-2', plan: 'team' }]);
  }, 60_000);
});

describe('a row that sets nothing', () => {
  it('is sent until the target accepts it, then left out by --delta (with or without --empty-as-null); one the service may skip is sent every time', async () => {
    const emu = await emulate();
    const file = csv('empty.csv', 'external_id,company', [['d9', ''], ['d10', '']]);
    const skippable = write('skippable.ndjson', '{"external_id":"s1","_update_existing_only":true}\n');
    for (const extra of [[], ['--empty-as-null']]) {
      const args = [file, skippable, '--url', emu.url, '--delta', '--state', join(tmp.dir, `empty-${extra.length}.sqlite`), ...extra];
      expect(await json([...args, '--journal', join(tmp.dir, `empty-${extra.length}-1.journal`)])).toMatchObject({ requests: 1, dataPoints: { sent: 0 } });
      // the users exist now: the same rows change nothing; the skippable one may not have made its user
      const out = join(tmp.dir, `empty-${extra.length}.ndjson`);
      expect(await json([...args, '--out', out, '--journal', join(tmp.dir, `empty-${extra.length}-2.journal`)])).toMatchObject({ requests: 1, unchanged: 2 });
      expect(readFileSync(out, 'utf8').trim().split('\n').flatMap((line) => JSON.parse(line).attributes)).toEqual([{ external_id: 's1', _update_existing_only: true }]);
    }
  }, 60_000);
});

describe('the re-run guard after a --delta run', () => {
  it('counts unchanged rows as settled, says the files hold attributes only, suggests --delta again, and a resume skips as delivered only what was', async () => {
    const emu = await emulate();
    const rows = users(1000).map((row, i) => (i % 250 === 7 ? [row[0], row[1], 'not-an-email'] : row));
    const file = csv('users.csv', 'external_id,plan,email', rows);
    expect(await json([file, '--url', emu.url, '--delta'])).toMatchObject({ rejected: 4, items: { attributes: 996 } });
    expect(await json([file, '--url', emu.url, '--delta'])).toMatchObject({ rejected: 4, unchanged: 996, requests: 0 });

    const plain = await up([file, '--url', emu.url]);
    expect(plain.status).toBe(2);
    expect(plain.stderr).toContain('completed on');
    expect(plain.stderr).toContain('(1,000 of 1,000 rows settled)');
    expect(plain.stderr).toMatch(/It was sent with --delta, and the files hold attributes only: give --delta again\nto send only what changed since/);
    expect(plain.stderr).not.toMatch(/events and purchases/);

    const resumed = await up([file, '--url', emu.url, '--resume']);
    // the rows the first run rejected still wait in its rejects file: exit 1, as that run's
    expect(resumed.status).toBe(1);
    expect(resumed.stdout).toMatch(/skipped {5}996 rows already delivered, and 4 rows an earlier run rejected \(in its rejects file\)/);
    // counted as the earlier run's, not as rejected before this one sent anything
    expect(resumed.stdout).toContain('\nrejected    4 rows by an earlier run, written to ');
    expect(await json([file, '--url', emu.url, '--resume'])).toMatchObject({ skipped: 1000, skippedRejected: 4, requests: 0 });

    // a file of events still warns of events stored twice
    const events = csv('events.csv', 'external_id,name,time', [['u1', 'login', '2024-03-07T10:00:00Z']]);
    await json([events, '--url', emu.url, '--delta']);
    expect((await up([events, '--url', emu.url])).stderr).toMatch(/events and purchases would be stored twice/);
  }, 90_000);
});

describe('state files that cannot be used', () => {
  it('refuses a damaged, a foreign or an empty state file before anything is sent, exit 2, naming it and what to do', async () => {
    const emu = await emulate();
    const file = csv('users.csv', 'external_id,plan,email', users(3000));
    await json([file, '--url', emu.url, '--delta', '--state', 'good.sqlite']);
    const changed = csv('changed.csv', 'external_id,plan,email', users(3000, 'pro'));
    const sentBefore = await requestsSeen(emu);

    // a page in the middle of a real state file overwritten
    const damaged = join(tmp.dir, 'damaged.sqlite');
    writeFileSync(damaged, readFileSync(join(tmp.dir, 'good.sqlite')));
    const fd = openSync(damaged, 'r+');
    writeSync(fd, Buffer.alloc(4096, 0xa5), 0, 4096, Math.floor(statSync(damaged).size / 2 / 4096) * 4096);
    closeSync(fd);
    const broken = await up([changed, '--url', emu.url, '--delta', '--state', damaged, '--restart']);
    expect(broken.status, broken.stderr).toBe(2);
    expect(broken.stderr).toMatch(/--state .*damaged\.sqlite is damaged \(SQLite: .*\): delete it to start a new state \(the next --delta run then sends every attribute/);
    // a copy put back may be older than the file's last run: --full sends what later runs changed
    expect(broken.stderr).toMatch(/or put back a copy of it \(a copy older than its last run: run the next upload with --delta --full/);

    // a file that is not a state file, and an empty one
    const garbage = write('garbage.sqlite', 'not a database at all\n'.repeat(300));
    const empty = write('empty.sqlite', '');
    const notState = await up([changed, '--url', emu.url, '--delta', '--state', garbage, '--restart']);
    expect(notState.status).toBe(2);
    // no SQLite database at all (an input given as --state by mistake): not a file to delete
    expect(notState.stderr).toMatch(/--state .*garbage\.sqlite is not a state file: it is no SQLite database \(SQLite: file is not a database\); give --state the file you meant/);
    expect(notState.stderr).not.toMatch(/delete it/);
    expect(readFileSync(garbage, 'utf8')).toBe('not a database at all\n'.repeat(300));
    const nothing = await up([changed, '--url', emu.url, '--delta', '--state', empty, '--restart']);
    expect(nothing.status).toBe(2);
    expect(nothing.stderr).toMatch(/--state .*empty\.sqlite is empty \(0 bytes\), not a state file: delete it to start a new state/);
    expect(statSync(empty).size).toBe(0);
    expect((await runCliAsync(['state', '--state', empty], { cwd: tmp.dir })).stderr).toMatch(/empty\.sqlite is empty \(0 bytes\)/);
    expect(await requestsSeen(emu)).toBe(sentBefore);
  }, 90_000);

  it('converts a state file of the earlier format at the first --delta upload, and still knows what it held', async () => {
    const emu = await emulate();
    const path = join(tmp.dir, 'format-2.sqlite');
    const target = `${emu.url}/users/track`;
    const db = new Database(path);
    db.exec(`CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
      CREATE TABLE targets (id INTEGER PRIMARY KEY, url TEXT NOT NULL UNIQUE, updated TEXT);
      CREATE TABLE names (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
      CREATE TABLE users (target INTEGER NOT NULL, user TEXT NOT NULL, digest INTEGER NOT NULL, attrs BLOB NOT NULL, PRIMARY KEY (target, user)) WITHOUT ROWID;
      CREATE TABLE activities (target INTEGER NOT NULL, hash BLOB NOT NULL, PRIMARY KEY (target, hash)) WITHOUT ROWID;`);
    db.prepare("INSERT INTO meta VALUES ('format', '2')").run();
    db.prepare('INSERT INTO targets (id, url) VALUES (1, ?)').run(target);
    db.prepare("INSERT INTO names (id, name) VALUES (1, 'plan')").run();
    const attrs = planRow('free');
    db.prepare("INSERT INTO users VALUES (1, 'e:u1', ?, ?)").run(rowDigest(0, attrs), attrs);
    db.close();
    const file = csv('users.csv', 'external_id,plan', [['u1', 'free'], ['u2', 'free']]);

    const dry = await runCliAsync(['validate', file, '--delta', '--state', path, '--url', emu.url], { cwd: tmp.dir });
    expect(dry.status).toBe(2);
    expect(dry.stderr).toMatch(/format-2\.sqlite was written by an earlier version of track: a --delta or --dedupe-events upload converts it first/);
    expect(await json([file, '--url', emu.url, '--delta', '--state', path])).toMatchObject({ unchanged: 1, items: { attributes: 1 } });
    expect(await json([file, '--url', emu.url, '--delta', '--state', path])).toMatchObject({ unchanged: 2, requests: 0 });
    expect(JSON.parse((await runCliAsync(['state', '--state', path, '--json'], { cwd: tmp.dir })).stdout).targets).toEqual([
      expect.objectContaining({ url: target, users: 2, attributes: 2 }),
    ]);
  }, 60_000);

  it('converts a state file of one user a row (format 3) into packs of users, and still knows each user of each target', async () => {
    const emu = await emulate();
    const path = join(tmp.dir, 'format-3.sqlite');
    const target = `${emu.url}/users/track`;
    const db = new Database(path);
    db.exec(`CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
      CREATE TABLE targets (id INTEGER PRIMARY KEY, url TEXT NOT NULL UNIQUE, updated TEXT, users INTEGER NOT NULL DEFAULT 0, fresh INTEGER NOT NULL DEFAULT 1);
      CREATE TABLE names (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
      CREATE TABLE users (id INTEGER PRIMARY KEY, target INTEGER NOT NULL, user TEXT NOT NULL, attrs BLOB NOT NULL);
      CREATE TABLE user_index (target INTEGER NOT NULL, part INTEGER NOT NULL, slots BLOB NOT NULL, PRIMARY KEY (target, part)) WITHOUT ROWID;
      CREATE TABLE activities (target INTEGER NOT NULL, hash BLOB NOT NULL, PRIMARY KEY (target, hash)) WITHOUT ROWID;`);
    db.prepare("INSERT INTO meta VALUES ('format', '3')").run();
    db.prepare('INSERT INTO targets (id, url, users, fresh) VALUES (1, ?, 40, 0), (2, ?, 1, 0)').run(target, 'http://elsewhere/users/track');
    db.prepare("INSERT INTO names (id, name) VALUES (1, 'plan')").run();
    const attrs = planRow('free');
    // the two targets' rows interleaved, as runs against each in turn leave them
    const row = db.prepare('INSERT INTO users (target, user, attrs) VALUES (?, ?, ?)');
    for (let i = 0; i < 40; i += 1) {
      row.run(1, `e:u${i}`, attrs);
      if (i === 20) row.run(2, 'e:u0', attrs);
    }
    db.close();
    const users = (n: number, changed?: number) =>
      csv(
        'users.csv',
        'external_id,plan',
        Array.from({ length: n }, (_, i) => [`u${i}`, i === changed ? 'pro' : 'free']),
      );

    expect(await json([users(41), '--url', emu.url, '--delta', '--state', path])).toMatchObject({ unchanged: 40, items: { attributes: 1 } });
    const listed = async () => JSON.parse((await runCliAsync(['state', '--state', path, '--json'], { cwd: tmp.dir })).stdout).targets;
    expect(await listed()).toEqual([
      expect.objectContaining({ url: target, users: 41, attributes: 41 }),
      expect.objectContaining({ url: 'http://elsewhere/users/track', users: 1, attributes: 1 }),
    ]);
    // a user of a converted pack changes: their pack is written again, the others in it kept
    expect(await json([users(41, 17), '--url', emu.url, '--delta', '--state', path])).toMatchObject({ unchanged: 40, items: { attributes: 1 } });
    expect(await json([users(41, 17), '--url', emu.url, '--delta', '--state', path])).toMatchObject({ unchanged: 41, requests: 0 });
    expect(await json([users(41), '--url', emu.url, '--delta', '--state', path])).toMatchObject({ unchanged: 40, items: { attributes: 1 } });
    expect(await listed()).toEqual([expect.objectContaining({ url: target, users: 41, attributes: 41 }), expect.objectContaining({ users: 1 })]);
  }, 60_000);
});

describe.skipIf(!isRoot)('a state file on a full disk', () => {
  it('stops with exit 3 naming the state, and leaves the journal not complete, though the server may have accepted every request', async () => {
    const emu = await emulate();
    const file = csv('users.csv', 'external_id,plan,email', users(3000));
    // room for a new file (of 16 KiB pages) and its log, not for what the run learns
    await withSmallDisk(tmp.dir, '500k', async (small) => {
      const r = await up([file, '--url', emu.url, '--delta', '--state', join(small, 's.sqlite'), '--quiet']);
      expect(r.status, r.stderr).toBe(3);
      expect(r.stderr).toContain('could not be written');
    });
    // it failed while the run sent, not as it opened the file
    expect(await requestsSeen(emu)).toBeGreaterThan(0);
    // the rows accepted while (or after) the state failed are in doubt: the journal must not say the
    // upload completed (it did say so when the state failed as it closed, every request accepted)
    const journal = await readJournal(journalOf('users'));
    expect(journal.end?.complete).not.toBe(true);
  }, 60_000);
});
