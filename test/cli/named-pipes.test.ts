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
      const child = spawn(process.execPath, [BIN, 'upload', 'many.csv', '--url', url, '--api-key', 'k', '--dry-run', '--out', pipe], { cwd: tmp.dir, stdio: 'ignore' });
      const ended = new Promise<{ code: number | null; signal: string | null }>((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
      await new Promise((resolve) => setTimeout(resolve, 3_000));
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
});
