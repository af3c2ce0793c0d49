// `--shard K/N` through the real CLI: N processes against one server send together exactly what one
// run sends, each user from one shard only and in file order; a shard killed and resumed alone
// completes; their summaries add up in `track report` to the single run's counts; and with a shared
// budget in Redis they keep to the rate limit together.
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BIN, runCliAsync as runCli } from '../helpers/cli.js';
import { useServers } from '../helpers/servers.js';
import { redisPresent, startRedis } from '../helpers/redis.js';
import { shardOf } from '../../src/upload/shard.js';

const { tmp, faultServer, emulator } = useServers();

/** 200 users, each in three attribute rows whose `step` counts up, interleaved; and a few bad rows. */
function writeInputs(): { users: string; events: string } {
  const rows = ['external_id,step,email'];
  for (let step = 1; step <= 3; step += 1) for (let u = 0; u < 200; u += 1) rows.push(`u${u},${step},u${u}@example.com`);
  rows.push('u7,4,not-an-email', ',5,');
  const events = ['external_id,name,time'];
  for (let u = 0; u < 200; u += 3) events.push(`u${u},opened,2024-03-0${1 + (u % 9)}T10:00:00Z`);
  writeFileSync(join(tmp.dir, 'users.csv'), `${rows.join('\n')}\n`);
  writeFileSync(join(tmp.dir, 'events.csv'), `${events.join('\n')}\n`);
  return { users: join(tmp.dir, 'users.csv'), events: join(tmp.dir, 'events.csv') };
}

const up = (args: string[]) => runCli(['upload', ...args, '--api-key', 'k'], { cwd: tmp.dir });
const bodyItems = (line: string) => {
  const body = JSON.parse(line) as Record<string, Array<Record<string, unknown>>>;
  return [...(body.attributes ?? []), ...(body.events ?? [])];
};
const outItems = (file: string) => readFileSync(join(tmp.dir, file), 'utf8').split('\n').filter(Boolean).flatMap(bodyItems);
const key = (item: Record<string, unknown>) => JSON.stringify(item);

describe('--shard', () => {
  it('N shards send exactly what one run sends, each user from one shard, in file order', async () => {
    const { users, events } = writeInputs();
    const server = await faultServer();
    const single = await runCli(['validate', users, events, '--out', 'single.ndjson', '--json'], { cwd: tmp.dir });
    expect(single.status).toBe(1);
    const runs = await Promise.all(
      [1, 2, 3].map((k) => up([users, events, '--url', server.url, '--shard', `${k}/3`, '--out', `out${k}.ndjson`, '--summary-file', `s${k}.json`, '--journal', `j${k}.journal`, '--rejects', `r${k}.ndjson`])),
    );
    for (const r of runs) expect([0, 1], r.stderr).toContain(r.status);

    const expected = outItems('single.ndjson').map(key).sort();
    const sentByShard = [1, 2, 3].map((k) => outItems(`out${k}.ndjson`));
    // the union is the single run's items, each once
    expect(sentByShard.flat().map(key).sort()).toEqual(expected);
    // no user in two shards
    const owner = new Map<unknown, number>();
    sentByShard.forEach((items, k) => {
      for (const item of items) {
        expect(owner.get(item.external_id) ?? k, String(item.external_id)).toBe(k);
        owner.set(item.external_id, k);
      }
    });
    expect(new Set(owner.values()).size).toBe(3);
    // each user's rows reached the server in file order
    const steps = new Map<unknown, number[]>();
    for (const r of server.received) for (const item of r.body?.attributes ?? []) steps.set(item.external_id, [...(steps.get(item.external_id) ?? []), Number(item.step)]);
    for (const [id, seen] of steps) expect(seen, String(id)).toEqual([...seen].sort((a, b) => a - b));

    // the bad rows were rejected by one shard each, and the report adds up to the single run
    const report = await runCli(['report', 's1.json', 's2.json', 's3.json', '--json'], { cwd: tmp.dir });
    expect(report.status).toBe(1);
    const total = JSON.parse(report.stdout).total;
    const one = JSON.parse(single.stdout);
    expect({ rows: total.rows, rejected: total.rejected, items: total.items, planned: total.dataPoints.planned }).toEqual({
      rows: one.rows,
      rejected: one.rejected,
      items: one.items,
      planned: one.dataPoints.planned,
    });
    expect(total.delivery.items.attributes.accepted).toBe(one.items.attributes);
    expect(JSON.parse(report.stdout).missingShards).toEqual([]);
  });

  it('a shard killed mid-run resumes alone and completes', async () => {
    const { users } = writeInputs();
    const server = await faultServer();
    server.script(() => ({ kind: 'ok', delayMs: 150 }));
    const args = [users, '--url', server.url, '--api-key', 'k', '--shard', '2/3', '--concurrency', '1', '--journal', 'j2.journal', '--out', 'killed.ndjson'];
    const child = spawn(process.execPath, [BIN, 'upload', ...args], { cwd: tmp.dir, stdio: 'ignore' });
    while (server.received.length < 3) await new Promise((r) => setTimeout(r, 20));
    child.kill('SIGKILL');
    await new Promise((r) => child.once('exit', r));
    server.script(() => undefined);
    const resumed = await up([users, '--url', server.url, '--shard', '2/3', '--journal', 'j2.journal', '--resume', '--json']);
    expect([0, 1], resumed.stderr).toContain(resumed.status);
    expect(JSON.parse(resumed.stdout).interrupted).toBe(false);
    // every item of shard 2 reached the server at least once, and only shard 2's users
    const planned = await runCli(['validate', users, '--shard', '2/3', '--out', 'plan2.ndjson'], { cwd: tmp.dir });
    expect(planned.status).toBe(1);
    const got = new Set(server.received.flatMap((r) => (r.body?.attributes ?? []).map(key)));
    for (const item of outItems('plan2.ndjson')) expect(got.has(key(item)), key(item)).toBe(true);
    const shard2 = new Set(outItems('plan2.ndjson').map((i) => i.external_id));
    for (const r of server.received) for (const item of r.body?.attributes ?? []) expect(shard2.has(item.external_id)).toBe(true);
  });

  it('each shard paces at its share of --rate without a store', async () => {
    const { users } = writeInputs();
    const server = await faultServer();
    const r = await up([users, '--url', server.url, '--shard', '1/3', '--rate', '6', '--max-total', '25', '--json']);
    expect([0, 1], r.stderr).toContain(r.status);
    const at = server.received.map((q) => q.at);
    // 2 a second: within any second at most 2 starts (the whole --rate would put 6 there, 333 ms
    // apart). The server sees arrivals, which may lag their starts by tens of ms on a busy machine
    for (let i = 2; i < at.length; i += 1) expect(at[i] - at[i - 2]).toBeGreaterThan(900);
  });

  it('refuses a --rate or --hourly below the number of shards without a store: each share would round up to one, and the shards together go over', async () => {
    const { users } = writeInputs();
    const server = await faultServer();
    const low = await up([users, '--url', server.url, '--shard', '1/4', '--rate', '3', '--no-journal']);
    expect(low.status).toBe(2);
    expect(low.stderr).toContain('--rate 3 shared by 4 shards (--shard) leaves each less than one request a second, and together they would send more: give --rate at least 4, or draw every shard from one budget with --rate-store');
    const hourly = await up([users, '--url', server.url, '--shard', '2/4', '--hourly', '2', '--no-journal']);
    expect(hourly.status).toBe(2);
    expect(hourly.stderr).toContain('--hourly 2 shared by 4 shards');
    expect(server.received).toHaveLength(0);
    expect((await up([users, '--url', server.url, '--shard', '1/4', '--rate', '4', '--no-journal', '--quiet'])).status).not.toBe(2);
    // a dry run of the shard is refused as its upload would be, and estimates at the shard's share
    expect((await up([users, '--dry-run', '--shard', '1/4', '--rate', '3'])).status).toBe(2);
    const dry = await up([users, '--dry-run', '--shard', '1/4', '--rate', '8', '--max-total', '1']);
    expect(dry.stdout).toMatch(/\nestimate {4}[\d,]+ requests take at least \S+ at 2 requests\/s \(this shard's share of --rate 8, --shard\)\n/);
  });
});

describe.skipIf(!redisPresent)('--shard with --rate-store', () => {
  it('shards share one budget: a big shard takes what the small ones leave, and together they keep to --rate', async () => {
    const redis = await startRedis();
    try {
      // users chosen so that shard 1 of 3 holds 150 rows and the others 15 each
      const ids: string[][] = [[], [], []];
      for (let i = 0; ids.some((list, k) => list.length < (k === 0 ? 150 : 15)); i += 1) {
        const k = shardOf({ by: 'external_id', value: `v${i}` }, 3) - 1;
        if (ids[k].length < (k === 0 ? 150 : 15)) ids[k].push(`v${i}`);
      }
      writeFileSync(join(tmp.dir, 'skewed.csv'), `external_id,plan\n${ids.flat().map((id) => `${id},pro`).join('\n')}\n`);
      const server = await faultServer();
      const runs = await Promise.all(
        [1, 2, 3].map((k) => up(['skewed.csv', '--url', server.url, '--shard', `${k}/3`, '--rate', '12', '--max-total', '5', '--rate-store', redis.url, '--json'])),
      );
      for (const r of runs) expect(r.status, r.stderr).toBe(0);
      const at = server.received.map((q) => q.at);
      // within the rate together (a request's arrival may lag its start by a few ms: one more is forgiven)
      let most = 0;
      for (let i = 0, first = 0; i < at.length; i += 1) {
        while (at[i] - at[first] >= 1_000) first += 1;
        most = Math.max(most, i - first + 1);
      }
      expect(most).toBeLessThanOrEqual(13);
      // shard 1's 30 requests: at its own share (4 a second) they would take over 7 s; drawing on the
      // whole budget once the small shards are done, far less
      const big = server.received.filter((q) => ids[0].includes(String(q.body?.attributes?.[0]?.external_id))).map((q) => q.at);
      expect(big).toHaveLength(30);
      expect(big.at(-1)! - big[0]).toBeLessThan(5_000);
    } finally {
      await redis.stop();
    }
  });

  it.skipIf(!redisPresent)('a store that fails mid-run is said in the summary, and every row is sent at the shard\'s share', async () => {
    const { users } = writeInputs();
    const server = await faultServer();
    const redis = await startRedis();
    try {
      // 10 requests a second for the two shards together: this one's 7 requests take some 0.7 s
      const child = spawn(process.execPath, [BIN, 'upload', users, '--url', server.url, '--api-key', 'k', '--shard', '1/2', '--rate', '10', '--rate-store', redis.url, '--no-journal', '--json'], { cwd: tmp.dir });
      let stdout = '';
      child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
      const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
      while (server.received.length < 2) await new Promise((resolve) => setTimeout(resolve, 5));
      await redis.stop();
      expect(await exited).toBe(1);
      const summary = JSON.parse(stdout);
      expect(summary.notes.join('\n')).toMatch(new RegExp(`--rate-store ${redis.url.replace(/[/.]/g, '\\$&')}/? \\(key [^)]*\\) failed \\(.*\\): sending on at this process's share, 5 requests a second`));
      expect(summary.delivery.items.attributes.accepted + summary.rejected).toBe(summary.rows);
    } finally {
      await redis.stop();
    }
  });

  it('an unreachable store stops the run before anything is sent, exit 2, naming it', async () => {
    const { users } = writeInputs();
    const server = await faultServer();
    const r = await up([users, '--url', server.url, '--shard', '1/2', '--rate-store', 'redis://127.0.0.1:1']);
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/--rate-store redis:\/\/127\.0\.0\.1:1: cannot reach the store/);
    expect(server.received).toHaveLength(0);
  });
});
