// One SIGTERM told twice at once is one stop: `timeout` signals its command and then its whole process
// group, which holds the command too. A run so stopped ends as a stopped run does (requests in flight
// finished, its summary written, exit 130), not aborted as by a second Ctrl-C.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { BIN } from '../helpers/cli.js';
import { writeEventsCsv } from '../helpers/events.js';
import { useServers } from '../helpers/servers.js';

const servers = useServers();

it('takes a SIGTERM twice within a moment as one stop: the summary written, nothing aborted', async () => {
  const emulator = await servers.emulator({ latency: '300' });
  const file = writeEventsCsv(servers.tmp.dir, 2000);
  const child = spawn(process.execPath, [BIN, 'upload', file, '--url', emulator.url, '--api-key', 'k', '--no-journal', '--concurrency', '2', '--summary-file', 'summary.json', '--progress', 'ndjson'], {
    cwd: servers.tmp.dir,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const ended = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  // requests in flight: the run's first progress line has come
  await new Promise((resolve) => child.stderr.once('data', resolve));
  await new Promise((resolve) => setTimeout(resolve, 500));
  // (sent at once, the two would be one to the system: apart by a moment, as `timeout` may send them, they are two)
  child.kill('SIGTERM');
  await new Promise((resolve) => setTimeout(resolve, 30));
  child.kill('SIGTERM');
  expect(await ended).toBe(130);
  const summary = JSON.parse(readFileSync(join(servers.tmp.dir, 'summary.json'), 'utf8'));
  expect(summary).toMatchObject({ exitStatus: 130, interrupted: true });
  expect(summary.delivery.aborted).not.toBe(true);
}, 60_000);
