// Every run ends: whatever stops `track upload` or `track validate` (a refused key, a server that
// cannot be reached, a request over the server's batch limit, a file that cannot be written, a
// signal), the process exits soon after its summary, on a file whose rows are rejected and whose
// fields are dropped (the planning thread then has much to say when the delivery stops). Each case
// runs ten times: a run that does not end is killed at its deadline and fails the test.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { BIN, closedPort } from '../helpers/cli.js';
import { writeCrmCsv, runTimed, type TimedRun } from '../helpers/crm.js';
import { useServers } from '../helpers/servers.js';
import { whenReadingStdin } from '../helpers/signals.js';

const { tmp, emulator, faultServer } = useServers();
const TRIES = 10;
/** Far beyond a run of 2,000 rows: only a run that does not end reaches it. */
const DEADLINE_MS = 25_000;
/** From the summary to the exit; a run that ends takes a few milliseconds, a busy machine more. */
const AFTER_SUMMARY_MS = 3_000;

/**
 * Runs `args(i)` TRIES times, `together` at a time; each must end within its deadline, soon after
 * its summary, and pass `check`.
 */
async function everyTry(
  args: (i: number) => string[],
  check: (run: TimedRun) => void,
  options: { together?: number; signalWhen?: () => boolean; before?: () => void } = {},
): Promise<void> {
  const together = options.together ?? 2;
  for (let first = 1; first <= TRIES; first += together) {
    options.before?.();
    const tries = Array.from({ length: Math.min(together, TRIES - first + 1) }, (_, k) => first + k);
    const runs = await Promise.all(tries.map((i) => runTimed(args(i), { cwd: tmp.dir, deadlineMs: DEADLINE_MS, signalWhen: options.signalWhen })));
    runs.forEach((run, k) => {
      const i = tries[k];
      expect(run.hung, `try ${i} did not end: ${run.stderr}`).toBe(false);
      expect(run.afterSummaryMs, `try ${i}: no summary`).toBeDefined();
      expect(run.afterSummaryMs!, `try ${i}: exit after the summary`).toBeLessThan(AFTER_SUMMARY_MS);
      check(run);
    });
  }
}

const crm = (): string => writeCrmCsv(tmp.dir, 2000);
/** Each try keeps its own journal and rejects file, as tries run side by side. */
const upload = (file: string, i: number): string[] => ['upload', file, '--drop-invalid-fields', '--json', '--journal', `j${i}.journal`, '--rejects', `r${i}.ndjson`];

/** What stops a run, the flags that bring it about (given the emulator's URL), and how the run says so. */
const FATAL_STOPS: Array<{ name: string; args: (url: string) => Promise<string[]> | string[]; says: RegExp }> = [
  { name: 'a refused API key (401)', args: (url) => ['--url', url, '--api-key', 'wrong'], says: /refused the API key/ },
  {
    name: 'a server that cannot be reached, with --retries 0',
    args: async () => ['--url', `http://127.0.0.1:${await closedPort()}`, '--api-key', 'k', '--retries', '0'],
    says: /ECONNREFUSED/,
  },
  { name: 'a request over the server’s batch limit (--max-total 100 against 50)', args: (url) => ['--url', url, '--api-key', 'k', '--max-total', '100'], says: /over its batch limit/ },
  { name: 'a rejects file that cannot be written (/dev/full)', args: (url) => ['--url', url, '--api-key', 'k', '--rejects', '/dev/full'], says: /cannot write the rejects file \/dev\/full: ENOSPC/ },
];

describe('a run stopped by a fatal error ends after its summary', () => {
  for (const stop of FATAL_STOPS) {
    it(stop.name, async () => {
      const emu = await emulator();
      const file = crm();
      const flags = await stop.args(emu.url);
      await everyTry(
        (i) => [...upload(file, i), ...flags],
        (run) => {
          expect(run.status).toBe(3);
          expect(run.stderr).toMatch(stop.says);
        },
      );
    }, 120_000);
  }

  it('validate with an --out that cannot be written', async () => {
    const file = crm();
    await everyTry(
      () => ['validate', file, '--drop-invalid-fields', '--out', '/dev/full', '--json'],
      (run) => {
        expect(run.status).toBe(3);
        expect(run.stderr).toMatch(/cannot write the requests file \/dev\/full: ENOSPC/);
      },
    );
  }, 120_000);
});

describe('a run stopped by a signal ends after its summary', () => {
  it('SIGTERM while requests are in flight: interrupted, exit 130', async () => {
    // each request is answered after 100 ms, one at a time: the run is still sending when the signal comes
    const server = await faultServer(() => ({ kind: 'ok', delayMs: 100 }));
    const file = crm();
    await everyTry(
      (i) => [...upload(file, i), '--url', server.url, '--api-key', 'k', '--concurrency', '1'],
      (run) => {
        expect(run.status).toBe(130);
        expect(JSON.parse(run.stdout).interrupted).toBe(true);
      },
      { together: 1, before: () => server.forget(), signalWhen: () => server.received.length >= 2 },
    );
  }, 120_000);
});

describe('a signal while standard input is idle', () => {
  /** Sends SIGINT to a run whose standard input is open and idle; its exit status, once it ends by itself (null if killed at the deadline). */
  async function interrupt(child: ChildProcessWithoutNullStreams): Promise<number | null> {
    if (child.exitCode !== null) return child.exitCode;
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    child.kill('SIGINT');
    const timer = setTimeout(() => child.kill('SIGKILL'), DEADLINE_MS);
    const status = await exited;
    clearTimeout(timer);
    child.stdin.destroy();
    return status;
  }

  for (const command of ['validate', 'upload']) {
    it(`${command}: the read is given up, the summary printed, exit 130`, async () => {
      const emu = await emulator();
      // standard input stays open and sends nothing
      const target = command === 'upload' ? ['--url', emu.url, '--api-key', 'k'] : [];
      const child = spawn(process.execPath, [BIN, command, '-', '--format', 'csv', ...target], { cwd: tmp.dir, stdio: ['pipe', 'pipe', 'pipe'] });
      let stdout = '';
      child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
      expect(await whenReadingStdin(child.pid!)).toBe(true);
      expect(await interrupt(child), 'the run did not end').toBe(130);
      expect(stdout).toMatch(/interrupted by a signal \(Ctrl-C, SIGTERM, SIGHUP\) after 0 rows of the input were read/);
      expect(stdout).not.toContain('--resume');
    }, 60_000);
  }

  it('validate --preview: once the preview is printed, the read of what follows is given up, exit 130', async () => {
    // the first rows come, are previewed and kept for the run; then standard input stays open and sends nothing
    const child = spawn(process.execPath, [BIN, 'validate', '-', '--format', 'csv', '--preview', '1'], { cwd: tmp.dir, stdio: ['pipe', 'pipe', 'pipe'] });
    child.stdin.write('external_id,score\nu1,1\nu2,2\n');
    let stdout = '';
    const previewed = new Promise<void>((resolve) =>
      child.stdout.on('data', (d: Buffer) => {
        stdout += d.toString();
        if (stdout.includes('preview of -')) resolve();
      }),
    );
    // the stop signals are held from before the preview is printed (held-signals.ts): this one is the run's
    await previewed;
    expect(await interrupt(child), 'the run did not end').toBe(130);
    expect(stdout).toMatch(/interrupted by a signal \(Ctrl-C, SIGTERM, SIGHUP\)/);
  }, 60_000);
});
