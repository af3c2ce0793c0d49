// A database write that fails (here a full disk, on a small tmpfs: root only) is answered 500 in the
// fatal shape and logged to stderr with SQLite's message; the emulator keeps serving and takes
// requests again once there is room.
import { execFileSync } from 'node:child_process';
import { closeSync, mkdirSync, openSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { postJson, runCli, spawnEmulator, tempDir, type RunningEmulator } from '../helpers/cli.js';

const root = process.getuid?.() === 0;
let tmp: ReturnType<typeof tempDir>;
let mounted: string | undefined;
let emulator: RunningEmulator | undefined;

beforeEach(() => (tmp = tempDir()));
afterEach(async () => {
  if (emulator !== undefined && emulator.proc.exitCode === null && emulator.proc.signalCode === null) {
    emulator.proc.kill('SIGKILL');
    await emulator.exited;
  }
  emulator = undefined;
  if (mounted !== undefined) execFileSync('umount', [mounted]);
  mounted = undefined;
  tmp.cleanup();
});

/** Writes a file until the disk it is on has not a byte left. */
function fill(path: string): void {
  const fd = openSync(path, 'w');
  try {
    for (const size of [64 * 1024, 4096, 1]) {
      const block = Buffer.alloc(size, 1);
      try {
        for (;;) writeSync(fd, block);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOSPC') throw error;
      }
    }
  } finally {
    closeSync(fd);
  }
}

/** n profiles of about 5 kB each. */
function profiles(n: number, tag: string) {
  const notes = Object.fromEntries(Array.from({ length: 20 }, (_, k) => [`note_${k}`, `${k}`.padEnd(250, 'x')]));
  return { attributes: Array.from({ length: n }, (_, i) => ({ external_id: `${tag}-${i}`, ...notes })) };
}

it.skipIf(!root)('answers 500 and logs SQLite’s message when the disk is full, keeps serving, and recovers', async () => {
  const disk = join(tmp.dir, 'disk');
  mkdirSync(disk);
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=4m', 'tmpfs', disk]);
  mounted = disk;
  const db = join(disk, 'emulator.sqlite');
  emulator = await spawnEmulator(['--db', db, '--api-key', 'k']);
  let stderr = '';
  emulator.proc.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));

  // small: the log file it leaves (and the new file's schema left) cannot hold the next request
  expect((await postJson(`${emulator.url}/users/track`, 'k', profiles(1, 'before'))).status).toBe(201);

  const filler = join(disk, 'filler');
  fill(filler);
  const refused = await postJson(`${emulator.url}/users/track`, 'k', profiles(50, 'full'));
  expect(refused.status).toBe(500);
  expect(refused.body.message).toMatch(/database or disk is full/);
  expect(refused.body.errors).toEqual([refused.body.message]);
  // the log line comes from the same turn as the answer; wait for the pipe to carry it
  for (let i = 0; i < 250 && !stderr.includes('\n'); i += 1) await new Promise((r) => setTimeout(r, 20));
  expect(stderr).toMatch(/error: cannot write the database .*emulator\.sqlite: SQLITE_FULL: database or disk is full/);

  const health = await fetch(`${emulator.url}/health`);
  expect(health.status).toBe(200);

  rmSync(filler);
  expect((await postJson(`${emulator.url}/users/track`, 'k', profiles(50, 'after'))).status).toBe(201);

  emulator.proc.kill('SIGTERM');
  expect(await emulator.exited).toBe(0);
  const read = (id: string) => JSON.parse(runCli(['inspect', '--db', db, '--external-id', id]).stdout) as unknown[];
  expect(read('before-0')).toHaveLength(1);
  expect(read('full-0')).toHaveLength(0);
  expect(read('after-49')).toHaveLength(1);
});
