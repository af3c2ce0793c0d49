// --summary-file naming a pipe or a device (/dev/stdout, /dev/null) writes the summary to it, as a
// shell's > would: the earlier summary that goes as a run starts, and the file renamed over the old
// one, are of regular files only (as root, /dev/null was replaced by a file holding the summary).
import { execFileSync } from 'node:child_process';
import { createReadStream, lstatSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCliAsync } from '../helpers/cli.js';
import { useServers } from '../helpers/servers.js';

const { tmp } = useServers();

/** What comes through the pipe at `path` until its writer closes it, or undefined after `ms`. */
function readPipe(path: string, ms: number): Promise<string | undefined> {
  return new Promise((resolve) => {
    let text = '';
    const stream = createReadStream(path, 'utf8');
    const timer = setTimeout(() => {
      stream.destroy();
      resolve(undefined);
    }, ms);
    stream.on('data', (chunk) => (text += chunk));
    stream.on('end', () => {
      clearTimeout(timer);
      resolve(text);
    });
  });
}

describe('--summary-file naming a named pipe', () => {
  it('writes the summary into the pipe and leaves the pipe in place, also when the run stops early', async () => {
    const input = join(tmp.dir, 'users.csv');
    writeFileSync(input, 'external_id,plan\nu1,pro\n');
    const pipe = join(tmp.dir, 'summary.pipe');
    execFileSync('mkfifo', [pipe]);
    for (const more of [[], ['--shard', '9/4']]) {
      const reading = readPipe(pipe, 20_000);
      const run = await runCliAsync(['validate', input, '--quiet', '--summary-file', pipe, ...more], { cwd: tmp.dir });
      const text = await reading;
      expect(text, `${more}: ${run.stderr}`).toBeDefined();
      expect(JSON.parse(text!)).toMatchObject({ command: 'validate', exitStatus: more.length === 0 ? 0 : 2 });
      expect(run.status).toBe(more.length === 0 ? 0 : 2);
      expect(lstatSync(pipe).isFIFO(), `${more}`).toBe(true);
    }
  }, 60_000);
});
