// The emulator as its database grows: 50-item requests of random attribute updates (2,000), then of
// events (8,000), each naming users picked at random, from 8 keep-alive connections against the real
// CLI, on a file of 10,000 profiles and on one of 1,000,000 (BENCH_SCALE_PROFILES sets the larger). Beside each,
// the floor: a bare better-sqlite3 loop making the same updates (50 to a transaction, each a lookup
// of its external_id and an UPDATE of the custom JSON) in a copy of the same file.
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { Pool } from 'undici';
import { cpuSecondsOf, startServer } from './track-run.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const { Store } = await import(join(ROOT, 'dist/emulator/store.js'));
const dir = mkdtempSync(join(tmpdir(), 'track-scale-bench-'));
const KEY = 'bench';
const REQUESTS = Number(process.env.BENCH_SCALE_REQUESTS ?? 2000);
/** Events requests: 400,000 events, past the 262,144 rows after which the store writes the heads of the newest ones. */
const EVENT_REQUESTS = Number(process.env.BENCH_SCALE_EVENT_REQUESTS ?? 8000);
const CONNECTIONS = 8;

let seed = 12345;
const random = () => (seed = (seed * 48271) % 2147483647) / 2147483647;

function seedProfiles(path, profiles) {
  const started = performance.now();
  const store = new Store(path);
  for (let start = 0; start < profiles; start += 100_000) {
    store.transaction(() => {
      for (let p = start; p < Math.min(profiles, start + 100_000); p += 1) {
        const profile = store.newProfile({ externalId: `user-${p}` });
        profile.custom = { plan: 'free', score: p % 1000 };
        store.saveProfile(profile);
      }
    });
  }
  store.close();
  return (performance.now() - started) / 1000;
}

const attribute = (profiles, i) => ({ external_id: `user-${Math.floor(random() * profiles)}`, plan: 'pro', score: i % 1000, visits: { inc: 1 } });
const event = (profiles, i) => ({ external_id: `user-${Math.floor(random() * profiles)}`, name: 'bench_event', time: '2024-03-07T10:00:00Z', properties: { i } });

function bodies(make, key, profiles, count) {
  return Array.from({ length: count }, (_, r) => JSON.stringify({ [key]: Array.from({ length: 50 }, (_, j) => make(profiles, r * 50 + j)) }));
}

/** Sends every body, 8 at a time; items/s, the latencies' p50 and p99, and the emulator's CPU per item. */
async function saturate(url, pid, texts) {
  const pool = new Pool(url, { connections: CONNECTIONS, pipelining: 1 });
  const latencies = [];
  let next = 0;
  const cpuBefore = cpuSecondsOf(pid);
  const start = performance.now();
  await Promise.all(Array.from({ length: CONNECTIONS }, async () => {
    while (next < texts.length) {
      const body = texts[next++];
      const sent = performance.now();
      const res = await pool.request({ method: 'POST', path: '/users/track', headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' }, body });
      const text = await res.body.text();
      if (res.statusCode !== 201) throw new Error(`status ${res.statusCode}: ${text}`);
      latencies.push(performance.now() - sent);
    }
  }));
  const seconds = (performance.now() - start) / 1000;
  const cpu = cpuSecondsOf(pid) - cpuBefore;
  await pool.close();
  latencies.sort((a, b) => a - b);
  const at = (q) => latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * q))];
  return { rate: (texts.length * 50) / seconds, p50: at(0.5), p99: at(0.99), cpuUs: (cpu * 1e6) / (texts.length * 50) };
}

/** The floor: the same random updates by a bare loop, 50 to a transaction, in a copy of the file. */
function bareUpdates(path, profiles, requests) {
  const copy = `${path}.bare`;
  copyFileSync(path, copy);
  const db = new Database(copy);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  const find = db.prepare('SELECT id, custom FROM profiles WHERE external_id = ?');
  const update = db.prepare('UPDATE profiles SET custom = ? WHERE id = ?');
  const batch = db.transaction((items) => {
    for (const item of items) {
      const row = find.get(item.external_id);
      update.run(JSON.stringify({ ...JSON.parse(row.custom), plan: item.plan, score: item.score }), row.id);
    }
  });
  const start = performance.now();
  for (let r = 0; r < requests; r += 1) batch(Array.from({ length: 50 }, (_, j) => attribute(profiles, r * 50 + j)));
  const rate = (requests * 50) / ((performance.now() - start) / 1000);
  db.close();
  return rate;
}

async function measure(profiles) {
  const path = join(dir, `profiles-${profiles}.sqlite`);
  const seeded = seedProfiles(path, profiles);
  const bare = bareUpdates(path, profiles, REQUESTS);
  const emu = await startServer([join(ROOT, 'bin/track.js'), 'emulate', '--port', '0', '--db', path, '--api-key', KEY, '--rate-limit', '100000000/1s', '--quiet']);
  try {
    await saturate(emu.url, emu.pid, bodies(attribute, 'attributes', profiles, 200)); // warm
    const attributes = await saturate(emu.url, emu.pid, bodies(attribute, 'attributes', profiles, REQUESTS));
    const events = await saturate(emu.url, emu.pid, bodies(event, 'events', profiles, EVENT_REQUESTS));
    return { profiles, seeded, bare, attributes, events };
  } finally {
    await emu.stop();
  }
}

const f = (n) => Math.round(n).toLocaleString('en-US');
const line = (r) => `${f(r.rate)} items/s, p50 ${r.p50.toFixed(1)} ms, p99 ${r.p99.toFixed(1)} ms, emulator CPU ${r.cpuUs.toFixed(1)} us/item`;
try {
  const sizes = [10_000, Number(process.env.BENCH_SCALE_PROFILES ?? 1_000_000)];
  const results = [];
  for (const profiles of sizes) {
    const r = await measure(profiles);
    results.push(r);
    console.log(`${f(profiles)} profiles (seeded in ${r.seeded.toFixed(1)} s):`);
    console.log(`  random attribute updates: ${line(r.attributes)}; bare better-sqlite3 loop ${f(r.bare)} items/s; ratio ${(r.attributes.rate / r.bare).toFixed(2)}`);
    console.log(`  random events:            ${line(r.events)}`);
  }
  const [small, big] = results;
  console.log(
    `${f(big.profiles)} against ${f(small.profiles)} profiles: attribute updates ${(big.attributes.rate / small.attributes.rate).toFixed(2)}x ` +
      `(the bare loop ${(big.bare / small.bare).toFixed(2)}x), events ${(big.events.rate / small.events.rate).toFixed(2)}x`,
  );
} finally {
  rmSync(dir, { recursive: true, force: true });
}
