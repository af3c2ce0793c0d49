// Ctrl-C typed in a real terminal (a pseudo-terminal), not `kill -INT`: the progress spinner must
// leave the terminal in its normal mode so that the keystroke becomes SIGINT.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFaultServer, type FaultServer } from '../helpers/fault-server.js';
import { hasPython, runInTerminal } from '../helpers/pty.js';
import { ROOT, workdir } from './run-cli.js';

const BIN = join(ROOT, 'bin/track.js');
let server: FaultServer;
let dir: string;

beforeAll(async () => {
  dir = workdir();
  // every request answered after 150 ms: 40 requests one at a time take 6 s
  server = await startFaultServer(() => ({ kind: 'ok', delayMs: 150 }));
  writeFileSync(join(dir, 'users.csv'), `external_id,score\n${Array.from({ length: 2000 }, (_, i) => `u${i},${i}`).join('\n')}\n`);
});
afterAll(async () => {
  await server.close();
});

describe.skipIf(!hasPython)('Ctrl-C in a terminal', () => {
  it('stops an upload: requests in flight finish, the summary is printed, exit 130, and --resume sends the rest once', async () => {
    const env = { TRACK_URL: server.url, TRACK_API_KEY: 'k', NO_COLOR: '1' };
    const run = await runInTerminal([process.execPath, BIN, 'upload', 'users.csv', '--concurrency', '1'], {
      cwd: dir,
      env,
      ctrlCAfter: ['accepted [1-9][0-9]{2},'],
      deadlineMs: 20_000,
    });
    expect(run.ctrlC, run.out).toBe(1);
    expect(run.killed, run.out).toBe(false);
    expect(run.out).toMatch(/stopping: (1 request in flight, waiting for its answer|no request in flight, saving the journal)/);
    expect(run.out).toMatch(/requests +\d+ sent/);
    expect(run.status, run.out).toBe(130);
    const first = server.received.length;
    expect(first).toBeGreaterThan(0);
    expect(first).toBeLessThan(40);

    const resumed = await runInTerminal([process.execPath, BIN, 'upload', 'users.csv', '--resume'], { cwd: dir, env, ctrlCAfter: [], deadlineMs: 20_000 });
    expect(resumed.status, resumed.out).toBe(0);
    const ids = server.received.flatMap((r) => (r.body?.attributes ?? []).map((a) => a.external_id));
    expect(new Set(ids).size).toBe(2000);
    expect(ids).toHaveLength(2000);
  }, 60_000);

  it('stops track validate: the summary of what was read, exit 130', async () => {
    const rows = Array.from({ length: 400_000 }, (_, i) => `u${i},${i}`).join('\n');
    writeFileSync(join(dir, 'big.csv'), `external_id,score\n${rows}\n`);
    const run = await runInTerminal([process.execPath, BIN, 'validate', 'big.csv'], { cwd: dir, env: { NO_COLOR: '1' }, ctrlCAfter: ['reading big.csv'], deadlineMs: 40_000 });
    expect(run.ctrlC, run.out).toBe(1);
    expect(run.killed, run.out).toBe(false);
    expect(run.out).toMatch(/validate: 1 file, [\d,]+ rows read/);
    expect(run.out).toContain('interrupted');
    expect(run.status, run.out).toBe(130);
  }, 60_000);

  it('track validate --quiet shows no progress on a terminal, only the summary', async () => {
    const run = await runInTerminal([process.execPath, BIN, 'validate', 'big.csv', '--quiet'], { cwd: dir, env: { NO_COLOR: '1' }, ctrlCAfter: [], deadlineMs: 40_000 });
    expect(run.status, run.out).toBe(0);
    expect(run.out).toMatch(/validate: 1 file, 400,000 rows read/);
    expect(run.out).not.toContain('reading big.csv');
    const loud = await runInTerminal([process.execPath, BIN, 'upload', '--dry-run', 'big.csv'], { cwd: dir, env: { NO_COLOR: '1' }, ctrlCAfter: [], deadlineMs: 40_000 });
    expect(loud.out).toContain('reading big.csv');
    const quiet = await runInTerminal([process.execPath, BIN, 'upload', '--dry-run', 'big.csv', '--quiet'], { cwd: dir, env: { NO_COLOR: '1' }, ctrlCAfter: [], deadlineMs: 40_000 });
    expect(quiet.out).not.toContain('reading big.csv');
    expect(quiet.status, quiet.out).toBe(0);
  }, 90_000);

  it('ends on a terminal that reports no width (a pseudo-terminal whose size was never set), with plain progress', async () => {
    // a spinner drawn there cleared lines without end, and the run never ended
    const env = { TRACK_URL: server.url, TRACK_API_KEY: 'k', NO_COLOR: '1' };
    const small = Array.from({ length: 300 }, (_, i) => `u${i},${i}`).join('\n');
    writeFileSync(join(dir, 'small.csv'), `external_id,score\n${small}\n`);
    for (const args of [['validate', 'small.csv'], ['upload', '--dry-run', 'small.csv'], ['upload', 'small.csv', '--restart']]) {
      const run = await runInTerminal([process.execPath, BIN, ...args], { cwd: dir, env, ctrlCAfter: [], deadlineMs: 20_000, columns: 0 });
      expect(run.killed, `${args.join(' ')}: ${run.out.slice(0, 500)}`).toBe(false);
      expect(run.status, run.out.slice(0, 500)).toBe(0);
      expect(run.out).toMatch(/(validate|upload|upload --dry-run): 1 file, 300 rows read/);
      expect(run.out.length).toBeLessThan(10_000);
    }
  }, 90_000);
});
