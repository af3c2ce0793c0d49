// --delta with --empty-as-null (an emptied cell clears a value only where the state holds one) and
// the per-attribute delta report, through the real CLI against `track emulate` on port 0.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { inDoubtRecord, LEARN_NONE, readLearnRecord } from '../../src/records/learn-record.js';
import { learnRecordWriter, userMark } from '../../src/records/learn-record-writer.js';
import { KEY_HASH, keyHashInto, valueHash } from '../../src/records/state-record.js';
import { openStateFileWriter } from '../../src/records/state-file-writer.js';
import { openStateReader } from '../../src/records/state.js';
import { createDelta } from '../../src/upload/delta.js';
import { postJson, runCliAsync, spawnEmulator, type RunningEmulator } from '../helpers/cli.js';
import { useServers } from '../helpers/servers.js';

const { tmp } = useServers();
const emulators: RunningEmulator[] = [];
afterEach(async () => {
  for (const emu of emulators.splice(0)) {
    emu.proc.kill('SIGKILL');
    await emu.exited;
  }
});

async function emulate(): Promise<RunningEmulator> {
  const emu = await spawnEmulator(['--db', ':memory:', '--api-key', 'k', '--quiet']);
  emulators.push(emu);
  return emu;
}

const cli = (args: string[]) => runCliAsync(args, { cwd: tmp.dir, env: { NO_COLOR: '1', TRACK_URL: '', TRACK_API_KEY: '' } });
const csv = (name: string, lines: string[]): string => {
  writeFileSync(join(tmp.dir, name), `${lines.join('\n')}\n`);
  return name;
};
/** The attributes items a run wrote to --out, in order. */
const itemsOut = (name: string): Array<Record<string, unknown>> =>
  readFileSync(join(tmp.dir, name), 'utf8')
    .split('\n')
    .filter((line) => line !== '')
    .flatMap((line) => JSON.parse(line).attributes ?? []);
async function profiles(emu: RunningEmulator, ids: string[]): Promise<Record<string, Record<string, unknown>>> {
  const body = { external_ids: ids, fields_to_export: ['external_id', 'custom_attributes'] };
  const users = (await postJson(`${emu.url}/users/export/ids`, 'k', body)).body.users as Array<{ external_id: string; custom_attributes?: Record<string, unknown> }>;
  return Object.fromEntries(users.map((u) => [u.external_id, u.custom_attributes ?? {}]));
}

describe('--delta --empty-as-null', () => {
  it('sends the null of an emptied cell only where the state holds a value of that attribute for that user, and reports each attribute', async () => {
    const emu = await emulate();
    const flags = ['--delta', '--empty-as-null', '--url', emu.url];
    const up = (args: string[]) => cli(['upload', ...args, '--api-key', 'k']);
    const header = 'external_id,company,plan,city';
    // night 1: the state is empty, so an empty cell has nothing to clear and is not sent
    csv('night1.csv', [header, 'u1,Acme,pro,Paris', 'u2,,free,Lyon', 'u3,Beta,free,']);
    const first = await up(['night1.csv', ...flags, '--out', 'night1.ndjson', '--quiet']);
    expect(first.status, first.stderr).toBe(0);
    expect(itemsOut('night1.ndjson')).toEqual([
      { external_id: 'u1', company: 'Acme', plan: 'pro', city: 'Paris' },
      { external_id: 'u2', plan: 'free', city: 'Lyon' },
      { external_id: 'u3', company: 'Beta', plan: 'free' },
    ]);

    // night 2: u1's company emptied (held: cleared), u2's still empty and u4's new one empty (nothing
    // held: nothing sent), u6 named twice (the later row clears what the earlier one sends)
    csv('night2.csv', [header, 'u1,,pro,Paris', 'u2,,free,Lyon', 'u3,Beta,free,', 'u4,,new,Nice', 'u6,Zeta,pro,Oslo', 'u6,,pro,Oslo']);
    const columns = {
      company: { changed: 1, unchanged: 3, cleared: 2 },
      plan: { changed: 2, unchanged: 4, cleared: 0 },
      city: { changed: 2, unchanged: 4, cleared: 0 },
    };
    // what a run would send, read from the state without changing it
    const dry = await cli(['validate', 'night2.csv', ...flags, '--json']);
    expect(dry.status, dry.stderr).toBe(0);
    expect(JSON.parse(dry.stdout).deltaColumns).toEqual(columns);
    const second = await up(['night2.csv', ...flags, '--out', 'night2.ndjson']);
    expect(second.status, second.stderr).toBe(0);
    expect(itemsOut('night2.ndjson')).toEqual([
      { external_id: 'u1', company: null },
      { external_id: 'u4', plan: 'new', city: 'Nice' },
      { external_id: 'u6', company: 'Zeta', plan: 'pro', city: 'Oslo' },
      { external_id: 'u6', company: null },
    ]);
    // the compact table in the text summary, those that changed most first
    const table = second.stdout.split('\n').filter((line) => /^(columns| {12}\S)/.test(line));
    expect(table.map((line) => line.trim().split(/\s+/))).toEqual([
      ['columns', 'changed', 'unchanged', 'cleared'],
      ['company', '1', '3', '2'],
      ['city', '2', '4', '0'],
      ['plan', '2', '4', '0'],
    ]);
    const held = await profiles(emu, ['u1', 'u2', 'u3', 'u4', 'u6']);
    expect(held).toEqual({
      u1: { plan: 'pro', city: 'Paris' },
      u2: { plan: 'free', city: 'Lyon' },
      u3: { company: 'Beta', plan: 'free' },
      u4: { plan: 'new', city: 'Nice' },
      u6: { plan: 'pro', city: 'Oslo' },
    });

    // night 3, the same file: the state learned the clearings, so only u6, named twice with two
    // companies, is sent again (its last row left null, which its first row changes)
    const third = await up(['night2.csv', ...flags, '--json', '--out', 'night3.ndjson']);
    expect(third.status, third.stderr).toBe(0);
    expect(itemsOut('night3.ndjson')).toEqual([
      { external_id: 'u6', company: 'Zeta' },
      { external_id: 'u6', company: null },
    ]);
    expect(JSON.parse(third.stdout).deltaColumns.company).toEqual({ changed: 1, unchanged: 4, cleared: 1 });

    // --full sends every null, held or not, as a run without --delta does
    const full = await up(['night2.csv', ...flags, '--full', '--out', 'full.ndjson', '--quiet']);
    expect(full.status, full.stderr).toBe(0);
    expect(itemsOut('full.ndjson').find((item) => item.external_id === 'u2')).toEqual({ external_id: 'u2', company: null, plan: 'free', city: 'Lyon' });
  });

  it('clears a value a run stopped in flight may have set: the state holds it in doubt, not as absent', async () => {
    const emu = await emulate();
    const flags = ['--delta', '--empty-as-null', '--url', emu.url, '--api-key', 'k'];
    csv('a.csv', ['external_id,company', 'u1,Acme']);
    expect((await cli(['upload', 'a.csv', ...flags, '--quiet'])).status).toBe(0);
    // a run killed between posting u1's new company and its answer: the server holds it, and the
    // state is as that run's writer left it before the answer
    const writer = openStateFileWriter(join(tmp.dir, 'track-state.sqlite'), `${emu.url}/users/track`);
    const learn = learnRecordWriter();
    learn.add(userMark(true, -1), { external_id: 'u1', company: 'Beta' });
    writer.sending(learn.finish());
    writer.close();
    expect((await postJson(`${emu.url}/users/track`, 'k', { attributes: [{ external_id: 'u1', company: 'Beta' }] })).status).toBe(201);
    // the next night's export empties it: the null is sent, and the profile holds no company
    csv('b.csv', ['external_id,company', 'u1,']);
    const again = await cli(['upload', 'b.csv', ...flags, '--out', 'b.ndjson', '--quiet']);
    expect(again.status, again.stderr).toBe(0);
    expect(itemsOut('b.ndjson')).toEqual([{ external_id: 'u1', company: null }]);
    expect((await profiles(emu, ['u1'])).u1).toEqual({});
  });

  it('after track state --forget, says an emptied cell then clears nothing, and --delta --full clears what the server holds', async () => {
    const emu = await emulate();
    const flags = ['--delta', '--empty-as-null', '--url', emu.url, '--api-key', 'k', '--quiet'];
    csv('a.csv', ['external_id,company', 'u1,Acme']);
    expect((await cli(['upload', 'a.csv', ...flags])).status).toBe(0);
    const forget = await cli(['state', '--forget', emu.url]);
    expect(forget.status, forget.stderr).toBe(0);
    expect(forget.stdout).toMatch(/emptied cell .* clears nothing .* --delta --full/);
    // the state knows u1 no more: the export's emptied company is not sent, and the server keeps it
    csv('b.csv', ['external_id,company', 'u1,']);
    expect((await cli(['upload', 'b.csv', ...flags])).status).toBe(0);
    expect((await profiles(emu, ['u1'])).u1).toEqual({ company: 'Acme' });
    expect((await cli(['upload', 'b.csv', ...flags, '--full', '--restart'])).status).toBe(0);
    expect((await profiles(emu, ['u1'])).u1).toEqual({});
  });

  it('without --empty-as-null an empty cell is left out, and a cell reading null is compared as any value', async () => {
    const emu = await emulate();
    const flags = ['--delta', '--url', emu.url, '--api-key', 'k'];
    csv('a.csv', ['external_id,company', 'u1,Acme', 'u2,null']);
    expect((await cli(['upload', 'a.csv', ...flags, '--quiet'])).status).toBe(0);
    csv('b.csv', ['external_id,company', 'u1,', 'u2,null']);
    const again = JSON.parse((await cli(['upload', 'b.csv', ...flags, '--json'])).stdout);
    expect(again.requests).toBe(0);
    expect(again.deltaColumns).toEqual({ company: { changed: 0, unchanged: 1, cleared: 0 } });
    expect((await profiles(emu, ['u1'])).u1).toEqual({ company: 'Acme' });
  });
});

describe('the per-attribute delta report', () => {
  it('shows the twelve attributes that changed most in the text summary, and every one in --json; a run without --delta has none', async () => {
    const emu = await emulate();
    const names = Array.from({ length: 15 }, (_, i) => `a${String(i).padStart(2, '0')}`);
    // on night 2, u1 changes a05..a14, u2 a10..a14, u3 nothing
    const row = (id: number, night: number) => [`u${id}`, ...names.map((_, i) => (i < id * 5 || night === 1 ? `v${i}` : `w${i}`))].join(',');
    csv('n1.csv', [`external_id,${names.join(',')}`, row(1, 1), row(2, 1), row(3, 1)]);
    expect((await cli(['upload', 'n1.csv', '--delta', '--url', emu.url, '--api-key', 'k', '--quiet'])).status).toBe(0);
    csv('n2.csv', [`external_id,${names.join(',')}`, row(1, 2), row(2, 2), row(3, 2)]);
    const text = await cli(['validate', 'n2.csv', '--delta', '--url', emu.url]);
    expect(text.status, text.stderr).toBe(0);
    const lines = text.stdout.split('\n');
    const at = lines.findIndex((line) => line.startsWith('columns'));
    const shown = lines.slice(at + 1, at + 13).map((line) => line.trim().split(/\s+/));
    // most changed first, then by name
    expect(shown.map(([name, changed, unchanged]) => `${name} ${changed} ${unchanged}`)).toEqual([
      ...['a10', 'a11', 'a12', 'a13', 'a14'].map((n) => `${n} 2 1`),
      ...['a05', 'a06', 'a07', 'a08', 'a09'].map((n) => `${n} 1 2`),
      'a00 0 3',
      'a01 0 3',
    ]);
    expect(lines[at + 13].trim()).toBe('and 3 more attributes (--json lists them all)');
    const json = JSON.parse((await cli(['validate', 'n2.csv', '--delta', '--url', emu.url, '--json'])).stdout);
    expect(Object.keys(json.deltaColumns).sort()).toEqual(names);
    expect(json.deltaColumns.a02).toEqual({ changed: 0, unchanged: 3, cleared: 0 });
    expect(json.deltaColumns.a14).toEqual({ changed: 2, unchanged: 1, cleared: 0 });
    const plain = JSON.parse((await cli(['validate', 'n2.csv', '--json'])).stdout);
    expect(plain.deltaColumns).toBeUndefined();
    expect((await cli(['validate', 'n2.csv'])).stdout).not.toMatch(/^columns/m);
  });
});

describe('the counts per attribute', () => {
  it('count each attribute by name whatever the order of the fields and whichever identifier an item uses, and start anew after each take', () => {
    const empty = { empty: true, mayKnow: () => false, hasRow: () => false, user: () => undefined, nameId: () => undefined, hasActivity: () => false, activitiesAsBefore: false, close: () => undefined };
    const delta = createDelta({ statePath: '', target: 't', attributes: true, full: false, activities: false }, empty, 100);
    const attributes = (item: Record<string, unknown>, by: 'external_id' | 'email') => delta.item('attributes', item, { by, value: item[by] as string });
    attributes({ external_id: 'a', plan: 'x', visits: 1 }, 'external_id');
    attributes({ visits: 2, external_id: 'b', plan: null }, 'external_id');
    attributes({ email: 'c@example.com', plan: 'y' }, 'email');
    attributes({ plan: 'z', email: 'd@example.com', _update_existing_only: true }, 'email');
    expect(delta.takeColumns()).toEqual({ plan: [3, 0, 1], visits: [2, 0, 0] });
    expect(delta.takeColumns()).toBeUndefined();
    attributes({ external_id: 'e', plan: 'w' }, 'external_id');
    expect(delta.takeColumns()).toEqual({ plan: [1, 0, 0] });
  });
});

describe('the learn records of a plan', () => {
  /** Each user item of a learn record as read: [index, key, key hash, known, [name, forget, h1, h2]...]. */
  const items = (bytes: Uint8Array) => {
    const record = readLearnRecord(bytes);
    const got: unknown[] = [];
    record.forEach((index, item) => {
      if (item === undefined || item instanceof Uint8Array) return;
      const values = Array.from({ length: item.count }, (_, i) => [record.names[item.name(i)], item.forget(i), item.h1(i), item.h2(i)]);
      got.push([index, item.userKey, item.keyHash, item.known, values]);
    });
    return got;
  };
  const keyHash = (key: string): number => (keyHashInto(key), KEY_HASH[0]);

  it('hold every value of a request whose outcome stays unknown in doubt, and leave its activities out', () => {
    const writer = learnRecordWriter();
    writer.add(userMark(false, -1), { external_id: 'u1', plan: 'pro', visits: 3 });
    writer.add(LEARN_NONE, { external_id: 'u2', plan: 'x' });
    writer.add(new Uint8Array(16).fill(7), { external_id: 'u1', name: 'e' });
    // an item that set nothing: in doubt, it does not tell that its user exists (no row of no values is made)
    writer.add(userMark(false, -1), { external_id: 'u3' });
    writer.add(userMark(true, -1), { email: 'a@example.com', plan: 'free' });
    const record = writer.finish();
    expect(items(record)[1]).toEqual([3, 'e:u3', keyHash('e:u3'), false, []]);
    const { learn, activities } = inDoubtRecord(record);
    expect([...activities]).toEqual([2]);
    expect(items(learn)).toEqual([
      [0, 'e:u1', keyHash('e:u1'), false, [['plan', true, ...valueHash('pro')], ['visits', true, ...valueHash(3)]]],
      [4, 'm:a@example.com', keyHash('m:a@example.com'), true, [['plan', true, ...valueHash('free')]]],
    ]);
    // the record itself is as it was
    expect(items(record)[0]).toEqual([0, 'e:u1', keyHash('e:u1'), false, [['plan', false, ...valueHash('pro')], ['visits', false, ...valueHash(3)]]]);
  });

  it('carry what the run sends of each item, as the values it hashed, one record after another from one writer', () => {
    const empty = { empty: true, mayKnow: () => false, hasRow: () => false, user: () => undefined, nameId: () => undefined, hasActivity: () => false, activitiesAsBefore: false, close: () => undefined };
    const delta = createDelta({ statePath: '', target: 't', attributes: true, full: false, activities: false }, empty, 100);
    const plan = (item: Record<string, unknown>) => {
      const verdict = delta.item('attributes', item, { by: 'external_id', value: item.external_id as string });
      return { sent: verdict.item!, mark: verdict.learn };
    };
    const first = [plan({ external_id: 'u1', plan: 'pro', visits: 3 }), plan({ external_id: 'Zoë', city: 'Köln', visits: { inc: 1 } })];
    // a later row of u1 in the run: only what changed is sent (and learned)
    const second = [plan({ external_id: 'u1', plan: 'pro', visits: 4, city: 'Lyon' })];
    expect(second[0].sent).toEqual({ external_id: 'u1', visits: 4, city: 'Lyon' });
    const writer = delta.recordWriter();
    for (const { sent, mark } of first) writer.add(mark, sent);
    const one = writer.finish();
    for (const { sent, mark } of second) writer.add(mark, sent);
    const two = writer.finish();
    expect(items(one)).toEqual([
      [0, 'e:u1', keyHash('e:u1'), false, [['plan', false, ...valueHash('pro')], ['visits', false, ...valueHash(3)]]],
      [1, 'e:Zoë', keyHash('e:Zoë'), false, [['city', false, ...valueHash('Köln')], ['visits', true, 0, 0]]],
    ]);
    // the run sent u1 before: what this request sends of them is forgotten before it is posted
    expect(items(two)).toEqual([[0, 'e:u1', keyHash('e:u1'), true, [['visits', false, ...valueHash(4)], ['city', false, ...valueHash('Lyon')]]]]);
    expect(readLearnRecord(two).names).toEqual(['visits', 'city']);
  });

  it('carry the values of blocks across the end of the ring of values sent, and of blocks it no longer holds, hashed again', () => {
    const empty = { empty: true, mayKnow: () => false, hasRow: () => false, user: () => undefined, nameId: () => undefined, hasActivity: () => false, activitiesAsBefore: false, close: () => undefined };
    // the filter of users sent made for ten times the users planned: none of them matches it falsely (sent whole, in doubt)
    const delta = createDelta({ statePath: '', target: 't', attributes: true, full: false, activities: false }, empty, 1_000_000);
    // six entries a row (its head and five values): 2^18 entries are held, so the ring wraps about every 43,690 rows, once mid-block
    const row = (u: number) => ({ external_id: `u${u}-ü`, plan: `p${u % 7}`, visits: u, n: u % 1030, flag: u % 2 === 0, score: { inc: 1 } });
    const expected = (u: number) => [
      ['plan', false, ...valueHash(`p${u % 7}`)],
      ['visits', false, ...valueHash(u)],
      ['n', false, ...valueHash(u % 1030)],
      ['flag', false, ...valueHash(u % 2 === 0)],
      ['score', true, 0, 0],
    ];
    const writer = delta.recordWriter();
    const request = (planned: Array<{ u: number; sent: Record<string, unknown>; mark: ReturnType<typeof delta.item>['learn'] }>) => {
      for (const { sent, mark } of planned) writer.add(mark, sent);
      expect(items(writer.finish())).toEqual(planned.map(({ u }, index) => [index, `e:u${u}-ü`, keyHash(`e:u${u}-ü`), false, expected(u)]));
    };
    const plan = (u: number) => {
      const item = row(u);
      const verdict = delta.item('attributes', item, { by: 'external_id', value: item.external_id });
      return { u, sent: verdict.item!, mark: verdict.learn };
    };
    // the first rows' request is written after the ring has gone round twice: their values are hashed from the items
    const early = Array.from({ length: 50 }, (_, u) => plan(u));
    for (let u = 50; u < 100_000; u += 50) request(Array.from({ length: 50 }, (_, i) => plan(u + i)));
    request(early);
  });

  it('ask nothing of the state for an item whose every value is one the state does not learn (the service may skip it, an increment, an object merged) and the user row holds in doubt already: nothing to forget before it is posted, nothing to write once accepted', () => {
    const path = join(tmp.dir, 'doubt.sqlite');
    const alias = (name: string) => ({ alias_name: name, alias_label: 'crm' });
    // a first run: the aliases' values, the increments and the objects merged are held in doubt, the plans learned
    const users = ['u2', 'u3', 'u4', 'u5', 'u6', 'u7', 'u8'];
    const first = [
      ...['n1', 'n2'].map((name) => ({ user_alias: alias(name), plan: 'gold', score: 1 })),
      ...users.map((external_id) => ({ external_id, plan: 'free', visits: { inc: 1 }, addr: { city: 'x' }, _merge_objects: true })),
    ];
    const writer = openStateFileWriter(path, 't');
    const records = learnRecordWriter();
    for (const item of first) records.add(userMark(false, -1), item);
    const learn = records.finish();
    writer.accepted(((given) => () => (given ? undefined : ((given = true), { learn, rejected: () => false })))(false));
    writer.close();

    const delta = createDelta({ statePath: path, target: 't', attributes: true, full: false, activities: false }, openStateReader(path, 't'), 100);
    const plan = (item: Record<string, unknown>) =>
      delta.item('attributes', item, item.user_alias === undefined ? { by: 'external_id', value: item.external_id as string } : { by: 'user_alias', value: item.user_alias as { alias_name: string; alias_label: string } });
    // each user's first row of the run: sent whole, and nothing asked of the state
    for (const item of [
      { user_alias: alias('n1'), plan: 'silver', score: 2 },
      { external_id: 'u2', _update_existing_only: true, visits: 3 },
      { external_id: 'u3', visits: { inc: 1 } },
      { external_id: 'u4', addr: { zip: '1' }, _merge_objects: true },
      { external_id: 'u5', visits: { inc: 2 }, addr: { zip: '1' }, _merge_objects: true },
    ])
      expect(plan(item)).toEqual({ item, avoided: 0, learn: LEARN_NONE });
    // a value the row holds (the plans), or a name it holds nothing of: learned, and forgotten before it is posted
    for (const item of [
      { external_id: 'u6', _update_existing_only: true, plan: 'pro' },
      { external_id: 'u7', visits: { inc: 1 }, plan: 'pro' },
      { external_id: 'u8', plan: { tier: 1 }, _merge_objects: true },
      { user_alias: alias('n2'), plan: 'gold', city: 'Lyon' },
    ]) {
      const verdict = plan(item);
      expect(verdict.item).toBe(item);
      expect(verdict.learn).not.toBe(LEARN_NONE);
    }
    delta.close();
  });
});
