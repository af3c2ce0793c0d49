// The emulator through the real CLI binary, on port 0.
import Database from 'better-sqlite3';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Store } from '../../src/emulator/store.js';
import { postJson, runCli, spawnEmulator, tempDir } from '../helpers/cli.js';
import { until } from '../helpers/processes.js';

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => (tmp = tempDir()));
afterEach(() => tmp.cleanup());

const ev = (id: string, n: number) => ({ external_id: id, name: 'seed', time: '2024-01-01T00:00:00Z', properties: { n } });

describe('track emulate', () => {
  it('prints its base URL, serves, exits 0 on SIGTERM, and continues from the same file', async () => {
    const db = join(tmp.dir, 'e.sqlite');
    const first = await spawnEmulator(['--db', db, '--api-key', 'k']);
    expect(first.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    // the start line names the active batch limits
    expect(first.stdout).toContain('batch limits mau (at most 50 items a request across the arrays)');
    expect((await fetch(`${first.url}/health`)).status).toBe(200);
    const r = await postJson(`${first.url}/users/track`, 'k', { attributes: [{ external_id: 'u1', plan: 'pro' }] });
    expect(r.status).toBe(201);
    first.proc.kill('SIGTERM');
    expect(await first.exited).toBe(0);

    const second = await spawnEmulator(['--db', db, '--api-key', 'k']);
    const back = await postJson(`${second.url}/users/export/ids`, 'k', { external_ids: ['u1'] });
    expect(back.body.users[0].custom_attributes).toEqual({ plan: 'pro' });
    second.proc.kill('SIGINT');
    expect(await second.exited).toBe(0);
  });

  it('generates and prints a key when none is given, and refuses other keys', async () => {
    const emu = await spawnEmulator(['--db', ':memory:']);
    const key = /API key: (\S+)/.exec(emu.stdout)?.[1];
    expect(key).toMatch(/^[0-9a-f]{32}$/);
    expect((await postJson(`${emu.url}/users/track`, key!, { attributes: [] })).status).toBe(201);
    expect((await postJson(`${emu.url}/users/track`, 'guess', { attributes: [] })).status).toBe(401);
    emu.proc.kill('SIGTERM');
    expect(await emu.exited).toBe(0);
  });

  it('keeps every acknowledged request through kill -9', async () => {
    const db = join(tmp.dir, 'durable.sqlite');
    const emu = await spawnEmulator(['--db', db, '--api-key', 'k']);
    const sent = 120;
    for (let i = 0; i < sent; i += 1) {
      const r = await postJson(`${emu.url}/users/track`, 'k', { events: Array.from({ length: 10 }, (_, j) => ev(`u${j}`, i)) });
      expect(r.status).toBe(201);
    }
    emu.proc.kill('SIGKILL');
    await emu.exited;
    const store = new Store(db);
    try {
      expect(store.counts()).toEqual({ profiles: 10, events: sent * 10, purchases: 0 });
      expect(store.integrityCheck()).toBe('ok');
    } finally {
      store.close();
    }
  });

  it('killed -9 while requests are being written, keeps every acknowledged item once and nothing never sent', async () => {
    const db = join(tmp.dir, 'killed.sqlite');
    const emu = await spawnEmulator(['--db', db, '--api-key', 'k', '--quiet']);
    const acknowledged = new Set<number>();
    let sent = 0;
    let killed = false;
    // four connections writing events and purchases of 50 users, each item numbered, until the kill
    const writers = Array.from({ length: 4 }, async () => {
      while (!killed) {
        const numbers = Array.from({ length: 20 }, () => (sent += 1));
        const events = numbers.filter((n) => n % 5 !== 0).map((n) => ev(`u${n % 50}`, n));
        const purchases = numbers.filter((n) => n % 5 === 0).map((n) => ({ external_id: `u${n % 50}`, product_id: 'p', currency: 'USD', price: 1, time: '2024-01-01T00:00:00Z', properties: { n } }));
        try {
          if ((await postJson(`${emu.url}/users/track`, 'k', { events, purchases })).status === 201) for (const n of numbers) acknowledged.add(n);
        } catch {
          return; // the connection the kill broke
        }
      }
    });
    await until(() => acknowledged.size >= 2000, 20_000);
    killed = true;
    emu.proc.kill('SIGKILL');
    await emu.exited;
    await Promise.all(writers);
    const store = new Store(db);
    let stored: number[];
    try {
      expect(store.integrityCheck()).toBe('ok');
      const profiles = store.allProfiles();
      stored = profiles.flatMap((p) => [...store.eventsOf(p.id), ...store.purchasesOf(p.id)].map((x) => (x.properties as { n: number }).n));
      expect(store.counts().events + store.counts().purchases).toBe(stored.length);
    } finally {
      store.close();
    }
    expect(new Set(stored).size).toBe(stored.length);
    expect([...acknowledged].filter((n) => !stored.includes(n))).toEqual([]);
    expect(stored.filter((n) => n > sent)).toEqual([]);
    // track inspect reads the same, and what the export counts agrees
    const inspected = JSON.parse(runCli(['inspect', '--db', db]).stdout) as { events: unknown[]; purchase_log: unknown[]; custom_events: { count: number }[] }[];
    expect(inspected.reduce((n, p) => n + p.events.length + p.purchase_log.length, 0)).toBe(stored.length);
    expect(inspected.reduce((n, p) => n + p.custom_events.reduce((m, e) => m + e.count, 0), 0)).toBe(inspected.reduce((n, p) => n + p.events.length, 0));
  }, 60_000);

  it('takes explicit batch limits over the profile (--max-total, --max-per-array)', async () => {
    const items = (n: number) => Array.from({ length: n }, (_, i) => ev(`u${i}`, i));
    const total = await spawnEmulator(['--db', ':memory:', '--api-key', 'k', '--max-total', '10']);
    expect((await postJson(`${total.url}/users/track`, 'k', { events: items(10) })).status).toBe(201);
    const over = await postJson(`${total.url}/users/track`, 'k', { events: items(11) });
    expect(over.status).toBe(400);
    expect(over.body.message).toBe('request has 11 items; at most 10 are allowed across attributes, events and purchases');
    total.proc.kill('SIGTERM');
    expect(await total.exited).toBe(0);

    const perArray = await spawnEmulator(['--db', ':memory:', '--api-key', 'k', '--limits', 'legacy', '--max-per-array', '3']);
    expect((await postJson(`${perArray.url}/users/track`, 'k', { events: items(3), purchases: [] })).status).toBe(201);
    expect((await postJson(`${perArray.url}/users/track`, 'k', { events: items(4) })).body.message).toBe('events has 4 items; at most 3 are allowed in one array');
    perArray.proc.kill('SIGTERM');
    expect(await perArray.exited).toBe(0);
  });

  it.each([
    [['--max-total', '0'], /--max-total/],
    [['--max-per-array', 'many'], /--max-per-array/],
    [['--rate-limit', 'fast'], /--rate-limit/],
    [['--limits', 'huge'], /--limits/],
    [['--max-body', '0'], /--max-body/],
    [['--fail-rate', '2'], /--fail-rate/],
    [['--latency', 'slow'], /--latency/],
  ])('refuses %j with exit 2 and a message naming the option', (args, message) => {
    const r = runCli(['emulate', '--db', ':memory:', ...args]);
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(message);
  });
});

describe('track inspect and cleanup', () => {
  it('prints the profiles of a database with their events, filtered, and cleans up emptied push imports', async () => {
    const db = join(tmp.dir, 'i.sqlite');
    const emu = await spawnEmulator(['--db', db, '--api-key', 'k']);
    await postJson(`${emu.url}/users/track`, 'k', {
      attributes: [{ external_id: 'a', email: 'a@x.com' }, { push_token_import: true, push_tokens: [{ app_id: 'app', token: 't' }] }],
      events: [ev('a', 1), ev('b', 2)],
    });
    await postJson(`${emu.url}/users/track`, 'k', { attributes: [{ external_id: 'b', push_tokens: [{ app_id: 'app', token: 't' }] }] });
    emu.proc.kill('SIGTERM');
    await emu.exited;

    const all = runCli(['inspect', '--db', db]);
    expect(all.status).toBe(0);
    expect(JSON.parse(all.stdout)).toHaveLength(3);
    const one = JSON.parse(runCli(['inspect', '--db', db, '--email', 'A@X.com']).stdout);
    expect(one).toHaveLength(1);
    expect(one[0].external_id).toBe('a');
    expect(one[0].events.map((e: { properties: unknown }) => e.properties)).toEqual([{ n: 1 }]);

    const dry = runCli(['cleanup', '--db', db, '--dry-run']);
    expect(dry.stdout).toMatch(/^1 push-import profile/);
    expect(runCli(['cleanup', '--db', db]).stdout).toMatch(/deleted 1/);
    expect(JSON.parse(runCli(['inspect', '--db', db]).stdout)).toHaveLength(2);
  });

  it('says on stderr that it rebuilds a file an earlier version wrote, once', () => {
    const db = join(tmp.dir, 'earlier.sqlite');
    // the events table as the version before linked rows made it
    const old = new Store(db);
    old.createProfile({ externalId: 'a' });
    old.close();
    const raw = new Database(db);
    raw.exec('DROP TABLE events; CREATE TABLE events (id INTEGER PRIMARY KEY, profile_id INTEGER NOT NULL, name TEXT NOT NULL, time TEXT NOT NULL, app_id TEXT, properties TEXT)');
    raw.exec("CREATE INDEX events_by_profile ON events(id >> 12, profile_id); INSERT INTO events (profile_id, name, time) VALUES (1, 'signup', '2024-01-01T00:00:00Z')");
    raw.close();
    const first = runCli(['inspect', '--db', db]);
    expect(first.status).toBe(0);
    expect(first.stderr).toContain(`track: ${db} was written by an earlier version of track: rebuilding its events (1 row) once`);
    expect(first.stderr).toMatch(/rebuilt in \d+\.\d s\n$/);
    expect(JSON.parse(first.stdout)[0].events.map((e: { name: string }) => e.name)).toEqual(['signup']);
    const second = runCli(['inspect', '--db', db]);
    expect(second.stderr).toBe('');
    expect(second.stdout).toBe(first.stdout);
  });

  it('says which file is missing instead of creating one', () => {
    const missing = join(tmp.dir, 'nope.sqlite');
    const r = runCli(['inspect', '--db', missing]);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain(missing);
    expect(existsSync(missing)).toBe(false);
  });
});
