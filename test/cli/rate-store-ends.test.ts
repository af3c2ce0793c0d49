// A run sharing its budget through --rate-store ends when it stops on a usage error found after the
// store answered (a --state file refused): the store's connection is closed with it, where it kept
// the process running, the error printed, until something killed it. It ends too when the store
// stops answering without closing its connections, at the start or midway: it waited forever.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BIN, closedPort, runCliAsync } from '../helpers/cli.js';
import { writeEventsCsv } from '../helpers/events.js';
import { redisPresent, startRedis } from '../helpers/redis.js';
import { useServers } from '../helpers/servers.js';

describe.skipIf(!redisPresent)('--rate-store with a usage error before sending', () => {
  it('ends at once, exit 2, naming the --state file', async () => {
    const redis = await startRedis();
    const dir = mkdtempSync(join(tmpdir(), 'track-test-'));
    try {
      writeFileSync(join(dir, 'users.csv'), 'external_id,plan\nu1,team\nu2,team\n');
      writeFileSync(join(dir, 'bad.sqlite'), 'not a database\n');
      const port = await closedPort();
      const args = ['upload', 'users.csv', '--url', `http://127.0.0.1:${port}`, '--api-key', 'k', '--delta', '--state', 'bad.sqlite', '--rate-store', redis.url, '--quiet'];
      const run = spawnSync(process.execPath, [BIN, ...args], { cwd: dir, encoding: 'utf8', timeout: 15_000 });
      expect(run.signal, `still running after 15 s; stderr: ${run.stderr}`).toBeNull();
      expect(run.status, run.stderr).toBe(2);
      expect(run.stderr).toMatch(/--state bad\.sqlite is not a state file/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
      await redis.stop();
    }
  });
});

describe.skipIf(!redisPresent)('--rate-store that stops answering', () => {
  const servers = useServers();

  it('at the start: refused, exit 2, naming the store, nothing sent', async () => {
    const redis = await startRedis();
    try {
      const emulator = await servers.emulator();
      const file = writeEventsCsv(servers.tmp.dir, 20);
      redis.pause();
      const started = Date.now();
      const r = await runCliAsync(['upload', file, '--url', emulator.url, '--api-key', 'k', '--no-journal', '--rate-store', redis.url]);
      expect(r.status, r.stderr).toBe(2);
      expect(r.stderr).toContain(`--rate-store ${redis.url}: cannot reach the store (no answer in 5 s); start it`);
      expect(Date.now() - started).toBeLessThan(20_000);
      expect(emulator.store.counts().events).toBe(0);
    } finally {
      await redis.stop();
    }
  }, 40_000);

  it('midway: the run goes on at its share, says so once, and sends every row', async () => {
    const redis = await startRedis();
    try {
      // 20 requests at 10 a second, one at a time: the store stops answering once the first is sent
      const emulator = await servers.emulator({ latency: '20' });
      const file = writeEventsCsv(servers.tmp.dir, 1000);
      const run = runCliAsync(['upload', file, '--url', emulator.url, '--api-key', 'k', '--no-journal', '--rate', '10', '--concurrency', '1', '--rate-store', redis.url, '--json']);
      // once requests go, drawn from the store
      while (emulator.store.counts().events === 0) await new Promise((resolve) => setTimeout(resolve, 50));
      redis.pause();
      const r = await run;
      expect(r.status, r.stderr).toBe(0);
      expect(emulator.store.counts().events).toBe(1000);
      expect(r.stderr.match(/--rate-store .* failed \(no answer in 5 s\): sending on at this process's share, 10 requests a second/g)).toHaveLength(1);
    } finally {
      await redis.stop();
    }
  }, 60_000);
});
