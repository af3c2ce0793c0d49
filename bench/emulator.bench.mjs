// Emulator throughput and latency: 50-item requests from 8 keep-alive connections against the real
// CLI on a file database, beside the same rows inserted by a bare better-sqlite3 loop (the floor).
// New users: profiles created a second from attributes items naming users not seen before, beside
// a bare loop inserting the same profile rows into the emulator's own schema.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { Pool } from 'undici';
import { newServiceId } from '../dist/emulator/profile-rows.js';
import { SCHEMA } from '../dist/emulator/schema.js';
import { startPauseProbe, stolenMs } from './host.mjs';
import { cpuSecondsOf, startServer } from './track-run.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'track-bench-'));
const KEY = 'bench';
const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 2000);
const CONNECTIONS = 8;
const USERS = 10_000;
const PACED_RATE = 500;
/** Long enough that the 99th percentile rests on 75 requests, not on the few bursts of one short run. */
const PACED_SECONDS = Number(process.env.BENCH_PACED_SECONDS ?? 15);
const SLICE_SECONDS = 5;

function event(i) {
  return { external_id: `user-${i % USERS}`, name: 'bench_event', time: '2024-03-07T10:00:00Z', properties: { i, plan: 'pro' } };
}
function attribute(i) {
  return { external_id: `user-${i % USERS}`, first_name: 'Bench', visits: { inc: 1 }, plan: 'pro', score: i % 1000 };
}

const FIRST_NAMES = ['Ada', 'Grace', 'Alan', 'Edsger', 'Barbara', 'Donald', 'Margaret', 'Ken'];
const LAST_NAMES = ['lovelace', 'hopper', 'turing', 'dijkstra', 'liskov', 'knuth', 'hamilton'];
/** User i named for the first time, as a row of a six-column CSV of new users maps (emails spread over the index as people's are). */
function newUser(i) {
  const first = FIRST_NAMES[i % FIRST_NAMES.length];
  const email = `${first.toLowerCase()}.${LAST_NAMES[(i * 3) % LAST_NAMES.length]}${i}@example.com`;
  return { external_id: `new-${(1_000_000_000 + i * 37).toString(36)}`, first_name: first, email, home_city: 'Oslo', plan: 'pro', score: i % 1000 };
}

function startEmulator(db) {
  // BENCH_EMULATOR_NODE_ARGS: extra node flags for the emulator process, e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`
  const nodeArgs = (process.env.BENCH_EMULATOR_NODE_ARGS ?? '').split(' ').filter(Boolean);
  return startServer([...nodeArgs, join(ROOT, 'bin/track.js'), 'emulate', '--port', '0', '--db', db, '--api-key', KEY, '--rate-limit', '100000000/1s', '--quiet']);
}

/** Runs a phase and records the CPU time the server (`name`) and this load generator spent on it. */
async function measured(pid, requests, phase, name = 'emulator') {
  const emuBefore = cpuSecondsOf(pid);
  const selfBefore = process.cpuUsage();
  const result = await phase();
  const emuAfter = cpuSecondsOf(pid);
  const self = process.cpuUsage(selfBefore);
  const perRequest = (s) => ((s * 1000) / requests).toFixed(2);
  const emu = emuBefore === undefined || emuAfter === undefined ? 'n/a' : perRequest(emuAfter - emuBefore);
  return { result, cpu: `CPU per request: ${name} ${emu} ms, load generator ${perRequest((self.user + self.system) / 1e6)} ms` };
}

/**
 * The JSON texts of `count` requests of 50 items, numbered from `first`, built before a phase starts:
 * the figures are the emulator's, so the load generator only sends (as wrk or autocannon would).
 */
function bodies(make, key, first, count) {
  return Array.from({ length: count }, (_, r) => JSON.stringify({ [key]: Array.from({ length: 50 }, (_, j) => make((first + r) * 50 + j)) }));
}

async function post(pool, body) {
  const res = await pool.request({
    method: 'POST',
    path: '/users/track',
    headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
    body,
  });
  const text = await res.body.text();
  if (res.statusCode !== 201) throw new Error(`status ${res.statusCode}: ${text}`);
}

async function saturate(pool, texts) {
  let next = 0;
  const start = performance.now();
  await Promise.all(Array.from({ length: CONNECTIONS }, async () => {
    while (next < texts.length) await post(pool, texts[next++]);
  }));
  return (performance.now() - start) / 1000;
}

async function paced(pool, texts, rate) {
  /** Each request's [sent, answered], ms since the epoch. */
  const spans = [];
  const total = texts.length;
  const start = performance.now();
  const pending = [];
  for (let n = 0; n < total; n += 1) {
    const due = start + (n * 1000) / rate;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    const t0 = performance.now();
    pending.push(post(pool, texts[n]).then(() => spans.push([performance.timeOrigin + t0, performance.timeOrigin + performance.now()])));
  }
  await Promise.all(pending);
  const latencies = spans.map(([a, b]) => b - a);
  return { ...latencyFigures(spans.map(([a]) => a), latencies), achieved: total / ((performance.now() - start) / 1000), spans };
}

function percentile(sorted, q) {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))];
}

/** p50 and p99 of the latencies, and the p99 of each SLICE_SECONDS of them by the time they were sent. */
function latencyFigures(sentAt, latencies) {
  const first = Math.min(...sentAt);
  const slices = [];
  sentAt.forEach((t, i) => (slices[Math.floor((t - first) / (SLICE_SECONDS * 1000))] ??= []).push(latencies[i]));
  const sorted = [...latencies].sort((a, b) => a - b);
  return {
    p50: percentile(sorted, 0.5),
    p99: percentile(sorted, 0.99),
    sliceP99: slices.filter((slice) => slice.length > 0).map((slice) => percentile(slice.sort((a, b) => a - b), 0.99)),
  };
}

function latencyLine(figures) {
  const slices = figures.sliceP99.map((ms) => ms.toFixed(1)).join(', ');
  return `p50 ${figures.p50.toFixed(2)} ms, p99 ${figures.p99.toFixed(2)} ms (p99 of each ${SLICE_SECONDS} s: ${slices})`;
}

/** The bare loop: per 50 items, one transaction that finds or creates each profile and writes the row. */
function bareLoop(kind, name = kind) {
  const db = new Database(join(dir, `bare-${name}.sqlite`));
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.exec(`CREATE TABLE profiles (id INTEGER PRIMARY KEY, external_id TEXT UNIQUE, custom TEXT);
           CREATE TABLE events (id INTEGER PRIMARY KEY, profile_id INTEGER, name TEXT, time TEXT, properties TEXT)`);
  const find = db.prepare('SELECT id, custom FROM profiles WHERE external_id = ?');
  const insertProfile = db.prepare("INSERT INTO profiles (external_id, custom) VALUES (?, '{}')");
  const insertEvent = db.prepare('INSERT INTO events (profile_id, name, time, properties) VALUES (?, ?, ?, ?)');
  const update = db.prepare('UPDATE profiles SET custom = ? WHERE id = ?');
  const batch = db.transaction((items) => {
    for (const item of items) {
      let row = find.get(item.external_id);
      if (!row) row = { id: Number(insertProfile.run(item.external_id).lastInsertRowid), custom: '{}' };
      if (kind === 'events') insertEvent.run(row.id, item.name, item.time, JSON.stringify(item.properties));
      else update.run(JSON.stringify({ ...JSON.parse(row.custom), plan: item.plan, score: item.score }), row.id);
    }
  });
  const make = kind === 'events' ? event : attribute;
  return { run: (r) => batch(Array.from({ length: 50 }, (_, j) => make(r * 50 + j))), close: () => db.close() };
}

/**
 * The floor for new users: the rows the emulator stores for newUser(i), in its own schema and with
 * service_ids made as it makes them, 50 a transaction, each after a lookup of its external_id. The
 * emulator, committing the requests that arrive together in one transaction, may go past it.
 */
function bareProfilesFloor(requests) {
  const db = new Database(join(dir, 'bare-profiles.sqlite'));
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.exec(SCHEMA);
  const find = db.prepare('SELECT id FROM profiles WHERE external_id = ?').pluck();
  const insert = db.prepare(
    `INSERT INTO profiles (service_id, external_id, email, phone, fields, custom, push_import, language_from_api, created_at, updated_at, updated_seq)
     VALUES (?, ?, ?, NULL, ?, ?, 0, 0, ?, ?, ?)`,
  );
  let seq = 0;
  const batch = db.transaction((users) => {
    for (const u of users) {
      if (find.get(u.external_id) !== undefined) throw new Error(`${u.external_id} is not new`);
      const now = new Date().toISOString();
      const fields = JSON.stringify({ email: u.email, first_name: u.first_name, home_city: u.home_city });
      insert.run(newServiceId(), u.external_id, u.email, fields, JSON.stringify({ plan: u.plan, score: u.score }), now, now, (seq += 1));
    }
  });
  const start = performance.now();
  for (let r = 0; r < requests; r += 1) batch(Array.from({ length: 50 }, (_, j) => newUser(r * 50 + j)));
  const seconds = (performance.now() - start) / 1000;
  db.close();
  return (requests * 50) / seconds;
}

function bareFloor(kind, requests) {
  const bare = bareLoop(kind);
  const start = performance.now();
  for (let r = 0; r < requests; r += 1) bare.run(r);
  const seconds = (performance.now() - start) / 1000;
  bare.close();
  return (requests * 50) / seconds;
}

/**
 * The bare loop's own latency at the paced rate: after the same events as the emulator had, one
 * 50-event transaction due every 1/rate s, each timed from when it was due to when it committed
 * (so a transaction that starts late because the one before ran long counts its wait, as a request
 * queued behind another does).
 */
function bareLatency(requests, rate, count) {
  const bare = bareLoop('events', 'paced');
  for (let r = 0; r < requests; r += 1) bare.run(r);
  const sleeper = new Int32Array(new SharedArrayBuffer(4));
  const dueAt = [];
  const latencies = [];
  const start = performance.now();
  for (let n = 0; n < count; n += 1) {
    const due = start + (n * 1000) / rate;
    const wait = due - performance.now();
    if (wait > 0) Atomics.wait(sleeper, 0, 0, wait);
    bare.run(requests + n);
    dueAt.push(due);
    latencies.push(performance.now() - due);
  }
  bare.close();
  return latencyFigures(dueAt, latencies);
}

/** Slow runs of the probe less than 50 ms apart form one burst. */
function bursts(slow) {
  let count = 0;
  let lastEnd = Number.NEGATIVE_INFINITY;
  for (const [start, end] of [...slow].sort((a, b) => a[0] - b[0])) {
    if (start - lastEnd > 50) count += 1;
    lastEnd = end;
  }
  return count;
}

try {
  // the machine at rest first: what the probe sees with nothing of this benchmark running
  const restProbe = startPauseProbe();
  await restProbe.ready;
  await new Promise((r) => setTimeout(r, PACED_SECONDS * 1000));
  const atRest = await restProbe.stop();
  const emu = await startEmulator(join(dir, 'emulator.sqlite'));
  const pool = new Pool(emu.url, { connections: CONNECTIONS, pipelining: 1 });
  // warm up
  await saturate(pool, bodies(event, 'events', 0, 100));
  const eventTexts = bodies(event, 'events', 0, REQUESTS);
  const ev = await measured(emu.pid, REQUESTS, () => saturate(pool, eventTexts));
  const attributeTexts = bodies(attribute, 'attributes', 0, REQUESTS);
  const at = await measured(emu.pid, REQUESTS, () => saturate(pool, attributeTexts));
  const newUserTexts = bodies(newUser, 'attributes', 0, REQUESTS);
  const nu = await measured(emu.pid, REQUESTS, () => saturate(pool, newUserTexts));
  const pacedTexts = bodies(event, 'events', REQUESTS, PACED_RATE * PACED_SECONDS);
  const probe = startPauseProbe();
  await probe.ready;
  const stolenBefore = stolenMs();
  const paced500 = await measured(emu.pid, pacedTexts.length, () => paced(pool, pacedTexts, PACED_RATE));
  const stolen = stolenBefore === undefined ? undefined : stolenMs() - stolenBefore;
  const pauses = await probe.stop();
  const [evSeconds, atSeconds, nuSeconds, lat] = [ev.result, at.result, nu.result, paced500.result];
  await pool.close();
  await emu.stop();

  // the HTTP floor: the same client and requests against a server that only parses and answers,
  // warmed with as many requests as the emulator had before its paced phase
  const bare = await startServer([join(ROOT, 'bench/bare-http-server.mjs')]);
  const barePool = new Pool(bare.url, { connections: CONNECTIONS, pipelining: 1 });
  await saturate(barePool, [...bodies(event, 'events', 0, 100), ...eventTexts, ...attributeTexts]);
  const bareHttp = await measured(bare.pid, pacedTexts.length, () => paced(barePool, pacedTexts, PACED_RATE), 'server');
  await barePool.close();
  await bare.stop();

  const evRate = (REQUESTS * 50) / evSeconds;
  const atRate = (REQUESTS * 50) / atSeconds;
  const bareEv = bareFloor('events', REQUESTS);
  const bareAt = bareFloor('attributes', REQUESTS);
  const nuRate = (REQUESTS * 50) / nuSeconds;
  const bareNu = bareProfilesFloor(REQUESTS);
  const bareLat = bareLatency(REQUESTS, PACED_RATE, PACED_RATE * PACED_SECONDS);
  const f = (n) => Math.round(n).toLocaleString('en-US');
  console.log(`events:     ${f(evRate)} items/s over HTTP (target >= 50,000); bare better-sqlite3 loop ${f(bareEv)} items/s; ratio ${(evRate / bareEv).toFixed(2)}`);
  console.log(`attributes: ${f(atRate)} items/s over HTTP (target >= 30,000); bare better-sqlite3 loop ${f(bareAt)} items/s; ratio ${(atRate / bareAt).toFixed(2)}`);
  console.log(
    `new users:  ${f(nuRate)} profiles created/s over HTTP; bare better-sqlite3 loop inserting the same rows (its schema, a lookup each) ` +
      `${f(bareNu)} profiles/s; ratio ${(nuRate / bareNu).toFixed(2)}`,
  );
  console.log(`latency at ${PACED_RATE} requests/s over ${PACED_SECONDS} s (achieved ${lat.achieved.toFixed(0)}/s): ${latencyLine(lat)} (target p99 < 20 ms)`);
  console.log(`  bare better-sqlite3 loop, the same 50-event transactions due at ${PACED_RATE}/s: ${latencyLine(bareLat)}; p99 ratio ${(lat.p99 / bareLat.p99).toFixed(1)}`);
  console.log(
    `  bare node:http server (parses the JSON, answers, stores nothing), the same requests at ${PACED_RATE}/s: ${latencyLine(bareHttp.result)}; ` +
      `p99 ratio ${(lat.p99 / bareHttp.result.p99).toFixed(1)}; ${bareHttp.cpu}`,
  );
  if (stolen !== undefined) {
    // on a virtual machine the host may take the CPUs away for milliseconds at a time: each such
    // pause lands on every request waiting in it, so a tail figure is only as quiet as the host
    console.log(`  CPU taken by the host (steal) during the paced phase: ${stolen} ms over ${PACED_SECONDS} s`);
  }
  {
    // the requests over 20 ms beside the machine's own pauses, as a process doing nothing but CPU work saw them
    const overlapping = (spans) => spans.filter(([a, b]) => pauses.slow.some(([p, q]) => p <= b && q >= a)).length;
    const slowRequests = lat.spans.filter(([a, b]) => b - a >= 20);
    const quickRequests = lat.spans.filter(([a, b]) => b - a < 5);
    const first = Math.min(...lat.spans.map(([a]) => a));
    const last = Math.max(...lat.spans.map(([, b]) => b));
    const paused = pauses.slow.filter(([p, q]) => q >= first && p <= last);
    console.log(
      `  the machine's own pauses (a CPU-only probe process, ${pauses.usualMs.toFixed(2)} ms of work every 5 ms): p99 ${pauses.p99Ms.toFixed(2)} ms ` +
        `(${(pauses.p99Ms / pauses.usualMs).toFixed(1)}x its usual time); ${paused.length} slow runs in the paced phase; ` +
        `${overlapping(slowRequests)} of the ${slowRequests.length} requests over 20 ms overlapped one, ` +
        `${overlapping(quickRequests)} of the ${quickRequests.length} under 5 ms`,
    );
    console.log(
      `  the same probe over ${PACED_SECONDS} s with the machine at rest, before the emulator started: ${atRest.slow.length} slow runs in ${bursts(atRest.slow)} bursts ` +
        `(${bursts(paused)} bursts in the paced phase); p99 ${atRest.p99Ms.toFixed(2)} ms`,
    );
  }
  console.log(`  events ${ev.cpu}; attributes ${at.cpu}; new users ${nu.cpu}; paced ${paced500.cpu}`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
