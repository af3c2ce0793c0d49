// Four `track upload --shard K/4` processes against one `track emulate` whose rate limit binds:
// how much of the limit they use together, and the busiest sliding second the emulator saw, with
// the budget shared in Redis (--rate-store) and with the static split (each shard at rate/4). The
// floor is one process sending the same file at the whole rate. Targets: at least 90% of the limit
// with --rate-store and 85% with the static split, and no second above the limit.
// Build first: npm run build && node bench/run.mjs shards
// Knobs: BENCH_SHARDS_ROWS (default 60,000), BENCH_SHARDS_LIMIT (requests a second, default 100).
// Needs Debian's redis-server (/usr/bin/redis-server, or TRACK_REDIS_SERVER) for the shared budget.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { writeCsv } from './csv-files.mjs';
import { startServer } from './track-run.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const CLI = join(ROOT, 'bin/track.js');
const ROWS = Number(process.env.BENCH_SHARDS_ROWS ?? 60_000);
const LIMIT = Number(process.env.BENCH_SHARDS_LIMIT ?? 100);
const SHARDS = 4;
const ITEMS = 25;
const KEY = 'shards';
const REDIS = process.env.TRACK_REDIS_SERVER ?? '/usr/bin/redis-server';

const freePort = () =>
  new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });

async function startRedis() {
  const port = await freePort();
  const proc = spawn(REDIS, ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: ['ignore', 'pipe', 'inherit'] });
  await new Promise((resolve, reject) => {
    let out = '';
    proc.stdout.on('data', (d) => {
      out += d;
      if (out.includes('Ready to accept connections')) resolve();
    });
    proc.on('exit', (code) => reject(new Error(`redis-server exited ${code}`)));
  });
  return { url: `redis://127.0.0.1:${port}`, stop: () => proc.kill('SIGKILL') };
}

function run(args) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, 'upload', ...args, '--api-key', KEY, '--quiet', '--json', '--no-ci-output'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    child.on('close', (code) => (code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`track upload exited ${code}: ${err}`))));
  });
}

/** Arrival times (ms) of the emulator's logged requests to /users/track since the log was cleared. */
async function arrivals(url) {
  const res = await fetch(`${url}/_track/requests?limit=1000000&path=/users/track`);
  const { requests } = await res.json();
  return requests.map((r) => Date.parse(r.time)).sort((a, b) => a - b);
}

/** The most arrivals in any window of one second. */
function busiest(times) {
  let most = 0;
  for (let i = 0, first = 0; i < times.length; i += 1) {
    while (times[i] - times[first] >= 1000) first += 1;
    most = Math.max(most, i - first + 1);
  }
  return most;
}

async function measure(label, emu, dir, argsOf, processes) {
  await fetch(`${emu.url}/_track/requests`, { method: 'DELETE' });
  const summaries = await Promise.all(Array.from({ length: processes }, (_, k) => run(argsOf(k + 1))));
  const times = await arrivals(emu.url);
  const limited = summaries.reduce((n, s) => n + s.delivery.rateLimited, 0);
  const seconds = (times.at(-1) - times[0]) / 1000 + 1 / LIMIT;
  const used = times.length / (seconds * LIMIT);
  return { label, requests: times.length, seconds, used, busiest: busiest(times), limited };
}

function line(r, target) {
  const goal = target === undefined ? '' : ` (target >= ${Math.round(target * 100)}%)`;
  return (
    `${r.label}: ${r.requests.toLocaleString('en-US')} requests in ${r.seconds.toFixed(1)} s; used ${(r.used * 100).toFixed(1)}% of the limit${goal}; ` +
    `busiest 1-s window ${r.busiest} (limit ${LIMIT}); 429s ${r.limited}`
  );
}

const dir = mkdtempSync(join(tmpdir(), 'track-shards-'));
const emu = await startServer([CLI, 'emulate', '--port', '0', '--api-key', KEY, '--rate-limit', `${LIMIT}/1s`, '--request-log', '1000000', '--quiet']);
try {
  const csv = join(dir, 'users.csv');
  await writeCsv(csv, 'external_id,plan,visits', ROWS, (i) => `u${(i * 7919) % ROWS},p${i % 3},${i}`);
  console.log(`${ROWS.toLocaleString('en-US')} rows, ${ITEMS} items a request, ${SHARDS} shards against one emulator limited to ${LIMIT} requests a second`);
  const common = (name) => [csv, '--url', emu.url, '--rate', String(LIMIT), '--max-total', String(ITEMS), '--restart', '--journal', join(dir, `${name}.journal`)];
  const floor = await measure('floor: one process at the whole rate', emu, dir, () => common('floor'), 1);
  console.log(line(floor));
  if (existsSync(REDIS)) {
    const redis = await startRedis();
    try {
      const shared = await measure(`${SHARDS} shards, --rate-store (one budget in Redis)`, emu, dir, (k) => [...common(`rs${k}`), '--shard', `${k}/${SHARDS}`, '--rate-store', redis.url], SHARDS);
      console.log(line(shared, 0.9));
    } finally {
      redis.stop();
    }
  } else console.log(`--rate-store skipped: no redis-server at ${REDIS}`);
  const split = await measure(`${SHARDS} shards, static split (${Math.floor(LIMIT / SHARDS)}/s each)`, emu, dir, (k) => [...common(`st${k}`), '--shard', `${k}/${SHARDS}`], SHARDS);
  console.log(line(split, 0.85));
} finally {
  await emu.stop();
  rmSync(dir, { recursive: true, force: true });
}
