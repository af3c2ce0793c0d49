// A wide CSV file streams: peak RSS of the real CLI reading a 20,000-column attributes file of 100
// rows and of 1,000 rows, for `track validate` and for `track upload` to an emulator (`track emulate
// --port 0 --db :memory:`, a child process). Targets: at 1,000 rows within 1.2 times the figure at
// 100 rows, and under 400 MB. The floor beside them: csv-parse alone reading the same files, in a
// child process of its own.
// Build first: npm run build && node bench/run.mjs wide-csv
// Knobs: BENCH_WIDE_COLUMNS, BENCH_WIDE_ROWS (two sizes, comma-separated).
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { writeCsv } from './csv-files.mjs';

const CLI = fileURLToPath(new URL('../bin/track.js', import.meta.url));
const CSV_FILES = fileURLToPath(new URL('./csv-files.mjs', import.meta.url));
const COLUMNS = Number(process.env.BENCH_WIDE_COLUMNS ?? 20_000);
const [SMALL, LARGE] = (process.env.BENCH_WIDE_ROWS ?? '100,1000').split(',').map(Number);
const KEY = 'bench-wide-key-0000';

/** external_id, then custom attributes: numbers, words and empty cells (left out of the item). */
function generate(path, rows) {
  const header = ['external_id', ...Array.from({ length: COLUMNS - 1 }, (_, i) => `attr_${i}`)].join(',');
  const words = ['red', 'green', 'blue', 'gold', ''];
  return writeCsv(path, header, rows, (r) => {
    const cells = [`wide-user-${r}`];
    for (let i = 1; i < COLUMNS; i += 1) cells.push(i % 3 === 0 ? words[(r + i) % words.length] : String((r * 7 + i) % 1000));
    return cells.join(',');
  });
}

/** Runs a command in a child process; resolves with its exit code, output and peak RSS (from fd 3). */
async function measured(rssHook, args) {
  const child = spawn(process.execPath, ['--import', rssHook, ...args], { stdio: ['ignore', 'pipe', 'pipe', 'pipe'] });
  const collect = (stream) => {
    const chunks = [];
    stream.on('data', (chunk) => chunks.push(chunk));
    return () => Buffer.concat(chunks).toString('utf8');
  };
  const [stdout, stderr, usage] = [collect(child.stdio[1]), collect(child.stdio[2]), collect(child.stdio[3])];
  const start = performance.now();
  const [code] = await once(child, 'close');
  return { code, wallMs: performance.now() - start, stdout: stdout(), stderr: stderr(), ...JSON.parse(usage()) };
}

async function startEmulator() {
  const child = spawn(process.execPath, [CLI, 'emulate', '--port', '0', '--db', ':memory:', '--api-key', KEY, '--quiet'], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  const url = await new Promise((resolve, reject) => {
    child.stdout.on('data', (chunk) => {
      out += chunk;
      const found = /http:\/\/[^\s)]+/.exec(out);
      if (found !== null) resolve(found[0]);
    });
    child.once('exit', (code) => reject(new Error(`the emulator exited with ${code}`)));
  });
  return { url, stop: () => child.kill('SIGINT') };
}

const mb = (kb) => `${Math.round(kb / 1024)} MB`;

async function main() {
  const dir = mkdtempSync(join(tmpdir(), 'track-wide-bench-'));
  const rssHook = join(dir, 'rss-at-exit.mjs');
  writeFileSync(
    rssHook,
    // --import runs in every thread of the process (the CLI plans in a worker): report from the main one
    "import { writeSync } from 'node:fs';\n" +
      "import { isMainThread } from 'node:worker_threads';\n" +
      "if (isMainThread) process.on('exit', () => writeSync(3, JSON.stringify({ maxRssKb: process.resourceUsage().maxRSS })));\n",
  );
  const floorScript = join(dir, 'csv-parse-alone.mjs');
  writeFileSync(floorScript, `import { csvParseAlone } from ${JSON.stringify(CSV_FILES)};\nconsole.log(await csvParseAlone(process.argv[2]));\n`);
  const emulator = await startEmulator();
  try {
    const files = {};
    for (const rows of [SMALL, LARGE]) {
      files[rows] = join(dir, `wide-${rows}.csv`);
      await generate(files[rows], rows);
    }
    console.log(
      `${COLUMNS.toLocaleString('en-US')} columns; ${SMALL} rows (${(statSync(files[SMALL]).size / 1e6).toFixed(1)} MB) and ` +
        `${LARGE} rows (${(statSync(files[LARGE]).size / 1e6).toFixed(1)} MB)`,
    );
    const commands = {
      'csv-parse alone (floor)': (file) => [floorScript, file],
      'track validate': (file) => [CLI, 'validate', file, '--json', '--rejects', join(dir, 'rejects.ndjson')],
      'track upload to the emulator': (file) => [
        CLI, 'upload', file, '--url', emulator.url, '--api-key', KEY, '--quiet', '--json',
        '--journal', join(dir, `run-${Math.random()}.journal`), '--rejects', join(dir, 'rejects.ndjson'),
      ],
    };
    for (const [name, args] of Object.entries(commands)) {
      const peak = {};
      for (const rows of [SMALL, LARGE]) {
        const result = await measured(rssHook, args(files[rows]));
        if (result.code !== 0) throw new Error(`${name} on ${rows} rows exited with ${result.code}: ${result.stderr}`);
        if (name !== 'csv-parse alone (floor)') {
          const summary = JSON.parse(result.stdout);
          if (summary.rows !== rows || summary.rejected !== 0) throw new Error(`${name} read ${summary.rows} rows, rejected ${summary.rejected}`);
        }
        peak[rows] = result;
      }
      const ratio = peak[LARGE].maxRssKb / peak[SMALL].maxRssKb;
      const targets = name.startsWith('track')
        ? ` (targets: ratio <= 1.2 ${ratio <= 1.2 ? 'met' : 'MISSED'}; under 400 MB ${peak[LARGE].maxRssKb / 1024 < 400 ? 'met' : 'MISSED'})`
        : '';
      console.log(
        `${name.padEnd(30)} peak RSS ${SMALL} rows ${mb(peak[SMALL].maxRssKb)} (${(peak[SMALL].wallMs / 1000).toFixed(1)} s), ` +
          `${LARGE} rows ${mb(peak[LARGE].maxRssKb)} (${(peak[LARGE].wallMs / 1000).toFixed(1)} s); ratio ${ratio.toFixed(2)}${targets}`,
      );
    }
  } finally {
    emulator.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
