// A hangup (SIGHUP: a terminal window closed, an SSH session dropped) stops a run as Ctrl-C and
// SIGTERM do: requests in flight finish, the journal is saved, the summary file written, exit 130.
// Writing to the terminal that closed fails (EIO), which ends nothing. The emulator stops on it as on
// SIGTERM, and `track emulate --exec` passes it on to its command, which stops the same way.
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readJournal } from '../../src/records/journal.js';
import { BIN } from '../helpers/cli.js';
import { until } from '../helpers/processes.js';
import { hasPython, runInTerminal } from '../helpers/pty.js';
import { useServers } from '../helpers/servers.js';

const { tmp, faultServer } = useServers();

/** `rows` valid attribute rows, one user each. */
function usersCsv(rows: number): string {
  writeFileSync(join(tmp.dir, 'users.csv'), `external_id,score\n${Array.from({ length: rows }, (_, i) => `u${i},${i}`).join('\n')}\n`);
  return 'users.csv';
}

const summaryFile = (): any => JSON.parse(readFileSync(join(tmp.dir, 'summary.json'), 'utf8'));

interface Ended {
  status: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Runs track without a terminal; `act` gets the process once it has started, and may signal it. */
async function runTrack(args: string[], env: Record<string, string>, act: (pid: number) => Promise<void>): Promise<Ended> {
  const child = spawn(process.execPath, [BIN, ...args], { cwd: tmp.dir, env: { ...process.env, NO_COLOR: '1', ...env } });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const ended = new Promise<Ended>((resolve) => child.on('close', (status, signal) => resolve({ status, signal, stdout, stderr })));
  const deadline = setTimeout(() => child.kill('SIGKILL'), 30_000);
  await act(child.pid!);
  const result = await ended;
  clearTimeout(deadline);
  return result;
}

describe.skipIf(!hasPython)('a terminal that closes under an upload', () => {
  it('stops it as Ctrl-C does: requests in flight finish, journal and summary file saved, exit 130; --resume sends the rest once', async () => {
    const server = await faultServer(() => ({ kind: 'ok', delayMs: 150 }));
    const env = { TRACK_URL: server.url, TRACK_API_KEY: 'k', NO_COLOR: '1' };
    const file = usersCsv(2000);
    const run = await runInTerminal([process.execPath, BIN, 'upload', file, '--concurrency', '1', '--journal', 'j', '--summary-file', 'summary.json'], {
      cwd: tmp.dir,
      env,
      ctrlCAfter: [],
      hangUpAfter: 'accepted [1-9][0-9]{2},',
      deadlineMs: 20_000,
    });
    expect(run.hungUp, run.out).toBe(true);
    expect(run.killed, run.out).toBe(false);
    // not ended by the signal (-1), nor by a write to the closed terminal (an uncaught EIO is 1 or 7)
    expect(run.status, run.out).toBe(130);
    const summary = summaryFile();
    expect(summary).toMatchObject({ command: 'upload', interrupted: true, exitStatus: 130, delivery: { stopped: true, aborted: false, unknownOutcomes: 0 } });
    expect((await readJournal(join(tmp.dir, 'j'))).end?.complete).toBe(false);
    const first = server.received.length;
    expect(first).toBeLessThan(40);

    const resumed = await runTrack(['upload', file, '--journal', 'j', '--resume'], env, async () => {});
    expect(resumed.status, resumed.stderr).toBe(0);
    const ids = server.received.flatMap((r) => (r.body?.attributes ?? []).map((a) => a.external_id));
    expect(new Set(ids).size).toBe(2000);
    expect(ids).toHaveLength(2000);
  }, 60_000);
});

describe('SIGHUP without a terminal', () => {
  it('stops an upload with its summary, and a second SIGHUP does not abort it as a second Ctrl-C would', async () => {
    // every answer takes 400 ms: both hangups come while requests are in flight
    const server = await faultServer(() => ({ kind: 'ok', delayMs: 400 }));
    const file = usersCsv(3000);
    const run = await runTrack(['upload', file, '--concurrency', '4', '--journal', 'j', '--summary-file', 'summary.json'], { TRACK_URL: server.url, TRACK_API_KEY: 'k' }, async (pid) => {
      expect(await until(() => server.received.length >= 2, 20_000)).toBe(true);
      process.kill(pid, 'SIGHUP');
      await new Promise((r) => setTimeout(r, 50));
      process.kill(pid, 'SIGHUP');
    });
    expect(run.signal, run.stderr).toBeNull();
    expect(run.status, run.stderr).toBe(130);
    expect(run.stderr).toMatch(/stopping: \d+ requests? in flight/);
    expect(run.stdout).toMatch(/\ninterrupted by a signal \(Ctrl-C, SIGTERM, SIGHUP\) after [\d,]+ rows? of the input (was|were) read/);
    expect(summaryFile()).toMatchObject({ interrupted: true, exitStatus: 130, delivery: { stopped: true, aborted: false, unknownOutcomes: 0 } });
    expect((await readJournal(join(tmp.dir, 'j'))).end?.complete).toBe(false);
  }, 60_000);

  it('stops track emulate as SIGTERM does: exit 0, its database lock let go', async () => {
    const run = await runTrack(['emulate', '--port', '0', '--db', 'e.sqlite', '--api-key', 'k'], {}, async (pid) => {
      expect(await until(() => existsSync(join(tmp.dir, 'e.sqlite.lock')), 20_000)).toBe(true);
      // the start lines are out once the lock is held and the port taken; give them the moment they take
      await new Promise((r) => setTimeout(r, 300));
      process.kill(pid, 'SIGHUP');
    });
    expect(run.signal, run.stderr).toBeNull();
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).toContain('track emulator listening on');
    expect(existsSync(join(tmp.dir, 'e.sqlite.lock'))).toBe(false);
  }, 60_000);

  it('track emulate --exec passes it on: the upload it runs stops cleanly, and its status is the exit status; a second SIGHUP kills nothing', async () => {
    const file = usersCsv(3000);
    const upload = `"${process.execPath}" "${BIN}" upload ${file} --concurrency 1 --journal j --summary-file summary.json`;
    const run = await runTrack(['emulate', '--latency', '300', '--exec', upload], {}, async (pid) => {
      // the upload has begun sending once its journal holds a request
      expect(await until(() => existsSync(join(tmp.dir, 'j')) && readFileSync(join(tmp.dir, 'j'), 'utf8').split('\n').length > 3, 20_000)).toBe(true);
      process.kill(pid, 'SIGHUP');
      await new Promise((r) => setTimeout(r, 50));
      process.kill(pid, 'SIGHUP');
    });
    expect(run.stderr).not.toContain('its process group is killed');
    expect(run.stderr).toContain('track: SIGHUP: passed on to the command');
    expect(run.status, run.stderr).toBe(130);
    expect(run.stdout).toContain('interrupted by a signal');
    expect(summaryFile()).toMatchObject({ interrupted: true, exitStatus: 130, delivery: { stopped: true, aborted: false } });
  }, 60_000);
});
