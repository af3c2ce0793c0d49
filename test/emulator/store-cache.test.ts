// The store's external_id -> profile id cache, its partial-row updates, its order of updates and its checkpointer thread:
// none may change what is stored or found.
import Database from 'better-sqlite3';
import { copyFileSync, existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Store } from '../../src/emulator/store.js';
import { postJson, spawnEmulator } from '../helpers/cli.js';
import { testHandler, type TestHandler } from '../helpers/handler.js';

let h: TestHandler | undefined;
let store: Store | undefined;
const dirs: string[] = [];
afterEach(() => {
  h?.close();
  store?.close();
  h = undefined;
  store = undefined;
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const ev = (externalId: string, extra: Record<string, unknown> = {}) => ({ external_id: externalId, name: 'e', time: '2024-03-07T10:00:00Z', ...extra });

describe('external_id cache', () => {
  it('forgets a profile whose creating transaction rolled back', () => {
    store = new Store(':memory:');
    const s = store;
    expect(() =>
      s.transaction(() => {
        s.createProfile({ externalId: 'x' });
        expect(s.idByExternalId('x')).toBeDefined();
        throw new Error('abort');
      }),
    ).toThrow('abort');
    expect(s.idByExternalId('x')).toBeUndefined();
    expect(s.editableByExternalId('x')).toBeUndefined();
    const id = s.createProfile({ externalId: 'x' }).id;
    expect(s.idByExternalId('x')).toBe(id);
    s.insertEvents([{ profileId: id, name: 'e', time: '2024-03-07T10:00:00.000Z', appId: null, properties: null }]);
    expect(s.counts()).toEqual({ profiles: 1, events: 1, purchases: 0 });
  });

  it('forgets a profile whose savepoint rolled back while the outer transaction commits', () => {
    store = new Store(':memory:');
    const s = store;
    s.transaction(() => {
      const kept = s.createProfile({ externalId: 'kept' }).id;
      expect(() =>
        s.transaction(() => {
          s.createProfile({ externalId: 'undone' });
          throw new Error('abort');
        }),
      ).toThrow('abort');
      expect(s.idByExternalId('undone')).toBeUndefined();
      expect(s.idByExternalId('kept')).toBe(kept);
    });
    expect(s.counts().profiles).toBe(1);
    expect(s.idByExternalId('undone')).toBeUndefined();
  });

  it('answers events after a request that failed in the middle, without a stale profile id', () => {
    h = testHandler();
    const t = h;
    // a request whose apply fails after creating its profile: the profile and its id are undone
    const store = t.store as unknown as { insertEvents: Store['insertEvents'] };
    const insertEvents = store.insertEvents;
    store.insertEvents = () => {
      throw new Error('disk on fire');
    };
    expect(t.track({ events: [ev('late')] }).status).toBe(500);
    store.insertEvents = insertEvents;
    expect(t.store.counts().profiles).toBe(0);
    expect(t.track({ events: [ev('late')] })).toEqual({ status: 201, body: { message: 'success', events_processed: 1 } });
    const id = t.store.profileByExternalId('late')!.id;
    expect(t.store.eventsOf(id)).toHaveLength(1);
    expect(t.store.counts()).toMatchObject({ profiles: 1, events: 1 });
  });

  it('is not filled by a refused (400) request', () => {
    h = testHandler();
    const items = Array.from({ length: 51 }, (_, i) => ev(`u${i}`));
    expect(h.track({ events: items }).status).toBe(400);
    expect(h.store.idByExternalId('u0')).toBeUndefined();
    expect(h.track({ events: items.slice(0, 50) }).status).toBe(201);
    expect(h.store.counts()).toMatchObject({ profiles: 50, events: 50 });
  });

  it('keeps finding the same profile when it is also reached by email, alias-only users staying apart', () => {
    h = testHandler();
    const alias = { alias_name: 'a', alias_label: 'crm' };
    h.track({ attributes: [{ external_id: 'u', email: 'U@example.com', plan: 'free' }] });
    h.track({ events: [ev('u')] });
    // an item naming the user by email updates the profile holding the external ID
    h.track({ attributes: [{ email: 'u@example.com', plan: 'pro' }] });
    h.track({ attributes: [{ user_alias: alias, _update_existing_only: false, plan: 'alias' }] });
    h.track({ events: [ev('u'), { user_alias: alias, name: 'e', time: '2024-03-07T10:00:00Z' }], attributes: [{ external_id: 'u', seen: 1 }] });
    const u = h.user('u')!;
    expect(u.custom_attributes).toEqual({ plan: 'pro', seen: 1 });
    expect(u.custom_events).toEqual([expect.objectContaining({ name: 'e', count: 2 })]);
    const [aliasUser] = h.users({ user_aliases: [alias] });
    expect(aliasUser.external_id).toBeUndefined();
    expect(aliasUser.custom_attributes).toEqual({ plan: 'alias' });
    expect(aliasUser.custom_events).toEqual([expect.objectContaining({ name: 'e', count: 1 })]);
    expect(h.store.counts()).toMatchObject({ profiles: 2, events: 3 });
  });

  it('forgets deleted profiles', () => {
    store = new Store(':memory:');
    const id = store.createProfile({ externalId: 'x' }).id;
    expect(store.idByExternalId('x')).toBe(id);
    store.deleteProfiles([id]);
    expect(store.idByExternalId('x')).toBeUndefined();
  });

  it('looks afresh for a profile another connection deleted', () => {
    const dir = mkdtempSync(join(tmpdir(), 'track-cache-'));
    dirs.push(dir);
    store = new Store(join(dir, 'db.sqlite'));
    const first = store.createProfile({ externalId: 'x' }).id;
    const other = new Store(join(dir, 'db.sqlite'));
    other.deleteProfiles([first]);
    expect(store.editableByExternalId('x')).toBeUndefined();
    const second = other.createProfile({ externalId: 'x' }).id;
    other.close();
    expect(store.editableByExternalId('x')?.id).toBe(second);
  });

  it('sees profiles another connection created', () => {
    const dir = mkdtempSync(join(tmpdir(), 'track-cache-'));
    dirs.push(dir);
    store = new Store(join(dir, 'db.sqlite'));
    expect(store.idByExternalId('other')).toBeUndefined();
    const other = new Store(join(dir, 'db.sqlite'));
    const id = other.createProfile({ externalId: 'other' }).id;
    other.close();
    expect(store.idByExternalId('other')).toBe(id);
  });
});

describe('saving a profile read for an update', () => {
  it('keeps the email and phone indexes right when they change and when they do not', () => {
    h = testHandler();
    h.track({ attributes: [{ external_id: 'u', email: 'a@example.com', phone: '+14155552671', first_name: 'Ann' }] });
    expect(h.store.profilesSharing('email', 'a@example.com')).toHaveLength(1);
    h.track({ attributes: [{ external_id: 'u', plan: 'pro' }] });
    expect(h.store.profilesSharing('email', 'a@example.com')).toHaveLength(1);
    expect(h.store.profilesSharing('phone', '+14155552671')).toHaveLength(1);
    h.track({ attributes: [{ external_id: 'u', email: 'b@example.com', phone: null }] });
    expect(h.store.profilesSharing('email', 'a@example.com')).toEqual([]);
    expect(h.store.profilesSharing('email', 'b@example.com')).toHaveLength(1);
    expect(h.store.profilesSharing('phone', '+14155552671')).toEqual([]);
    const u = h.user('u')!;
    expect(u.email).toBe('b@example.com');
    expect(u.first_name).toBe('Ann');
    expect(u.custom_attributes).toEqual({ plan: 'pro' });
  });

  it('writes back the fields and attributes an item did not touch as they were', () => {
    h = testHandler();
    h.track({ attributes: [{ external_id: 'u', first_name: 'Ann', language: 'en', nested: { a: [1, 2], b: { c: 'x' } } }] });
    h.track({ attributes: [{ external_id: 'u', visits: { inc: 2 } }] });
    h.track({ attributes: [{ external_id: 'u', last_name: 'Lee' }] });
    const u = h.user('u')!;
    expect(u).toMatchObject({ first_name: 'Ann', last_name: 'Lee', language: 'en' });
    expect(u.custom_attributes).toEqual({ nested: { a: [1, 2], b: { c: 'x' } }, visits: 2 });
  });
});

describe('checkpointer thread', () => {
  it('moves committed pages into the database file while the store stays open', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'track-ckpt-'));
    dirs.push(dir);
    const path = join(dir, 'db.sqlite');
    store = new Store(path, { checkpointThread: true });
    const s = store;
    const before = statSync(path).size;
    s.transaction(() => {
      for (let i = 0; i < 2000; i += 1) s.createProfile({ externalId: `user-${i}` });
    });
    const deadline = Date.now() + 10_000;
    while (statSync(path).size <= before && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect(statSync(path).size).toBeGreaterThan(before);
    // what was committed is there for another connection, and the file is sound
    const reader = new Database(path, { readonly: true });
    expect(reader.prepare('SELECT COUNT(*) FROM profiles').pluck().get()).toBe(2000);
    reader.close();
    expect(s.integrityCheck()).toBe('ok');
  });
});

describe('stopping the emulator', () => {
  it('leaves everything in the database file itself on SIGTERM, the log checkpointed and removed', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'track-close-'));
    dirs.push(dir);
    const path = join(dir, 'db.sqlite');
    const emu = await spawnEmulator(['--db', path, '--api-key', 'k', '--rate-limit', '100000/1s', '--quiet']);
    try {
      for (let r = 0; r < 5; r += 1) {
        const res = await postJson(`${emu.url}/users/track`, 'k', { events: Array.from({ length: 50 }, (_, i) => ev(`u${r * 50 + i}`)) });
        expect(res.status).toBe(201);
      }
    } finally {
      emu.proc.kill('SIGTERM');
    }
    expect(await emu.exited).toBe(0);
    expect(existsSync(`${path}-wal`)).toBe(false);
    // the file alone, copied without its log, holds every acknowledged event
    copyFileSync(path, join(dir, 'copy.sqlite'));
    const copy = new Database(join(dir, 'copy.sqlite'), { readonly: true });
    expect(copy.prepare('SELECT COUNT(*) FROM events').pluck().get()).toBe(250);
    copy.close();
  });
});

describe('the order of updates', () => {
  it('continues after the file is opened again, though a store that only reads never looks for it', () => {
    const dir = mkdtempSync(join(tmpdir(), 'track-seq-'));
    dirs.push(dir);
    const path = join(dir, 'seq.sqlite');
    store = new Store(path);
    for (const externalId of ['older', 'newer']) store.createProfile({ externalId, email: 'shared@example.com' });
    store.close();
    // a reader (track inspect) writes nothing, and the next writer still knows where the order stands
    store = new Store(path);
    expect(store.profilesSharing('email', 'shared@example.com').map((p) => p.externalId)).toEqual(['newer', 'older']);
    store.close();
    store = new Store(path);
    const older = store.editableByExternalId('older')!;
    store.saveProfile(older);
    expect(store.profilesSharing('email', 'shared@example.com').map((p) => p.externalId)).toEqual(['older', 'newer']);
  });
});
