// Inputs shaped as real ones are: a file of mostly rejected rows, and a folder of many small files.
// The real CLI (bin/track.js) runs in a child process each time; every figure is printed beside a
// floor measured in the same run, and the targets are not asserted.
//   1. rejects-heavy: `track upload` to a loopback server (answering 201 at once) of a file whose
//      every row is rejected (an invalid email), beside the same rows all valid. A rejected row is
//      read, checked, written to the rejects file with its reason and line, and never sent (target:
//      its CPU time at most 1.5x a valid row's, which is sent); each run's wall time is given against
//      parse + build + stringify of the valid file, measured in this process
//   2. many files: a dry run of FILES files of ROWS_PER_FILE rows, beside one file of the same rows:
//      the CPU each file adds (target: under 0.5 ms) and the peak RSS of each run (target: flat in
//      the number of files), beside papaparse parsing each file, in this process
// The CLI runs and the floors alternate, RUNS times; medians are printed.
// Build first: npm run build && node bench/run.mjs inputs-shape
// Knobs: BENCH_REJECT_ROWS (default 500,000), BENCH_FILES (10,000), BENCH_ROWS_PER_FILE (100), BENCH_RUNS (3),
// BENCH_PART (rejects or files: that part alone).
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { papaparseRows, parseBuildStringify, writeUsersCsv } from './csv-files.mjs';
import { runTrack, startServerChild, writeUsageHook } from './track-run.mjs';

const REJECT_ROWS = Number(process.env.BENCH_REJECT_ROWS ?? 500_000);
const FILES = Number(process.env.BENCH_FILES ?? 10_000);
const ROWS_PER_FILE = Number(process.env.BENCH_ROWS_PER_FILE ?? 100);
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const PART = process.env.BENCH_PART;
// the upload bench's loopback server: it answers 201 at once and counts the items it saw
const SERVER = fileURLToPath(new URL('./upload.bench.mjs', import.meta.url));

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const s = (ms) => `${(ms / 1000).toFixed(2)} s`;
const mb = (kb) => `${Math.round(kb / 1024)} MB`;
const n = (value) => Math.round(value).toLocaleString('en-US');

/** Wall milliseconds of fn, in this process, after a collection. */
async function timed(fn) {
  globalThis.gc?.();
  const start = performance.now();
  const result = await fn();
  return { wallMs: performance.now() - start, result };
}

function upload(hook, file, dir, url) {
  rmSync(join(dir, 'bench.journal'), { force: true });
  rmSync(join(dir, 'bench.rejects.ndjson'), { force: true });
  const args = ['upload', file, '--url', url, '--api-key', 'bench-key-0000', '--quiet', '--rate', '1000000', '--concurrency', '16'];
  // a run that rejected rows exits with 1
  return runTrack(hook, [...args, '--journal', join(dir, 'bench.journal'), '--rejects', join(dir, 'bench.rejects.ndjson')], {}, [0, 1]);
}

async function rejectsHeavy(dir, hook, server) {
  const valid = join(dir, 'valid.csv');
  const rejected = join(dir, 'rejected.csv');
  await writeUsersCsv(valid, REJECT_ROWS);
  await writeUsersCsv(rejected, REJECT_ROWS, (i, cells) => (cells[2] = `not-an-email-${i}`));
  console.log(`rejects-heavy: ${n(REJECT_ROWS)} rows, every one rejected, beside the same rows all valid; ${RUNS} runs of each, alternating`);
  await upload(hook, valid, dir, server.url); // warm the server and the disk cache
  const runs = { floor: [], valid: [], rejected: [] };
  for (let run = 0; run < RUNS; run += 1) {
    const floor = await timed(() => parseBuildStringify(valid));
    if (floor.result !== REJECT_ROWS) throw new Error(`the floor read ${floor.result} rows`);
    runs.floor.push(floor);
    const a = await upload(hook, valid, dir, server.url);
    if (a.summary.delivery?.items.attributes.accepted !== REJECT_ROWS) throw new Error('the valid upload did not deliver every row');
    runs.valid.push(a);
    const b = await upload(hook, rejected, dir, server.url);
    if (b.summary.rejected !== REJECT_ROWS || b.summary.requests !== 0) throw new Error(`${b.summary.rejected} rows rejected, ${b.summary.requests} requests`);
    runs.rejected.push(b);
    await server.take();
  }
  const floorMs = median(runs.floor.map((r) => r.wallMs));
  console.log(`  parse + build + stringify (floor), valid file: ${s(floorMs)} median`);
  for (const name of ['valid', 'rejected']) {
    const wall = median(runs[name].map((r) => r.wallMs));
    const cpu = median(runs[name].map((r) => r.cpuMs));
    const rss = Math.max(...runs[name].map((r) => r.maxRssKb));
    console.log(`  upload, rows ${name}: ${s(wall)} wall (${(wall / floorMs).toFixed(2)}x the floor), ${s(cpu)} CPU, ${((1000 * cpu) / REJECT_ROWS).toFixed(2)} us CPU a row, peak RSS ${mb(rss)} (median)`);
  }
  const ratio = median(runs.rejected.map((r) => r.cpuMs)) / median(runs.valid.map((r) => r.cpuMs));
  console.log(`  a rejected row costs ${ratio.toFixed(2)}x the CPU of a valid one (target <= 1.5) ${ratio <= 1.5 ? 'met' : 'MISSED'}`);
  rmSync(valid);
  rmSync(rejected);
}

async function manyFiles(dir, hook) {
  const folder = join(dir, 'many');
  mkdirSync(folder);
  const files = [];
  for (let f = 0; f < FILES; f += 1) {
    files.push(join(folder, `part-${String(f).padStart(6, '0')}.csv`));
    await writeUsersCsv(files[f], ROWS_PER_FILE);
  }
  const one = join(dir, 'one.csv');
  const rows = FILES * ROWS_PER_FILE;
  await writeUsersCsv(one, rows);
  console.log(`many files: a dry run of ${n(FILES)} files of ${n(ROWS_PER_FILE)} rows, beside one file of the same ${n(rows)} rows; ${RUNS} runs of each, alternating`);
  const dryRun = (inputs) => runTrack(hook, ['upload', '--dry-run', ...inputs, '--rejects', join(dir, 'dry.rejects.ndjson')]);
  const parseAll = async (inputs) => {
    let read = 0;
    for (const file of inputs) read += await papaparseRows(file);
    return read;
  };
  const runs = { oneFloor: [], manyFloor: [], one: [], many: [] };
  await dryRun([one]); // warm the disk cache
  for (let run = 0; run < RUNS; run += 1) {
    runs.oneFloor.push((await timed(() => parseAll([one]))).wallMs);
    runs.manyFloor.push((await timed(() => parseAll(files))).wallMs);
    for (const [name, inputs] of [['one', [one]], ['many', files]]) {
      const result = await dryRun(inputs);
      if (result.summary.rows !== rows || result.summary.rejected !== 0) throw new Error(`${name}: read ${result.summary.rows} rows, ${result.summary.rejected} rejected`);
      runs[name].push(result);
    }
  }
  for (const [name, floor, label] of [['one', 'oneFloor', '1 file'], ['many', 'manyFloor', `${n(FILES)} files`]]) {
    const wall = median(runs[name].map((r) => r.wallMs));
    const cpu = median(runs[name].map((r) => r.cpuMs));
    const rss = Math.max(...runs[name].map((r) => r.maxRssKb));
    console.log(`  dry run, ${label}: ${s(wall)} wall, ${s(cpu)} CPU, peak RSS ${mb(rss)}; papaparse alone (floor) ${s(median(runs[floor]))}, ratio ${(wall / median(runs[floor])).toFixed(2)} (median)`);
  }
  const perFile = (median(runs.many.map((r) => r.cpuMs)) - median(runs.one.map((r) => r.cpuMs))) / FILES;
  const floorPerFile = (median(runs.manyFloor) - median(runs.oneFloor)) / FILES;
  console.log(`  each file adds ${perFile.toFixed(3)} ms of CPU (target < 0.5) ${perFile < 0.5 ? 'met' : 'MISSED'}; to papaparse alone, ${floorPerFile.toFixed(3)} ms of wall`);
  const rssGrowth = Math.max(...runs.many.map((r) => r.maxRssKb)) / Math.max(...runs.one.map((r) => r.maxRssKb));
  console.log(`  peak RSS of ${n(FILES)} files is ${rssGrowth.toFixed(2)}x that of 1 file (target: flat, at most 1.1x) ${rssGrowth <= 1.1 ? 'met' : 'MISSED'}`);
}

const dir = mkdtempSync(join(tmpdir(), 'track-inputs-shape-bench-'));
const server = await startServerChild(SERVER);
try {
  const hook = writeUsageHook(dir);
  if (PART !== 'files') await rejectsHeavy(dir, hook, server);
  if (PART !== 'rejects') await manyFiles(dir, hook);
} finally {
  server.stop();
  rmSync(dir, { recursive: true, force: true });
}
