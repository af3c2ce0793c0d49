// `track upload --delta`, `--dedupe-events` and `--full` through the real CLI: what is sent (every
// body recorded), what the server ends up holding, the state learning only from acknowledgements,
// kill -9 in the middle of a delta run, the re-run guard, data points, the dry run's estimate, and
// `track state`. Over 350 lines: one promise (what --delta leaves out and learns) seen from each
// side, the cases sharing the servers and files set up here.
import Database from 'better-sqlite3';
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Emulator } from '../../src/index.js';
import { exportUser } from '../../src/emulator/export.js';
import { learnRecordWriter } from '../../src/records/learn-record-writer.js';
import { openStateFileWriter } from '../../src/records/state-file-writer.js';
import { listState } from '../../src/records/state.js';
import { activityHash } from '../../src/records/state-record.js';
import { BIN, runCliAsync as runCli } from '../helpers/cli.js';
import type { FaultServer } from '../helpers/fault-server.js';
import { useServers } from '../helpers/servers.js';

const { tmp, emulator, faultServer } = useServers();
let faults: FaultServer;

const HEADER = 'external_id,first_name,email,plan,score';
type Row = [string, string, string, string, number | string];
const user = (i: number): Row => [`u${i}`, `Name${i}`, `u${i}@example.com`, i % 3 === 0 ? 'pro' : 'free', i];
function writeCsv(name: string, rows: Row[], header = HEADER): string {
  const path = join(tmp.dir, name);
  writeFileSync(path, `${header}\n${rows.map((r) => r.join(',')).join('\n')}\n`);
  return path;
}
const users = (n: number): Row[] => Array.from({ length: n }, (_, i) => user(i));
const up = (args: string[]) => runCli(['upload', ...args, '--api-key', 'k'], { cwd: tmp.dir });
const json = async (args: string[]) => {
  const r = await up([...args, '--json']);
  expect([0, 1], r.stderr).toContain(r.status);
  return JSON.parse(r.stdout);
};
/** The attributes items the fault server got since `from`, keyed by external_id. */
const sentSince = (server: FaultServer, from: number) => server.received.slice(from).flatMap((r) => r.body?.attributes ?? []);
const custom = (emu: Emulator, id: string) => {
  const profile = emu.store.profileByExternalId(id);
  return profile === undefined ? undefined : exportUser(emu.store, profile);
};

describe('--delta', () => {
  it('sends everything once, then nothing for an unchanged file, then exactly the changed values', async () => {
    faults = await faultServer();
    const rows = users(300);
    const file = writeCsv('users.csv', rows);
    const first = await json([file, '--url', faults.url, '--delta']);
    expect(first).toMatchObject({ requests: 6, unchanged: 0, dataPoints: { sent: 1200, avoided: 0 } });
    expect(sentSince(faults, 0)).toHaveLength(300);

    // unchanged: no request at all, every data point avoided, and the re-run guard lets it go
    const before = faults.received.length;
    const again = await json([file, '--url', faults.url, '--delta']);
    expect(again).toMatchObject({ requests: 0, unchanged: 300, dataPoints: { sent: 0, avoided: 1200 } });
    expect(again.notes.join('\n')).toMatch(/sends only what the target has not acknowledged/);
    expect(faults.received.length).toBe(before);

    // three cells of three users, one of them set to null: only those go, each with its identifier
    rows[5][1] = 'Changed';
    rows[77][3] = 'pro';
    rows[150][4] = 'null';
    writeCsv('users.csv', rows);
    const changed = await json([file, '--url', faults.url, '--delta']);
    expect(changed).toMatchObject({ requests: 1, unchanged: 297, dataPoints: { sent: 3, avoided: 1197 } });
    expect(sentSince(faults, before)).toEqual([
      { external_id: 'u5', first_name: 'Changed' },
      { external_id: 'u77', plan: 'pro' },
      { external_id: 'u150', score: null },
    ]);
  }, 60_000);

  it('never learns an item the server refused, nor anything from a dry run, and keeps each target apart', async () => {
    faults = await faultServer();
    const file = writeCsv('users.csv', users(4));
    // the server refuses the second item by a minor error: the state must not hold it
    faults.script(() => ({ kind: 'minor', errors: [{ type: 'refused for the test', input_array: 'attributes', index: 1 }] }));
    const first = await json([file, '--url', faults.url, '--delta']);
    expect(first.dataPoints).toMatchObject({ sent: 12, avoided: 0 });
    faults.script(() => undefined);
    const from = faults.received.length;
    await json([file, '--url', faults.url, '--delta']);
    expect(sentSince(faults, from)).toEqual([{ external_id: 'u1', first_name: 'Name1', email: 'u1@example.com', plan: 'free', score: 1 }]);

    // a dry run reads the state and changes nothing: a state file it would create is not created
    const dry = join(tmp.dir, 'dry.sqlite');
    const preview = await runCli(['validate', file, '--delta', '--state', dry, '--url', faults.url, '--json'], { cwd: tmp.dir });
    expect(JSON.parse(preview.stdout)).toMatchObject({ requests: 1, unchanged: 0 });
    expect(existsSync(dry)).toBe(false);
    const state = join(tmp.dir, 'track-state.sqlite');
    const size = statSync(state).size;
    const seen = await runCli(['upload', '--dry-run', file, '--delta', '--url', faults.url, '--json'], { cwd: tmp.dir });
    expect(JSON.parse(seen.stdout)).toMatchObject({ requests: 0, unchanged: 4, estimate: { requests: 0, avoided: 16 } });
    expect(statSync(state).size).toBe(size);

    // a rehearsal against another target (an emulator) marks nothing as sent to this one, and back
    const emu = await emulator();
    expect(await json([file, '--url', emu.url, '--delta'])).toMatchObject({ requests: 1, unchanged: 0 });
    expect(await json([file, '--url', faults.url, '--delta'])).toMatchObject({ requests: 0, unchanged: 4 });
  }, 60_000);

  it('always sends an increment, and sends a later row of a user whole, so the server ends with the last value', async () => {
    const emu = await emulator();
    const header = 'external_id,plan,visits:inc';
    const file = writeCsv('users.csv', [['u1', 'free', 1] as unknown as Row, ['u2', 'free', 1] as unknown as Row], header);
    await json([file, '--url', emu.url, '--delta']);
    // increments would apply twice: the re-run guard still asks what to do
    expect((await up([file, '--url', emu.url, '--delta'])).stderr).toMatch(/--restart to start over/);
    const again = await json([file, '--url', emu.url, '--delta', '--restart']);
    // the plans are unchanged, the increments are sent again (they are not idempotent)
    expect(again).toMatchObject({ requests: 1, unchanged: 0, dataPoints: { sent: 2, avoided: 2 } });
    expect(custom(emu, 'u1')?.custom_attributes).toEqual({ plan: 'free', visits: 2 });

    // u1 goes pro, then back to free in the same file: the state holds free, and the server must end there
    const flip = writeCsv('flip.csv', [['u1', 'pro'], ['u1', 'free']] as unknown as Row[], 'external_id,plan');
    const flipped = await json([flip, '--url', emu.url, '--delta']);
    expect(flipped.items.attributes).toBe(2);
    expect(custom(emu, 'u1')?.custom_attributes).toMatchObject({ plan: 'free' });
  }, 60_000);

  it('--full sends every attribute and refreshes the state; track state shows it and forgets a target', async () => {
    faults = await faultServer();
    const file = writeCsv('users.csv', users(10));
    await json([file, '--url', faults.url, '--delta']);
    const full = await json([file, '--url', faults.url, '--delta', '--full']);
    expect(full).toMatchObject({ requests: 1, unchanged: 0, dataPoints: { sent: 40, avoided: 0 } });
    expect((await up([file, '--url', faults.url, '--full'])).stderr).toMatch(/--full goes with --delta/);

    const shown = await runCli(['state', '--json'], { cwd: tmp.dir });
    const target = `${faults.url}/users/track`;
    expect(JSON.parse(shown.stdout).targets).toEqual([expect.objectContaining({ url: target, users: 10, attributes: 40, activities: 0 })]);
    expect((await runCli(['state'], { cwd: tmp.dir })).stdout).toContain(`${target}\n  users         10, 40 attribute values`);
    expect(await runCli(['state', '--forget', faults.url], { cwd: tmp.dir })).toMatchObject({ status: 0 });
    expect(await json([file, '--url', faults.url, '--delta'])).toMatchObject({ requests: 1, unchanged: 0 });
    expect(await runCli(['state', '--forget', 'http://127.0.0.1:9'], { cwd: tmp.dir })).toMatchObject({ status: 1, stderr: expect.stringMatching(/holds nothing of/) });
  }, 60_000);

  it('after kill -9 in the middle of a delta run and --resume, the server holds the last values and the state agrees', async () => {
    for (const after of [150, 900]) {
      const emu = await emulator({ latency: '5-30' });
      const rows = users(2000);
      const file = writeCsv(`kill-${after}.csv`, rows);
      const state = join(tmp.dir, `state-${after}.sqlite`);
      await json([file, '--url', emu.url, '--delta', '--state', state]);
      // every user's plan and score change; the run is killed part way through
      for (const row of rows) {
        row[3] = row[3] === 'pro' ? 'free' : 'pro';
        row[4] = Number(row[4]) + 100_000;
      }
      writeCsv(`kill-${after}.csv`, rows);
      const child = spawn(process.execPath, [BIN, 'upload', file, '--url', emu.url, '--api-key', 'k', '--delta', '--state', state, '--quiet'], { cwd: tmp.dir });
      const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
      const changedSoFar = () => rows.filter((r) => (custom(emu, r[0])?.custom_attributes as { score: number }).score >= 100_000).length;
      while (changedSoFar() < after) await new Promise((r) => setTimeout(r, 5));
      child.kill('SIGKILL');
      await exited;
      expect(changedSoFar(), `killed after ${after}`).toBeLessThan(rows.length);

      await json([file, '--url', emu.url, '--delta', '--state', state, '--resume']);
      for (const row of rows) expect(custom(emu, row[0])?.custom_attributes, row[0]).toEqual({ plan: row[3], score: row[4] });
      // the state agrees with the server: nothing is left to send
      expect(await json([file, '--url', emu.url, '--delta', '--state', state])).toMatchObject({ requests: 0, unchanged: 2000 });
    }
  }, 180_000);

  it('settles a request-shaped line whose items are partly unchanged, so a resume finds nothing left', async () => {
    faults = await faultServer();
    const file = join(tmp.dir, 'lines.ndjson');
    const line = (plan: string) => JSON.stringify({ attributes: [{ external_id: 'u1', plan: 'pro' }, { external_id: 'u2', plan }] });
    writeFileSync(file, `${line('free')}\n`);
    await json([file, '--url', faults.url, '--delta']);
    writeFileSync(file, `${line('pro')}\n`);
    const from = faults.received.length;
    expect(await json([file, '--url', faults.url, '--delta'])).toMatchObject({ requests: 1, unchanged: 1 });
    expect(sentSince(faults, from)).toEqual([{ external_id: 'u2', plan: 'pro' }]);
    expect(await json([file, '--url', faults.url, '--delta', '--resume'])).toMatchObject({ skipped: 1, requests: 0 });
  }, 60_000);
});

describe('what the state must not learn', () => {
  it('keeps the last value of a user named twice in one request, of a merged object, and learns nothing of an alias that may not exist', async () => {
    const emu = await emulator();
    const twice = writeCsv('twice.csv', [['tw1', 'b'], ['tw1', 'a']] as unknown as Row[], 'external_id,plan');
    expect(await json([twice, '--url', emu.url, '--delta'])).toMatchObject({ requests: 1 });
    const back = writeCsv('back.csv', [['tw1', 'b']] as unknown as Row[], 'external_id,plan');
    expect(await json([back, '--url', emu.url, '--delta'])).toMatchObject({ requests: 1, unchanged: 0 });
    expect(custom(emu, 'tw1')?.custom_attributes).toEqual({ plan: 'b' });

    // an object merged into the profile's is forgotten: the profile holds more than was sent
    const file = join(tmp.dir, 'merge.ndjson');
    const run = async (item: object) => {
      writeFileSync(file, `${JSON.stringify(item)}\n`);
      return json([file, '--url', emu.url, '--delta', '--restart']);
    };
    await run({ external_id: 'm1', addr: { city: 'X', zip: '1' } });
    await run({ external_id: 'm1', addr: { city: 'X' }, _merge_objects: true });
    expect(await run({ external_id: 'm1', addr: { city: 'X' } })).toMatchObject({ requests: 1, unchanged: 0 });
    expect(custom(emu, 'm1')?.custom_attributes).toEqual({ addr: { city: 'X' } });

    // a user_alias item only updates a profile that exists: what it sends is not learned
    const alias = writeCsv('alias.csv', [['n1', 'crm', 'gold']] as unknown as Row[], 'user_alias.alias_name,user_alias.alias_label,plan');
    await json([alias, '--url', emu.url, '--delta']);
    expect(await json([alias, '--url', emu.url, '--delta'])).toMatchObject({ requests: 1, unchanged: 0 });
  }, 60_000);

  it('clears with --empty-as-null a value the server took from an item whose values it does not learn (an increment, a merge, an alias update)', async () => {
    const emu = await emulator();
    const emptied = writeCsv('emptied.csv', [['i1', '', 'x'], ['m1', '', 'x']] as unknown as Row[], 'external_id,visits,addr.city');
    const aliasEmptied = writeCsv('alias-emptied.csv', [['n1', 'crm', '']] as unknown as Row[], 'user_alias.alias_name,user_alias.alias_label,plan');
    // i1 is new to the state and gets a value from an increment; m1 is known, and an object merged into its address
    await json([writeCsv('seed.csv', [['m1', 'x']] as unknown as Row[], 'external_id,addr.city'), '--url', emu.url, '--delta']);
    writeFileSync(join(tmp.dir, 'ops.ndjson'), `${JSON.stringify({ external_id: 'i1', visits: { inc: 5 } })}\n${JSON.stringify({ external_id: 'm1', visits: 2, addr: { zip: '1' }, _merge_objects: true })}\n`);
    await json([join(tmp.dir, 'ops.ndjson'), '--url', emu.url, '--delta']);
    expect(custom(emu, 'i1')?.custom_attributes).toEqual({ visits: 5 });
    expect(custom(emu, 'm1')?.custom_attributes).toEqual({ visits: 2, addr: { city: 'x', zip: '1' } });
    // the alias n1 names a profile; an update for existing profiles only (its default) sets its plan
    const alias = { alias_name: 'n1', alias_label: 'crm' };
    const aliased = () => exportUser(emu.store, emu.store.profileByAlias(alias)!).custom_attributes;
    writeFileSync(join(tmp.dir, 'alias.ndjson'), `${JSON.stringify({ user_alias: alias, _update_existing_only: false, since: 1 })}\n`);
    await json([join(tmp.dir, 'alias.ndjson'), '--url', emu.url]);
    await json([writeCsv('alias.csv', [['n1', 'crm', 'gold']] as unknown as Row[], 'user_alias.alias_name,user_alias.alias_label,plan'), '--url', emu.url, '--delta']);
    expect(aliased()).toEqual({ since: 1, plan: 'gold' });

    // the export empties them: the server holds values of each, and the nulls must go
    const cleared = await json([emptied, '--url', emu.url, '--delta', '--empty-as-null']);
    expect(cleared).toMatchObject({ requests: 1, unchanged: 0 });
    expect(custom(emu, 'i1')?.custom_attributes).toEqual({ addr: { city: 'x' } });
    expect(custom(emu, 'm1')?.custom_attributes).toEqual({ addr: { city: 'x' } });
    await json([aliasEmptied, '--url', emu.url, '--delta', '--empty-as-null']);
    expect(aliased()).toEqual({ since: 1 });
    // a null accepted leaves no value, whether the service applied the item or skipped it: learned, it is not sent again
    expect(await json([aliasEmptied, '--url', emu.url, '--delta', '--empty-as-null', '--restart'])).toMatchObject({ requests: 0, unchanged: 1 });
    // the state learned them cleared: the same export again costs nothing
    expect(await json([emptied, '--url', emu.url, '--delta', '--empty-as-null', '--restart'])).toMatchObject({ requests: 0, unchanged: 2 });
  }, 60_000);

  it('holds in doubt what a request whose outcome stays unknown set of users it did not know: an emptied cell clears it later', async () => {
    faults = await faultServer();
    const nulls = (from: number) => sentSince(faults!, from).filter((item) => item.company === null);
    // the server takes each request and drops the connection before it answers (applied, outcome unknown)
    faults.script(() => ({ kind: 'destroy', applied: true }));
    // n1 named twice in the request: one row in the state all the same
    const first = writeCsv('unsure.csv', [['n1', 'Acme'], ['n2', 'Beta'], ['n1', 'Acme2']] as unknown as Row[], 'external_id,company');
    const refused = await up([first, '--url', faults.url, '--delta', '--on-unknown', 'reject', '--json']);
    expect(refused.status, refused.stderr).toBe(1);
    expect(JSON.parse(refused.stdout).delivery).toMatchObject({ unknownOutcomes: 1, rowsInUnknownRequests: 3 });
    expect(listState(join(tmp.dir, 'track-state.sqlite'))).toMatchObject([{ users: 2 }]);
    const gaveUp = writeCsv('gave-up.csv', [['n3', 'Cargo']] as unknown as Row[], 'external_id,company');
    const stopped = await up([gaveUp, '--url', faults.url, '--delta', '--retries', '0']);
    expect(stopped.status).not.toBe(0);
    faults.script(() => undefined);
    // the next export empties their company: the nulls go, though no answer ever said the values were set
    const emptied = writeCsv('emptied-unsure.csv', [['n1', ''], ['n2', ''], ['n3', '']] as unknown as Row[], 'external_id,company');
    const from = faults.received.length;
    expect(await json([emptied, '--url', faults.url, '--delta', '--empty-as-null'])).toMatchObject({ requests: 1, unchanged: 0 });
    expect(nulls(from).map((item) => item.external_id)).toEqual(['n1', 'n2', 'n3']);
    // learned as cleared: the same export again sends nothing
    expect(await json([emptied, '--url', faults.url, '--delta', '--empty-as-null', '--restart'])).toMatchObject({ requests: 0, unchanged: 3 });
  }, 60_000);

  it('finds known users whose identifiers SQLite and JavaScript order differently (U+FF21 beside an emoji)', async () => {
    faults = await faultServer();
    const file = writeCsv('wide.csv', [['u\u{1F600}', 1], ['u\uFF21', 1], ['u1', 1]] as unknown as Row[], 'external_id,a');
    await json([file, '--url', faults.url, '--delta']);
    expect(await json([file, '--url', faults.url, '--delta'])).toMatchObject({ requests: 0, unchanged: 3 });
  }, 60_000);

  it('counts no avoided data point for a field that costs none, and a bad --state changes nothing', async () => {
    faults = await faultServer();
    const file = writeCsv('subs.csv', [['u1', 'opted_in', 'pro']] as unknown as Row[], 'external_id,email_subscribe,plan');
    await json([file, '--url', faults.url, '--delta']);
    expect(await json([file, '--url', faults.url, '--delta'])).toMatchObject({ unchanged: 1, dataPoints: { sent: 0, avoided: 1 } });

    const events = writeCsv('ev.csv', [['u1', 'login', '2024-03-07T10:00:00Z']] as unknown as Row[], 'external_id,name,time');
    await json([events, '--url', faults.url]);
    const journal = join(tmp.dir, readdirSync(tmp.dir).find((name) => name.startsWith('ev.') && name.endsWith('.journal'))!);
    const before = readFileSync(journal, 'utf8');
    writeFileSync(join(tmp.dir, 'junk.sqlite'), 'not a database\n'.repeat(200));
    const bad = await up([events, '--url', faults.url, '--dedupe-events', '--restart', '--state', join(tmp.dir, 'junk.sqlite')]);
    expect(bad.status).toBe(2);
    expect(bad.stderr).toMatch(/--state .*junk\.sqlite is not a state file/);
    expect(readFileSync(journal, 'utf8')).toBe(before);
    expect((await up([events, '--url', faults.url, '--state', 'x.sqlite'])).stderr).toMatch(/--state is the state of --delta and --dedupe-events/);
  }, 60_000);
});

describe('--dedupe-events', () => {
  it('stores each event once when a seeding script runs twice, and says what it avoided', async () => {
    const emu = await emulator();
    const file = join(tmp.dir, 'seed.ndjson');
    const lines = [
      { external_id: 'u1', name: 'signup', time: '2024-03-07T10:00:00Z', properties: { plan: 'pro', source: 'ad' } },
      { external_id: 'u1', name: 'login', time: '2024-03-07T11:00:00Z' },
      { external_id: 'u2', product_id: 'sku', currency: 'USD', price: 9.5, time: '2024-03-07T12:00:00Z' },
    ];
    writeFileSync(file, `${lines.map((l) => JSON.stringify(l)).join('\n')}\n`);
    const first = await json([file, '--url', emu.url, '--dedupe-events']);
    expect(first).toMatchObject({ requests: 1, unchanged: 0, dataPoints: { sent: 5, avoided: 0 } });
    const second = await json([file, '--url', emu.url, '--dedupe-events']);
    expect(second).toMatchObject({ requests: 0, unchanged: 3, dataPoints: { sent: 0, avoided: 5 } });
    expect(emu.store.counts()).toMatchObject({ events: 2, purchases: 1 });

    // the same event written another way (keys in another order, the time with milliseconds) is the same event
    writeFileSync(file, `${JSON.stringify({ time: '2024-03-07T10:00:00.000Z', properties: { source: 'ad', plan: 'pro' }, name: 'signup', external_id: 'u1' })}\n`);
    expect(await json([file, '--url', emu.url, '--dedupe-events'])).toMatchObject({ requests: 0, unchanged: 1 });
    expect(emu.store.counts()).toMatchObject({ events: 2 });

    // empty properties and none are one event, whichever way the export writes it
    writeFileSync(file, `${JSON.stringify({ external_id: 'u1', name: 'login', time: '2024-03-07T11:00:00Z', properties: {} })}\n`);
    expect(await json([file, '--url', emu.url, '--dedupe-events'])).toMatchObject({ requests: 0, unchanged: 1 });
    const empty = { external_id: 'u2', name: 'logout', time: '2024-03-07T13:00:00Z', properties: {} };
    writeFileSync(file, `${JSON.stringify(empty)}\n`);
    expect(await json([file, '--url', emu.url, '--dedupe-events'])).toMatchObject({ requests: 1, unchanged: 0 });
    writeFileSync(file, `${JSON.stringify({ ...empty, properties: undefined })}\n`);
    expect(await json([file, '--url', emu.url, '--dedupe-events'])).toMatchObject({ requests: 0, unchanged: 1 });
    expect(emu.store.counts()).toMatchObject({ events: 3 });
  }, 60_000);

  it('finds an event with empty properties that a state an earlier version wrote learned as written, and looks no further in a state of its own', async () => {
    const emu = await emulator();
    const event = { external_id: 'u1', name: 'signup', time: '2024-03-07T10:00:00Z', properties: {} };
    /** A state holding the event's hash as earlier versions made it (`{}` kept). */
    const stateOf = (name: string): string => {
      const path = join(tmp.dir, name);
      const writer = openStateFileWriter(path, `${emu.url}/users/track`);
      const records = learnRecordWriter();
      records.add(activityHash('events', event, 'e:u1', true), event);
      const learn = records.finish();
      let given = false;
      writer.accepted(() => (given ? undefined : ((given = true), { learn, rejected: () => false })));
      writer.close();
      return path;
    };
    const file = join(tmp.dir, 'before.ndjson');
    writeFileSync(file, `${JSON.stringify(event)}\n`);
    // as an earlier version left it: format 4, without the table of keys and the mark of this version's hashes
    const before = stateOf('before.sqlite');
    const db = new Database(before);
    db.exec("UPDATE meta SET value = '4' WHERE key = 'format'; DELETE FROM meta WHERE key = 'activity_hashes'; DROP TABLE target_keys");
    db.close();
    expect(await json([file, '--url', emu.url, '--dedupe-events', '--state', before])).toMatchObject({ requests: 0, unchanged: 1 });
    expect(emu.store.counts()).toMatchObject({ events: 0 });
    // a state this version made holds no such hash: the one planted there is not looked for
    expect(await json([file, '--url', emu.url, '--dedupe-events', '--state', stateOf('new.sqlite')])).toMatchObject({ requests: 1, unchanged: 0 });
    expect(emu.store.counts()).toMatchObject({ events: 1 });
  }, 60_000);

  it('lets a re-run go only when it can store nothing twice', async () => {
    const emu = await emulator();
    const refused = async (args: string[]) => {
      const again = await up(args);
      expect(again.status, again.stderr).toBe(2);
      expect(again.stderr).toMatch(/--resume/);
    };
    // events without --dedupe-events; or after a run that did not remember them
    const file = writeCsv('events.csv', [['u1', 'login', '2024-03-07T10:00:00Z']] as unknown as Row[], 'external_id,name,time');
    await json([file, '--url', emu.url, '--delta']);
    await refused([file, '--url', emu.url, '--delta']);
    await refused([file, '--url', emu.url, '--dedupe-events']);
    // increments, annotated or as a dotted column, even with --dedupe-events
    for (const header of ['external_id,visits:inc', 'external_id,visits.inc']) {
      const inc = writeCsv(`inc-${header.length}.csv`, [['u1', 1]] as unknown as Row[], header);
      await json([inc, '--url', emu.url, '--dedupe-events']);
      await refused([inc, '--url', emu.url, '--dedupe-events', '--delta']);
    }
    // an NDJSON file with an operation that adds, anywhere
    const nd = join(tmp.dir, 'ops.ndjson');
    writeFileSync(nd, `${JSON.stringify({ external_id: 'u1', tags: { add: ['x'] } })}\n`);
    await json([nd, '--url', emu.url, '--dedupe-events', '--kind', 'attributes']);
    await refused([nd, '--url', emu.url, '--dedupe-events', '--kind', 'attributes']);
    expect(custom(emu, 'u1')?.custom_attributes).toMatchObject({ visits: 2, tags: ['x'] });
  }, 60_000);
});

describe('the estimate of a dry run', () => {
  it('prints the requests, data points and the time at --rate and --hourly', async () => {
    const file = writeCsv('users.csv', users(120));
    const text = await runCli(['validate', file, '--max-total', '10', '--rate', '4', '--hourly', '10'], { cwd: tmp.dir });
    expect(text.stdout).toContain('data points 480 would be spent');
    // 12 requests at 10 an hour: one full hour, then 2 more at 4 a second
    expect(text.stdout).toContain('estimate    12 requests take at least 1h00m at 4 requests/s and 10 an hour');
    const summary = JSON.parse((await runCli(['validate', file, '--json'], { cwd: tmp.dir })).stdout);
    expect(summary.estimate).toMatchObject({ requests: 3, dataPoints: 480, avoided: 0, seconds: 0, rate: 1000 });
    expect(readFileSync(file, 'utf8')).toContain('u119');
  });
});
