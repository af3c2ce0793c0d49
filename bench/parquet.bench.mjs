// A dry run of a Parquet file (six columns, row groups of 100,000 rows, snappy, as writers default)
// beside a dry run of the same rows as CSV (the floor), each the real CLI in a process of its own,
// alternating. Targets: at least as many rows a second as the CSV; peak RSS under 400 MB.
// Build first: npm run build && node bench/run.mjs parquet
// Knobs: BENCH_PARQUET_ROWS (default 1,000,000; the case is 3,000,000, about a minute more
// to write), BENCH_RUNS (default 3).
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ParquetWriter, fileWriter } from 'hyparquet-writer';
import { writeUsersCsv } from './csv-files.mjs';
import { runTrack, writeUsageHook } from './track-run.mjs';

const ROWS = Number(process.env.BENCH_PARQUET_ROWS ?? 1_000_000);
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const GROUP_ROWS = 100_000;

/**
 * The rows of writeUsersCsv as Parquet: the CSV's cells, typed as a warehouse would type them
 * (visits a whole number, the rest text), read back from the CSV a group at a time.
 */
async function writeUsersParquet(csvPath, path) {
  const { createReadStream } = await import('node:fs');
  const { createInterface } = await import('node:readline');
  const text = (name) => ({ name, type: 'BYTE_ARRAY', converted_type: 'UTF8', repetition_type: 'OPTIONAL' });
  const schema = [
    { name: 'root', num_children: 6 },
    text('external_id'),
    text('first_name'),
    text('email'),
    text('plan'),
    { name: 'visits', type: 'INT32', repetition_type: 'OPTIONAL' },
    text('zip'),
  ];
  const writer = new ParquetWriter({ writer: fileWriter(path), schema });
  let columns = [[], [], [], [], [], []];
  const flush = async () => {
    if (columns[0].length === 0) return;
    await writer.write({ columnData: schema.slice(1).map((element, i) => ({ name: element.name, data: columns[i] })), rowGroupSize: GROUP_ROWS });
    columns = [[], [], [], [], [], []];
  };
  let header = true;
  for await (const line of createInterface({ input: createReadStream(csvPath) })) {
    if (header) {
      header = false;
      continue;
    }
    const cells = line.split(',');
    cells.forEach((cell, i) => columns[i].push(i === 4 ? Number(cell) : cell));
    if (columns[0].length === GROUP_ROWS) await flush();
  }
  await flush();
  writer.finish();
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const perSecond = (rows, ms) => Math.round((rows / ms) * 1000);
const mb = (kb) => `${Math.round(kb / 1024)} MB`;

const dir = mkdtempSync(join(tmpdir(), 'track-parquet-bench-'));
try {
  const csv = join(dir, 'users.csv');
  const parquet = join(dir, 'users.parquet');
  await writeUsersCsv(csv, ROWS);
  await writeUsersParquet(csv, parquet);
  const hook = writeUsageHook(dir);
  const size = (path) => `${(statSync(path).size / 1e6).toFixed(1)} MB`;
  console.log(`${ROWS.toLocaleString('en-US')} rows: CSV ${size(csv)}, Parquet ${size(parquet)} (row groups of ${GROUP_ROWS.toLocaleString('en-US')}); ${RUNS} runs of each, alternating`);
  const dryRun = (path) => runTrack(hook, ['validate', path, '--rejects', join(dir, 'rejects.ndjson')]);
  const floor = [];
  const ours = [];
  for (let run = 0; run < RUNS; run += 1) {
    const a = await dryRun(csv);
    const b = await dryRun(parquet);
    if (a.summary.rows !== ROWS || b.summary.rows !== ROWS || b.summary.rejected !== 0) throw new Error(`rows ${a.summary.rows} / ${b.summary.rows}, rejected ${b.summary.rejected}`);
    floor.push(a);
    ours.push(b);
  }
  const rate = (runs) => perSecond(ROWS, median(runs.map((r) => r.wallMs)));
  const [csvRate, parquetRate] = [rate(floor), rate(ours)];
  const peak = Math.max(...ours.map((r) => r.maxRssKb));
  const ms = (runs, key) => (runs[0][key] === undefined ? 'n/a' : `${Math.round(median(runs.map((r) => r[key])))} ms`);
  const line = (runs) => `cpu ${ms(runs, 'cpuMs')} (main thread ${ms(runs, 'mainCpuMs')}, which waited ${ms(runs, 'mainWaitMs')} for a CPU)`;
  console.log(`CSV dry run       ${csvRate.toLocaleString('en-US')} rows/s (median wall), ${line(floor)}, peak RSS ${mb(Math.max(...floor.map((r) => r.maxRssKb)))}`);
  console.log(`Parquet dry run   ${parquetRate.toLocaleString('en-US')} rows/s (median wall), ${line(ours)}, peak RSS ${mb(peak)}`);
  const ratios = ours.map((b, i) => floor[i].wallMs / b.wallMs);
  const cpuRatios = ours.map((b, i) => floor[i].cpuMs / b.cpuMs);
  const mainRatios = ours[0].mainCpuMs === undefined ? undefined : ours.map((b, i) => floor[i].mainCpuMs / b.mainCpuMs);
  console.log(
    `ratio             ${median(ratios).toFixed(3)}x the CSV's rows/s (median of pairs); by CPU time ${median(cpuRatios).toFixed(2)}x` +
      (mainRatios === undefined ? '' : `, by the main thread's CPU time ${median(mainRatios).toFixed(2)}x (Parquet decodes in a thread of its own)`),
  );
  console.log(`                  (target: at least 1.00x the CSV's rows/s; peak RSS under 400 MB)`);
  if (median(ratios) < 1 || peak >= 400 * 1024) {
    console.log('a target was missed');
    process.exitCode = 1;
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
