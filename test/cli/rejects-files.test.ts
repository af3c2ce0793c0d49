// Where the rejects file is written, and what no run may do to another's: shards side by side each
// keep their own, a check (validate, --dry-run) leaves an upload's as it was, two inputs of one name
// and different extensions each have their own, and `track report` names each shard's file. A run
// an earlier version left unfinished is resumed into the file that version named.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCliAsync } from '../helpers/cli.js';
import { useServers } from '../helpers/servers.js';

const { tmp, emulator, faultServer } = useServers();

const lines = (path: string): string[] => readFileSync(path, 'utf8').trimEnd().split('\n');
const lineNumbers = (path: string): number[] => lines(path).map((l) => (JSON.parse(l) as { line: number }).line);

/** u2.csv: 3,000 users, every hundredth with an email that is not one (30 rejected rows, spread over the shards). */
function writeShardedExport(dir: string): void {
  const rows = Array.from({ length: 3000 }, (_, i) => `sx${i},${i % 100 === 0 ? 'bad' : `sx${i}@example.com`},p`);
  writeFileSync(join(dir, 'u2.csv'), `external_id,email,plan\n${rows.join('\n')}\n`);
}

describe('the rejects file of a shard', () => {
  const shard = (k: number, url: string) => runCliAsync(['upload', 'u2.csv', '--shard', `${k}/3`, '--url', url, '--api-key', 'k', '--summary-file', `s2-${k}.json`, '--quiet'], { cwd: tmp.dir });
  const summary = (k: number) => JSON.parse(readFileSync(join(tmp.dir, `s2-${k}.json`), 'utf8')) as { rejected: number; rejectsPath?: string };

  it('is its own: shards side by side write every rejected row once, each to the file its summary names', async () => {
    const emu = await emulator();
    writeShardedExport(tmp.dir);
    const runs = await Promise.all([1, 2, 3].map((k) => shard(k, emu.url)));
    for (const r of runs) expect([0, 1], r.stderr).toContain(r.status);
    // each file holds its shard's rejects, and together every rejected row once
    const named = [1, 2, 3].map((k) => summary(k)).filter((s) => s.rejected > 0);
    for (const s of named) expect(lines(join(tmp.dir, s.rejectsPath!)).length, s.rejectsPath).toBe(s.rejected);
    const seen = [...new Set(named.map((s) => s.rejectsPath!))].flatMap((path) => lineNumbers(join(tmp.dir, path)));
    expect(seen.sort((a, b) => a - b)).toEqual(Array.from({ length: 30 }, (_, i) => i * 100 + 2));
    for (const k of [1, 2, 3]) if (summary(k).rejected > 0) expect(summary(k).rejectsPath).toBe(`u2.csv.shard-${k}-of-3.rejects.ndjson`);
    expect(existsSync(join(tmp.dir, 'u2.rejects.ndjson'))).toBe(false);
    expect(existsSync(join(tmp.dir, 'u2.csv.rejects.ndjson'))).toBe(false);
  }, 60_000);

  it('is left by the shards that run after it, one after another', async () => {
    const emu = await emulator();
    writeShardedExport(tmp.dir);
    for (const k of [1, 2, 3]) expect([0, 1]).toContain((await shard(k, emu.url)).status);
    const total = [1, 2, 3].reduce((n, k) => n + (summary(k).rejectsPath === undefined ? 0 : lines(join(tmp.dir, summary(k).rejectsPath!)).length), 0);
    expect(total).toBe(30);
  }, 60_000);

  it('is named under its shard by track report, and in its JSON', async () => {
    const emu = await emulator();
    writeShardedExport(tmp.dir);
    await Promise.all([1, 2, 3].map((k) => shard(k, emu.url)));
    const files = ['s2-1.json', 's2-2.json', 's2-3.json'];
    const named = [1, 2, 3].map((k) => summary(k).rejectsPath).filter((p) => p !== undefined);
    expect(named.length).toBeGreaterThan(1);
    const text = await runCliAsync(['report', ...files], { cwd: tmp.dir, env: { NO_COLOR: '1' } });
    expect(text.status).toBe(1);
    for (const path of named) expect(text.stdout).toContain(`rejects in ${path}`);
    expect(text.stdout).toMatch(new RegExp(`rejected +30 rows, written to the ${named.length} rejects files named above`));
    expect(text.stdout).not.toMatch(/no file/);
    const json = JSON.parse((await runCliAsync(['report', ...files, '--json'], { cwd: tmp.dir })).stdout);
    expect(json.rejectsPaths).toEqual(named);
  }, 60_000);
});

describe('a check (validate, upload --dry-run)', () => {
  it("leaves an upload's rejects file as it was, the rows the server refused too, and writes its own", async () => {
    const emu = await emulator({ blocklist: ['mb7'] });
    writeFileSync(join(tmp.dir, 'many.csv'), `external_id,plan\n${Array.from({ length: 120 }, (_, i) => `mb${i + 1},p`).join('\n')}\n`);
    const up = await runCliAsync(['upload', 'many.csv', '--url', emu.url, '--api-key', 'k', '--journal', 'j10', '--json'], { cwd: tmp.dir });
    expect(up.status, up.stderr).toBe(1);
    const path = join(tmp.dir, JSON.parse(up.stdout).rejectsPath as string);
    const refused = readFileSync(path, 'utf8');
    // the blocklisted user's row alone (its request is sent again in parts)
    expect(lineNumbers(path)).toEqual([8]);
    for (const args of [['validate', 'many.csv'], ['upload', 'many.csv', '--dry-run']]) {
      const r = await runCliAsync([...args, '--quiet'], { cwd: tmp.dir });
      expect(r.status, r.stderr).toBe(0);
      expect(readFileSync(path, 'utf8'), args.join(' ')).toBe(refused);
    }
    // a check with rejects writes them apart, and leaves the upload's
    writeFileSync(join(tmp.dir, 'many.csv'), `external_id,email\nmb1,nope\n`);
    const check = await runCliAsync(['validate', 'many.csv', '--json'], { cwd: tmp.dir });
    expect(check.status).toBe(1);
    expect(readFileSync(path, 'utf8')).toBe(refused);
    expect(JSON.parse(check.stdout).rejectsPath).toBe('many.csv.check.rejects.ndjson');
    expect(lineNumbers(join(tmp.dir, 'many.csv.check.rejects.ndjson'))).toEqual([2]);
    expect(JSON.parse(up.stdout).rejectsPath).toBe('many.csv.rejects.ndjson');
  }, 60_000);
});

describe('inputs of one name and different extensions', () => {
  it('each keep their own rejects file: the second upload leaves the first one\'s', async () => {
    const emu = await emulator();
    writeFileSync(join(tmp.dir, 'users.csv'), 'external_id,email\nu1,not-an-email\nu2,u2@example.com\n');
    writeFileSync(join(tmp.dir, 'users.ndjson'), '{"external_id":"u3","email":"u3@example.com"}\n');
    const first = await runCliAsync(['upload', 'users.csv', '--url', emu.url, '--api-key', 'k', '--json'], { cwd: tmp.dir });
    expect(first.status).toBe(1);
    const path: string = JSON.parse(first.stdout).rejectsPath;
    const second = await runCliAsync(['upload', 'users.ndjson', '--url', emu.url, '--api-key', 'k', '--json'], { cwd: tmp.dir });
    expect(second.status, second.stderr).toBe(0);
    expect(existsSync(join(tmp.dir, path)), `${path} after users.ndjson`).toBe(true);
    expect(lineNumbers(join(tmp.dir, path))).toEqual([2]);
    expect(path).toBe('users.csv.rejects.ndjson');
  }, 60_000);
});

describe('a run an earlier version left unfinished', () => {
  it('is resumed into the rejects file that version named, with a note; a new run writes its own', async () => {
    // the first run stops after two requests (the key refused): its rejects are in the file an earlier version named
    let answered = 0;
    const server = await faultServer(() => (answered++ < 2 ? { kind: 'ok' } : { kind: 'status', status: 403 }));
    const rows = Array.from({ length: 100 }, (_, i) => `r${i},${i % 10 === 0 ? 'bad' : `r${i}@example.com`}`);
    writeFileSync(join(tmp.dir, 'users.csv'), `external_id,email\n${rows.join('\n')}\n`);
    const args = ['upload', 'users.csv', '--url', server.url, '--api-key', 'k', '--journal', 'j.journal', '--max-total', '10', '--json'];
    const first = await runCliAsync([...args, '--rejects', 'users.rejects.ndjson'], { cwd: tmp.dir });
    expect(first.status, first.stderr).toBe(3);
    const bad = Array.from({ length: 10 }, (_, i) => i * 10 + 2);
    expect(lineNumbers(join(tmp.dir, 'users.rejects.ndjson')).sort((a, b) => a - b)).toEqual(bad);

    // resumed, the server refuses the first item of each request it is sent: 70 rows left, 7 refused
    server.script(() => ({ kind: 'minor', errors: [{ type: 'refused by the server', input_array: 'attributes', index: 0 }] }));
    const resumed = await runCliAsync([...args, '--resume'], { cwd: tmp.dir });
    expect(resumed.status, resumed.stderr).toBe(1);
    const summary = JSON.parse(resumed.stdout);
    expect(summary.rejectsPath).toBe('users.rejects.ndjson');
    expect(summary.notes.join('\n')).toMatch(/the run resumed here wrote its rejects to users\.rejects\.ndjson, as an earlier version of track named them: this one adds to it \(a new run writes users\.csv\.rejects\.ndjson\)/);
    const after = lineNumbers(join(tmp.dir, 'users.rejects.ndjson'));
    expect(after).toHaveLength(17);
    expect(new Set(after).size).toBe(17);
    for (const line of bad) expect(after).toContain(line);
    expect(existsSync(join(tmp.dir, 'users.csv.rejects.ndjson'))).toBe(false);
  }, 60_000);
});
