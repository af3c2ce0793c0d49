// --resume-or-start, the one command a scheduler gives for a first try and its retries, and the
// records each shard keeps under its own name, through the real CLI against a server on loopback.
import { spawn } from 'node:child_process';
import { appendFileSync, existsSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BIN, runCliAsync as runCli } from '../helpers/cli.js';
import { useServers } from '../helpers/servers.js';

const { tmp, faultServer } = useServers();

function writeUsers(count: number): string {
  const rows = ['external_id,plan'];
  for (let u = 0; u < count; u += 1) rows.push(`u${u},p${u % 5}`);
  writeFileSync(join(tmp.dir, 'users.csv'), `${rows.join('\n')}\n`);
  return join(tmp.dir, 'users.csv');
}

const sentIds = (server: { received: Array<{ body?: { attributes?: Array<{ external_id?: unknown }> } }> }) =>
  server.received.flatMap((r) => (r.body?.attributes ?? []).map((item) => item.external_id));

describe('--resume-or-start', () => {
  it('starts, then resumes a finished run sending nothing, then starts anew when the export changed', async () => {
    const users = writeUsers(120);
    const server = await faultServer();
    const args = [users, '--url', server.url, '--api-key', 'k', '--resume-or-start', '--json'];
    const first = await runCli(['upload', ...args], { cwd: tmp.dir });
    expect(first.status, first.stderr).toBe(0);
    expect(JSON.parse(first.stdout).delivery.items.attributes.accepted).toBe(120);
    expect(server.received.length).toBeGreaterThan(0);

    const before = server.received.length;
    const again = await runCli(['upload', ...args], { cwd: tmp.dir });
    expect(again.status, again.stderr).toBe(0);
    expect(server.received.length).toBe(before);

    appendFileSync(users, 'u999,p9\n');
    const changed = await runCli(['upload', ...args], { cwd: tmp.dir });
    expect(changed.status, changed.stderr).toBe(0);
    const summary = JSON.parse(changed.stdout);
    expect(summary.delivery.items.attributes.accepted).toBe(121);
    expect(JSON.stringify(summary)).toMatch(/started anew/);
  });

  it('resumes a killed run where it stopped, and refuses one whose inputs changed since', async () => {
    const users = writeUsers(400);
    const server = await faultServer();
    server.script(() => ({ kind: 'ok', delayMs: 150 }));
    const args = [users, '--url', server.url, '--api-key', 'k', '--concurrency', '1', '--max-total', '10', '--resume-or-start'];
    const child = spawn(process.execPath, [BIN, 'upload', ...args], { cwd: tmp.dir, stdio: 'ignore' });
    while (server.received.length < 4) await new Promise((r) => setTimeout(r, 20));
    child.kill('SIGKILL');
    await new Promise((r) => child.once('exit', r));
    server.script(() => undefined);
    const sentBefore = new Set(sentIds(server));
    expect(sentBefore.size).toBeLessThan(400);

    const resumed = await runCli(['upload', ...args, '--json'], { cwd: tmp.dir });
    expect(resumed.status, resumed.stderr).toBe(0);
    // every user reached the server, and a user acknowledged before the kill was not sent again
    const ids = sentIds(server);
    expect(new Set(ids).size).toBe(400);
    const acknowledgedEarly = [...sentBefore].slice(0, 10);
    for (const id of acknowledgedEarly) expect(ids.filter((x) => x === id).length, String(id)).toBe(1);

    // a run stopped half way, whose export then changed, cannot go on by itself
    const child2 = spawn(process.execPath, [BIN, 'upload', ...args, '--restart'].filter((a) => a !== '--resume-or-start'), { cwd: tmp.dir, stdio: 'ignore' });
    server.script(() => ({ kind: 'ok', delayMs: 150 }));
    const at = server.received.length;
    while (server.received.length < at + 4) await new Promise((r) => setTimeout(r, 20));
    child2.kill('SIGKILL');
    await new Promise((r) => child2.once('exit', r));
    appendFileSync(users, 'u999,p9\n');
    const refused = await runCli(['upload', ...args], { cwd: tmp.dir });
    expect(refused.status).toBe(2);
    expect(refused.stderr).toMatch(/its inputs changed since: it cannot be resumed/);
  });

  it('is refused with --resume, --restart or standard input', async () => {
    const users = writeUsers(3);
    for (const other of ['--resume', '--restart']) {
      const r = await runCli(['upload', users, '--url', 'http://127.0.0.1:9', '--api-key', 'k', '--resume-or-start', other], { cwd: tmp.dir });
      expect(r.status).toBe(2);
      expect(r.stderr).toContain(`give --resume-or-start alone, not with ${other}`);
    }
    const r = await runCli(['upload', '-', '--format', 'csv', '--url', 'http://127.0.0.1:9', '--api-key', 'k', '--resume-or-start'], { cwd: tmp.dir });
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/--resume-or-start cannot be used with standard input/);
  });
});

describe("a shard's records", () => {
  it('each shard keeps its journal and delta state under its own name, side by side', async () => {
    const users = writeUsers(90);
    const server = await faultServer();
    const runs = await Promise.all(
      [1, 2].map((k) => runCli(['upload', users, '--url', server.url, '--api-key', 'k', '--shard', `${k}/2`, '--delta', '--resume-or-start', '--json'], { cwd: tmp.dir })),
    );
    for (const r of runs) expect(r.status, r.stderr).toBe(0);
    const files = readdirSync(tmp.dir);
    const slug = new URL(server.url).host.replace(':', '-');
    expect(files).toContain(`users.csv.http-${slug}.shard-1-of-2.journal`);
    expect(files).toContain(`users.csv.http-${slug}.shard-2-of-2.journal`);
    expect(existsSync(join(tmp.dir, 'track-state.shard-1-of-2.sqlite'))).toBe(true);
    expect(existsSync(join(tmp.dir, 'track-state.shard-2-of-2.sqlite'))).toBe(true);
    expect(existsSync(join(tmp.dir, 'track-state.sqlite'))).toBe(false);
    expect(new Set(sentIds(server)).size).toBe(90);

    // shard 1 again: its own journal resumes (nothing left), the other shard's is another run's
    const before = server.received.length;
    const again = await runCli(['upload', users, '--url', server.url, '--api-key', 'k', '--shard', '1/2', '--delta', '--resume-or-start'], { cwd: tmp.dir });
    expect(again.status, again.stderr).toBe(0);
    expect(server.received.length).toBe(before);
  });

  it('refuses a run split otherwise, or not at all, once the shards of a split sent the same files', async () => {
    const rows = ['external_id,name,time'];
    for (let u = 0; u < 40; u += 1) rows.push(`e${u},opened,2024-01-01T00:00:00Z`);
    writeFileSync(join(tmp.dir, 'events.csv'), `${rows.join('\n')}\n`);
    const server = await faultServer();
    const args = [join(tmp.dir, 'events.csv'), '--url', server.url, '--api-key', 'k'];
    for (const k of [1, 2, 3]) expect((await runCli(['upload', ...args, '--shard', `${k}/3`], { cwd: tmp.dir })).status).toBe(0);
    const before = server.received.length;

    // every row again, or re-split: each would store events the shards of 3 stored already
    for (const more of [[], ['--shard', '1/2'], ['--shard', '1/2', '--resume-or-start']]) {
      const r = await runCli(['upload', ...args, ...more], { cwd: tmp.dir });
      expect(r.status, `${more.join(' ')}: ${r.stderr}`).toBe(2);
      expect(r.stderr).toMatch(/--shard \d\/3/);
      expect(r.stderr).toMatch(/--restart/);
    }
    expect(server.received.length).toBe(before);
    // under another key, what is said first is what another key may do: the shards' journals cannot be resumed by it
    for (const more of [[], ['--shard', '1/2'], ['--shard', '1/3']]) {
      const r = await runCli(['upload', ...args.slice(0, -1), 'k2', ...more], { cwd: tmp.dir });
      expect(r.status, `${more.join(' ')}: ${r.stderr}`).toBe(2);
      expect(r.stderr).toContain('under another API key');
      expect(r.stderr).not.toContain('Run the shards of');
    }
    // the split that sent them goes on as before, and --restart is still there to send every row
    expect((await runCli(['upload', ...args, '--shard', '2/3', '--resume-or-start'], { cwd: tmp.dir })).status).toBe(0);
    expect(server.received.length).toBe(before);
    expect((await runCli(['upload', ...args, '--restart', '--journal', join(tmp.dir, 'all.journal')], { cwd: tmp.dir })).status).toBe(0);
    expect(server.received.length).toBeGreaterThan(before);
  });

  it("tells a key the shards' advice when it ran a shard of its own, whatever another key ran beside it", async () => {
    const rows = ['external_id,name,time'];
    for (let u = 0; u < 40; u += 1) rows.push(`e${u},opened,2024-01-01T00:00:00Z`);
    writeFileSync(join(tmp.dir, 'events.csv'), `${rows.join('\n')}\n`);
    const server = await faultServer();
    const up = (key: string, ...more: string[]) => runCli(['upload', join(tmp.dir, 'events.csv'), '--url', server.url, '--api-key', key, ...more], { cwd: tmp.dir });
    expect((await up('kb', '--shard', '1/2')).status).toBe(0);
    expect((await up('ka', '--shard', '2/2')).status).toBe(0);
    const before = server.received.length;
    // each key ran a shard: each is told to run the shards, not to give its own --journal (which would send its shard's rows again)
    for (const key of ['ka', 'kb']) {
      for (const more of [[], ['--shard', '1/3'], ['--resume-or-start']]) {
        const r = await up(key, ...more);
        expect(r.status, `${key} ${more.join(' ')}: ${r.stderr}`).toBe(2);
        if (more[0] !== '--resume-or-start') expect(r.stderr, `${key} ${more.join(' ')}`).toContain('Run the shards of 2');
        expect(r.stderr, `${key} ${more.join(' ')}`).not.toContain('give this upload its own --journal');
      }
    }
    expect(server.received.length).toBe(before);
  });

  it('refuses a shard once a run of every row sent the same files, with advice a shard can follow', async () => {
    const rows = ['external_id,name,time'];
    for (let u = 0; u < 120; u += 1) rows.push(`e${u},opened,2024-01-01T00:00:00Z`);
    writeFileSync(join(tmp.dir, 'events.csv'), `${rows.join('\n')}\n`);
    const server = await faultServer((r) => (r.index === 1 ? { kind: 'status', status: 401 } : undefined));
    const args = [join(tmp.dir, 'events.csv'), '--url', server.url, '--api-key', 'k'];
    const journal = join(tmp.dir, `events.csv.http-${new URL(server.url).host.replace(':', '-')}.journal`);
    // a run of every row that stopped (a 401 on its second request): resuming it, as it was, is the advice
    expect((await runCli(['upload', ...args, '--concurrency', '1'], { cwd: tmp.dir })).status).toBe(3);
    server.script(() => undefined);
    const stopped = await runCli(['upload', ...args, '--shard', '1/2'], { cwd: tmp.dir });
    expect(stopped.status).toBe(2);
    expect(stopped.stderr).toContain(`of every row (no --shard) was stopped on`);
    expect(stopped.stderr).toContain(`This run takes shard 1 of 2: it would send again the rows of this shard that run sent`);
    expect(stopped.stderr).toContain(`Resume that run as it was (--resume --journal ${journal}, without --shard), or give --restart`);
    // under another key, that run cannot be resumed either: what is said is what another key may do
    const otherKey = await runCli(['upload', ...args.slice(0, -1), 'k2', '--shard', '1/2'], { cwd: tmp.dir });
    expect(otherKey.status).toBe(2);
    expect(otherKey.stderr).toContain('under another API key');
    expect(otherKey.stderr).not.toContain('--resume --journal');
    // the advice works
    expect((await runCli(['upload', ...args, '--resume', '--journal', journal], { cwd: tmp.dir })).status).toBe(0);
    const before = server.received.length;
    // once it completed, --restart is all that is left to give
    const done = await runCli(['upload', ...args, '--shard', '2/2', '--resume-or-start'], { cwd: tmp.dir });
    expect(done.status).toBe(2);
    expect(done.stderr).toContain('of every row (no --shard) completed on');
    expect(done.stderr).toContain('Give --restart to send every row of this shard again.');
    expect(done.stderr).not.toContain('--resume --journal');
    expect(server.received.length).toBe(before);
    expect((await runCli(['upload', ...args, '--shard', '2/2', '--restart'], { cwd: tmp.dir })).status).toBe(0);
    expect(server.received.length).toBeGreaterThan(before);
  });
});
