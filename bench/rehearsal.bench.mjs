// The rehearsal of a bulk upload of new users: the real `track upload` (its defaults: 1,000 requests
// a second, 8 in flight) reading a generated six-column attributes CSV (csv-files.mjs) into the real `track emulate`
// (a file database, the default limits: 50 items a request, 3000/3s), both CLIs in child processes
// side by side, as a person rehearsing would run them. The floor is what the rate lets the upload
// take: requests / rate. Prints the wall time, the requests, the floor and their ratio (target: at
// most 1.2); then the same file again (every row now an update of an existing user); then the
// uploader alone against a loopback server that stores nothing, which is the uploader's own floor.
// Build first: npm run build && node bench/run.mjs rehearsal
// Knobs: BENCH_REHEARSAL_ROWS (default 1,000,000).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { writeUsersCsv } from './csv-files.mjs';
import { stolenMs } from './host.mjs';
import { cpuSecondsOf, runTrack, startServer, writeUsageHook } from './track-run.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const CLI = join(ROOT, 'bin/track.js');
const ROWS = Number(process.env.BENCH_REHEARSAL_ROWS ?? 1_000_000);
const KEY = 'rehearsal';
/** `track upload --rate`'s default. */
const RATE = 1000;
const TARGET_RATIO = 1.2;

/** One `track upload` of the file at its defaults: its wall time, requests and CPU seconds. */
async function upload(hook, file, url, dir, name) {
  const args = ['upload', file, '--url', url, '--api-key', KEY, '--quiet', '--restart'];
  const { wallMs, summary, cpuMs } = await runTrack(hook, [...args, '--journal', join(dir, `${name}.journal`), '--rejects', join(dir, `${name}.rejects.ndjson`)]);
  if (summary.rejected !== 0) throw new Error(`track upload rejected ${summary.rejected} rows`);
  return { seconds: wallMs / 1000, requests: summary.requests, cpu: cpuMs / 1000 };
}

/** Runs an upload into the server at `pid`, returning its figures and the server's CPU seconds meanwhile. */
async function measured(pid, run) {
  const before = cpuSecondsOf(pid);
  const stolenBefore = stolenMs();
  const result = await run();
  const after = cpuSecondsOf(pid);
  const stolen = stolenBefore === undefined ? undefined : stolenMs() - stolenBefore;
  return { ...result, serverCpu: before === undefined || after === undefined ? undefined : after - before, stolen };
}

function line(label, r, server) {
  const floor = r.requests / RATE;
  const ratio = r.seconds / floor;
  const perRequest = (s) => (s === undefined ? 'n/a' : `${((s * 1000) / r.requests).toFixed(2)} ms`);
  const steal = r.stolen === undefined ? '' : `; CPU taken by the host ${r.stolen} ms`;
  return (
    `${label}: ${r.seconds.toFixed(1)} s for ${r.requests.toLocaleString('en-US')} requests; floor ${floor.toFixed(1)} s ` +
    `(requests / ${RATE}/s); ratio ${ratio.toFixed(2)} (target <= ${TARGET_RATIO})\n` +
    `  CPU per request: ${server} ${perRequest(r.serverCpu)}, uploader ${perRequest(r.cpu)}${steal}`
  );
}

const dir = mkdtempSync(join(tmpdir(), 'track-rehearsal-'));
try {
  const csv = join(dir, 'new-users.csv');
  // emails by name, then number: each request's new entries land all over the email index, as people's do
  await writeUsersCsv(csv, ROWS);
  console.log(`${ROWS.toLocaleString('en-US')} rows of new users (external_id,first_name,email,plan,visits,zip)`);

  const hook = writeUsageHook(dir);
  const emu = await startServer([CLI, 'emulate', '--port', '0', '--db', join(dir, 'rehearsal.sqlite'), '--api-key', KEY, '--quiet']);
  const fresh = await measured(emu.pid, () => upload(hook, csv, emu.url, dir, 'new'));
  const again = await measured(emu.pid, () => upload(hook, csv, emu.url, dir, 'again'));
  await emu.stop();

  const bare = await startServer([join(ROOT, 'bench/bare-http-server.mjs')]);
  const alone = await measured(bare.pid, () => upload(hook, csv, bare.url, dir, 'bare'));
  await bare.stop();

  console.log(line('track upload -> track emulate --db file, new users', fresh, 'emulator'));
  console.log(line('  the same file again, every row an update', again, 'emulator'));
  console.log(line('  the uploader alone, into a server that stores nothing (its own floor)', alone, 'server'));
} finally {
  rmSync(dir, { recursive: true, force: true });
}
