// Events and purchases found by profile along its chain of rows (src/emulator/schema.ts), whose heads
// are written in sweeps (activity-heads.ts); deleted with their profile; kept whole, and linked, when
// a file an earlier build made (or opened since) is opened. The chains are checked against a plain
// search of the table after every step of random work: inserts, rollbacks, deletes, reopening.
import Database from 'better-sqlite3';
import fc from 'fast-check';
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
const purchase = (profileId: number, productId: string, quantity = 1) => ({
  profileId, productId, currency: 'USD', price: 1, quantity, time: TIME, appId: null, properties: null,
});

describe('activity by profile', () => {
  it("finds every one of a profile's events and purchases, in order, among other profiles' rows", () => {
    store = new Store(':memory:');
    const s = store;
    const ids = ['a', 'b', 'c'].map((externalId) => s.createProfile({ externalId }).id);
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
    expect(s.recentActivity(ids[1], 3).events.map((e) => e.id)).toEqual(events.slice(-3).map((e) => e.id).reverse());
    expect(s.recentActivity(ids[2], 3).counts).toEqual({ events: 3333, purchases: 3333, purchaseRows: 3333 });
    expect(s.integrityCheck()).toBe('ok');
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

  it("reports a row its profile's chain does not reach, and a link to another profile's row", () => {
    const path = tempPath();
    store = new Store(path);
    const s = store;
    const [a, b] = ['a', 'b'].map((externalId) => s.createProfile({ externalId }).id);
    s.insertEvents([event(a, 'e'), event(b, 'e'), event(a, 'e')]);
    expect(s.integrityCheck()).toBe('ok');
    s.close();
    const raw = new Database(path);
    raw.prepare('UPDATE events SET prev = NULL WHERE id = 3').run(); // a's chain now ends at row 3
    raw.close();
    store = new Store(path);
    expect(store.integrityCheck()).toBe("ok; 1 events or purchases off their profile's chain");
    store.close();
    const raw2 = new Database(path);
    raw2.prepare('UPDATE events SET prev = 2 WHERE id = 3').run(); // a's row 3 links to b's row 2
    raw2.close();
    store = new Store(path);
    expect(store.integrityCheck()).toMatch(/ok; [1-9]\d* events or purchases off their profile's chain/);
  });
});

describe('heads written in sweeps', () => {
  const SMALL = { tailRows: 20, slice: 3 };
  const rowsIn = (path: string, sql: string): unknown => {
    const raw = new Database(path, { readonly: true });
    try {
      return raw.prepare(sql).pluck().get();
    } finally {
      raw.close();
    }
  };

  it('keeps the heads past the mark in memory, writes them in slices once the tail is long, and all of them as it closes', () => {
    const path = tempPath();
    store = new Store(path, { sweep: SMALL });
    const s = store;
    const ids = Array.from({ length: 10 }, (_, i) => s.createProfile({ externalId: `p${i}` }).id);
    // 15 rows: under the tail, nothing written yet
    s.transaction(() => s.insertEvents(Array.from({ length: 15 }, (_, i) => event(ids[i % 10], `e${i}`))));
    expect(rowsIn(path, 'SELECT COUNT(*) FROM events_heads')).toBe(0);
    expect(rowsIn(path, "SELECT COUNT(*) FROM activity_marks WHERE name = 'events'")).toBe(0);
    // past the tail: a sweep of the 10 heads held begins, one slice of 3 a transaction
    s.transaction(() => s.insertEvents(Array.from({ length: 10 }, (_, i) => event(ids[i], `f${i}`))));
    expect(rowsIn(path, 'SELECT COUNT(*) FROM events_heads')).toBe(3);
    for (let t = 0; t < 3; t += 1) s.transaction(() => s.insertEvents([event(ids[0], `g${t}`)]));
    // the last slice ends the sweep: the mark is the last row it began with
    expect(rowsIn(path, 'SELECT COUNT(*) FROM events_heads')).toBe(10);
    expect(rowsIn(path, "SELECT through FROM activity_marks WHERE name = 'events'")).toBe(25);
    const before = ids.map((id) => s.eventsOf(id).map((e) => e.name));
    expect(before[0]).toEqual(['e0', 'e10', 'f0', 'g0', 'g1', 'g2']);
    // another store, as after a crash of this one: the rows past the mark (26 to 28) are read from the table
    const other = new Store(path, { sweep: SMALL });
    expect(ids.map((id) => other.eventsOf(id).map((e) => e.name))).toEqual(before);
    other.close(); // it added no rows: it writes nothing
    expect(rowsIn(path, "SELECT through FROM activity_marks WHERE name = 'events'")).toBe(25);
    // closed, the store that added them writes every head and moves the mark to the last row
    s.close();
    expect(rowsIn(path, "SELECT through FROM activity_marks WHERE name = 'events'")).toBe(28);
    expect(rowsIn(path, 'SELECT COUNT(*) FROM events_heads')).toBe(10);
    store = new Store(path, { sweep: SMALL });
    expect(ids.map((id) => store!.eventsOf(id).map((e) => e.name))).toEqual(before);
    expect(store.integrityCheck()).toBe('ok');
  });

  it('when the newest rows are deleted below the mark, the rows that take their ids are found after reopening', () => {
    const path = tempPath();
    store = new Store(path, { sweep: SMALL });
    const s = store;
    const [a, b] = ['a', 'b'].map((externalId) => s.createProfile({ externalId }).id);
    s.transaction(() => s.insertEvents(Array.from({ length: 15 }, () => event(a, 'a'))));
    // rows 16 to 25 are b's; the sweep they begin ends at once (2 heads): the mark is 25
    s.transaction(() => s.insertEvents(Array.from({ length: 10 }, () => event(b, 'b'))));
    expect(rowsIn(path, "SELECT through FROM activity_marks WHERE name = 'events'")).toBe(25);
    s.deleteProfiles([b]);
    // SQLite gives ids 16 and 17 again, below the mark written
    s.transaction(() => s.insertEvents([event(a, 'a 16'), event(a, 'a 17')]));
    expect(s.eventsOf(a).map((e) => e.id).slice(-3)).toEqual([15, 16, 17]);
    s.close();
    store = new Store(path, { sweep: SMALL });
    expect(store.eventsOf(a).map((e) => e.id)).toEqual(Array.from({ length: 17 }, (_, i) => i + 1));
    expect(store.integrityCheck()).toBe('ok');
  });

  it('a store that another connection wrote after writes nothing as it closes', () => {
    const path = tempPath();
    // `stale` added rows 1 to 3 and holds their heads (kept: 1, gone: 3), when another store deletes gone's rows
    const stale = new Store(path, { sweep: SMALL });
    const kept = stale.createProfile({ externalId: 'kept' }).id;
    const gone = stale.createProfile({ externalId: 'gone' }).id;
    stale.transaction(() => stale.insertEvents([event(kept, 'k 1'), event(gone, 'g 2'), event(gone, 'g 3')]));
    store = new Store(path, { sweep: SMALL });
    const s = store;
    s.deleteProfiles([gone]);
    // SQLite gives the profile's id to the next one, and the rows' ids 2 and 3 again
    const fresh = s.createProfile({ externalId: 'fresh' }).id;
    expect(fresh).toBe(gone);
    s.transaction(() => s.insertEvents([event(fresh, 'f 2'), event(kept, 'k 3')]));
    s.close();
    // closed last, `stale` must not write what it holds (kept: 1, and row 3 as fresh's) over the file's heads
    stale.close();
    store = new Store(path, { sweep: SMALL });
    expect(store.eventsOf(kept).map((e) => [e.id, e.name])).toEqual([[1, 'k 1'], [3, 'k 3']]);
    expect(store.eventsOf(fresh).map((e) => [e.id, e.name])).toEqual([[2, 'f 2']]);
    expect(store.integrityCheck()).toBe('ok');
  });

  it('after a rollback, rows that take the undone ids are not linked to the undone rows', () => {
    store = new Store(':memory:', { sweep: SMALL });
    const s = store;
    const [a, b] = ['a', 'b'].map((externalId) => s.createProfile({ externalId }).id);
    s.insertEvents([event(a, 'kept')]);
    expect(() =>
      s.transaction(() => {
        s.insertEvents([event(a, 'undone 1'), event(a, 'undone 2')]);
        throw new Error('abort');
      }),
    ).toThrow('abort');
    // SQLite gives the undone ids 2 and 3 again: to b's row, then to a's
    s.insertEvents([event(b, 'b 1'), event(a, 'a 2')]);
    expect(s.eventsOf(a).map((e) => [e.id, e.name])).toEqual([[1, 'kept'], [3, 'a 2']]);
    expect(s.eventsOf(b).map((e) => [e.id, e.name])).toEqual([[2, 'b 1']]);
    expect(s.integrityCheck()).toBe('ok');
  });

  it("reads the heads again when another connection deleted profiles, and the newest rows' ids are given again", () => {
    const path = tempPath();
    store = new Store(path, { sweep: SMALL });
    const s = store;
    const [a, b] = ['a', 'b'].map((externalId) => s.createProfile({ externalId }).id);
    s.transaction(() => s.insertEvents([event(a, 'a 1'), event(b, 'b 1'), event(b, 'b 2')]));
    // `track cleanup` beside a running emulator: another connection deletes b, whose rows were the newest
    const other = new Store(path, { sweep: SMALL });
    other.deleteProfiles([b]);
    other.close();
    s.transaction(() => s.insertEvents([event(a, 'a 2')]));
    expect(s.eventsOf(a).map((e) => [e.id, e.name])).toEqual([[1, 'a 1'], [2, 'a 2']]);
    expect(s.integrityCheck()).toBe('ok');
  });

  it('counts every event once a sweep moved the mark past some of them, open and reopened', () => {
    const path = tempPath();
    const open = (): Store => new Store(path, { sweep: { tailRows: 7, slice: 2 } });
    let s = open();
    const id = s.createProfile({ externalId: 'p0' }).id;
    for (let round = 0; round < 2; round += 1) s.transaction(() => s.insertEvents([1, 2, 3, 4].map((n) => event(id, `e${round}${n}`))));
    expect(s.counts()).toEqual({ profiles: 1, events: 8, purchases: 0 });
    s.close();
    s = open();
    expect(s.counts()).toEqual({ profiles: 1, events: 8, purchases: 0 });
    s.close();
  });

  it('matches a plain search of the table after any sequence of inserts, rollbacks, deletes and reopening', () => {
    // purchases of quantity 1 to 4, which count as that many (decisions.md); `older`: reopened as a file
    // the build before left, which kept no count of purchases
    const step = fc.oneof(
      fc.constant({ kind: 'older' as const }),
      fc.record({ kind: fc.constant('insert' as const), profiles: fc.array(fc.nat(5), { minLength: 1, maxLength: 12 }), table: fc.constantFrom(...(['events', 'purchases'] as const)) }),
      fc.record({ kind: fc.constant('rollback' as const), profiles: fc.array(fc.nat(5), { minLength: 1, maxLength: 6 }) }),
      fc.record({ kind: fc.constant('delete' as const), profile: fc.nat(5) }),
      fc.constant({ kind: 'reopen' as const }),
      fc.constant({ kind: 'crash' as const }),
    );
    fc.assert(
      fc.property(fc.array(step, { maxLength: 40 }), (steps) => {
        const path = tempPath();
        const open = (): Store => new Store(path, { sweep: { tailRows: 7, slice: 2 } });
        let s = open();
        // stores left as a crash leaves them, never used again: closed at the end, they must write nothing stale
        const crashed: Store[] = [];
        try {
          const profiles = new Map<number, number>();
          const profileOf = (n: number): number => {
            let id = profiles.get(n);
            if (id === undefined) profiles.set(n, (id = s.createProfile({ externalId: `p${n}` }).id));
            return id;
          };
          let n = 0;
          for (const st of steps) {
            if (st.kind === 'insert') {
              s.transaction(() => {
                if (st.table === 'events') s.insertEvents(st.profiles.map((p) => event(profileOf(p), `e${(n += 1)}`)));
                else s.insertPurchases(st.profiles.map((p) => purchase(profileOf(p), `x${(n += 1)}`, 1 + (n % 4))));
              });
            } else if (st.kind === 'rollback') {
              const ids = st.profiles.map(profileOf);
              try {
                s.transaction(() => {
                  s.insertEvents(ids.map((id) => event(id, 'undone')));
                  throw new Error('abort');
                });
              } catch {
                // the rows are undone
              }
            } else if (st.kind === 'delete') {
              const id = profiles.get(st.profile);
              if (id !== undefined) s.deleteProfiles([id]);
              profiles.delete(st.profile);
            } else if (st.kind === 'older') {
              s.close();
              const raw = new Database(path);
              raw.prepare("DELETE FROM activity_marks WHERE name LIKE '%:counted'").run();
              raw.close();
              s = open();
            } else {
              if (st.kind === 'reopen') s.close();
              else crashed.push(s);
              s = open();
            }
          }
          const matches = (store: Store): void => {
            const raw = new Database(path, { readonly: true });
            for (const id of profiles.values()) {
              expect(store.eventsOf(id).map((e) => e.id)).toEqual(raw.prepare('SELECT id FROM events WHERE profile_id = ? ORDER BY id').pluck().all(id));
              expect(store.purchasesOf(id).map((e) => e.id)).toEqual(raw.prepare('SELECT id FROM purchases WHERE profile_id = ? ORDER BY id').pluck().all(id));
              expect(store.eventSummary(id).map((e) => [e.name, e.count])).toEqual(
                raw.prepare('SELECT name, COUNT(*) FROM events WHERE profile_id = ? GROUP BY name ORDER BY name').raw().all(id),
              );
            }
            expect(store.counts()).toEqual(
              raw.prepare('SELECT (SELECT COUNT(*) FROM profiles) AS profiles, (SELECT COUNT(*) FROM events) AS events, (SELECT TOTAL(quantity) FROM purchases) AS purchases').get(),
            );
            raw.close();
            expect(store.integrityCheck()).toBe('ok');
          };
          matches(s);
          s.close();
          for (const old of crashed.splice(0)) old.close();
          s = open();
          matches(s);
        } finally {
          s.close();
          for (const old of crashed) old.close();
        }
      }),
      { numRuns: 80 },
    );
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

/** The activity tables as the build before chains made them: no prev, and rows indexed by (id >> 12, profile_id). */
const BLOCK_INDEX_SCHEMA = `
CREATE TABLE profiles (
  id INTEGER PRIMARY KEY, service_id TEXT NOT NULL UNIQUE, external_id TEXT UNIQUE, email TEXT, phone TEXT,
  fields TEXT NOT NULL DEFAULT '{}', custom TEXT NOT NULL DEFAULT '{}', push_import INTEGER NOT NULL DEFAULT 0,
  language_from_api INTEGER NOT NULL DEFAULT 0, created_at TEXT NOT NULL, updated_at TEXT NOT NULL, updated_seq INTEGER NOT NULL
);
CREATE TABLE events (id INTEGER PRIMARY KEY, profile_id INTEGER NOT NULL, name TEXT NOT NULL, time TEXT NOT NULL, app_id TEXT, properties TEXT);
CREATE INDEX events_by_profile ON events(id >> 12, profile_id);
CREATE TABLE purchases (
  id INTEGER PRIMARY KEY, profile_id INTEGER NOT NULL, product_id TEXT NOT NULL, currency TEXT NOT NULL, price REAL NOT NULL,
  quantity INTEGER NOT NULL, time TEXT NOT NULL, app_id TEXT, properties TEXT
);
CREATE INDEX purchases_by_profile ON purchases(id >> 12, profile_id);
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
    const addEvent = old.prepare('INSERT INTO events (id, profile_id, name, time) VALUES (?, ?, ?, ?)');
    addEvent.run(8, 2, 'open', TIME);
    addEvent.run(9000, 2, 'login', TIME);
    addEvent.run(9500, 1, 'login', TIME);
    old.prepare("INSERT INTO purchases (id, profile_id, product_id, currency, price, quantity, time) VALUES (3, 2, 'p', 'USD', 9.5, 2, ?)").run(TIME);
    old.close();

    store = new Store(path);
    const a = store.profileByExternalId('a')!.id;
    const b = store.profileByExternalId('b')!.id;
    expect(store.eventsOf(a)).toEqual([
      { id: 7, profileId: a, name: 'signup', time: TIME, appId: 'app', properties: { k: 1 } },
      { id: 9500, profileId: a, name: 'login', time: TIME, appId: null, properties: null },
    ]);
    expect(store.eventsOf(b).map((e) => e.id)).toEqual([8, 9000]);
    expect(store.purchasesOf(b)).toEqual([
      { id: 3, profileId: b, productId: 'p', currency: 'USD', price: 9.5, quantity: 2, time: TIME, appId: null, properties: null },
    ]);
    expect(store.integrityCheck()).toBe('ok');
    // new rows follow the old ones, and a profile deleted takes its rows with it
    expect(store.insertEvents([event(a, 'later')])).toBe(9501);
    store.deleteProfiles([b]);
    expect(store.counts()).toEqual({ profiles: 1, events: 3, purchases: 0 });
    store.close();
    store = undefined;

    const reader = new Database(path, { readonly: true });
    const sql = reader.prepare<[string], string>('SELECT sql FROM sqlite_schema WHERE name = ?').pluck();
    expect(sql.get('events')).not.toContain('REFERENCES');
    expect(sql.get('purchases')).not.toContain('REFERENCES');
    expect(sql.get('events')).toContain('prev INTEGER');
    expect(reader.prepare("SELECT name FROM sqlite_schema WHERE type = 'index' AND tbl_name IN ('events', 'purchases')").pluck().all()).toEqual([]);
    reader.close();
    // opened again, it is as it was left
    store = new Store(path);
    expect(store.eventsOf(store.profileByExternalId('a')!.id).map((e) => e.name)).toEqual(['signup', 'login', 'later']);
  });

  it('opens a file the build before chains made (rows in blocks of 4,096 by id), every row linked and found', () => {
    const path = tempPath();
    const old = new Database(path);
    old.pragma('journal_mode = WAL');
    old.exec(BLOCK_INDEX_SCHEMA);
    const addProfile = old.prepare("INSERT INTO profiles (service_id, external_id, created_at, updated_at, updated_seq) VALUES (?, ?, 'x', 'x', 1)");
    for (const name of ['a', 'b', 'c']) addProfile.run(`s-${name}`, name);
    const addEvent = old.prepare('INSERT INTO events (profile_id, name, time) VALUES (?, ?, ?)');
    old.transaction(() => {
      for (let i = 0; i < 10_000; i += 1) addEvent.run((i % 3) + 1, `e${i}`, TIME);
    })();
    old.close();

    // the one-off rebuild is said as it begins and as it ends, never done silently
    const notes: string[] = [];
    store = new Store(path, { note: (line) => notes.push(line) });
    expect(notes).toHaveLength(2);
    expect(notes[0]).toBe(`${path} was written by an earlier version of track: rebuilding its events (10,000 rows) and purchases (0 rows) once, for this version (a few seconds a million rows)`);
    expect(notes[1].startsWith(`${path}: rebuilt in `)).toBe(true);
    expect(notes[1]).toMatch(/ \d+\.\d s$/);
    const s = store;
    const [a, b, c] = ['a', 'b', 'c'].map((externalId) => s.profileByExternalId(externalId)!.id);
    expect(s.eventsOf(b).map((e) => e.id)).toEqual(Array.from({ length: 3333 }, (_, i) => 3 * i + 2));
    expect(s.eventSummary(a).map((x) => `${x.name} ${x.count}`).sort()).toEqual(Array.from({ length: 3334 }, (_, i) => `e${3 * i} 1`).sort());
    expect(s.recentActivity(a, 2).counts).toEqual({ events: 3334, purchases: 0, purchaseRows: 0 });
    expect(s.recentActivity(c, 2).events.map((e) => e.name)).toEqual(['e9998', 'e9995']);
    expect(s.integrityCheck()).toBe('ok');
    // the next row follows the last, linked to c's newest
    expect(s.insertEvents([event(c, 'next')])).toBe(10_001);
    expect(s.recentActivity(c, 2).events.map((e) => e.name)).toEqual(['next', 'e9998']);
    s.close();
    store = undefined;
    // rebuilt once: opened again, nothing to say
    const again: string[] = [];
    new Store(path, { note: (line) => again.push(line) }).close();
    expect(again).toEqual([]);
    const reader = new Database(path, { readonly: true });
    expect(reader.prepare("SELECT name FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'events'").pluck().all()).toEqual([]);
    expect(reader.prepare('SELECT COUNT(*) FROM events_heads').pluck().get()).toBe(3);
    expect(reader.prepare("SELECT through FROM activity_marks WHERE name = 'events'").pluck().get()).toBe(10_001);
    reader.close();
  });

  it('when the build before has opened it since and added rows, links them too', () => {
    const path = tempPath();
    store = new Store(path);
    const a = store.createProfile({ externalId: 'a' }).id;
    const b = store.createProfile({ externalId: 'b' }).id;
    store.insertEvents([event(a, 'mine 1'), event(b, 'theirs'), event(a, 'mine 2')]);
    store.close();
    // what the build before does on open: makes its index again; then it adds rows that name no prev
    const old = new Database(path);
    old.exec('CREATE INDEX IF NOT EXISTS events_by_profile ON events(id >> 12, profile_id)');
    old.prepare("INSERT INTO events (profile_id, name, time) VALUES (?, 'added', ?)").run(a, TIME);
    old.close();

    store = new Store(path);
    expect(store.eventsOf(a).map((e) => e.name)).toEqual(['mine 1', 'mine 2', 'added']);
    expect(store.integrityCheck()).toBe('ok');
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

    const notes: string[] = [];
    store = new Store(path, { note: (line) => notes.push(line) });
    expect(notes[0]).toContain('rebuilding its events (2 rows) and purchases (1 row) once');
    // the deleted profile's event and purchase are left out, and said to be
    expect(notes[1]).toMatch(/: rebuilt in \d+\.\d s; 2 rows of profiles no longer in the file left out$/);
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
