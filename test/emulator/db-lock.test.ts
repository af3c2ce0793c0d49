// One emulator per database file: a second is refused at start, naming the file and the process that
// has it; a lock left by a killed emulator is taken over; inspect still reads a file in use.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DatabaseInUseError } from '../../src/emulator/db-lock.js';
import { startEmulator, type Emulator } from '../../src/emulator/server.js';
import { runCli, spawnEmulator, tempDir, type RunningEmulator } from '../helpers/cli.js';

let tmp: ReturnType<typeof tempDir>;
const open: Emulator[] = [];
const running: RunningEmulator[] = [];
beforeEach(() => (tmp = tempDir()));
afterEach(async () => {
  for (const e of open.splice(0)) await e.close();
  for (const r of running.splice(0)) {
    if (r.proc.exitCode === null && r.proc.signalCode === null) {
      r.proc.kill('SIGKILL');
      await r.exited;
    }
  }
  tmp.cleanup();
});

describe('startEmulator', () => {
  it('refuses a second emulator on the same file, and starts one once the first has closed', async () => {
    const db = join(tmp.dir, 'a.sqlite');
    const first = await startEmulator({ db });
    open.push(first);
    expect(existsSync(`${db}.lock`)).toBe(true);

    const refused = await startEmulator({ db }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(DatabaseInUseError);
    const error = refused as DatabaseInUseError;
    expect(error.file).toBe(realpathSync(db));
    expect(error.owner.pid).toBe(process.pid);
    expect(error.message).toContain(db);
    expect(error.message).toContain(`pid ${process.pid}`);

    await open.pop()!.close();
    expect(existsSync(`${db}.lock`)).toBe(false);
    const again = await startEmulator({ db });
    open.push(again);
    expect((await fetch(`${again.url}/health`)).status).toBe(200);
  });

  it('sees two names for one file as the same database', async () => {
    const db = join(tmp.dir, 'real.sqlite');
    open.push(await startEmulator({ db }));
    const link = join(tmp.dir, 'link.sqlite');
    symlinkSync(db, link);
    await expect(startEmulator({ db: link })).rejects.toBeInstanceOf(DatabaseInUseError);
  });

  it('gives the lock back when it cannot start', async () => {
    const taken = await startEmulator({});
    open.push(taken);
    const db = join(tmp.dir, 'port.sqlite');
    await expect(startEmulator({ db, port: taken.port })).rejects.toThrow(/EADDRINUSE/);
    expect(existsSync(`${db}.lock`)).toBe(false);
  });

  it('takes no lock for an in-memory database', async () => {
    open.push(await startEmulator({ db: ':memory:' }));
    open.push(await startEmulator({ db: ':memory:' }));
    expect(open).toHaveLength(2);
  });

  it('respects a lock from another host, and says which file to delete if that emulator is gone', async () => {
    const db = join(tmp.dir, 'shared.sqlite');
    writeFileSync(`${db}.lock`, JSON.stringify({ pid: 12345, host: `not-${hostname()}`, since: '2024-01-01T00:00:00.000Z' }));
    const error = (await startEmulator({ db }).catch((e: unknown) => e)) as Error;
    expect(error).toBeInstanceOf(DatabaseInUseError);
    expect(error.message).toContain(`pid 12345 on host not-${hostname()}`);
    expect(error.message).toContain(`delete ${db}.lock`);
  });

  it('takes over a lock whose process has ended', async () => {
    const db = join(tmp.dir, 'stale.sqlite');
    // a pid that was just alive and is not any more: a child that has ended
    const gone = spawnSync(process.execPath, ['-e', '']).pid!;
    writeFileSync(`${db}.lock`, JSON.stringify({ pid: gone, host: hostname(), since: '2024-01-01T00:00:00.000Z' }));
    const emu = await startEmulator({ db });
    open.push(emu);
    expect(JSON.parse(readFileSync(`${db}.lock`, 'utf8')).pid).toBe(process.pid);
  });
});

describe('track emulate', () => {
  it('exits 2 naming the file and the pid of the emulator that has it; inspect still reads it', async () => {
    const db = join(tmp.dir, 'cli.sqlite');
    const first = await spawnEmulator(['--db', db, '--api-key', 'k']);
    running.push(first);

    const second = runCli(['emulate', '--port', '0', '--db', db, '--api-key', 'k']);
    expect(second.status).toBe(2);
    expect(second.stderr).toContain(db);
    expect(second.stderr).toContain(`pid ${first.proc.pid}`);
    expect(second.stdout).not.toContain('listening');

    const inspected = runCli(['inspect', '--db', db]);
    expect(inspected.status).toBe(0);
    expect(JSON.parse(inspected.stdout)).toEqual([]);

    first.proc.kill('SIGTERM');
    expect(await first.exited).toBe(0);
    expect(existsSync(`${db}.lock`)).toBe(false);
  });

  it('starts on a file whose emulator was killed with kill -9', async () => {
    const db = join(tmp.dir, 'killed.sqlite');
    const first = await spawnEmulator(['--db', db, '--api-key', 'k']);
    running.push(first);
    first.proc.kill('SIGKILL');
    await first.exited;
    expect(existsSync(`${db}.lock`)).toBe(true);

    const next = await spawnEmulator(['--db', db, '--api-key', 'k']);
    running.push(next);
    expect((await fetch(`${next.url}/health`)).status).toBe(200);
    expect(JSON.parse(readFileSync(`${db}.lock`, 'utf8')).pid).toBe(next.proc.pid);
  });
});
