// --metrics-push against the real Pushgateway (Debian's prometheus-pushgateway, started here on a free
// loopback port with its own storage): the counters arrive while the upload runs and, at its end,
// equal its --json summary.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { metricsPush, pushTarget } from '../../src/cli/output/metrics-push.js';
import type { ProgressEvent } from '../../src/cli/output/run-events.js';
import { BIN, ROOT, runCliAsync as runCli, tempDir } from '../helpers/cli.js';
import { writeEventsCsv } from '../helpers/events.js';
import { freePort } from '../helpers/free-port.js';
import { checkedLines } from '../helpers/progress-events.js';
import { useServers } from '../helpers/servers.js';

const PUSHGATEWAY = process.env.TRACK_PUSHGATEWAY ?? '/usr/bin/prometheus-pushgateway';
const present = existsSync(PUSHGATEWAY);
if (!present && process.env.CI) throw new Error(`${PUSHGATEWAY} is missing; CI installs Debian's prometheus-pushgateway package before the tests`);
if (!present) console.warn(`metrics push tests skipped: no Pushgateway at ${PUSHGATEWAY} (apt-get install prometheus-pushgateway, or set TRACK_PUSHGATEWAY)`);

const servers = useServers();

/** The samples of one job and instance in the gateway's /metrics, by metric name and labels (without job and instance). */
async function pushed(gateway: string): Promise<Map<string, number>> {
  const text = await (await fetch(`${gateway}/metrics`)).text();
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (!line.startsWith('track_upload_')) continue;
    const at = line.lastIndexOf(' ');
    const key = line.slice(0, at).replace(/,?instance="[^"]*"/, '').replace(/,?job="track_upload"/, '').replace(/\{,?/, '{').replace('{}', '');
    out.set(key, Number(line.slice(at + 1)));
  }
  return out;
}

it('pushes to URL/metrics/job/track_upload/instance/HOST, or to the group a URL names', () => {
  expect(pushTarget('http://127.0.0.1:9091', 'ci-1')).toEqual({ url: 'http://127.0.0.1:9091/metrics/job/track_upload/instance/ci-1' });
  expect(pushTarget('http://gw:9091/metrics/job/nightly/env/prod').url).toBe('http://gw:9091/metrics/job/nightly/env/prod');
  expect(() => pushTarget('gw:9091')).toThrow(/expected an http/);
});

it("groups a shard's metrics apart, also under a group the URL names, unless the URL names the shard", () => {
  const shard = { index: 2, count: 4 };
  expect(pushTarget('http://127.0.0.1:9091/', 'ci-1', shard).url).toBe('http://127.0.0.1:9091/metrics/job/track_upload/instance/ci-1/shard/2-of-4');
  expect(pushTarget('http://gw:9091/metrics/job/nightly/env/prod', 'ci-1', shard).url).toBe('http://gw:9091/metrics/job/nightly/env/prod/shard/2-of-4');
  expect(pushTarget('http://gw:9091/metrics/job/nightly/shard/b', 'ci-1', shard).url).toBe('http://gw:9091/metrics/job/nightly/shard/b');
  // a job named shard is not a shard label
  expect(pushTarget('http://gw:9091/metrics/job/shard', 'ci-1', shard).url).toBe('http://gw:9091/metrics/job/shard/shard/2-of-4');
});

it('takes a user and password in the URL out of it, as Basic credentials', () => {
  expect(pushTarget('https://ci%40corp:p%3Ass@gw:9091/', 'ci-1')).toEqual({
    url: 'https://gw:9091/metrics/job/track_upload/instance/ci-1',
    authorization: `Basic ${Buffer.from('ci@corp:p:ss').toString('base64')}`,
  });
});

/** A Pushgateway on a free loopback port with its own storage; extra flags as given. */
async function startGateway(dir: string, args: string[] = []): Promise<{ url: string; process: ChildProcess }> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const gateway = spawn(PUSHGATEWAY, [`--web.listen-address=127.0.0.1:${port}`, `--persistence.file=${join(dir, `pushgateway-${port}.db`)}`, ...args], { stdio: 'ignore' });
  for (let i = 0; ; i += 1) {
    // a gateway behind Basic authentication answers 401 once it is up
    const ready = await fetch(`${url}/-/ready`).then((r) => r.ok || r.status === 401, () => false);
    if (ready) return { url, process: gateway };
    if (i > 100) throw new Error('the Pushgateway did not start');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function stopGateway(gateway: ChildProcess | undefined): Promise<void> {
  if (gateway === undefined || gateway.exitCode !== null) return;
  // (one a test has stopped with SIGSTOP takes SIGTERM once it runs again)
  gateway.kill('SIGCONT');
  gateway.kill('SIGTERM');
  await new Promise((resolve) => gateway.once('exit', resolve));
}

/** The user `pusher` with the password `s3cret`, bcrypt-hashed as the gateway's web config takes it. */
const BASIC_AUTH_CONFIG = 'basic_auth_users:\n  pusher: $2b$04$QQbc87ZHCmCBSuG50qfafOGYN4KUN/eRF9WDX3.CNirxCDFTa0ksC\n';

describe.skipIf(!present)('--metrics-push to a Pushgateway', () => {
  let gateway: ChildProcess;
  let url: string;
  let storage: ReturnType<typeof tempDir>;
  beforeAll(async () => {
    storage = tempDir();
    ({ url, process: gateway } = await startGateway(storage.dir));
  }, 20_000);
  afterAll(async () => {
    await stopGateway(gateway);
    storage?.cleanup();
  });

  it('pushes while the upload runs, and at its end the summary\'s figures', async () => {
    // 30 requests one at a time, 100 ms each: a run of some seconds, with pushes while it goes
    const emulator = await servers.emulator({ latency: '100' });
    const file = writeEventsCsv(servers.tmp.dir, 1500, 'events.csv', { bad: (i) => i % 10 === 0 });
    const child = spawn(process.execPath, [BIN, 'upload', file, '--url', emulator.url, '--api-key', 'k', '--concurrency', '1', '--metrics-push', url, '--progress-interval', '1', '--json'], { cwd: ROOT });
    let stdout = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    // during the run: running, with some rows read
    let during: Map<string, number> | undefined;
    for (let i = 0; i < 200 && during === undefined; i += 1) {
      const now = await pushed(url);
      // (on a busy machine the first push may come before the first rows are read)
      if (now.get('track_upload_running') === 1 && (now.get('track_upload_rows_read_total') ?? 0) > 0) during = now;
      else await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(during, 'a push while the upload ran, with rows read').toBeDefined();
    expect(during!.get('track_upload_rows_read_total')).toBeLessThanOrEqual(1500);
    expect(await exited).toBe(1);
    const summary = JSON.parse(stdout);
    const after = await pushed(url);
    expect(after.get('track_upload_running')).toBe(0);
    expect(after.get('track_upload_exit_status')).toBe(1);
    expect(after.get('track_upload_rows_read_total')).toBe(summary.rows);
    expect(after.get('track_upload_rows_rejected_total')).toBe(summary.rejected);
    expect(after.get('track_upload_requests_total{status="201"}')).toBe(summary.delivery.answers['201']);
    expect(after.get('track_upload_retries_total')).toBe(summary.delivery.retries);
    expect(after.get('track_upload_rate_limit_waits_total')).toBe(summary.delivery.rateLimited);
    expect(after.get('track_upload_items_total{outcome="accepted"}')).toBe(summary.delivery.items.events.accepted);
    expect(after.get('track_upload_data_points_total')).toBe(summary.dataPoints.sent);
    expect(after.get('track_upload_duration_seconds')).toBeCloseTo(summary.elapsedMs / 1000, 0);
    // grouped under this machine's name
    expect(await (await fetch(`${url}/metrics`)).text()).toContain(`instance="${hostname()}"`);
  });

  it('pushes to a gateway behind Basic authentication with the URL\'s user and password, and never prints them', async () => {
    const config = join(storage.dir, 'web.yml');
    writeFileSync(config, BASIC_AUTH_CONFIG);
    const secured = await startGateway(storage.dir, [`--web.config.file=${config}`]);
    try {
      const emulator = await servers.emulator();
      const file = writeEventsCsv(servers.tmp.dir, 50);
      const withUser = secured.url.replace('http://', 'http://pusher:s3cret@');
      const r = await runCli(['upload', file, '--url', emulator.url, '--api-key', 'k', '--metrics-push', withUser, '--progress', 'ndjson', '--json']);
      expect(r.status).toBe(0);
      expect(r.stderr).not.toMatch(/"type":"warning"|s3cret/);
      const text = await (await fetch(`${secured.url}/metrics`, { headers: { authorization: `Basic ${Buffer.from('pusher:s3cret').toString('base64')}` } })).text();
      expect(text).toMatch(/^track_upload_rows_read_total\{.*\} 50$/m);
      expect(text).toMatch(/^track_upload_running\{.*\} 0$/m);
      // a wrong password: told once, without the password
      const wrong = await runCli(['upload', file, '--url', emulator.url, '--api-key', 'k', '--restart', '--metrics-push', secured.url.replace('http://', 'http://pusher:wr0ng@')]);
      expect(wrong.status).toBe(0);
      expect(wrong.stderr.match(/track: warning: --metrics-push: could not push to http:\/\/127\.0\.0\.1:\d+\/metrics\/job\/track_upload\/instance\/\S+: 401/g)).toHaveLength(1);
      expect(wrong.stderr).not.toContain('wr0ng');
    } finally {
      await stopGateway(secured.process);
    }
  });

  it('holds the end of an upload only for its last push when the gateway hangs, not behind a push of older figures', async () => {
    // a gateway that takes connections and answers none: stopped with SIGSTOP
    const hung = await startGateway(storage.dir);
    hung.process.kill('SIGSTOP');
    try {
      // 10 requests of 250 ms one at a time: a run of about 3 s, its first progress push stuck from the first second
      const emulator = await servers.emulator({ latency: '250' });
      const file = writeEventsCsv(servers.tmp.dir, 500);
      const child = spawn(process.execPath, [BIN, 'upload', file, '--url', emulator.url, '--api-key', 'k', '--concurrency', '1', '--metrics-push', hung.url, '--progress', 'ndjson', '--progress-interval', '1'], { cwd: ROOT });
      let stderr = '';
      let endedAt: number | undefined;
      child.stderr.on('data', (d: Buffer) => {
        stderr += d.toString();
        if (endedAt === undefined && stderr.includes('"type":"end"')) endedAt = Date.now();
      });
      const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
      expect(await exited).toBe(0);
      const heldMs = Date.now() - endedAt!;
      // the last push's 5 s, not the stuck push's 10 s and then the last push's
      expect(heldMs).toBeLessThan(9_000);
      expect(emulator.store.counts().events).toBe(500);
      const warnings = checkedLines(stderr).filter((e) => e.type === 'warning');
      expect(warnings).toEqual([expect.objectContaining({ message: expect.stringMatching(/could not push to .*timeout/) })]);
    } finally {
      await stopGateway(hung.process);
    }
  }, 90_000);

  it('gives up a push to a hung gateway in its time also when the garbage collector runs meanwhile', async () => {
    // the collector, as --expose-gc gives it
    setFlagsFromString('--expose-gc');
    const collect = runInNewContext('gc') as () => void;
    const hung = await startGateway(storage.dir);
    hung.process.kill('SIGSTOP');
    try {
      const warnings: string[] = [];
      const pushes = metricsPush(hung.url, 1, (message) => warnings.push(message), undefined, { progressMs: 1_000, lastMs: 1_000 });
      const progress = { type: 'progress', rows: 1, rejectedRows: 0, answers: {}, requests: { retries: 0, rateLimited: 0, inFlight: 0 }, items: { accepted: 0, rejected: 0 }, dataPoints: 0, elapsedSeconds: 1 } as unknown as ProgressEvent;
      pushes.event(progress);
      const collecting = setInterval(collect, 100);
      const outcome = await Promise.race([pushes.close!().then(() => 'given up'), new Promise((resolve) => setTimeout(resolve, 10_000, 'still waiting after 10 s'))]);
      clearInterval(collecting);
      expect(outcome).toBe('given up');
      expect(warnings).toEqual([expect.stringMatching(/could not push to .*timeout/)]);
    } finally {
      await stopGateway(hung.process);
    }
  }, 30_000);

  it("keeps each shard's figures apart: shards on one machine do not replace each other's", async () => {
    const emulator = await servers.emulator();
    const file = writeEventsCsv(servers.tmp.dir, 400, 'sharded.csv');
    const rows: number[] = [];
    for (const k of [1, 2]) {
      const r = await runCli(['upload', file, '--url', emulator.url, '--api-key', 'k', '--no-journal', '--shard', `${k}/2`, '--metrics-push', url, '--json']);
      expect(r.status, r.stderr).toBe(0);
      rows.push(JSON.parse(r.stdout).rows);
    }
    const text = await (await fetch(`${url}/metrics`)).text();
    const read = (k: number): number | undefined => {
      const line = text.split('\n').find((l) => l.startsWith('track_upload_rows_read_total{') && l.includes(`shard="${k}-of-2"`));
      return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
    };
    expect([read(1), read(2)]).toEqual(rows);
    expect(rows[0] + rows[1]).toBe(400);
  });

  it('tells a gateway it cannot reach once, as a warning, and uploads all the same', async () => {
    const emulator = await servers.emulator();
    const file = writeEventsCsv(servers.tmp.dir, 50);
    const r = await runCli(['upload', file, '--url', emulator.url, '--api-key', 'k', '--metrics-push', `http://127.0.0.1:${await freePort()}`]);
    expect(r.status).toBe(0);
    expect(r.stderr.match(/track: warning: --metrics-push: could not push/g)).toHaveLength(1);
    expect(emulator.store.counts().events).toBe(50);
  });
});
