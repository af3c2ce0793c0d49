// The delta state file: what it learns from an accepted request, what it forgets before one is
// posted, and the learn record that carries both between the threads.
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LEARN_NONE, readLearnRecord } from '../../src/records/learn-record.js';
import { learnRecordWriter, userMark } from '../../src/records/learn-record-writer.js';
import { activityHash, addDigest, hasEmptyProperties, canonicalJson, hash64, identityKeyHashInto, isControlField, KEY_HASH, keyHashInto, stateUserKey, valueHash } from '../../src/records/state-record.js';
import type { Identity } from '../../src/model/identity.js';
import { CONTROL_FIELDS } from '../../src/model/fields.js';
import { lockState, StateInUseError } from '../../src/records/state-file.js';
import { openStateFileWriter } from '../../src/records/state-file-writer.js';
import { forgetTarget, listState, openStateReader } from '../../src/records/state.js';
import { ROOT, tempDir } from '../helpers/cli.js';

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => (tmp = tempDir()));
afterEach(() => tmp.cleanup());

const T = 'http://127.0.0.1:4000/users/track';

/** A learn record of attributes items as sent (`known`: the state may know the user), or items learned not at all. */
function record(items: Array<{ item: Record<string, unknown>; known?: boolean } | 'none'>): Uint8Array {
  const writer = learnRecordWriter();
  for (const entry of items) {
    if (entry === 'none') writer.add(LEARN_NONE, {});
    else writer.add(userMark(entry.known === true, -1), entry.item);
  }
  return writer.finish();
}

/** Has the writer learn one request's record (`rejected`: the places of the items the server refused). */
function accept(writer: ReturnType<typeof openStateFileWriter>, learn: Uint8Array, rejected: (index: number) => boolean = () => false): void {
  let given = false;
  writer.accepted(() => (given ? undefined : ((given = true), { learn, rejected })));
}

/** The state's reader of T, and a user of it by key. */
function read(path: string) {
  const reader = openStateReader(path, T);
  const user = (key: string) => {
    keyHashInto(key);
    return reader.user(key, KEY_HASH[0]);
  };
  const holds = (key: string, name: string, value: unknown) => user(key)?.holds(name, ...valueHash(value)) === true;
  return { reader, user, holds };
}

describe('values and records', () => {
  it('hashes an identity as the text of its key, whatever its kind, and nothing for an anonymous item', () => {
    const identities: Identity[] = [
      { by: 'external_id', value: 'u-1' },
      { by: 'external_id', value: '' },
      { by: 'external_id', value: 'ü-\u{1F600}' },
      { by: 'email', value: ' Ann@Example.com' },
      { by: 'phone', value: '+14155552671' },
      { by: 'service_id', value: 'b1' },
      { by: 'user_alias', value: { alias_label: 'crm', alias_name: 'c-9' } },
    ];
    const hashes = new Set<string>();
    for (const identity of identities) {
      keyHashInto(stateUserKey(identity)!);
      const fromText = [...KEY_HASH];
      KEY_HASH.fill(0);
      expect(identityKeyHashInto(identity)).toBe(true);
      expect([...KEY_HASH]).toEqual(fromText);
      hashes.add(fromText.join());
    }
    expect(hashes.size).toBe(identities.length);
    KEY_HASH.fill(7);
    expect(identityKeyHashInto({ by: 'anonymous' })).toBe(false);
    expect([...KEY_HASH]).toEqual([7, 7, 7]);
  });

  it('compares arrays and objects by value, whatever the order of their keys, and tells types apart', () => {
    expect(valueHash({ a: 1, b: [1, { c: 2, d: 3 }] })).toEqual(valueHash({ b: [1, { d: 3, c: 2 }], a: 1 }));
    expect(valueHash([1, 2])).not.toEqual(valueHash([2, 1]));
    expect(valueHash('1')).not.toEqual(valueHash(1));
    expect(valueHash(null)).not.toEqual(valueHash('null'));
    expect(canonicalJson({ b: 1, a: undefined, c: 'x' })).toBe('{"b":1,"c":"x"}');
  });

  it('hashes a number as the text of its digits, integers as other numbers (state files written before keep matching)', () => {
    // twice over: the hashes of small integers are kept once made
    for (const n of [0, -0, 7, -7, 10, 999, 1023, 1024, 90210, -1234567, 2 ** 31, -(2 ** 32) - 1, Number.MAX_SAFE_INTEGER, Number.MIN_SAFE_INTEGER, 1.5, -0.25, 1e21, 2 ** 53, NaN, Infinity, 0, -0, 7, 1023]) {
      expect(valueHash(n), String(n)).toEqual(hash64(String(n), 0x6e));
      expect(valueHash(n), String(n)).toEqual(hash64(String(n), 0x6e));
    }
    expect(valueHash(12)).not.toEqual(valueHash(21));
    // a kept integer's hash is a number's: not its text's nor a boolean's
    expect(valueHash(5)).not.toEqual(valueHash('5'));
    expect(valueHash(1)).not.toEqual(valueHash(true));
    expect(valueHash(0)).not.toEqual(valueHash(false));
  });

  it('tells the control fields from attributes as CONTROL_FIELDS does', () => {
    for (const name of CONTROL_FIELDS) expect(isControlField(name), name).toBe(true);
    for (const name of ['plan', '_merge', 'push_token', 'email_subscribe', '_update_existing', 'push_token_imports']) expect(isControlField(name), name).toBe(CONTROL_FIELDS.has(name));
  });

  it('adds a row digest\'s parts modulo 2^52', () => {
    const top = 2 ** 52 - 1;
    for (const [a, b] of [[0, 0], [top, 1], [top, top], [2 ** 51, 2 ** 51], [2 ** 51, 2 ** 51 - 1], [123, 456]]) expect(addDigest(a, b)).toBe((a + b) % 2 ** 52);
  });

  it('names users by the identifier the item uses, an email in lower case', () => {
    expect(stateUserKey({ by: 'external_id', value: 'U1' })).toBe('e:U1');
    expect(stateUserKey({ by: 'email', value: ' Ann@Example.com' })).toBe('m:ann@example.com');
    expect(stateUserKey({ by: 'anonymous' })).toBeUndefined();
  });

  it('hashes an event by its content: the same instant written two ways is the same event', () => {
    const a = activityHash('events', { external_id: 'u1', name: 'x', time: '2024-01-01T00:00:00Z', properties: { p: 1, q: 2 } }, 'e:u1');
    const b = activityHash('events', { time: '2024-01-01T00:00:00.000Z', properties: { q: 2, p: 1 }, name: 'x', external_id: 'u1' }, 'e:u1');
    expect(Buffer.from(a).equals(Buffer.from(b))).toBe(true);
    const other = activityHash('events', { external_id: 'u1', name: 'x', time: '2024-01-01T00:00:01Z', properties: { p: 1, q: 2 } }, 'e:u1');
    expect(Buffer.from(a).equals(Buffer.from(other))).toBe(false);
  });

  it('hashes an event with empty properties as one without, and as before when asked (the hash earlier states learned)', () => {
    const bare = { external_id: 'u1', name: 'x', time: '2024-01-01T00:00:00Z' };
    const same = (a: Uint8Array, b: Uint8Array) => Buffer.from(a).equals(Buffer.from(b));
    const none = activityHash('events', bare, 'e:u1');
    expect(same(activityHash('events', { ...bare, properties: {} }, 'e:u1'), none)).toBe(true);
    expect(same(activityHash('purchases', { ...bare, product_id: 'p', currency: 'usd', price: 1, properties: {} }, 'e:u1'), activityHash('purchases', { ...bare, product_id: 'p', currency: 'USD', price: 1 }, 'e:u1'))).toBe(true);
    // as before: `{}` was hashed as written
    expect(same(activityHash('events', { ...bare, properties: {} }, 'e:u1', true), none)).toBe(false);
    expect(same(activityHash('events', bare, 'e:u1', true), none)).toBe(true);
    // properties that hold something, or are no object, are hashed as they are
    expect(same(activityHash('events', { ...bare, properties: { a: 1 } }, 'e:u1'), none)).toBe(false);
    expect(same(activityHash('events', { ...bare, properties: [] }, 'e:u1'), none)).toBe(false);
    expect(hasEmptyProperties({ properties: {} })).toBe(true);
    expect(hasEmptyProperties({ properties: { a: undefined } })).toBe(true);
    expect(hasEmptyProperties({ properties: { a: null } })).toBe(false);
    expect(hasEmptyProperties({})).toBe(false);
  });

  it('reads back a learn record as written: the identifier and control fields are not learned, an increment is forgotten', () => {
    const bytes = record([{ item: { external_id: 'u1', _merge_objects: true, plan: 'pro', visits: { inc: 1 } }, known: true }, 'none', { item: { email: 'Ann@Example.com', plan: 'free' } }]);
    const got = readLearnRecord(bytes);
    const seen: unknown[] = [];
    got.forEach((index, item) => {
      if (item === undefined || item instanceof Uint8Array) seen.push([index, item]);
      else seen.push([index, item.userKey, item.keyHash, item.known, Array.from({ length: item.count }, (_, i) => [got.names[item.name(i)], item.forget(i), item.h1(i), item.h2(i)])]);
    });
    keyHashInto('e:u1');
    const u1 = KEY_HASH[0];
    keyHashInto('m:ann@example.com');
    expect(seen).toEqual([
      [0, 'e:u1', u1, true, [['plan', false, ...valueHash('pro')], ['visits', true, 0, 0]]],
      [1, undefined],
      [2, 'm:ann@example.com', KEY_HASH[0], false, [['plan', false, ...valueHash('free')]]],
    ]);
  });

  it('keeps keys and names beyond ASCII as written, a leading U+FEFF included, from records that share a slab', () => {
    const names = ['\uFEFFplan', '名前', 'emoji😀'];
    const users = [
      { external_id: 'ü😀-1', [names[0]]: 'pro', [names[1]]: 'ä', [names[2]]: 1 },
      { user_alias: { alias_label: 'crm\u0000名', alias_name: '😀' }, _update_existing_only: false, [names[0]]: 'free' },
      { email: 'Ünïcode@Example.com', [names[1]]: '名' },
    ];
    // three records one after another: the second and third lie past the first in their slab
    const records = users.map((item) => record([{ item }]));
    expect(records[1].byteOffset).toBeGreaterThan(0);
    const path = join(tmp.dir, 'state.sqlite');
    const writer = openStateFileWriter(path, T);
    for (const learn of records) accept(writer, learn);
    writer.close();
    const { holds } = read(path);
    expect(holds('e:ü😀-1', names[0], 'pro')).toBe(true);
    expect(holds('e:ü😀-1', names[1], 'ä')).toBe(true);
    expect(holds('e:ü😀-1', names[2], 1)).toBe(true);
    expect(holds('e:ü😀-1', 'plan', 'pro')).toBe(false);
    expect(holds('a:crm\u0000名\u0000😀', names[0], 'free')).toBe(true);
    expect(holds('m:ünïcode@example.com', names[1], '名')).toBe(true);
    const read1 = readLearnRecord(records[0]);
    expect(read1.names).toEqual(names);
    read1.forEach((_, item) => expect(item !== undefined && !(item instanceof Uint8Array) && item.userKey).toBe('e:ü😀-1'));
  });

  it('reads back a learn record larger than the buffers it is written in, and the next record written after it', () => {
    const names = Array.from({ length: 20 }, (_, i) => `attribute-with-a-rather-long-name-${i}-${'x'.repeat(40)}`);
    const items = Array.from({ length: 3000 }, (_, u) => ({ external_id: `user-${u}-${'é'.repeat(u % 7)}`, ...Object.fromEntries(names.map((name, i) => [name, u * 100 + i])) }));
    const writer = learnRecordWriter();
    for (const item of items) writer.add(userMark(false, -1), item);
    const big = readLearnRecord(writer.finish());
    writer.add(userMark(true, -1), { external_id: 'after', plan: 'pro' });
    const next = readLearnRecord(writer.finish());
    expect(big.names).toEqual(names);
    let read = 0;
    big.forEach((index, item) => {
      if (item === undefined || item instanceof Uint8Array) throw new Error('a user item was expected');
      expect(item.userKey).toBe(`e:${items[index].external_id}`);
      expect(item.count).toBe(20);
      expect([big.names[item.name(19)], item.h1(19), item.h2(19)]).toEqual([names[19], ...valueHash(index * 100 + 19)]);
      read += 1;
    });
    expect(read).toBe(3000);
    expect(next.names).toEqual(['plan']);
    next.forEach((_, item) => expect(item !== undefined && !(item instanceof Uint8Array) && [item.userKey, item.known, item.count]).toEqual(['e:after', true, 1]));
  });
});

describe('the state file', () => {
  it('learns only the accepted items, keeps targets apart, and forgets what a request sends of a known user before it is posted', () => {
    const path = join(tmp.dir, 'state.sqlite');
    let writer = openStateFileWriter(path, T);
    accept(writer, record([{ item: { external_id: 'u1', plan: 'pro', score: 1 } }, { item: { external_id: 'u2', plan: 'free' } }]), (i) => i === 1);
    writer.close();
    writer = openStateFileWriter(path, T);
    let state = read(path);
    expect(state.holds('e:u1', 'plan', 'pro')).toBe(true);
    expect(state.holds('e:u1', 'plan', 'free')).toBe(false);
    expect(state.user('e:u2')).toBeUndefined();
    expect(openStateReader(path, 'http://other/users/track').empty).toBe(true);
    state.reader.close();

    // a request about to change u1's plan: the plan is forgotten before it is posted, so a stop
    // before the answer leaves the state not knowing it rather than holding the old one; the score,
    // which the request does not send, stays known
    writer.sending(record([{ item: { external_id: 'u1', plan: 'free' }, known: true }]));
    state = read(path);
    expect(state.holds('e:u1', 'plan', 'pro')).toBe(false);
    expect(state.holds('e:u1', 'score', 1)).toBe(true);
    // nor does it leave it holding no value: the server may hold the one sent, which an emptied cell
    // (--empty-as-null) must then clear
    expect(state.user('e:u1')?.holdsValue('plan')).toBe(true);
    state.reader.close();
    // accepted: what it set is learned; an increment is held in doubt, a value matching none that an
    // emptied cell clears (the server holds some number), and so is a value of a new user's increment
    accept(
      writer,
      record([
        { item: { external_id: 'u1', plan: 'free', visits: { inc: 1 } }, known: true },
        { item: { external_id: 'u3', visits: { inc: 1 } } },
      ]),
      () => false,
    );
    writer.close();
    state = read(path);
    expect(state.holds('e:u1', 'plan', 'free')).toBe(true);
    expect(state.holds('e:u1', 'score', 1)).toBe(true);
    for (const key of ['e:u1', 'e:u3']) {
      expect(state.holds(key, 'visits', { inc: 1 })).toBe(false);
      expect(state.holds(key, 'visits', 1)).toBe(false);
      expect(state.user(key)?.holdsValue('visits')).toBe(true);
    }
    state.reader.close();

    expect(listState(path)).toEqual([expect.objectContaining({ url: T, users: 2, attributes: 4, activities: 0 })]);
    expect(forgetTarget(path, T)).toBe(true);
    expect(listState(path)).toEqual([]);
  });

  it.skipIf(process.platform !== 'linux')('takes over a lock whose pid now names a process started after the lock was taken, and keeps one a live process took', async () => {
    const path = join(tmp.dir, 'state.sqlite');
    // a process alive now, started after a lock taken an hour ago: that pid was reused
    const other = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)'], { stdio: 'ignore' });
    try {
      await new Promise((resolve) => other.once('spawn', resolve));
      const lock = (since: Date) => writeFileSync(`${path}.lock`, JSON.stringify({ pid: other.pid, host: hostname(), since: since.toISOString() }));
      lock(new Date(Date.now() + 60_000));
      expect(() => lockState(path)).toThrow(StateInUseError);
      lock(new Date(Date.now() - 3_600_000));
      const release = lockState(path);
      expect(JSON.parse(readFileSync(`${path}.lock`, 'utf8')).pid).toBe(process.pid);
      release();
    } finally {
      other.kill('SIGKILL');
    }
  });

  it('packs users of keys and rows of any length, and finds each one again in its pack', () => {
    const path = join(tmp.dir, 'state.sqlite');
    const writer = openStateFileWriter(path, T);
    // keys of 1 to 300 UTF-8 bytes (lengths of one and two varint bytes), a row of 200 attributes, 40 users: three packs
    const long = 'é'.repeat(150);
    const wide = Object.fromEntries(Array.from({ length: 200 }, (_, i) => [`a${i}`, i]));
    const users = Array.from({ length: 40 }, (_, i) => ({ item: { external_id: i === 0 ? 'x' : i === 1 ? long : `u${i}`, plan: `p${i}`, ...(i === 2 ? wide : {}) } }));
    accept(writer, record(users));
    writer.close();
    const state = read(path);
    expect(state.holds('e:x', 'plan', 'p0')).toBe(true);
    expect(state.holds(`e:${long}`, 'plan', 'p1')).toBe(true);
    expect(state.holds('e:u2', 'a199', 199)).toBe(true);
    expect(state.holds('e:u39', 'plan', 'p39')).toBe(true);
    expect(state.holds('e:u39', 'plan', 'p38')).toBe(false);
    expect(state.user('e:u40')).toBeUndefined();
    state.reader.close();
    expect(listState(path)).toEqual([expect.objectContaining({ users: 40, attributes: 240 })]);
    // a user changed in the middle of a pack: the others in it kept
    const again = openStateFileWriter(path, T);
    accept(again, record([{ item: { external_id: long, plan: 'changed' }, known: true }]));
    again.close();
    const after = read(path);
    expect(after.holds(`e:${long}`, 'plan', 'changed')).toBe(true);
    expect(after.holds('e:x', 'plan', 'p0')).toBe(true);
    expect(after.holds('e:u2', 'a0', 0)).toBe(true);
    after.reader.close();
  });

  it('refuses a file that is not a state file, naming it', () => {
    const path = join(tmp.dir, 'not.sqlite');
    writeFileSync(path, 'hello, this is text\n'.repeat(100));
    expect(() => openStateFileWriter(path, T)).toThrow(/--state .*not\.sqlite is not a state file/);
  });

  it('refuses a file of a later format, naming it, and leaves it as it was (no table of this format added to it)', () => {
    const path = join(tmp.dir, 'later.sqlite');
    const db = new Database(path);
    db.exec("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL); INSERT INTO meta VALUES ('format', '6'); CREATE TABLE things (id INTEGER PRIMARY KEY)");
    db.close();
    expect(() => openStateFileWriter(path, T)).toThrow(/--state .*later\.sqlite cannot be used: it was written by another version of track \(format 6\)/);
    expect(() => listState(path)).toThrow(/later\.sqlite cannot be used: it was written by another version of track \(format 6\)/);
    const after = new Database(path, { readonly: true });
    expect(after.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").pluck().all()).toEqual(['meta', 'things']);
    expect(after.pragma('journal_mode', { simple: true })).toBe('delete');
    after.close();
  });

  it('makes a new file of 16 KiB pages, and goes on writing a file of 4 KiB pages made before, which keeps its pages', () => {
    const path = join(tmp.dir, 'new.sqlite');
    const writer = openStateFileWriter(path, T);
    accept(writer, record([{ item: { external_id: 'u1', plan: 'free' } }]));
    writer.close();
    const pageSizeOf = (file: string): unknown => {
      const db = new Database(file, { readonly: true });
      try {
        return db.pragma('page_size', { simple: true });
      } finally {
        db.close();
      }
    };
    expect(pageSizeOf(path)).toBe(16384);
    // a file made with 4 KiB pages, as track made them before
    const older = join(tmp.dir, 'older.sqlite');
    writeFileSync(older, readFileSync(path));
    const db = new Database(older);
    db.pragma('journal_mode = DELETE');
    db.pragma('page_size = 4096');
    db.exec('VACUUM');
    expect(db.pragma('page_size', { simple: true })).toBe(4096);
    db.close();
    const again = openStateFileWriter(older, T);
    accept(again, record([{ item: { external_id: 'u2', plan: 'pro' } }]));
    again.close();
    expect(pageSizeOf(older)).toBe(4096);
    const { reader, holds } = read(older);
    expect([holds('e:u1', 'plan', 'free'), holds('e:u2', 'plan', 'pro')]).toEqual([true, true]);
    reader.close();
  });

  it('names a damaged file in a message of one line, whichever page is damaged (SQLite\'s check names the database on a line of its own)', () => {
    const path = join(tmp.dir, 'state.sqlite');
    const writer = openStateFileWriter(path, T);
    for (let r = 0; r < 20; r += 1) accept(writer, record(Array.from({ length: 50 }, (_, i) => ({ item: { external_id: `u${r * 50 + i}`, plan: 'free', n: i } }))));
    writer.close();
    const bytes = readFileSync(path);
    const pages = bytes.length / 16384;
    expect(pages).toBeGreaterThan(8);
    const messages: string[] = [];
    for (let page = 1; page < pages; page += 1) {
      const copy = join(tmp.dir, `damaged-page-${page}.sqlite`);
      writeFileSync(copy, Buffer.concat([bytes.subarray(0, page * 16384), Buffer.alloc(4096, 0xa5), bytes.subarray(page * 16384 + 4096)]));
      try {
        const again = openStateFileWriter(copy, T);
        again.check();
        again.close();
      } catch (error) {
        messages.push((error as Error).message);
      }
    }
    expect(messages).toHaveLength(pages - 1);
    for (const message of messages) expect(message).toMatch(/^--state .*damaged-page-\d+\.sqlite (is|is not a state file, or is) damaged \(SQLite: [^\n]*\): delete it to start a new state[^\n]*$/);
    // the check's own findings among them, on the line of the rest
    expect(messages.some((message) => message.includes('*** in database main *** Tree'))).toBe(true);
  });

  it('refuses a pack of users whose bytes are damaged (cut short, a length past its end), naming the file, where it would read on without end', () => {
    for (const damage of [Buffer.from([0x85]), Buffer.from([0x04, 0x01, 0x65, 0x3a, 0x75, 0x31, 0x01, 0x00, 0x00, 0x00, 0x0b]), Buffer.from([0x7f, 0x01, 0x41])]) {
      const path = join(tmp.dir, `damaged-${damage.length}.sqlite`);
      const writer = openStateFileWriter(path, T);
      accept(writer, record([{ item: { external_id: 'u1', plan: 'free' } }, { item: { external_id: 'u2', plan: 'free' } }]));
      writer.close();
      const db = new Database(path);
      db.prepare('UPDATE packs SET users = ?').run(damage);
      db.close();
      const damaged = new RegExp(`--state .*damaged-${damage.length}\\.sqlite is damaged`);
      expect(() => listState(path)).toThrow(damaged);
      const { reader, user } = read(path);
      expect(() => user('e:u1')).toThrow(damaged);
      reader.close();
      const again = openStateFileWriter(path, T);
      expect(() => accept(again, record([{ item: { external_id: 'u2', plan: 'pro' }, known: true }]))).toThrow(damaged);
      again.close();
    }
  });

  it('a writer killed while it saves the index at the end of a run leaves a state that knows what it learned, once the index is made again from the rows', () => {
    const path = join(tmp.dir, 'state.sqlite');
    // a process that learns 3,000 users and is killed (SIGKILL) inside the transaction that saves the index
    const script = join(tmp.dir, 'killed.mjs');
    writeFileSync(
      script,
      `import { learnRecordWriter, userMark } from '${ROOT}/dist/records/learn-record-writer.js';
       import { openStateFileWriter } from '${ROOT}/dist/records/state-file-writer.js';
       const writer = openStateFileWriter(${JSON.stringify(path)}, ${JSON.stringify(T)}, { whileSaving: () => process.kill(process.pid, 'SIGKILL') });
       for (let r = 0; r < 60; r += 1) {
         const record = learnRecordWriter();
         for (let i = r * 50; i < r * 50 + 50; i += 1) record.add(userMark(false, -1), { external_id: 'u' + i, plan: i % 2 ? 'pro' : 'free' });
         const learn = record.finish();
         let given = false;
         writer.accepted(() => (given ? undefined : ((given = true), { learn, rejected: () => false })));
       }
       writer.close();`,
    );
    const killed = spawnSync(process.execPath, [script], { encoding: 'utf8' });
    expect(killed.signal).toBe('SIGKILL');
    // the reader finds the index out of date, and makes it from the rows
    let state = read(path);
    expect(state.holds('e:u1', 'plan', 'pro')).toBe(true);
    expect(state.holds('e:u2998', 'plan', 'free')).toBe(true);
    expect(state.holds('e:u2998', 'plan', 'pro')).toBe(false);
    state.reader.close();
    // a writer makes it again and saves it
    openStateFileWriter(path, T).close();
    state = read(path);
    expect(state.holds('e:u2999', 'plan', 'pro')).toBe(true);
    expect(listState(path)).toEqual([expect.objectContaining({ users: 3000, attributes: 3000 })]);
    state.reader.close();
  });

  it('a first run finds a user it added again (a later row sent whole, or a false match of the plan\'s filter): by a search while they are few, through an index once they are many', () => {
    const path = join(tmp.dir, 'state.sqlite');
    const writer = openStateFileWriter(path, T);
    const learn = (items: Array<{ item: Record<string, unknown>; known?: boolean }>): void => {
      for (let i = 0; i < items.length; i += 50) accept(writer, record(items.slice(i, i + 50)));
    };
    const users = (from: number, to: number, plan: string, known = false) => Array.from({ length: to - from }, (_, i) => ({ item: { external_id: `u${from + i}`, plan }, known }));
    learn(users(0, 5000, 'a'));
    // a few users sent again, as the plan marks them (the state may know them: it finds no row of theirs),
    // and one the run never sent (a false match): they are found among this run's rows, by their key's part
    learn(users(0, 100, 'b', true));
    writer.sending(record(users(100, 110, 'c', true)));
    learn([{ item: { external_id: 'stranger', plan: 'x' }, known: true }]);
    expect(writer.indexesAdded).toBe(false);
    // many of them: their searches have looked at several times the rows the run added, and an index of them is made
    for (const plan of ['c1', 'c2', 'd']) learn(users(200, 5000, plan, true));
    expect(writer.indexesAdded).toBe(true);
    // users added after it, and some of them sent again
    learn(users(5000, 6000, 'e'));
    learn(users(5500, 5600, 'f', true));
    writer.close();
    const state = read(path);
    const plans: Array<[number, string]> = [[0, 'b'], [99, 'b'], [150, 'a'], [250, 'd'], [3199, 'd'], [4999, 'd'], [5000, 'e'], [5550, 'f']];
    for (const [user, plan] of plans) expect([user, state.holds(`e:u${user}`, 'plan', plan)]).toEqual([user, true]);
    expect(state.holds('e:u0', 'plan', 'a')).toBe(false);
    // held in doubt: sent, never answered
    expect(state.holds('e:u105', 'plan', 'a')).toBe(false);
    expect(state.user('e:u105')?.holdsValue('plan')).toBe(true);
    expect(state.holds('e:stranger', 'plan', 'x')).toBe(true);
    // each user in one row: none added twice
    expect(listState(path)).toEqual([expect.objectContaining({ users: 6001, attributes: 6001 })]);
    state.reader.close();
  });

  it('a later run that adds users and must read the whole index (a user of the file the plan did not find) saves the users it added before and after', () => {
    const path = join(tmp.dir, 'state.sqlite');
    const users = (prefix: string, from: number, to: number, plan: string, known = false) =>
      Array.from({ length: to - from }, (_, i) => ({ item: { external_id: `${prefix}${from + i}`, plan }, known }));
    let writer = openStateFileWriter(path, T);
    accept(writer, record(users('u', 0, 100, 'a')));
    writer.close();
    writer = openStateFileWriter(path, T);
    for (let i = 0; i < 1000; i += 50) accept(writer, record(users('n', i, i + 50, 'b')));
    // a user the file held, sent as the plan marks one it did not find the row of: the whole index is read
    accept(writer, record(users('u', 5, 6, 'c', true)));
    for (let i = 1000; i < 2000; i += 50) accept(writer, record(users('n', i, i + 50, 'b')));
    writer.close();
    const state = read(path);
    for (const key of ['n0', 'n999', 'n1000', 'n1999']) expect([key, state.holds(`e:${key}`, 'plan', 'b')]).toEqual([key, true]);
    expect(state.holds('e:u5', 'plan', 'c')).toBe(true);
    expect(state.holds('e:u6', 'plan', 'a')).toBe(true);
    expect(listState(path)).toEqual([expect.objectContaining({ users: 2100 })]);
    state.reader.close();
  });
});

