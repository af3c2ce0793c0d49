// `track upload` end to end: the real CLI (bin/track.js, in a child process) reading a generated
// attributes CSV (six columns) and delivering it to a loopback server (another child process)
// that answers 201 at once. Prints figures; the targets are not asserted (an incomplete upload stops it).
//   1. no rate limit (--rate 1000000): wall time of the whole CLI run against two floors measured
//      in this process in the same run: papaparse (the parser track uses) parsing the same file,
//      and parse + build the items + stringify the request bodies (the least any uploader does;
//      target: at most 4x it). csv-parse reading the file is printed too, as the floor earlier
//      figures were given against. The CLI and the floors alternate, RUNS times
//   2. --rate R for about S seconds: mean rate between the first and the last arrival as % of R
//      (target: at least 95%), most arrivals in any one-second window as the server saw them
//      (target: never more than R)
//   3. peak RSS of the uploading process at several file sizes (target: under 150 MB at any size);
//      at BENCH_ROWS it is the largest of the step 1 runs; BENCH_10M=1 adds 10,000,000 rows. Its
//      floor: the peak RSS of parse + build + stringify of the same file in a node process of its own
// Build first: npm run build && node bench/run.mjs upload
// Knobs: BENCH_ROWS, BENCH_RUNS, BENCH_CONCURRENCY, BENCH_RATE, BENCH_RATE_SECONDS, BENCH_RSS_ROWS, BENCH_10M.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { CSV_PARSE_AS_TRACK, csvParseAlone, papaparseRows, parseBuildStringify, writeUsersCsv as generate } from './csv-files.mjs';
import { stolenMs } from './host.mjs';
import { runTrack, startServerChild, writeUsageHook } from './track-run.mjs';

const HERE = fileURLToPath(import.meta.url);
const ROWS = Number(process.env.BENCH_ROWS ?? 1_000_000);
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 16);
const RATE = Number(process.env.BENCH_RATE ?? 200);
const RATE_SECONDS = Number(process.env.BENCH_RATE_SECONDS ?? 10);
// sizes besides BENCH_ROWS (whose figure comes from step 1) for the peak RSS of an unlimited run
const RSS_ROWS = [...(process.env.BENCH_RSS_ROWS ?? '200000,3000000').split(',').map(Number), ...(process.env.BENCH_10M === '1' ? [10_000_000] : [])];
const NO_LIMIT = 1_000_000; // --rate: the default is 1,000 a second, so "no rate limit" is a rate never reached
const ITEMS_PER_REQUEST = 50; // the default `mau` limits

/**
 * The loopback server: reads each body, answers 201 with the number of items at once, and records
 * when each request arrived (its headers parsed). Items are counted by their external_id key, which
 * every generated row has, rather than by parsing the JSON: this process shares the machine's cores.
 */
function server() {
  let arrivals = [];
  let items = 0;
  const KEY = Buffer.from('"external_id":');
  const httpServer = createServer((req, res) => {
    arrivals.push(performance.timeOrigin + performance.now());
    let count = 0;
    let tail = Buffer.alloc(0);
    req.on('data', (chunk) => {
      const buffer = tail.length === 0 ? chunk : Buffer.concat([tail, chunk]);
      for (let at = buffer.indexOf(KEY); at !== -1; at = buffer.indexOf(KEY, at + KEY.length)) count += 1;
      tail = buffer.subarray(Math.max(0, buffer.length - KEY.length + 1));
    });
    req.on('end', () => {
      items += count;
      const body = `{"message":"success","attributes_processed":${count}}`;
      res.writeHead(201, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
      res.end(body);
    });
  });
  httpServer.keepAliveTimeout = 30_000;
  process.on('message', (message) => {
    if (message === 'take') {
      // the arrivals and item count since the last 'take'
      process.send({ taken: { arrivals, items } });
      arrivals = [];
      items = 0;
    }
    if (message === 'exit') httpServer.close(() => process.exit(0));
  });
  httpServer.listen(0, '127.0.0.1', () => process.send({ port: httpServer.address().port }));
}

/**
 * The floors, each reading the whole file in this process: `ratio` marks those the upload's wall
 * time is given against; csv-parse is printed as the floor of figures before these.
 */
const FLOORS = [
  { name: 'papaparse alone', ratio: true, read: (file) => papaparseRows(file) },
  { name: 'parse + build + stringify', ratio: true, target: 4, read: (file) => parseBuildStringify(file, ITEMS_PER_REQUEST) },
  { name: "csv-parse alone, track's reading (history)", read: (file) => csvParseAlone(file, CSV_PARSE_AS_TRACK) },
];

/** One `track upload` run of the real CLI in a child process, with its peak RSS and CPU time. */
function runCli(hook, file, dir, url, rate) {
  // each run is a new upload of the same file: an earlier run's journal would refuse it
  rmSync(join(dir, 'bench.journal'), { force: true });
  return runTrack(hook, [
    'upload',
    file,
    '--url',
    url,
    '--api-key',
    'bench-key-0000',
    '--quiet',
    '--rate',
    String(rate),
    '--concurrency',
    String(CONCURRENCY),
    '--journal',
    join(dir, 'bench.journal'),
    '--rejects',
    join(dir, 'bench.rejects.ndjson'),
  ]);
}

/**
 * The floor of a peak RSS: parse + build + stringify (the floor of step 1) of `file` in a node
 * process of its own, the least memory any uploader written for node reads and encodes the file in.
 */
async function floorPeakRss(hook, file) {
  const csvFiles = pathToFileURL(join(HERE, '..', 'csv-files.mjs')).href;
  const script = `const { parseBuildStringify } = await import(${JSON.stringify(csvFiles)}); await parseBuildStringify(process.argv[1], ${ITEMS_PER_REQUEST});`;
  const child = spawn(process.execPath, ['--import', hook, '--input-type=module', '-e', script, file], { stdio: ['ignore', 'ignore', 'inherit', 'pipe'] });
  const chunks = [];
  child.stdio[3].on('data', (chunk) => chunks.push(chunk));
  const [code] = await once(child, 'close');
  if (code !== 0) throw new Error(`the peak RSS floor exited with ${code}`);
  return JSON.parse(Buffer.concat(chunks).toString('utf8')).maxRssKb;
}

/** Every row read, none rejected, every item accepted, nothing left unsettled. */
function checkAllAccepted(summary, rows) {
  const d = summary.delivery;
  const problems = [];
  if (summary.rows !== rows) problems.push(`read ${summary.rows} rows, expected ${rows}`);
  if (summary.rejected !== 0) problems.push(`${summary.rejected} rows rejected before sending: ${JSON.stringify(summary.rejectReasons)}`);
  if (d === undefined) problems.push('no delivery summary');
  else {
    if (d.fatal !== undefined) problems.push(`stopped: ${d.fatal.message}`);
    if (d.items.attributes.accepted !== rows) problems.push(`${d.items.attributes.accepted} attributes accepted, expected ${rows}`);
    if (d.requestsSettled !== summary.requests || d.requestsAbandoned !== 0) problems.push(`${d.requestsSettled} of ${summary.requests} requests settled`);
  }
  if (problems.length > 0) throw new Error(`upload incomplete: ${problems.join('; ')}`);
}

function maxInWindow(times, windowMs = 1000) {
  const sorted = Float64Array.from(times).sort();
  let best = 0;
  for (let i = 0, j = 0; i < sorted.length; i += 1) {
    while (sorted[i] - sorted[j] >= windowMs) j += 1;
    best = Math.max(best, i - j + 1);
  }
  return best;
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const n = (value) => Math.round(value).toLocaleString('en-US');
const s = (ms) => `${(ms / 1000).toFixed(2)} s`;
const mb = (kb) => `${Math.round(kb / 1024)} MB`;

async function main() {
  const dir = mkdtempSync(join(tmpdir(), 'track-upload-bench-'));
  const server = await startServerChild(HERE);
  try {
    const { url, take } = server;
    const rssHook = writeUsageHook(dir);

    // 1. no rate limit, alternating with the floor
    const file = join(dir, 'attributes.csv');
    await generate(file, ROWS);
    console.log(
      `${n(ROWS)} rows, ${(statSync(file).size / 1e6).toFixed(1)} MB; concurrency ${CONCURRENCY}; ${RUNS} runs of each, alternating`,
    );
    const warm = join(dir, 'warm.csv');
    await generate(warm, 20_000);
    await runCli(rssHook, warm, dir, url, NO_LIMIT); // warm the server and the disk cache
    for (const { read } of FLOORS) await read(file);
    await take();
    const floors = FLOORS.map(() => ({ wall: [], cpu: [], steal: [] }));
    const runs = [];
    for (let run = 0; run < RUNS; run += 1) {
      for (const [i, { read, name }] of FLOORS.entries()) {
        const floor = floors[i];
        globalThis.gc?.();
        const t = performance.now();
        const cpu = process.cpuUsage();
        const floorStolen = stolenMs();
        const parsed = await read(file);
        floor.wall.push(performance.now() - t);
        floor.steal.push(floorStolen === undefined ? undefined : stolenMs() - floorStolen);
        const used = process.cpuUsage(cpu);
        floor.cpu.push((used.user + used.system) / 1000);
        if (parsed !== ROWS) throw new Error(`${name} read ${parsed} rows, expected ${ROWS}`);
      }
      const runStolen = stolenMs();
      const result = await runCli(rssHook, file, dir, url, NO_LIMIT);
      const stolen = runStolen === undefined ? undefined : stolenMs() - runStolen;
      checkAllAccepted(result.summary, ROWS);
      const seen = await take();
      if (seen.items !== ROWS) throw new Error(`the server saw ${seen.items} items, expected ${ROWS}`);
      runs.push({ ...result, requests: seen.arrivals.length, stolen });
    }
    const bestOf = (values) => Math.min(...values);
    // CPU the host took from this machine during each timed run (steal), where the system reports it
    const steal = (ms) => (ms === undefined ? '' : `, host took ${ms} ms`);
    for (const [i, { name }] of FLOORS.entries()) {
      const { wall, cpu, steal: stolen } = floors[i];
      console.log(
        `${name}: ${s(bestOf(wall))} best, ${s(median(wall))} median (${wall.map((f, j) => `${s(f)}${steal(stolen[j])}`).join('; ')}); ` +
          `${s(median(cpu))} CPU median`,
      );
    }
    const walls = runs.map((r) => r.wallMs);
    for (const [i, r] of runs.entries()) {
      console.log(
        `  upload run ${i + 1}: ${s(r.wallMs)} wall (${s(r.summary.elapsedMs)} inside upload()), ${s(r.cpuMs)} CPU, ` +
          `${n(r.requests)} requests, ${n(ROWS / (r.wallMs / 1000))} rows/s, peak RSS ${mb(r.maxRssKb)}${steal(r.stolen)}`,
      );
    }
    for (const [i, { name, ratio, target }] of FLOORS.entries()) {
      if (ratio !== true) continue;
      const floor = floors[i];
      const [bestRatio, med] = [bestOf(walls) / bestOf(floor.wall), median(walls) / median(floor.wall)];
      const verdict = target === undefined ? '' : ` (target <= ${target}) ${med <= target ? 'met' : 'MISSED'}`;
      console.log(
        `delivery, no rate limit, against ${name}: ${n(ROWS)} rows in ${s(median(walls))} median; floor ${s(median(floor.wall))} median; ` +
          `ratio ${med.toFixed(2)} median (best ${bestRatio.toFixed(2)})${verdict}; CPU ratio ${(median(runs.map((r) => r.cpuMs)) / median(floor.cpu)).toFixed(2)} median`,
      );
    }
    const floorRssKb = await floorPeakRss(rssHook, file);
    rmSync(file);
    rmSync(warm);

    // 2. paced
    const pacedRows = RATE * RATE_SECONDS * ITEMS_PER_REQUEST;
    const pacedFile = join(dir, 'paced.csv');
    await generate(pacedFile, pacedRows);
    await take();
    const paced = await runCli(rssHook, pacedFile, dir, url, RATE);
    checkAllAccepted(paced.summary, pacedRows);
    const { arrivals } = await take();
    rmSync(pacedFile);
    const first = Math.min(...arrivals);
    const last = Math.max(...arrivals);
    const steady = (arrivals.length - 1) / ((last - first) / 1000);
    const overRun = arrivals.length / (paced.wallMs / 1000);
    const most = maxInWindow(arrivals);
    console.log(
      `delivery, --rate ${RATE}: ${n(pacedRows)} rows, ${n(arrivals.length)} requests in ${s(paced.wallMs)} wall; ` +
        `mean rate ${steady.toFixed(1)}/s between the first and last arrival = ${((100 * steady) / RATE).toFixed(1)}% of ${RATE} ` +
        `(target >= 95%) ${steady >= 0.95 * RATE ? 'met' : 'MISSED'}; ${overRun.toFixed(1)}/s over the whole CLI run incl. start-up`,
    );
    console.log(
      `  most requests in any 1 s window (server arrivals): ${most} (limit ${RATE}) ${most <= RATE ? 'not exceeded' : 'EXCEEDED'}`,
    );

    // 3. peak RSS at several sizes, no rate limit
    const sizes = [{ rows: ROWS, maxRssKb: Math.max(...runs.map((r) => r.maxRssKb)), floorRssKb, wallMs: bestOf(runs.map((r) => r.wallMs)), note: `largest of the ${RUNS} runs above` }];
    for (const rows of RSS_ROWS.filter((r) => r !== ROWS)) {
      const path = join(dir, `rss-${rows}.csv`);
      await generate(path, rows);
      const result = await runCli(rssHook, path, dir, url, NO_LIMIT);
      const floor = await floorPeakRss(rssHook, path);
      rmSync(path);
      checkAllAccepted(result.summary, rows);
      await take();
      sizes.push({ rows, maxRssKb: result.maxRssKb, floorRssKb: floor, wallMs: result.wallMs, note: `${n(rows / (result.wallMs / 1000))} rows/s` });
    }
    sizes.sort((a, b) => a.rows - b.rows);
    for (const size of sizes) {
      console.log(
        `peak RSS, ${n(size.rows).padStart(9)} rows, no rate limit: ${mb(size.maxRssKb)} (target < 150 MB) ` +
          `${size.maxRssKb / 1024 < 150 ? 'met' : 'MISSED'}; floor ${mb(size.floorRssKb)} (parse + build + stringify, a process of its own), ` +
          `ratio ${(size.maxRssKb / size.floorRssKb).toFixed(2)}; ${s(size.wallMs)} wall, ${size.note}`,
      );
    }
    console.log(`peak RSS, --rate ${RATE} run: ${mb(paced.maxRssKb)}`);
  } finally {
    server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[2] === '--server') server();
else await main();
