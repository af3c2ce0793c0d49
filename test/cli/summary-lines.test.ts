// The summary's lines say what happened in words that hold for every count: the top `rejected` line
// counts every row the rejects file holds (refused before sending, and by the server, as the exit
// status does), and a count of 1 takes the singular.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCliAsync } from '../helpers/cli.js';
import { useServers } from '../helpers/servers.js';

const { tmp, emulator, faultServer } = useServers();

const lines = (path: string): string[] => readFileSync(path, 'utf8').split('\n').filter((line) => line !== '');

describe('the rejected line of an upload', () => {
  it('counts the rows the server refused, and those refused before sending, with both reasons', async () => {
    const emu = await emulator({ blocklist: ['mb7'] });
    // 120 users, mb7 among them, then a row that names no user (refused before sending, line 122)
    const rows = Array.from({ length: 120 }, (_, i) => `mb${i + 1},pro`);
    writeFileSync(join(tmp.dir, 'many.csv'), `external_id,plan\n${rows.join('\n')}\n,pro\n`);
    const run = await runCliAsync(['upload', 'many.csv', '--url', emu.url, '--api-key', 'k', '--no-journal'], { cwd: tmp.dir, env: { NO_COLOR: '1' } });
    expect(run.status, run.stderr).toBe(1);
    const rejects = lines(join(tmp.dir, 'many.csv.rejects.ndjson'));
    const refused = rejects.length - 1;
    expect(refused).toBeGreaterThan(0);
    expect(run.stdout).not.toContain('rejected    none');
    expect(run.stdout).toContain(`\nrejected    ${rejects.length} rows (1 before sending, ${refused} after sending), written to many.csv.rejects.ndjson\n`);
    expect(run.stdout).toMatch(/\n +1  external_id: missing/);
    expect(run.stdout).toMatch(new RegExp(`\\n +${refused}  HTTP 400: .*blocklisted`));
  }, 60_000);

  it('says the server refused them when the plan refused none', async () => {
    const emu = await emulator({ blocklist: ['mb7'] });
    writeFileSync(join(tmp.dir, 'some.csv'), `external_id,plan\n${Array.from({ length: 20 }, (_, i) => `mb${i + 1},pro`).join('\n')}\n`);
    const run = await runCliAsync(['upload', 'some.csv', '--url', emu.url, '--api-key', 'k', '--no-journal'], { cwd: tmp.dir, env: { NO_COLOR: '1' } });
    expect(run.status, run.stderr).toBe(1);
    const refused = lines(join(tmp.dir, 'some.csv.rejects.ndjson')).length;
    expect(run.stdout).toContain(`\nrejected    ${refused === 1 ? '1 row' : `${refused} rows`} after sending, written to some.csv.rejects.ndjson\n`);
  }, 60_000);

  it('is one figure with --json too: rejectedTotal counts the server\'s refusals beside rejected, the rows refused before sending', async () => {
    const emu = await emulator({ blocklist: ['mb7'] });
    writeFileSync(join(tmp.dir, 'both.csv'), `external_id,plan\n${Array.from({ length: 20 }, (_, i) => `mb${i + 1},pro`).join('\n')}\n,pro\n`);
    const run = await runCliAsync(['upload', 'both.csv', '--url', emu.url, '--api-key', 'k', '--no-journal', '--json', '--events', 'events.ndjson'], { cwd: tmp.dir });
    expect(run.status, run.stderr).toBe(1);
    const summary = JSON.parse(run.stdout);
    const rejects = lines(join(tmp.dir, 'both.csv.rejects.ndjson')).length;
    expect(rejects).toBeGreaterThan(1);
    expect(summary.rejected).toBe(1);
    expect(summary.rejectedTotal).toBe(rejects);
    const end = lines(join(tmp.dir, 'events.ndjson')).map((line) => JSON.parse(line)).at(-1);
    expect(end).toMatchObject({ type: 'end', summary: { rejected: 1, rejectedTotal: rejects } });

    const check = await runCliAsync(['validate', 'both.csv', '--json'], { cwd: tmp.dir });
    expect(JSON.parse(check.stdout)).toMatchObject({ rejected: 1, rejectedTotal: 1 });
  }, 60_000);
});

describe('a count of 1', () => {
  it('takes the singular in a dry run: item, request, request/s', async () => {
    writeFileSync(join(tmp.dir, 'one.csv'), 'external_id,plan\nu1,pro\n');
    const run = await runCliAsync(['validate', 'one.csv', '--max-total', '1', '--rate', '1'], { cwd: tmp.dir, env: { NO_COLOR: '1' } });
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).toContain('\nitems       1 attribute, 0 events, 0 purchases\n');
    expect(run.stdout).toContain('\nrequests    1 would be sent (at most 1 item each)\n');
    expect(run.stdout).toContain('\nestimate    1 request takes at least 1s at 1 request/s\n');
  }, 60_000);

  it('takes the singular in an upload: 1 retry', async () => {
    const server = await faultServer((request) => (request.index === 0 ? { kind: 'status', status: 503 } : { kind: 'ok' }));
    writeFileSync(join(tmp.dir, 'one.csv'), 'external_id,plan\nu1,pro\n');
    const run = await runCliAsync(['upload', 'one.csv', '--url', server.url, '--api-key', 'k', '--no-journal'], { cwd: tmp.dir, env: { NO_COLOR: '1' } });
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).toContain('\nrequests    1 sent, 1 retry, 0 rate-limited (429)\n');
  }, 60_000);
});

describe('--json on a run that ends before its summary', () => {
  const oneJson = (stdout: string): any => {
    expect(stdout.trim().split('\n')).toHaveLength(1);
    return JSON.parse(stdout);
  };

  it('prints one JSON object for a usage error (exit 2), the same as --summary-file holds', async () => {
    writeFileSync(join(tmp.dir, 'one.csv'), 'external_id,plan\nu1,pro\n');
    for (const args of [['--bogus'], ['--concurrency', '0'], []]) {
      const run = await runCliAsync(['upload', 'one.csv', '--json', '--summary-file', 'summary.json', ...args], { cwd: tmp.dir, env: { NO_COLOR: '1', TRACK_URL: '', TRACK_API_KEY: '' } });
      expect(run.status, run.stderr).toBe(2);
      const printed = oneJson(run.stdout);
      expect(printed).toMatchObject({ command: 'upload', exitStatus: 2, fatal: { message: expect.any(String) } });
      // the message is said to the person too
      expect(run.stderr).toContain(printed.fatal.message.split('\n')[0]);
      expect(printed).toEqual(JSON.parse(readFileSync(join(tmp.dir, 'summary.json'), 'utf8')));
    }
  }, 60_000);

  it('prints one JSON object for a run refused before it begins: the journal holds it already', async () => {
    const server = await faultServer();
    writeFileSync(join(tmp.dir, 'one.csv'), 'external_id,plan\nu1,pro\n');
    const args = ['upload', 'one.csv', '--url', server.url, '--api-key', 'k', '--json'];
    expect((await runCliAsync(args, { cwd: tmp.dir })).status).toBe(0);
    const again = await runCliAsync(args, { cwd: tmp.dir, env: { NO_COLOR: '1' } });
    expect(again.status, again.stderr).toBe(2);
    const printed = oneJson(again.stdout);
    expect(printed).toMatchObject({ command: 'upload', exitStatus: 2, fatal: { name: 'UsageError' } });
    expect(printed.fatal.message).toContain('--restart');
    expect(server.received).toHaveLength(1);
  }, 60_000);

  it('with --out -, prints it on stderr: standard output carries the request bodies alone', async () => {
    const run = await runCliAsync(['validate', 'missing.csv', '--json', '--out', '-'], { cwd: tmp.dir, env: { NO_COLOR: '1' } });
    expect(run.status).toBe(2);
    expect(run.stdout).toBe('');
    const line = run.stderr.split('\n').find((l) => l.startsWith('{'));
    expect(JSON.parse(line!)).toMatchObject({ command: 'validate', exitStatus: 2, fatal: { name: 'InputError' } });
  }, 60_000);
});

describe('a JSON array that breaks', () => {
  it('is named by its file, line and byte, with what was found and what belongs there, not the parser\'s terms', async () => {
    writeFileSync(join(tmp.dir, 'bad.json'), '[\n{"external_id":"a","x":1},\n{"external_id":"b","x":tru}\n]\n');
    const run = await runCliAsync(['validate', 'bad.json'], { cwd: tmp.dir, env: { NO_COLOR: '1' } });
    expect(run.status).toBe(2);
    expect(run.stderr).toBe('track: bad.json:3: is not a valid JSON array: found "}" in a word that is not true, false or null (text goes in double quotes) (byte 55; after row 1, which was read)\n');
    expect(run.stdout).not.toMatch(/chunk position|in state/);
  }, 60_000);
});

describe('the warnings line', () => {
  it('says the warned items left out as unchanged by --delta were not sent', async () => {
    const emu = await emulator();
    // user-001's email is an SMS gateway, user-002 sets no field; user-004 changes on the second run
    writeFileSync(join(tmp.dir, 'w.csv'), 'external_id,email,plan\nuser-001,4155552671@vtext.com,pro\nuser-002,,\nuser-003,ada@example.com,pro\n');
    const args = ['upload', 'w.csv', '--url', emu.url, '--api-key', 'k', '--no-journal', '--delta', '--state', 'st.sqlite'];
    const first = await runCliAsync(args, { cwd: tmp.dir, env: { NO_COLOR: '1' } });
    expect(first.status, first.stderr).toBe(0);
    expect(first.stdout).toContain('\nwarnings    2 (sent all the same)\n');

    const again = await runCliAsync([...args, '--json'], { cwd: tmp.dir });
    expect(JSON.parse(again.stdout)).toMatchObject({ warnings: 2, warningsUnsent: 2, unchanged: 3, requests: 0 });
    const text = await runCliAsync(args, { cwd: tmp.dir, env: { NO_COLOR: '1' } });
    expect(text.stdout).toContain('\nwarnings    2 (on items left out as unchanged: not sent)\n');
    expect(text.stdout).not.toContain('sent all the same');

    // the SMS gateway row changes its plan: sent, warned of; the row that sets nothing is left out
    writeFileSync(join(tmp.dir, 'w.csv'), 'external_id,email,plan\nuser-001,4155552671@vtext.com,team\nuser-002,,\nuser-003,ada@example.com,pro\n');
    const changed = await runCliAsync(args, { cwd: tmp.dir, env: { NO_COLOR: '1' } });
    expect(changed.status, changed.stderr).toBe(0);
    expect(changed.stdout).toContain('\nwarnings    2 (1 sent all the same, 1 on items left out as unchanged: not sent)\n');
    const dry = await runCliAsync([...args, '--dry-run'], { cwd: tmp.dir, env: { NO_COLOR: '1' } });
    expect(dry.stdout).toContain('\nwarnings    2 (on items left out as unchanged: not sent)\n');
  }, 60_000);
});

describe('the files of a summary', () => {
  it('names the first 20 files a line each and counts the others and their rows, which --json lists all', async () => {
    const inputs = Array.from({ length: 25 }, (_, i) => {
      const name = `part-${String(i).padStart(2, '0')}.csv`;
      writeFileSync(join(tmp.dir, name), `external_id,plan\n${Array.from({ length: i + 1 }, (_, r) => `u${i}-${r},pro`).join('\n')}\n`);
      return name;
    });
    const run = await runCliAsync(['upload', '--dry-run', ...inputs], { cwd: tmp.dir, env: { NO_COLOR: '1' } });
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).toContain('\n  part-19.csv  20 rows (csv, attributes)\n');
    expect(run.stdout).not.toContain('part-20.csv');
    // the other five files hold 21 + 22 + 23 + 24 + 25 rows
    expect(run.stdout).toContain('\n  and 5 other files, 115 rows (--json lists every file)\n');
    const json = await runCliAsync(['upload', '--dry-run', ...inputs, '--json'], { cwd: tmp.dir });
    expect(json.status, json.stderr).toBe(0);
    const files = (JSON.parse(json.stdout) as { files: Array<{ file: string; rows: number }> }).files;
    expect(files).toHaveLength(25);
    expect(files[24]).toMatchObject({ file: 'part-24.csv', rows: 25 });
  }, 60_000);

  it('names each of 20 files or fewer', async () => {
    const inputs = Array.from({ length: 20 }, (_, i) => {
      const name = `few-${String(i).padStart(2, '0')}.csv`;
      writeFileSync(join(tmp.dir, name), `external_id,plan\nf${i},pro\n`);
      return name;
    });
    const run = await runCliAsync(['upload', '--dry-run', ...inputs], { cwd: tmp.dir, env: { NO_COLOR: '1' } });
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).toContain('\n  few-19.csv  1 row (csv, attributes)\n');
    expect(run.stdout).not.toContain('other file');
  }, 60_000);
});
