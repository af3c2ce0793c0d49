// Export of big profiles beside /health: one POST /users/export/ids of 50 identifiers whose profiles
// hold 250,000 custom attributes each must not hold other requests (decisions.md "Reading back"). The
// figure is how much longer GET /health takes while the export is answered than at rest (the floor,
// measured in the same run); the goal is under 100 ms. Two cases: 50 copies of one profile's id
// (looked up once), and 50 distinct profiles of that size (about 300 MB of answer).
//
// Then the export against the size of the events table: the same 50 profiles, each with the same
// 20 events and 2 purchases, exported from a database of 10,000 events and one of 3,000,000 (both
// with 100,000 other profiles; BENCH_EXPORT_EVENTS sets the larger), beside the floor: the same
// answer from a database holding only those 50 profiles and their rows. The goal: the 3M export
// within 2x the 10k one. The three emulators run at once and are asked in turn, so a slow moment of
// the machine falls on all three alike. The same for the web view's profile page of one target
// (GET /_track/?profile=...) and for what `track inspect --external-id` does for one target once
// started (open the file, read the profile, close it).
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { request } from 'undici';

import { seedActivity, targetIds } from './activity-db.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const { Store } = await import(join(ROOT, 'dist/emulator/store.js'));
const { inspectProfiles } = await import(join(ROOT, 'dist/emulator/inspect.js'));
const dir = mkdtempSync(join(tmpdir(), 'track-export-bench-'));
const KEY = 'bench';
const ATTRIBUTES = 250_000;
const PROFILES = 50;

function seed(db) {
  const started = performance.now();
  const custom = {};
  for (let i = 0; i < ATTRIBUTES; i += 1) custom[`attribute_${i}`] = `value-${i}`;
  const store = new Store(db);
  store.transaction(() => {
    for (let p = 0; p < PROFILES; p += 1) {
      const profile = store.createProfile({ externalId: `big-${p}` });
      profile.custom = custom;
      store.saveProfile(profile);
    }
  });
  const bytes = JSON.stringify(custom).length;
  store.close();
  globalThis.gc?.(); // the seed's garbage is not collected inside the figures
  return { ms: performance.now() - started, bytes };
}

async function startEmulator(db) {
  const proc = spawn(process.execPath, [join(ROOT, 'bin/track.js'), 'emulate', '--port', '0', '--db', db, '--api-key', KEY, '--quiet'], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const url = await new Promise((resolve, reject) => {
    let out = '';
    proc.stdout.on('data', (chunk) => {
      out += chunk;
      const m = /http:\/\/[^\s)]+/.exec(out);
      if (m) resolve(m[0]);
    });
    proc.once('exit', (code) => reject(new Error(`emulator exited ${code}`)));
  });
  return { proc, url };
}

async function health(url) {
  const started = performance.now();
  const res = await request(`${url}/health`);
  await res.body.text();
  return performance.now() - started;
}

function percentile(values, p) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

/** /health latencies, one after another with 5 ms between, until `until` settles. */
async function pollHealth(url, until) {
  const times = [];
  let done = false;
  void until.finally(() => (done = true));
  while (!done) {
    times.push(await health(url));
    await new Promise((r) => setTimeout(r, 5));
  }
  return times;
}

/** The export, read in a worker thread: reading 400 MB must not slow this thread's /health timings. */
function exportOnce(url, ids) {
  const code = `
    const { parentPort, workerData } = require('node:worker_threads');
    (async () => {
      const started = performance.now();
      const res = await fetch(workerData.url + '/users/export/ids', {
        method: 'POST',
        headers: { authorization: 'Bearer ${KEY}', 'content-type': 'application/json' },
        body: JSON.stringify({ external_ids: workerData.ids }),
      });
      let bytes = 0;
      for await (const chunk of res.body) bytes += chunk.length;
      parentPort.postMessage({ status: res.status, bytes, ms: performance.now() - started });
    })();
  `;
  const worker = new Worker(code, { eval: true, workerData: { url, ids } });
  return new Promise((resolve, reject) => {
    worker.once('message', (result) => {
      void worker.terminate();
      resolve(result);
    });
    worker.once('error', reject);
  });
}

/** One GET of the web view's profile page: its wall time in ms, its answer checked. */
async function timedProfilePage(url, serviceId) {
  const started = performance.now();
  const res = await request(`${url}/_track/?profile=${encodeURIComponent(serviceId)}`, { headers: { authorization: `Bearer ${KEY}` } });
  const page = await res.body.text();
  const ms = performance.now() - started;
  if (res.statusCode !== 200 || !page.includes('Events (20)')) throw new Error(`profile page answered ${res.statusCode} without its 20 events`);
  return ms;
}

/**
 * What `track inspect --external-id` does past its start, in this process: open the file, read the
 * profile with its events and purchases, close; its wall time in ms, its answer checked.
 */
function timedInspect(db, externalId) {
  const started = performance.now();
  const store = new Store(db);
  const [profile] = inspectProfiles(store, { externalId });
  store.close();
  const ms = performance.now() - started;
  if (profile.events.length !== 20) throw new Error(`inspect found ${profile.events.length} events, not 20`);
  return ms;
}

/** p50 and p99 of each server's `key` times, and the largest against the middle size. */
function report(what, servers, key, decimals = 2) {
  const [floor, small, big] = servers.map((s) => ({ label: s.label, p50: percentile(s[key], 50), p99: percentile(s[key], 99) }));
  for (const s of [floor, small, big]) console.log(`${what}, ${s.label}: p50 ${s.p50.toFixed(decimals)} ms, p99 ${s.p99.toFixed(decimals)} ms (p50 ${(s.p50 / floor.p50).toFixed(2)}x the floor)`);
  console.log(`${what} with ${big.label} against ${small.label}: p50 ${(big.p50 / small.p50).toFixed(2)}x, p99 ${(big.p99 / small.p99).toFixed(2)}x (goal < 2x)`);
}

/** One export of the target ids: its wall time in ms, its answer checked. */
async function timedExport(url, ids) {
  const started = performance.now();
  const res = await request(`${url}/users/export/ids`, {
    method: 'POST',
    headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
    body: JSON.stringify({ external_ids: ids }),
  });
  const body = await res.body.json();
  const ms = performance.now() - started;
  if (res.statusCode !== 201 || body.users.length !== ids.length) throw new Error(`export answered ${res.statusCode} with ${body.users?.length} users`);
  return { ms, events: body.users.reduce((n, u) => n + u.custom_events.reduce((m, e) => m + e.count, 0), 0) };
}

async function exportAgainstEvents() {
  const larger = Number(process.env.BENCH_EXPORT_EVENTS ?? 3_000_000);
  const sizes = [['floor (the targets alone)', { profiles: 0, events: 1_000 }], ['10,000 events', { profiles: 100_000, events: 10_000 }], [`${larger.toLocaleString('en')} events`, { profiles: 100_000, events: larger }]];
  const servers = [];
  try {
    for (const [label, size] of sizes) {
      const path = join(dir, `events-${size.events}.sqlite`);
      const { seconds, counts } = seedActivity(path, size);
      console.log(`${label}: seeded ${counts.profiles.toLocaleString('en')} profiles, ${counts.events.toLocaleString('en')} events, ${counts.purchases.toLocaleString('en')} purchases in ${seconds.toFixed(1)} s`);
      const store = new Store(path);
      const serviceId = store.profileByExternalId(targetIds()[0]).serviceId;
      store.close();
      servers.push({ label, path, serviceId, ...(await startEmulator(path)), times: [], pages: [], inspects: [] });
    }
    globalThis.gc?.();
    const ids = targetIds();
    const ROUNDS = Number(process.env.BENCH_EXPORT_ROUNDS ?? 200);
    for (let round = -20; round < ROUNDS; round += 1) {
      for (const server of servers) {
        const { ms, events } = await timedExport(server.url, ids);
        if (events !== 1_000) throw new Error(`${server.label}: the export counts ${events} events of the targets, not 1,000`);
        const page = await timedProfilePage(server.url, server.serviceId);
        if (round >= 0) server.times.push(ms); // the first 20 rounds warm up
        if (round >= 0) server.pages.push(page);
      }
    }
    const INSPECTS = Number(process.env.BENCH_EXPORT_INSPECTS ?? 50);
    for (let round = 0; round < INSPECTS; round += 1) {
      for (const server of servers) server.inspects.push(timedInspect(server.path, ids[round % ids.length]));
    }
    report(`export of ${ids.length} ids`, servers, 'times');
    report('the web view\'s profile page of one target', servers, 'pages');
    report('track inspect --external-id of one target (past its start)', servers, 'inspects');
  } finally {
    for (const server of servers) {
      server.proc.kill('SIGTERM');
      await new Promise((r) => server.proc.once('exit', r));
    }
  }
}

await exportAgainstEvents();
if (process.env.BENCH_EXPORT_BIG === '0') {
  rmSync(dir, { recursive: true, force: true });
  process.exit(0);
}
const db = join(dir, 'big.sqlite');
const seeded = seed(db);
console.log(`seeded ${PROFILES} profiles of ${ATTRIBUTES.toLocaleString('en')} attributes (${(seeded.bytes / 1e6).toFixed(1)} MB of JSON each) in ${(seeded.ms / 1000).toFixed(1)} s`);
const { proc, url } = await startEmulator(db);
try {
  for (let i = 0; i < 20; i += 1) await health(url); // warm
  const rest = [];
  for (let i = 0; i < 200; i += 1) {
    rest.push(await health(url));
    await new Promise((r) => setTimeout(r, 5));
  }
  const floor = { p50: percentile(rest, 50), p99: percentile(rest, 99), max: Math.max(...rest) };
  console.log(`GET /health at rest: p50 ${floor.p50.toFixed(2)} ms, p99 ${floor.p99.toFixed(2)} ms, max ${floor.max.toFixed(2)} ms (the floor)`);
  const cases = [
    ['50 copies of one big profile id', Array.from({ length: PROFILES }, () => 'big-0')],
    [`${PROFILES} distinct big profiles`, Array.from({ length: PROFILES }, (_, p) => `big-${p}`)],
  ];
  for (const [label, ids] of cases) {
    const running = exportOnce(url, ids);
    const during = await pollHealth(url, running);
    const result = await running;
    const max = Math.max(...during);
    console.log(
      `${label}: export ${result.status}, ${(result.bytes / 1e6).toFixed(1)} MB in ${(result.ms / 1000).toFixed(2)} s; ` +
        `GET /health meanwhile (${during.length} requests): p50 ${percentile(during, 50).toFixed(2)} ms, p99 ${percentile(during, 99).toFixed(2)} ms, ` +
        `max ${max.toFixed(2)} ms; max over the floor's max ${(max - floor.max).toFixed(1)} ms (goal < 100 ms)`,
    );
  }
} finally {
  proc.kill('SIGTERM');
  await new Promise((r) => proc.once('exit', r));
  rmSync(dir, { recursive: true, force: true });
}
