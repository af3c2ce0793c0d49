// A SIGINT or SIGTERM that comes while the program is still starting (its modules loading, its
// command not yet running) ends it as one that comes later does: an upload or a dry run ends as a
// stopped run (its summary file, its events' end, its journal's end, exit 130), the emulator stops,
// and a command that takes no stop is ended by the signal as before. The signal is sent while the
// loading of a named module is held (test/helpers/hold-module.mjs), so it comes at that point however
// slow the machine.
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readJournal } from '../../src/records/journal.js';
import { BIN, ROOT } from '../helpers/cli.js';
import { useServers } from '../helpers/servers.js';
import { ndjson } from './run-cli.js';

const { tmp, faultServer } = useServers();
const HOLD_HOOK = join(ROOT, 'test/helpers/hold-module.mjs');
/** Far beyond a run that stops at once: only one that does not end reaches it (it is then killed, and fails). */
const DEADLINE_MS = 30_000;

interface Ended {
  status: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Runs track with the loading of `module` held; once it is, sends `signals` and lets the load go on. */
async function signalWhileLoading(module: string, args: string[], signals: NodeJS.Signals[]): Promise<Ended> {
  const child = spawn(process.execPath, ['--import', HOLD_HOOK, BIN, ...args], {
    cwd: tmp.dir,
    env: { ...process.env, NO_COLOR: '1', TRACK_URL: '', TRACK_API_KEY: '', HOLD_MODULE: module, HOLD_DIR: tmp.dir },
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const ended = new Promise<Ended>((resolve) => child.on('close', (status, signal) => resolve({ status, signal, stdout, stderr })));
  let exited = false;
  void ended.then(() => (exited = true));
  while (!existsSync(join(tmp.dir, 'held'))) {
    if (exited) throw new Error(`track ended before ${module} was loaded: ${stderr}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  for (const signal of signals) child.kill(signal);
  writeFileSync(join(tmp.dir, 'go'), '');
  const deadline = setTimeout(() => child.kill('SIGKILL'), DEADLINE_MS);
  void ended.then(() => clearTimeout(deadline));
  return ended;
}

/** `rows` valid attribute rows, one user each. */
function plainCsv(rows: number): string {
  const path = join(tmp.dir, 'plain.csv');
  writeFileSync(path, `external_id,score\n${Array.from({ length: rows }, (_, i) => `u${i},${i}`).join('\n')}\n`);
  return path;
}

const summaryOf = (): any => JSON.parse(readFileSync(join(tmp.dir, 'summary.json'), 'utf8'));

describe('a stop signal while track upload is starting', () => {
  // the program's modules (before any of its code but the first line runs), the upload command's
  // (it has begun, before its run), the run's (as it would put its own handlers on)
  for (const [module, when] of [
    ['/dist/cli/main.js', 'before the program loads'],
    ['/dist/cli/output/progress.js', 'once the command has begun'],
    ['/dist/upload/upload.js', 'just before the run begins'],
  ] as const) {
    it(`${when}: the run ends as a stop before reading anything, with its summary file, events' end and journal's end`, async () => {
      const server = await faultServer();
      const file = plainCsv(200);
      const run = await signalWhileLoading(module, ['upload', file, '--url', server.url, '--api-key', 'k', '--journal', 'j', '--summary-file', 'summary.json', '--events', 'events.ndjson'], ['SIGTERM']);
      expect(run.signal, run.stderr).toBeNull();
      expect(run.status, run.stderr).toBe(130);
      // said once, as a stop later on is
      expect(run.stderr.match(/stopping: no request in flight, saving the journal; Ctrl-C again to abort/g)).toHaveLength(1);
      expect(run.stdout).toContain('interrupted by a signal (Ctrl-C, SIGTERM, SIGHUP) after 0 rows of the input were read');
      const summary = summaryOf();
      expect(summary).toMatchObject({ command: 'upload', rows: 0, interrupted: true, exitStatus: 130, delivery: { stopped: true, aborted: false } });
      const events = ndjson<{ type: string; signal?: string; exitStatus?: number }>(join(tmp.dir, 'events.ndjson'));
      expect(events.map((e) => e.type)).toEqual(['start', 'stop', 'progress', 'end']);
      expect(events[1]).toMatchObject({ signal: 'SIGTERM', action: 'finish' });
      expect(events[3]).toMatchObject({ exitStatus: 130, summary: { interrupted: true, rows: 0 } });
      expect((await readJournal(join(tmp.dir, 'j'))).end?.complete).toBe(false);
      expect(server.received).toHaveLength(0);
    }, 60_000);
  }

  it('a SIGHUP (its terminal closed) before the program loads is held as SIGTERM is: the run ends as a stop, with its summary file', async () => {
    const server = await faultServer();
    const file = plainCsv(200);
    const run = await signalWhileLoading('/dist/cli/main.js', ['upload', file, '--url', server.url, '--api-key', 'k', '--journal', 'j', '--summary-file', 'summary.json'], ['SIGHUP']);
    expect(run.signal, run.stderr).toBeNull();
    expect(run.status, run.stderr).toBe(130);
    expect(summaryOf()).toMatchObject({ command: 'upload', rows: 0, interrupted: true, exitStatus: 130 });
    expect((await readJournal(join(tmp.dir, 'j'))).end?.complete).toBe(false);
    expect(server.received).toHaveLength(0);
  }, 60_000);

  it('with --no-journal, the stop line says nothing of saving a journal, and none is written', async () => {
    const server = await faultServer();
    const file = plainCsv(200);
    const run = await signalWhileLoading('/dist/cli/main.js', ['upload', file, '--url', server.url, '--api-key', 'k', '--no-journal', '--summary-file', 'summary.json'], ['SIGTERM']);
    expect(run.status, run.stderr).toBe(130);
    expect(run.stderr).toContain('stopping: no request in flight; Ctrl-C again to abort');
    expect(run.stderr).not.toContain('journal');
    expect(readdirSync(tmp.dir).filter((name) => name.includes('journal'))).toEqual([]);
    expect(summaryOf()).toMatchObject({ interrupted: true, exitStatus: 130 });
  }, 60_000);

  it('a second signal before the run begins ends the process at once, 130, as a second Ctrl-C does', async () => {
    const file = plainCsv(10);
    // two signals of different kinds, so the second cannot merge with the first while both wait
    const run = await signalWhileLoading('/dist/cli/main.js', ['upload', file, '--url', 'http://127.0.0.1:9', '--api-key', 'k', '--summary-file', 'summary.json'], ['SIGINT', 'SIGTERM']);
    expect(run.signal, run.stderr).toBeNull();
    expect(run.status, run.stderr).toBe(130);
    expect(existsSync(join(tmp.dir, 'summary.json'))).toBe(false);
  }, 60_000);
});

describe('a stop signal while other commands start', () => {
  it('a dry run ends as a stop with its summary file, the file not read to its end', async () => {
    // a dry run sees its stop after the first block it reads: the file is many blocks long
    const file = plainCsv(100_000);
    const run = await signalWhileLoading('/dist/cli/main.js', ['validate', file, '--summary-file', 'summary.json'], ['SIGINT']);
    expect(run.status, run.stderr).toBe(130);
    expect(summaryOf()).toMatchObject({ command: 'validate', interrupted: true, readToEnd: false, exitStatus: 130 });
    expect(summaryOf().rows).toBeLessThan(100_000);
  }, 60_000);

  // standard input stays open and sends nothing (the test never writes to it nor closes it), as a
  // terminal's or a pipe's from a program still starting: the stop gives the read up
  for (const command of [['validate'], ['upload', '--dry-run']]) {
    it(`${command.join(' ')} of standard input that sends nothing ends as a stop that read nothing`, async () => {
      const run = await signalWhileLoading('/dist/cli/main.js', [...command, '-', '--format', 'csv', '--summary-file', 'summary.json'], ['SIGINT']);
      expect(run.signal, `the run did not end: ${run.stderr}`).toBeNull();
      expect(run.status, run.stderr).toBe(130);
      expect(summaryOf()).toMatchObject({ interrupted: true, rows: 0, exitStatus: 130 });
    }, 60_000);
  }

  it('track emulate --exec does not run its command, and ends with 128 + N', async () => {
    const run = await signalWhileLoading('/dist/cli/main.js', ['emulate', '--exec', 'touch ran'], ['SIGTERM']);
    expect(run.status, run.stderr).toBe(143);
    expect(run.stderr).toContain('track: stopped by SIGTERM before the command started; it was not run');
    expect(existsSync(join(tmp.dir, 'ran'))).toBe(false);
  }, 60_000);

  it('track emulate stops before it listens, exit 0', async () => {
    const run = await signalWhileLoading('/dist/cli/main.js', ['emulate', '--port', '0', '--db', ':memory:'], ['SIGTERM']);
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).toBe('');
  }, 60_000);

  it('a command that takes no stop is ended by the signal, as it always was', async () => {
    const run = await signalWhileLoading('/dist/cli/main.js', ['report', 'missing.json'], ['SIGTERM']);
    expect(run.signal, run.stderr).toBe('SIGTERM');
    expect(run.stdout + run.stderr).toBe('');
  }, 60_000);

  it('--help ends as it would have: the help, exit 0', async () => {
    const run = await signalWhileLoading('/dist/cli/main.js', ['upload', '--help'], ['SIGTERM']);
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).toContain('Usage: track upload');
  }, 60_000);
});
