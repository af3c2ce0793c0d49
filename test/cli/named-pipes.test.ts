// Outputs that are named pipes: one no process reads is refused (opening it would wait with no end, and
// for --events no signal could end the wait); a pipe whose reader holds it and never reads leaves the
// run waiting on a write, which the third SIGTERM ends as the system ends a process (the exit the
// second asks for waits on that write).
import { execFileSync, spawn } from 'node:child_process';
import { closeSync, openSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BIN, closedPort, runCliAsync } from '../helpers/cli.js';
import { useServers } from '../helpers/servers.js';

const { tmp } = useServers();

const rows = (n: number): string => ['external_id,plan', ...Array.from({ length: n }, (_, i) => `u${i},pro`)].join('\n') + '\n';

describe('a named pipe as an output', () => {
  it('no process reads: refused, exit 2, naming it and what to do (--events, --out, --rejects)', async () => {
    writeFileSync(join(tmp.dir, 'bad.csv'), 'external_id,plan\nu1,pro\n,team\n');
    const pipe = join(tmp.dir, 'p');
    execFileSync('mkfifo', [pipe]);
    const url = `http://127.0.0.1:${await closedPort()}`;
    for (const [flag, what] of [['--events', '--events'], ['--out', 'the requests file'], ['--rejects', 'the rejects file']]) {
      const r = await runCliAsync(['upload', 'bad.csv', '--url', url, '--api-key', 'k', '--dry-run', flag, pipe], { cwd: tmp.dir });
      expect(r.status, `${flag}: ${r.stderr}`).toBe(2);
      expect(r.stderr).toContain(`cannot write ${what} ${pipe}: a named pipe no process reads; start its reader first`);
    }
  }, 60_000);

  it('a reader that holds it and never reads: the third SIGTERM ends the run', async () => {
    writeFileSync(join(tmp.dir, 'many.csv'), rows(20_000));
    const pipe = join(tmp.dir, 'p');
    execFileSync('mkfifo', [pipe]);
    // both ends held here, nothing read: the run's writes stop once the pipe's buffer is full
    const held = openSync(pipe, 'r+');
    try {
      const url = `http://127.0.0.1:${await closedPort()}`;
      const child = spawn(process.execPath, [BIN, 'upload', 'many.csv', '--url', url, '--api-key', 'k', '--dry-run', '--out', pipe, '--progress', 'ndjson', '--progress-interval', '1'], { cwd: tmp.dir, stdio: ['ignore', 'ignore', 'pipe'] });
      const started = new Promise((resolve) => child.stderr.once('data', resolve));
      const ended = new Promise<{ code: number | null; signal: string | null }>((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
      // (the plan is under way once the progress line comes; its writes fill the pipe soon after)
      await started;
      await new Promise((resolve) => setTimeout(resolve, 2_000));
      for (let i = 0; i < 3; i += 1) {
        child.kill('SIGTERM');
        await new Promise((resolve) => setTimeout(resolve, 2_500));
      }
      const outcome = await Promise.race([ended, new Promise((resolve) => setTimeout(resolve, 5_000, 'still running'))]);
      if (outcome === 'still running') child.kill('SIGKILL');
      expect(outcome).toEqual({ code: null, signal: 'SIGTERM' });
    } finally {
      closeSync(held);
    }
  }, 60_000);

  it('a reader there: every line reaches it, the look for a reader leaving it no end of file before the run writes', async () => {
    writeFileSync(join(tmp.dir, 'bad.csv'), 'external_id,plan\nu1,pro\n,team\n,free\n');
    const url = `http://127.0.0.1:${await closedPort()}`;
    for (let i = 0; i < 5; i += 1) {
      const pipe = join(tmp.dir, `p${i}`);
      execFileSync('mkfifo', [pipe]);
      const reader = spawn('cat', [pipe]);
      let got = '';
      reader.stdout.on('data', (d: Buffer) => (got += d.toString()));
      const read = new Promise((resolve) => reader.on('close', resolve));
      const r = await runCliAsync(['upload', 'bad.csv', '--url', url, '--api-key', 'k', '--dry-run', '--rejects', pipe], { cwd: tmp.dir });
      await read;
      expect(r.status, r.stderr).toBe(1);
      expect(got.trim().split('\n').map((l) => JSON.parse(l).line)).toEqual([3, 4]);
    }
  }, 60_000);
});

describe('standard output as an output', () => {
  it('a pipe read slowly gets every line, and standard output stays open for the summary', async () => {
    const rows = ['external_id,plan', ...Array.from({ length: 30_000 }, (_, i) => `,p${i}`)];
    writeFileSync(join(tmp.dir, 'all-bad.csv'), `${rows.join('\n')}\n`);
    const url = `http://127.0.0.1:${await closedPort()}`;
    const shell = spawn('bash', ['-c', `'${process.execPath}' '${BIN}' upload all-bad.csv --url ${url} --api-key k --dry-run --rejects /dev/stdout | (sleep 2; cat)`], { cwd: tmp.dir });
    let out = '';
    shell.stdout.on('data', (d: Buffer) => (out += d.toString()));
    expect(await new Promise((resolve) => shell.on('close', resolve))).toBe(0);
    const lines = out.trimEnd().split('\n');
    expect(lines.filter((l) => l.startsWith('{"file":'))).toHaveLength(30_000);
    expect(lines.filter((l) => l.startsWith('upload --dry-run: 1 file, '))).toHaveLength(1);
  }, 60_000);
});
