// A run sharing its budget through --rate-store ends when it stops on a usage error found after the
// store answered (a --state file refused): the store's connection is closed with it, where it kept
// the process running, the error printed, until something killed it.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BIN, closedPort } from '../helpers/cli.js';
import { redisPresent, startRedis } from '../helpers/redis.js';

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
