// Small promises of the CLI: output into a pipe closed early ends without a stack trace; `--out -`
// writes the request bodies to standard output; the journal's name holds the target's scheme; a TLS
// handshake answered in plain HTTP is said once, as such; --no-journal, and no journal against the
// emulator `track emulate --exec` started; `.track-journals` is ignored by git.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { isExecEmulator } from '../../src/cli/options.js';
import { resolveEndpoint } from '../../src/transport/endpoint.js';
import { defaultJournalPath } from '../../src/upload/journal-name.js';
import { BIN, ROOT, runCliAsync } from '../helpers/cli.js';
import { writeCrmCsv } from '../helpers/crm.js';
import { useServers } from '../helpers/servers.js';

const { tmp, emulator, faultServer } = useServers();
const journals = (): string[] => readdirSync(tmp.dir).filter((name) => name.endsWith('.journal') || name === '.track-journals');

/** `track ARGS | READER` in bash: track's exit status and its standard error (the reader's output is dropped). */
function piped(args: string[], reader: string): { status: number; stderr: string } {
  const quoted = args.map((a) => `'${a.replaceAll("'", "'\\''")}'`).join(' ');
  const r = spawnSync('bash', ['-c', `'${process.execPath}' '${BIN}' ${quoted} 2>err.txt | ${reader} > /dev/null; exit \${PIPESTATUS[0]}`], { cwd: tmp.dir, encoding: 'utf8' });
  return { status: r.status ?? -1, stderr: readFileSync(join(tmp.dir, 'err.txt'), 'utf8') };
}

describe('output into a pipe closed early', () => {
  it('ends with the run’s own status and no stack trace: --help, --json, --out -', async () => {
    const file = writeCrmCsv(tmp.dir, 2000);
    for (const args of [['upload', '--help'], ['--help'], ['emulate', '--help']]) {
      const r = piped(args, 'head -1');
      expect(r.stderr, args.join(' ')).toBe('');
      expect(r.status, args.join(' ')).toBe(0);
    }
    const json = piped(['validate', file, '--json', '--drop-invalid-fields'], 'head -c 1');
    expect(json.stderr).toBe('');
    expect(json.status).toBe(1);
    // the reader of the requests went away: said in a line, exit 3
    const out = piped(['validate', file, '--out', '-', '--drop-invalid-fields'], 'head -1');
    expect(out.stderr).not.toMatch(/\n\s+at /);
    expect(out.stderr).toContain('track: cannot write the requests to standard output: EPIPE (its reader closed it)');
    expect(out.status).toBe(3);
  });

  it('--out - writes the request bodies alone to standard output, the summary to standard error', async () => {
    const file = writeCrmCsv(tmp.dir, 200);
    const r = await runCliAsync(['validate', file, '--out', '-', '--drop-invalid-fields'], { cwd: tmp.dir });
    expect(r.status).toBe(1);
    const bodies = r.stdout.trimEnd().split('\n').map((line) => JSON.parse(line) as { attributes: unknown[] });
    expect(bodies).toHaveLength(4);
    expect(r.stderr).toMatch(/requests +4 would be sent \(at most 50 items each\), written to standard output/);
    const json = await runCliAsync(['validate', file, '--out', '-', '--drop-invalid-fields', '--json'], { cwd: tmp.dir });
    const summary = JSON.parse(json.stderr) as { items: { attributes: number }; outPath: string };
    expect(summary.outPath).toBe('-');
    expect(json.stdout.trimEnd().split('\n').reduce((n, line) => n + (JSON.parse(line) as { attributes: unknown[] }).attributes.length, 0)).toBe(summary.items.attributes);
    expect(existsSync(join(tmp.dir, '-'))).toBe(false);
  });
});

describe('the journal of a target', () => {
  it('is named with the scheme: an http:// and an https:// run to one host and port are two targets', () => {
    expect(defaultJournalPath('/data/users.csv.gz', resolveEndpoint('http://127.0.0.1:4000'))).toBe('/data/users.csv.gz.http-127.0.0.1-4000.journal');
    expect(defaultJournalPath('/data/users.csv', resolveEndpoint('https://rest.example.com:8443/v2'))).toBe('/data/users.csv.https-rest.example.com-8443-v2.journal');
    // the name an earlier version gave it, without the input's extension
    expect(defaultJournalPath('/data/users.csv.gz', resolveEndpoint('http://127.0.0.1:4000'), true, undefined, false)).toBe('/data/users.http-127.0.0.1-4000.journal');
  });

  it('of an earlier version, named without the scheme, is still found for its target', async () => {
    const emu = await emulator();
    const file = writeCrmCsv(tmp.dir, 100);
    const first = await runCliAsync(['upload', file, '--url', emu.url, '--api-key', 'k', '--quiet', '--drop-invalid-fields'], { cwd: tmp.dir });
    expect(first.status).toBe(1);
    const [name] = journals();
    expect(name).toMatch(/^crm\.csv\.http-127\.0\.0\.1-\d+\.journal$/);
    const legacy = name.replace('.csv.http-', '.');
    writeFileSync(join(tmp.dir, legacy), readFileSync(join(tmp.dir, name)));
    spawnSync('rm', [join(tmp.dir, name)]);
    const again = await runCliAsync(['upload', file, '--url', emu.url, '--api-key', 'k', '--quiet', '--drop-invalid-fields'], { cwd: tmp.dir });
    expect(again.status).toBe(2);
    expect(again.stderr).toContain(`its journal is ${join(tmp.dir, legacy)}`);
    const resumed = await runCliAsync(['upload', file, '--url', emu.url, '--api-key', 'k', '--quiet', '--resume', '--drop-invalid-fields', '--json'], { cwd: tmp.dir });
    // the fields the first run left out still wait in its rejects file: exit 1, as that run's
    expect(resumed.status).toBe(1);
    expect(JSON.parse(resumed.stdout).skipped).toBe(100);
  });

  it('an https:// run against a plain-http server is its own target, and says the server does not speak TLS, once', async () => {
    const server = await faultServer();
    const file = writeCrmCsv(tmp.dir, 300);
    const plain = await runCliAsync(['upload', file, '--url', server.url, '--api-key', 'k', '--quiet', '--drop-invalid-fields'], { cwd: tmp.dir });
    expect(plain.status).toBe(1);
    server.forget();
    const tls = await runCliAsync(['upload', file, '--url', server.url.replace('http:', 'https:'), '--api-key', 'k', '--drop-invalid-fields', '--json'], { cwd: tmp.dir });
    expect(tls.status).toBe(3);
    expect(tls.stderr).toBe('track: the server does not speak TLS: try http:// instead of https:// in --url\n');
    const d = JSON.parse(tls.stdout).delivery;
    expect(d.retries).toBe(0);
    expect(d.requestsSent).toBe(0);
    expect(server.received).toHaveLength(0);
    expect(journals().sort()).toEqual([expect.stringMatching(/^crm\.csv\.http-127/), expect.stringMatching(/^crm\.csv\.https-127/)]);
  });
});

describe('no journal', () => {
  it('--no-journal keeps none: the run may go again, and --resume is refused', async () => {
    const emu = await emulator();
    const file = writeCrmCsv(tmp.dir, 100);
    const args = ['upload', file, '--url', emu.url, '--api-key', 'k', '--quiet', '--drop-invalid-fields', '--no-journal'];
    expect((await runCliAsync(args, { cwd: tmp.dir })).status).toBe(1);
    expect((await runCliAsync(args, { cwd: tmp.dir })).status).toBe(1);
    expect(journals()).toEqual([]);
    const resume = await runCliAsync([...args, '--resume'], { cwd: tmp.dir });
    expect(resume.status).toBe(2);
    expect(resume.stderr).toContain('--resume reads the journal of a run, and this one keeps none');
  });

  it('an upload to the emulator track emulate --exec started keeps none unless --journal is given; one elsewhere keeps its own', async () => {
    const other = await emulator();
    writeCrmCsv(tmp.dir, 100);
    const upload = `'${process.execPath}' '${BIN}' upload crm.csv --quiet --drop-invalid-fields`;
    const script = `${upload}; ${upload}; ${upload} --journal kept.journal; ${upload} --url ${other.url} --api-key k; true`;
    // not spawnSync: the other emulator answers from this process
    const r = await runCliAsync(['emulate', '--quiet', '--exec', script], { cwd: tmp.dir });
    expect(r.status, r.stderr).toBe(0);
    // run twice to the same emulator without a journal: nothing refused the second
    expect(r.stderr).not.toContain('Running it again would send those rows again');
    expect(journals().sort()).toEqual(['crm.csv.http-127.0.0.1-' + new URL(other.url).port + '.journal', 'kept.journal']);
  });

  it('knows the emulator of --exec by its loopback origin alone', () => {
    expect(isExecEmulator('http://127.0.0.1:4567', 'http://127.0.0.1:4567')).toBe(true);
    expect(isExecEmulator('http://127.0.0.1:4567/', 'http://127.0.0.1:4567')).toBe(true);
    expect(isExecEmulator('http://127.0.0.1:4568', 'http://127.0.0.1:4567')).toBe(false);
    expect(isExecEmulator('https://127.0.0.1:4567', 'http://127.0.0.1:4567')).toBe(false);
    expect(isExecEmulator('http://rest.example.com', 'http://rest.example.com')).toBe(false);
    expect(isExecEmulator('http://127.0.0.1:4567', undefined)).toBe(false);
    expect(isExecEmulator('http://127.0.0.1:4567', 'not a url')).toBe(false);
  });

  it('the repository ignores .track-journals as it does journals', () => {
    const ignored = readFileSync(join(ROOT, '.gitignore'), 'utf8').split('\n');
    expect(ignored).toContain('.track-journals');
    expect(ignored).toContain('*.journal');
  });
});

describe('a resume of a run that settled every row', () => {
  it('says the rows of a file it did not read again are not read: in the text, --json, the report, the step summary and the progress', async () => {
    const emu = await emulator();
    const done = join(tmp.dir, 'done.csv');
    const header = join(tmp.dir, 'header.csv');
    const more = join(tmp.dir, 'more.csv');
    writeFileSync(done, 'external_id,plan\nu1,team\nu2,pro\n');
    writeFileSync(header, 'external_id,plan\n');
    writeFileSync(more, 'external_id,plan\nu3,team\n');
    const common = ['upload', done, header, '--url', emu.url, '--api-key', 'k', '--journal', join(tmp.dir, 'j.journal')];
    expect((await runCliAsync([...common, '--quiet'], { cwd: tmp.dir })).status).toBe(0);
    const text = await runCliAsync([...common, '--resume'], { cwd: tmp.dir, env: { NO_COLOR: '1' } });
    expect(text.status).toBe(0);
    expect(text.stdout).toMatch(/^upload: 2 files, 0 rows read, 2 rows not read again \(an earlier run settled them\) in [\d.]+ s\n {2}\S*done\.csv {2}2 rows \(csv\), not read again\n {2}\S*header\.csv {2}0 rows \(csv\), not read again\n/);
    const stepSummary = join(tmp.dir, 'step-summary.md');
    const outputs = join(tmp.dir, 'outputs.txt');
    writeFileSync(stepSummary, '');
    writeFileSync(outputs, '');
    const events = join(tmp.dir, 'events.ndjson');
    const report = join(tmp.dir, 'report.html');
    const ci = { GITHUB_ACTIONS: 'true', GITHUB_STEP_SUMMARY: stepSummary, GITHUB_OUTPUT: outputs, RUNNER_TEMP: tmp.dir };
    const jsonRun = await runCliAsync([...common, '--resume', '--json', '--events', events, '--report', report], { cwd: tmp.dir, env: ci });
    const json = JSON.parse(jsonRun.stdout);
    expect(json).toMatchObject({ rows: 2, skipped: 2, unread: 2, files: [{ rows: 2, unread: true }, { rows: 0, unread: true }] });
    expect(readFileSync(stepSummary, 'utf8')).toContain('| rows read | 0 |');
    expect(readFileSync(outputs, 'utf8')).toMatch(/^rows<<(\S+)\n0\n\1$/m);
    expect(readFileSync(report, 'utf8')).toMatch(/id="figure-rows">0</);
    const progress = readFileSync(events, 'utf8').trimEnd().split('\n').map((line) => JSON.parse(line)).filter((e) => e.type === 'progress');
    for (const event of progress) expect(event.rows).toBe(0);
    // a file read says nothing of the kind
    const read = await runCliAsync(['upload', more, '--url', emu.url, '--api-key', 'k', '--json'], { cwd: tmp.dir });
    expect(JSON.parse(read.stdout).unread).toBeUndefined();
    expect(JSON.parse(read.stdout).files[0].unread).toBeUndefined();
  });
});
