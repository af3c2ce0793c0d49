// Events and purchases found by profile through the block index (src/emulator/schema.ts), deleted
// with their profile, and kept whole when a file an earlier version made is opened.
import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Store } from '../../src/emulator/store.js';

let store: Store | undefined;
const dirs: string[] = [];
afterEach(() => {
  store?.close();
  store = undefined;
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function tempPath(): string {
  const dir = mkdtempSync(join(tmpdir(), 'track-activity-'));
  dirs.push(dir);
  return join(dir, 'db.sqlite');
}

const TIME = '2024-03-07T10:00:00.000Z';
const event = (profileId: number, name: string) => ({ profileId, name, time: TIME, appId: null, properties: null });
const purchase = (profileId: number, productId: string) => ({
  profileId, productId, currency: 'USD', price: 1, quantity: 1, time: TIME, appId: null, properties: null,
});

describe('activity by profile', () => {
  it("finds every one of a profile's events and purchases, in order, across many blocks of rows", () => {
    store = new Store(':memory:');
    const s = store;
    const ids = ['a', 'b', 'c'].map((externalId) => s.createProfile({ externalId }).id);
    // 10,000 rows of each span three blocks of 4,096
    s.transaction(() => {
      for (let i = 0; i < 10_000; i += 1) {
        s.insertEvents([event(ids[i % 3], i % 2 === 0 ? 'even' : 'odd')]);
        s.insertPurchases([purchase(ids[i % 3], 'p')]);
      }
    });
    const events = s.eventsOf(ids[1]);
    expect(events).toHaveLength(3333);
    expect(events.every((e) => e.profileId === ids[1])).toBe(true);
    expect(events.every((e, i) => i === 0 || e.id > events[i - 1].id)).toBe(true);
    expect(events.at(-1)!.id).toBeGreaterThan(8192);
    expect(s.eventSummary(ids[0])).toEqual([
      { name: 'even', first: TIME, last: TIME, count: 1667 },
      { name: 'odd', first: TIME, last: TIME, count: 1667 },
    ]);
    expect(s.purchasesOf(ids[2])).toHaveLength(3333);
    expect(s.purchaseSummary(ids[0])).toEqual([{ name: 'p', first: TIME, last: TIME, count: 3334 }]);
  });

  it('adds many rows at once in the order given, each under the next id', () => {
    store = new Store(':memory:');
    const s = store;
    const id = s.createProfile({ externalId: 'a' }).id;
    // more rows than one statement takes, and a remainder
    expect(s.insertEvents(Array.from({ length: 130 }, (_, i) => event(id, `e${i}`)))).toBe(130);
    expect(s.eventsOf(id).map((e) => [e.id, e.name])).toEqual(Array.from({ length: 130 }, (_, i) => [i + 1, `e${i}`]));
    expect(s.insertPurchases([purchase(id, 'x'), { ...purchase(id, 'y'), price: 2.5, properties: { k: 'v' } }])).toBe(2);
    expect(s.purchasesOf(id).map((p) => [p.id, p.productId, p.price, p.properties])).toEqual([[1, 'x', 1, null], [2, 'y', 2.5, { k: 'v' }]]);
    expect(s.insertEvents([event(id, 'one more')])).toBe(131);
  });

  it('finds nothing for a profile with no activity, and nothing in an empty table', () => {
    store = new Store(':memory:');
    const id = store.createProfile({ externalId: 'a' }).id;
    expect(store.eventsOf(id)).toEqual([]);
    expect(store.purchaseSummary(id)).toEqual([]);
    store.insertEvents([event(store.createProfile({ externalId: 'b' }).id, 'e')]);
    expect(store.eventSummary(id)).toEqual([]);
  });

  it("deletes profiles with their events and purchases, and leaves other profiles' alone", () => {
    store = new Store(':memory:');
    const s = store;
    const [a, b, c] = ['a', 'b', 'c'].map((externalId) => s.createProfile({ externalId }).id);
    for (const id of [a, b, c, a, b, c]) {
      s.insertEvents([event(id, 'e')]);
      s.insertPurchases([purchase(id, 'p')]);
    }
    s.deleteProfiles([a, c]);
    expect(s.counts()).toEqual({ profiles: 1, events: 2, purchases: 2 });
    expect(s.eventsOf(b)).toHaveLength(2);
    expect(s.integrityCheck()).toBe('ok');
  });

  it('reports an event whose profile is missing', () => {
    store = new Store(':memory:');
    store.insertEvents([event(999, 'e')]);
    expect(store.integrityCheck()).toBe('ok; 1 rows reference missing rows');
  });
});

/** The activity tables as earlier builds made them: a foreign key to profiles and an index on profile_id. */
const EARLIER_SCHEMA = `
CREATE TABLE profiles (
  id INTEGER PRIMARY KEY, service_id TEXT NOT NULL UNIQUE, external_id TEXT UNIQUE, email TEXT, phone TEXT,
  fields TEXT NOT NULL DEFAULT '{}', custom TEXT NOT NULL DEFAULT '{}', push_import INTEGER NOT NULL DEFAULT 0,
  language_from_api INTEGER NOT NULL DEFAULT 0, created_at TEXT NOT NULL, updated_at TEXT NOT NULL, updated_seq INTEGER NOT NULL
);
CREATE TABLE events (
  id INTEGER PRIMARY KEY, profile_id INTEGER NOT NULL REFERENCES profiles(id) ON DELETE CASCADE,
  name TEXT NOT NULL, time TEXT NOT NULL, app_id TEXT, properties TEXT
);
CREATE INDEX events_profile ON events(profile_id);
CREATE TABLE purchases (
  id INTEGER PRIMARY KEY, profile_id INTEGER NOT NULL REFERENCES profiles(id) ON DELETE CASCADE,
  product_id TEXT NOT NULL, currency TEXT NOT NULL, price REAL NOT NULL, quantity INTEGER NOT NULL,
  time TEXT NOT NULL, app_id TEXT, properties TEXT
);
CREATE INDEX purchases_profile ON purchases(profile_id);
`;

describe('a file an earlier version made', () => {
  it('opens with every event and purchase kept, under its id, and found by profile', () => {
    const path = tempPath();
    const old = new Database(path);
    old.pragma('journal_mode = WAL');
    old.exec(EARLIER_SCHEMA);
    const addProfile = old.prepare("INSERT INTO profiles (service_id, external_id, created_at, updated_at, updated_seq) VALUES (?, ?, 'x', 'x', 1)");
    addProfile.run('s1', 'a');
    addProfile.run('s2', 'b');
    old.prepare("INSERT INTO events (id, profile_id, name, time, app_id, properties) VALUES (7, 1, 'signup', ?, 'app', '{\"k\":1}')").run(TIME);
    old.prepare("INSERT INTO events (id, profile_id, name, time) VALUES (9000, 2, 'login', ?)").run(TIME);
    old.prepare("INSERT INTO purchases (id, profile_id, product_id, currency, price, quantity, time) VALUES (3, 2, 'p', 'USD', 9.5, 2, ?)").run(TIME);
    old.close();

    store = new Store(path);
    const a = store.profileByExternalId('a')!.id;
    const b = store.profileByExternalId('b')!.id;
    expect(store.eventsOf(a)).toEqual([{ id: 7, profileId: a, name: 'signup', time: TIME, appId: 'app', properties: { k: 1 } }]);
    expect(store.eventsOf(b).map((e) => e.id)).toEqual([9000]);
    expect(store.purchasesOf(b)).toEqual([
      { id: 3, profileId: b, productId: 'p', currency: 'USD', price: 9.5, quantity: 2, time: TIME, appId: null, properties: null },
    ]);
    expect(store.integrityCheck()).toBe('ok');
    // new rows follow the old ones, and a profile deleted takes its rows with it
    expect(store.insertEvents([event(a, 'later')])).toBe(9001);
    store.deleteProfiles([b]);
    expect(store.counts()).toEqual({ profiles: 1, events: 2, purchases: 0 });
    store.close();
    store = undefined;

    const reader = new Database(path, { readonly: true });
    const sql = reader.prepare<[string], string>('SELECT sql FROM sqlite_schema WHERE name = ?').pluck();
    expect(sql.get('events')).not.toContain('REFERENCES');
    expect(sql.get('purchases')).not.toContain('REFERENCES');
    expect(sql.get('events_profile')).toBeUndefined();
    expect(sql.get('events_by_profile')).toContain('id >> 12');
    reader.close();
    // opened again, it is as it was left
    store = new Store(path);
    expect(store.eventsOf(store.profileByExternalId('a')!.id).map((e) => e.name)).toEqual(['signup', 'later']);
  });

  it('when an earlier build has opened it again since, drops its index and the rows of profiles it deleted', () => {
    const path = tempPath();
    store = new Store(path);
    const kept = store.createProfile({ externalId: 'kept' }).id;
    // the newest profile: SQLite gives its id to the next one made after it is deleted
    const gone = store.createProfile({ externalId: 'gone' }).id;
    store.insertEvents([event(gone, 'old'), event(kept, 'mine')]);
    store.insertPurchases([purchase(gone, 'p')]);
    store.close();
    // what an earlier build does: makes its index again, and deletes a profile trusting a foreign key
    const old = new Database(path);
    old.exec('CREATE INDEX IF NOT EXISTS events_profile ON events(profile_id); CREATE INDEX IF NOT EXISTS purchases_profile ON purchases(profile_id)');
    old.prepare('DELETE FROM profiles WHERE id = ?').run(gone);
    old.close();

    store = new Store(path);
    expect(store.counts()).toEqual({ profiles: 1, events: 1, purchases: 0 });
    expect(store.integrityCheck()).toBe('ok');
    // the deleted profile's id, given to someone new, brings none of its rows
    const fresh = store.createProfile({ externalId: 'fresh' }).id;
    expect(fresh).toBe(gone);
    expect(store.eventsOf(fresh)).toEqual([]);
    store.close();
    store = undefined;
    const reader = new Database(path, { readonly: true });
    expect(reader.prepare("SELECT name FROM sqlite_schema WHERE name IN ('events_profile', 'purchases_profile')").pluck().all()).toEqual([]);
    reader.close();
  });
});
