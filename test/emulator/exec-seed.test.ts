// `track emulate --exec` and `--seed`, and `track inspect`'s counting and limits, through the real CLI binary.
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readlinkSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { BIN, ROOT, postJson, runCli, runCliAsync, spawnEmulator, tempDir } from '../helpers/cli.js';
import { isRunning, pidIn, until } from '../helpers/processes.js';

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => (tmp = tempDir()));
afterEach(() => tmp.cleanup());

const FIXTURES = join(ROOT, 'fixtures');

/** A command for --exec that runs a script of node with the emulator's environment. */
const nodeScript = (file: string, source: string): string => {
  writeFileSync(file, source);
  return `"${process.execPath}" "${file}"`;
};


describe('track emulate --exec', () => {
  it('runs the command with TRACK_URL and TRACK_API_KEY, keeps its stdout clean, and exits with its status', async () => {
    const script = nodeScript(
      join(tmp.dir, 'app.mjs'),
      `const url = process.env.TRACK_URL, key = process.env.TRACK_API_KEY;
       const r = await fetch(url + '/users/track', { method: 'POST', headers: { authorization: 'Bearer ' + key, 'content-type': 'application/json' }, body: JSON.stringify({ attributes: [{ external_id: 'from-app' }] }) });
       const log = await (await fetch(url + '/_track/requests')).json();
       console.log(JSON.stringify({ url, key, status: r.status, logged: log.requests.map((q) => q.body.attributes[0].external_id) }));`,
    );
    const r = await runCliAsync(['emulate', '--exec', script]);
    expect(r.status).toBe(0);
    const out = JSON.parse(r.stdout);
    expect(out.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(out.url).not.toBe('http://127.0.0.1:4000');
    expect(out.key).toMatch(/^[0-9a-f]{32}$/);
    expect(out).toMatchObject({ status: 201, logged: ['from-app'] });
    // the start lines went to stderr, with the URL the command was given
    expect(r.stderr).toContain(`track emulator listening on ${out.url} (database :memory:`);
    expect(r.stderr).toContain(`web view and request log: ${out.url}/_track/`);
  });

  it('exits 3 when the command exits 3, and 128+15 when SIGTERM ends it', async () => {
    expect((await runCliAsync(['emulate', '--quiet', '--exec', 'exit 3'])).status).toBe(3);
    expect((await runCliAsync(['emulate', '--quiet', '--exec', 'kill -TERM $$'])).status).toBe(143);
  });

  it('passes SIGTERM on to the command, waits for it, then stops the emulator and its database file', async () => {
    const db = join(tmp.dir, 'exec.sqlite');
    const child = spawn(process.execPath, [BIN, 'emulate', '--db', db, '--exec', `trap 'echo got-term; exit 7' TERM; echo "ready $TRACK_URL"; while :; do sleep 0.1; done`], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    const url = await new Promise<string>((resolve, reject) => {
      child.stdout.on('data', (d: Buffer) => {
        stdout += d.toString();
        const m = /ready (\S+)/.exec(stdout);
        if (m) resolve(m[1]);
      });
      child.on('exit', (code) => reject(new Error(`exited ${code} before the command ran`)));
    });
    expect((await fetch(`${url}/health`)).status).toBe(200);
    expect(existsSync(`${db}.lock`)).toBe(true);
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    child.kill('SIGTERM');
    expect(await exited).toBe(7);
    expect(stdout).toContain('got-term');
    expect(isRunning(child.pid!)).toBe(false);
    await expect(fetch(`${url}/health`)).rejects.toThrow();
    // closed as on Ctrl-C: the lock is gone and the log checkpointed into the file
    expect(existsSync(`${db}.lock`)).toBe(false);
    expect(existsSync(`${db}-wal`)).toBe(false);
  });
});

describe('track emulate --exec and the command\'s process group', () => {
  it('passes SIGTERM, SIGHUP and SIGINT to everything the command started, and ends what it leaves behind', async () => {
    const runs = (['SIGTERM', 'SIGHUP', 'SIGINT', undefined] as const).map(async (signal, i) => {
      const file = join(tmp.dir, `grandchild-${i}`);
      // a grandchild in the background (which ignores SIGINT, as a shell's `&` job does); the last run leaves it behind
      const command = signal === undefined ? `sleep 300 & echo $! > ${file}` : `sh -c 'sleep 300 & echo $! > ${file}; wait'`;
      const child = spawn(process.execPath, [BIN, 'emulate', '--quiet', '--exec', command], { cwd: ROOT, stdio: 'ignore' });
      const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
      expect(await until(() => pidIn(file) !== undefined)).toBe(true);
      const grandchild = pidIn(file)!;
      if (signal !== undefined) child.kill(signal);
      const code = await exited;
      const gone = await until(() => !isRunning(grandchild), 2000);
      if (!gone) process.kill(grandchild, 'SIGKILL');
      return { signal, code, gone };
    });
    expect(await Promise.all(runs)).toEqual([
      { signal: 'SIGTERM', code: 143, gone: true },
      { signal: 'SIGHUP', code: 129, gone: true },
      { signal: 'SIGINT', code: 130, gone: true },
      { signal: undefined, code: 0, gone: true },
    ]);
  });

  it.skipIf(!existsSync('/proc/self/fd'))('stops without running the command when a signal comes while the seed loads', async () => {
    const seed = join(tmp.dir, 'large.csv');
    writeFileSync(seed, `external_id,plan\n${Array.from({ length: 60_000 }, (_, i) => `user-${i},pro\n`).join('')}`);
    const ran = join(tmp.dir, 'ran');
    const child = spawn(process.execPath, [BIN, 'emulate', '--seed', seed, '--exec', `touch ${ran}`], { cwd: ROOT, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    // the seed is open: the signal handlers are in place and the seed is being read
    const reading = (): boolean => {
      try {
        return readdirSync(`/proc/${child.pid}/fd`).some((fd) => readlinkSync(`/proc/${child.pid}/fd/${fd}`) === seed);
      } catch {
        return false;
      }
    };
    expect(await until(reading, 10_000)).toBe(true);
    child.kill('SIGTERM');
    expect(await exited).toBe(143);
    expect(existsSync(ran)).toBe(false);
    expect(stderr).not.toContain('listening');
    expect(stderr).toContain('not run');
  });

  it('refuses an empty command, a request log too large and a port in use before anything starts (exit 2)', async () => {
    const server = createServer().listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    try {
      const port = String((server.address() as AddressInfo).port);
      const cases = [
        [['--exec', ''], /--exec: expected a command/],
        [['--request-log', '99999999999', '--exec', 'true'], /--request-log: expected a whole number from 0 to 1000000/],
        [['--port', port, '--exec', 'true'], /--port \d+: 127\.0\.0\.1:\d+ is in use/],
      ] as const;
      for (const [args, message] of cases) {
        const r = await runCliAsync(['emulate', '--quiet', ...args]);
        expect({ status: r.status, message: message.test(r.stderr) }).toEqual({ status: 2, message: true });
        expect(r.stderr).not.toMatch(/listening|Invalid array length/);
      }
    } finally {
      server.close();
    }
  });
});

describe('track emulate --seed', () => {
  it('loads the files as upload reads them before the start line, and a reset returns to them', async () => {
    const emu = await spawnEmulator(['--db', ':memory:', '--api-key', 'k', '--seed', join(FIXTURES, 'attributes.csv'), '--seed', join(FIXTURES, 'events.csv')]);
    try {
      expect(emu.stdout).toMatch(/seeded from .*attributes\.csv, .*events\.csv/);
      const seeded = await postJson(`${emu.url}/users/export/ids`, 'k', { external_ids: ['user-001', 'new-user'] });
      const ada = seeded.body.users[0];
      expect(ada).toMatchObject({ external_id: 'user-001', email: 'ada@example.com', first_name: 'Ada' });
      expect(ada.custom_events.map((e: { name: string }) => e.name).sort()).toEqual(['seat_added', 'trial_started']);
      await postJson(`${emu.url}/users/track`, 'k', { attributes: [{ external_id: 'user-001', first_name: 'Changed' }, { external_id: 'new-user' }] });
      const reset = await fetch(`${emu.url}/_track/reset`, { method: 'POST' });
      expect(await reset.json()).toEqual({ message: 'reset', profiles: 3 });
      const back = await postJson(`${emu.url}/users/export/ids`, 'k', { external_ids: ['user-001', 'new-user'] });
      expect(back.body.users.map((u: { first_name?: string }) => u.first_name)).toEqual(['Ada']);
      expect(back.body.invalid_user_ids).toEqual(['new-user']);
    } finally {
      emu.proc.kill('SIGTERM');
      await emu.exited;
    }
  });

  it('refuses to start on a seed file with a rejected row, naming the file, line and reason', () => {
    const r = runCli(['emulate', '--port', '0', '--db', ':memory:', '--seed', join(FIXTURES, 'bad-rows.csv')]);
    expect(r.status).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/bad-rows\.csv:3: seed row rejected \(email: is not a valid email address/);
  });

  it('names the blocklisted row of a seed, and asks for a file name it can read the format from', () => {
    const blocked = runCli(['emulate', '--port', '0', '--db', ':memory:', '--blocklist', 'user-002', '--seed', join(FIXTURES, 'attributes.csv')]);
    expect(blocked.status).toBe(2);
    expect(blocked.stderr).toMatch(/attributes\.csv:3: seed refused: .*blocklisted/);
    const unnamed = join(tmp.dir, 'users.txt');
    writeFileSync(unnamed, 'external_id\nu1\n');
    const r = runCli(['emulate', '--port', '0', '--db', ':memory:', '--seed', unnamed]);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('name it .csv, .ndjson, .jsonl or .json (each optionally .gz), or .parquet');
    expect(r.stderr).not.toContain('--format');
  });
});

describe('track inspect', () => {
  it('counts, limits, finds by service_id, and says "no profile" (exit 1) for an identifier that matches nothing', async () => {
    const db = join(tmp.dir, 'i.sqlite');
    const seeded = await runCliAsync(['emulate', '--db', db, '--quiet', '--seed', join(FIXTURES, 'attributes.csv'), '--exec', 'true']);
    expect(seeded.status).toBe(0);
    expect(runCli(['inspect', '--db', db, '--count']).stdout).toBe('3\n');
    expect(runCli(['inspect', '--db', db, '--count', '--email', 'ADA@example.com']).stdout).toBe('1\n');
    const first = JSON.parse(runCli(['inspect', '--db', db, '--limit', '2']).stdout);
    expect(first.map((p: { external_id: string }) => p.external_id)).toEqual(['user-001', 'user-002']);
    const byService = runCli(['inspect', '--db', db, '--service-id', first[1].service_id]);
    expect(JSON.parse(byService.stdout).map((p: { external_id: string }) => p.external_id)).toEqual(['user-002']);
    for (const args of [['--external-id', 'nobody'], ['--service-id', 'ffff'], ['--email', 'none@example.com', '--count']]) {
      const none = runCli(['inspect', '--db', db, ...args]);
      expect(none.status).toBe(1);
      expect(none.stderr).toMatch(/no profile with /);
    }
  });
});
