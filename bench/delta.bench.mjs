// `track upload --delta` end to end: the real CLI reading a generated six-column attributes CSV and
// delivering it, unpaced, to a loopback server (a child process) that answers 201 at once and can
// record the bodies it gets. The users' ids come in two orders: shuffled (as real exports have them:
// UUIDs, a CRM's own order) and sorted. Figures beside floors measured in the same run, alternating:
//   1. the first --delta run (an empty state) against the same upload without --delta (target: at
//      most 1.3x), and the state's bytes per user (target: under 120)
//   2. the unchanged re-upload with --delta against the dry run of the same file (target: at most 2x,
//      0 requests)
//   3. 1% of the cells changed: exactly those attributes sent, in the fewest requests (50 items each)
//   and the peak RSS of the --delta runs (target: under 250 MB).
// With BENCH_10M=1, the same first run and unchanged re-upload of 10,000,000 shuffled rows, once
// each, against the 1,000,000-row ones (target: the first run within 11x in time).
// Build first: npm run build && node bench/run.mjs delta
// Knobs: BENCH_ROWS (default 1,000,000), BENCH_RUNS (default 2), BENCH_ORDER (shuffled,sorted),
// BENCH_10M=1, BENCH_PACED=0 (leave out the run at the default rate, 20 s a run for a million rows),
// BENCH_CLI (another build's bin/track.js, to compare before and after).
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { userIds, writeUsersCsv } from './csv-files.mjs';
import { stolenMs } from './host.mjs';
import { runTrack, startServerChild, writeUsageHook } from './track-run.mjs';

const HERE = fileURLToPath(import.meta.url);
const ROWS = Number(process.env.BENCH_ROWS ?? 1_000_000);
const RUNS = Number(process.env.BENCH_RUNS ?? 2);
const ORDERS = (process.env.BENCH_ORDER ?? 'shuffled,sorted').split(',');
const BIG_ROWS = 10_000_000;
const COLUMNS = ['external_id', 'first_name', 'email', 'plan', 'visits', 'zip'];
const RSS_TARGET_MB = 250;

/** The loopback server: counts items by their external_id key; in record mode keeps every body too. */
function server() {
  let items = 0;
  let requests = 0;
  let bodies = [];
  let record = false;
  const KEY = Buffer.from('"external_id":');
  const httpServer = createServer((req, res) => {
    const chunks = [];
    req.on('data', (chunk) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      let count = 0;
      for (let at = body.indexOf(KEY); at !== -1; at = body.indexOf(KEY, at + KEY.length)) count += 1;
      items += count;
      requests += 1;
      if (record) bodies.push(body.toString('utf8'));
      const answer = `{"message":"success","attributes_processed":${count}}`;
      res.writeHead(201, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(answer) });
      res.end(answer);
    });
  });
  httpServer.keepAliveTimeout = 30_000;
  process.on('message', (message) => {
    if (message === 'record') record = true;
    if (message === 'take') {
      process.send({ taken: { items, requests, bodies } });
      items = 0;
      requests = 0;
      bodies = [];
      record = false;
    }
    if (message === 'exit') httpServer.close(() => process.exit(0));
  });
  httpServer.listen(0, '127.0.0.1', () => process.send({ port: httpServer.address().port }));
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const n = (value) => Math.round(value).toLocaleString('en-US');
const s = (ms) => `${(ms / 1000).toFixed(2)} s`;
const mb = (kb) => `${Math.round(kb / 1024)} MB`;

/** Runs of `track upload` of one file to the bench's server, each a new upload (no journal refuses it). */
function uploader(dir, server, rssHook) {
  const journal = join(dir, 'bench.journal');
  const state = join(dir, 'state.sqlite');
  const upload = (file, ...extra) => {
    rmSync(journal, { force: true });
    return runTrack(rssHook, ['upload', file, '--url', server.url, '--api-key', 'bench-key-0000', '--quiet', '--rate', '1000000', '--concurrency', '16', '--journal', journal, ...extra]);
  };
  const removeState = () => ['', '-wal', '-shm'].forEach((suffix) => rmSync(`${state}${suffix}`, { force: true }));
  return { upload, state, removeState, journal };
}

/** The figures of one order of ids; false in `ok` when a target is missed or the server got the wrong items. */
async function benchOrder(order, { dir, server, rssHook }) {
  const { take } = server;
  const { upload, state, removeState, journal } = uploader(dir, server, rssHook);
  const file = join(dir, `users-${order}.csv`);
  const idOf = userIds(ROWS, order === 'shuffled');
  await writeUsersCsv(file, ROWS, undefined, idOf);
  console.log(`\n-- ids ${order}: ${n(ROWS)} rows, six columns, ${(statSync(file).size / 1e6).toFixed(1)} MB; ${RUNS} runs of each, alternating; steal before: ${stolenMs() ?? 'n/a'} ms`);
  let ok = true;
  let rss = 0;

  // 1. the first --delta run against the same upload without it
  const plain = [];
  const first = [];
  // CPU seconds of each run (all threads): on a machine of few cores, the wall ratio follows theirs
  const plainCpu = [];
  const firstCpu = [];
  for (let run = 0; run < RUNS; run += 1) {
    const p = await upload(file);
    plain.push(p.wallMs);
    plainCpu.push(p.cpuMs);
    await take();
    removeState();
    const r = await upload(file, '--delta', '--state', state);
    first.push(r.wallMs);
    firstCpu.push(r.cpuMs);
    rss = Math.max(rss, r.maxRssKb);
    const got = await take();
    if (got.items !== ROWS || r.summary.dataPoints.sent !== ROWS * 5) {
      ok = false;
      console.log(`first --delta run: the server got ${n(got.items)} items, ${n(r.summary.dataPoints.sent)} data points spent; expected ${n(ROWS)} and ${n(ROWS * 5)}`);
    }
  }
  const ratio1 = median(first) / median(plain);
  console.log(`upload without --delta (floor)     ${s(median(plain))}  (${n((ROWS * 1000) / median(plain))} rows/s)`);
  console.log(`first --delta run, empty state     ${s(median(first))}  ${ratio1.toFixed(2)}x the floor (target: at most 1.3x)`);
  console.log(`  CPU, all threads: without --delta ${s(median(plainCpu))}, first --delta run ${s(median(firstCpu))}, ${(median(firstCpu) / median(plainCpu)).toFixed(2)}x`);
  const perUser = statSync(state).size / ROWS;
  console.log(`state file                         ${(statSync(state).size / 1e6).toFixed(1)} MB, ${perUser.toFixed(0)} bytes a user (target: under 120)`);
  if (ratio1 > 1.3 || perUser >= 120) ok = false;
  // the same two at the rate an upload runs at by default (1,000 requests a second), once each
  if (process.env.BENCH_PACED !== '0' && order === ORDERS[0]) {
    rmSync(journal, { force: true });
    const pacedPlain = await runTrack(rssHook, ['upload', file, '--url', server.url, '--api-key', 'bench-key-0000', '--quiet', '--journal', journal]);
    await take();
    removeState();
    rmSync(journal, { force: true });
    const pacedFirst = await runTrack(rssHook, ['upload', file, '--url', server.url, '--api-key', 'bench-key-0000', '--quiet', '--journal', journal, '--delta', '--state', state]);
    await take();
    console.log(`  at the default rate (1,000 requests/s): without --delta ${s(pacedPlain.wallMs)}, first --delta run ${s(pacedFirst.wallMs)}, ${(pacedFirst.wallMs / pacedPlain.wallMs).toFixed(2)}x`);
  }

  // 2. the unchanged re-upload against the dry run of the same file
  const dry = [];
  const unchanged = [];
  for (let run = 0; run < RUNS; run += 1) {
    dry.push((await runTrack(rssHook, ['upload', '--dry-run', file])).wallMs);
    const r = await upload(file, '--delta', '--state', state);
    unchanged.push(r.wallMs);
    rss = Math.max(rss, r.maxRssKb);
    const got = await take();
    if (got.requests !== 0 || r.summary.unchanged !== ROWS) {
      ok = false;
      console.log(`unchanged re-upload: ${got.requests} requests reached the server, ${n(r.summary.unchanged)} items unchanged; expected 0 and ${n(ROWS)}`);
    }
  }
  const ratio2 = median(unchanged) / median(dry);
  console.log(`dry run of the file (floor)        ${s(median(dry))}`);
  console.log(`unchanged re-upload, --delta       ${s(median(unchanged))}  ${ratio2.toFixed(2)}x the floor (target: at most 2x), 0 requests`);
  if (ratio2 > 2) ok = false;

  // 3. 1% of the cells other than the identifier changed, spread over the rows
  const changed = new Map();
  // one cell in a hundred of the five a row holds besides the identifier
  for (let cell = 7; cell < ROWS * 5; cell += 100) {
    const row = Math.floor(cell / 5);
    const column = 1 + (cell % 5);
    if (!changed.has(row)) changed.set(row, new Set());
    changed.get(row).add(COLUMNS[column]);
  }
  const edit = (i, cells) => {
    for (const column of changed.get(i) ?? []) {
      const at = COLUMNS.indexOf(column);
      cells[at] = column === 'visits' ? String(Number(cells[at]) + 1) : `${cells[at]}x`;
    }
  };
  await writeUsersCsv(file, ROWS, edit, idOf);
  server.send('record');
  const r = await upload(file, '--delta', '--state', state);
  rss = Math.max(rss, r.maxRssKb);
  const got = await take();
  const cells = [...changed.values()].reduce((sum, set) => sum + set.size, 0);
  const sent = got.bodies.flatMap((body) => JSON.parse(body).attributes);
  let exact = sent.length === changed.size;
  const ids = new Map();
  for (const [i, columns] of changed) ids.set(idOf(i), columns);
  for (const item of sent) {
    const expected = ids.get(item.external_id);
    const keys = Object.keys(item).filter((key) => key !== 'external_id');
    if (expected === undefined || keys.length !== expected.size || !keys.every((key) => expected.has(key))) exact = false;
  }
  const fewest = Math.ceil(changed.size / 50);
  console.log(
    `1% of the cells changed            ${n(cells)} cells of ${n(changed.size)} users: ${n(sent.length)} items in ${n(got.requests)} requests (fewest: ${n(fewest)}), ` +
      `${exact ? 'exactly the changed attributes' : 'NOT exactly the changed attributes'}; ${s(r.wallMs)}, ${n(r.summary.dataPoints.sent)} data points spent, ${n(r.summary.dataPoints.avoided)} avoided`,
  );
  if (!exact || got.requests !== fewest || r.summary.dataPoints.sent !== cells) ok = false;
  console.log(`peak RSS of the --delta runs       ${mb(rss)} (target: under ${RSS_TARGET_MB} MB)`);
  if (rss / 1024 >= RSS_TARGET_MB) ok = false;
  rmSync(file, { force: true });
  removeState();
  return { ok, first: median(first), unchanged: median(unchanged) };
}

/** The first --delta run and the unchanged re-upload of 10,000,000 shuffled rows, once each, against those of `small`. */
async function benchGrowth(small, { dir, server, rssHook }) {
  const { take } = server;
  const { upload, state, removeState } = uploader(dir, server, rssHook);
  const file = join(dir, 'users-10m.csv');
  await writeUsersCsv(file, BIG_ROWS, undefined, userIds(BIG_ROWS, true));
  console.log(`\n-- growth: ${n(BIG_ROWS)} shuffled rows, ${(statSync(file).size / 1e6).toFixed(1)} MB, once each; steal before: ${stolenMs() ?? 'n/a'} ms`);
  const plain = await upload(file);
  await take();
  removeState();
  const first = await upload(file, '--delta', '--state', state);
  const gotFirst = await take();
  const perUser = statSync(state).size / BIG_ROWS;
  const unchanged = await upload(file, '--delta', '--state', state);
  const gotUnchanged = await take();
  const growth = first.wallMs / small.first;
  console.log(`upload without --delta             ${s(plain.wallMs)}`);
  console.log(`first --delta run, empty state     ${s(first.wallMs)}  ${(first.wallMs / plain.wallMs).toFixed(2)}x the upload; ${growth.toFixed(1)}x the run of ${n(ROWS)} rows (target: at most ${BIG_ROWS / ROWS + 1}x)`);
  console.log(`unchanged re-upload, --delta       ${s(unchanged.wallMs)}  ${(unchanged.wallMs / small.unchanged).toFixed(1)}x the re-upload of ${n(ROWS)} rows, ${gotUnchanged.requests} requests`);
  const rssMet = Math.max(first.maxRssKb, unchanged.maxRssKb) / 1024 < RSS_TARGET_MB;
  console.log(
    `state file                         ${perUser.toFixed(0)} bytes a user (target: under 120); peak RSS ${mb(first.maxRssKb)} first run, ${mb(unchanged.maxRssKb)} re-upload ` +
      `(target: under ${RSS_TARGET_MB} MB, ${rssMet ? 'met' : 'missed'})`,
  );
  if (gotFirst.items !== BIG_ROWS) console.log(`first --delta run: the server got ${n(gotFirst.items)} items; expected ${n(BIG_ROWS)}`);
  const ok = gotFirst.items === BIG_ROWS && gotUnchanged.requests === 0 && growth <= BIG_ROWS / ROWS + 1 && perUser < 120 && rssMet;
  rmSync(file, { force: true });
  removeState();
  return ok;
}

async function main() {
  const dir = mkdtempSync(join(tmpdir(), 'track-delta-bench-'));
  const server = await startServerChild(HERE);
  let ok = true;
  try {
    const context = { dir, server, rssHook: writeUsageHook(dir) };
    let shuffled;
    for (const order of ORDERS) {
      const figures = await benchOrder(order, context);
      if (order === 'shuffled') shuffled = figures;
      ok &&= figures.ok;
    }
    if (process.env.BENCH_10M === '1') {
      if (shuffled === undefined) throw new Error('BENCH_10M needs the shuffled order in BENCH_ORDER');
      ok = (await benchGrowth(shuffled, context)) && ok;
    }
    console.log(`steal after: ${stolenMs() ?? 'n/a'} ms`);
  } finally {
    server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  if (!ok) process.exitCode = 1;
}

if (process.argv[2] === '--server') server();
else await main();
