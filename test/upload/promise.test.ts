// `track upload` keeps its promise when people and machines misbehave: a re-run without --resume,
// kill -9 then --resume, a full disk, a bad second input, --out during an upload, an honest summary.
import { spawn, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, lstatSync, mkdirSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BIN, runCliAsync as runCli } from '../helpers/cli.js';
import { range, storedNs, writeEventsCsv } from '../helpers/events.js';
import type { FaultServer } from '../helpers/fault-server.js';
import { useServers } from '../helpers/servers.js';
import { isRoot, withSmallDisk } from '../helpers/small-disk.js';

const { tmp, emulator, faultServer } = useServers();
let faults: FaultServer;

const eventsCsv = (rows: number, name = 'events.csv', bad: (i: number) => boolean = () => false, users = 40): string =>
  writeEventsCsv(tmp.dir, rows, name, { bad, users });
const journals = () => readdirSync(tmp.dir).filter((name) => name.endsWith('.journal'));
const up = (args: string[]) => runCli(['upload', ...args, '--api-key', 'k'], { cwd: tmp.dir });

describe('no accidental second run', () => {
  it('refuses to send a completed upload again without --resume or --restart, changing nothing', async () => {
    const emu = await emulator();
    const file = eventsCsv(30, 'events.csv', (i) => i === 3);
    expect((await up([file, '--url', emu.url, '--quiet'])).status).toBe(1);
    const [journal] = journals();
    const before = { journal: readFileSync(join(tmp.dir, journal), 'utf8'), rejects: readFileSync(join(tmp.dir, 'events.csv.rejects.ndjson'), 'utf8') };

    const again = await up([file, '--url', emu.url]);
    expect(again.status).toBe(2);
    expect(again.stderr).toMatch(/an upload of .*events\.csv to http:\/\/127\.0\.0\.1:\d+\/users\/track completed on \d{4}-\d\d-\d\d \d\d:\d\d UTC \(30 of 30 rows settled\)/);
    expect(again.stderr).toContain('--resume');
    expect(again.stderr).toContain('--restart');
    expect(again.stdout).toBe('');
    expect(storedNs(emu)).toHaveLength(29);
    expect(readFileSync(join(tmp.dir, journal), 'utf8')).toBe(before.journal);
    expect(readFileSync(join(tmp.dir, 'events.csv.rejects.ndjson'), 'utf8')).toBe(before.rejects);

    // --resume has nothing left to send; --restart sends everything again
    const resumed = JSON.parse((await up([file, '--url', emu.url, '--resume', '--json'])).stdout);
    expect(resumed).toMatchObject({ skipped: 30, requests: 0 });
    expect((await up([file, '--url', emu.url, '--restart', '--quiet'])).status).toBe(1);
    expect(storedNs(emu)).toEqual([...range(30), ...range(30)].filter((n) => n !== 3).sort((a, b) => a - b));
    expect(await up([file, '--url', emu.url, '--resume', '--restart'])).toMatchObject({ status: 2, stderr: expect.stringMatching(/--resume or --restart, not both/) });
  });

  it('says where an interrupted upload stopped', async () => {
    const emu = await emulator({ latency: '30' });
    const file = eventsCsv(1000);
    const child = spawn(process.execPath, [BIN, 'upload', file, '--url', emu.url, '--api-key', 'k', '--concurrency', '1', '--quiet'], { cwd: tmp.dir });
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    while (emu.store.counts().events < 150) await new Promise((r) => setTimeout(r, 10));
    child.kill('SIGINT');
    expect(await exited).toBe(130);
    const again = await up([file, '--url', emu.url]);
    expect(again.status).toBe(2);
    expect(again.stderr).toMatch(/was stopped on \d{4}-\d\d-\d\d \d\d:\d\d UTC with \d+ (of 1,000 )?rows settled/);
  });

  it('never blocks a rehearsal and the real upload on each other: each target resumes its own run', async () => {
    const rehearsal = await emulator();
    const real = await emulator();
    const file = eventsCsv(120);
    expect((await up([file, '--url', rehearsal.url, '--quiet'])).status).toBe(0);
    expect((await up([file, '--url', real.url, '--quiet'])).status).toBe(0);
    expect(storedNs(rehearsal)).toEqual(range(120));
    expect(storedNs(real)).toEqual(range(120));
    expect(journals()).toHaveLength(2);
    // an explicit --journal that does not exist yet starts fresh
    expect((await up([file, '--url', real.url, '--journal', join(tmp.dir, 'other.journal'), '--quiet'])).status).toBe(0);
    // a journal of another target is never resumed or replaced by accident
    const wrong = await up([file, '--url', rehearsal.url, '--journal', join(tmp.dir, 'other.journal')]);
    expect(wrong.status).toBe(2);
    expect(wrong.stderr).toMatch(/holds an upload to http:\/\/127\.0\.0\.1:\d+\/users\/track, not to/);
  });
  it('refuses the same rows given in another order, or with other files, naming the journal that holds them', async () => {
    const emu = await emulator();
    const a = eventsCsv(60, 'a.csv');
    const b = eventsCsv(60, 'b.csv');
    expect((await up([a, b, '--url', emu.url, '--quiet'])).status).toBe(0);
    for (const files of [[b, a], [a], [b], [b, eventsCsv(5, 'c.csv')]]) {
      const r = await up([...files, '--url', emu.url]);
      expect(r.status, files.join(' ')).toBe(2);
      expect(r.stderr).toMatch(/its journal is .*a\.csv\.http-127\.0\.0\.1-\d+\.journal/);
    }
    expect(storedNs(emu)).toHaveLength(120);
    // the journal named goes on from where it was
    const [journal] = journals();
    const resumed = JSON.parse((await up([b, a, '--url', emu.url, '--resume', '--journal', join(tmp.dir, journal), '--json'])).stdout);
    expect(resumed).toMatchObject({ skipped: 120, requests: 0 });
  });

  it('refuses the files of another folder given alone, when the journal that holds them lies beside the first input', async () => {
    const emu = await emulator();
    mkdirSync(join(tmp.dir, 'attrs'));
    mkdirSync(join(tmp.dir, 'events'));
    const users = join(tmp.dir, 'attrs', 'users.csv');
    writeFileSync(users, 'external_id,plan\nuser-1,gold\n');
    const events = writeEventsCsv(join(tmp.dir, 'events'), 20);
    expect((await up([users, events, '--url', emu.url, '--quiet'])).status).toBe(0);
    const alone = await up([events, '--url', emu.url]);
    expect(alone.status).toBe(2);
    expect(alone.stderr).toMatch(/its journal is .*attrs\/users\.csv\.http-127\.0\.0\.1-\d+\.journal/);
    expect(storedNs(emu)).toEqual(range(20));
  });

  it('lets a run that sent nothing be run again, and a resume of it counts nothing as possibly duplicated', async () => {
    const file = eventsCsv(200);
    const refused = await up([file, '--url', 'http://127.0.0.1:9', '--retries', '0', '--quiet']);
    expect(refused.status).toBe(3);
    const emu = await emulator({ apiKeys: ['k'] });
    const wrongKey = await runCli(['upload', file, '--url', emu.url, '--api-key', 'wrong', '--quiet'], { cwd: tmp.dir });
    expect(wrongKey.status).toBe(3);
    const resumed = await up([file, '--url', emu.url, '--resume', '--json']);
    expect(resumed.status).toBe(0);
    expect(JSON.parse(resumed.stdout).rowsPossiblyDuplicated).toBe(0);
    expect(storedNs(emu)).toEqual(range(200));
  });

});

describe('exit 2 only when nothing was sent', () => {
  it('checks every input header before the first request, and leaves an earlier run’s files as they were', async () => {
    faults = await faultServer();
    const good = eventsCsv(60, 'good.csv', (i) => i === 0);
    const bad = join(tmp.dir, 'bad.csv');
    writeFileSync(bad, 'name,time\nseeded,2024-03-07T10:00:00Z\n'); // no column names the user
    writeFileSync(join(tmp.dir, 'good.csv.rejects.ndjson'), '{"an earlier":"run"}\n');
    const r = await up([good, bad, '--url', faults.url]);
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/bad\.csv:1: the header cannot be used/);
    expect(faults.received).toHaveLength(0);
    expect(journals()).toEqual([]);
    expect(readFileSync(join(tmp.dir, 'good.csv.rejects.ndjson'), 'utf8')).toBe('{"an earlier":"run"}\n');

    // fixed, the same command goes through: nothing of the failed run stands in its way
    writeFileSync(bad, 'external_id,name,time\nu1,seeded,2024-03-07T10:00:00Z\n');
    const fixed = await up([good, bad, '--url', faults.url, '--quiet']);
    expect(fixed.status).toBe(1);
    expect(faults.received.flatMap((q) => q.body?.events ?? [])).toHaveLength(60);
  });

  it('a usage error of validate leaves the rejects file of the run before it', async () => {
    const file = eventsCsv(10, 'events.csv', () => true);
    const first = await runCli(['validate', file], { cwd: tmp.dir });
    expect(first.status).toBe(1);
    const rejects = readFileSync(join(tmp.dir, 'events.csv.check.rejects.ndjson'), 'utf8');
    writeFileSync(join(tmp.dir, 'map.json'), '{"name": "nonsense:type"}');
    const second = await runCli(['validate', file, '--map', join(tmp.dir, 'map.json')], { cwd: tmp.dir });
    expect(second.status).toBe(2);
    expect(readFileSync(join(tmp.dir, 'events.csv.check.rejects.ndjson'), 'utf8')).toBe(rejects);
  });
});

describe('kill -9, then --resume', () => {
  it('loses no row, and counts every row sent twice as possibly duplicated; each refused row is in the rejects file once', async () => {
    for (const after of [300, 1700, 2600]) {
      const emu = await emulator({ latency: '5-40' });
      const rows = 3000;
      const bad = (i: number): boolean => i % 10 === 7;
      const file = eventsCsv(rows, `at-${after}.csv`, bad);
      const child = spawn(process.execPath, [BIN, 'upload', file, '--url', emu.url, '--api-key', 'k', '--concurrency', '8', '--quiet'], { cwd: tmp.dir });
      const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
      while (emu.store.counts().events < after) await new Promise((r) => setTimeout(r, 2));
      child.kill('SIGKILL');
      await exited;
      const resumed = await up([file, '--url', emu.url, '--resume', '--json']);
      // 1 when this run rejected rows of its own; the first may have rejected them all
      expect([0, 1], resumed.stderr).toContain(resumed.status);
      const summary = JSON.parse(resumed.stdout);
      const ns = storedNs(emu);
      const good = range(rows).filter((i) => !bad(i));
      expect(new Set(ns).size, `killed after ${after}`).toBe(good.length);
      expect(ns.length - good.length, `killed after ${after}`).toBeLessThanOrEqual(summary.rowsPossiblyDuplicated);
      expect(summary.rowsPossiblyDuplicated).toBe(summary.delivery.rowsPossiblyDuplicated);
      const rejected = readFileSync(join(tmp.dir, `at-${after}.csv.rejects.ndjson`), 'utf8').trimEnd().split('\n').map((l) => JSON.parse(l).line as number);
      expect(rejected.sort((a, b) => a - b)).toEqual(range(rows).filter(bad).map((i) => i + 2));
    }
  }, 120_000);

  it('counts the rows a killed resume sent again: two kills, then a resume that reports them', async () => {
    for (const [first, second] of [
      [400, 1200],
      [900, 2000],
    ]) {
      const emu = await emulator({ latency: '5-40' });
      const rows = 3000;
      const file = eventsCsv(rows, `twice-${first}.csv`);
      for (const [after, resume] of [
        [first, false],
        [second, true],
      ] as const) {
        const args = [BIN, 'upload', file, '--url', emu.url, '--api-key', 'k', '--concurrency', '8', '--quiet', ...(resume ? ['--resume'] : [])];
        const child = spawn(process.execPath, args, { cwd: tmp.dir });
        const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
        while (emu.store.counts().events < after) await new Promise((r) => setTimeout(r, 2));
        child.kill('SIGKILL');
        await exited;
      }
      const resumed = await up([file, '--url', emu.url, '--resume', '--json']);
      expect(resumed.status, resumed.stderr).toBe(0);
      const ns = storedNs(emu);
      expect(new Set(ns).size).toBe(rows);
      expect(ns.length - rows, `killed after ${first} and ${second}`).toBeLessThanOrEqual(JSON.parse(resumed.stdout).rowsPossiblyDuplicated);
    }
  }, 120_000);

  it('with --on-unknown reject, writes the rows that were in flight to the rejects file instead', async () => {
    // the server answers nothing: every request stays in flight until the kill
    faults = await faultServer(() => ({ kind: 'hang' }));
    // a user a row, so that two requests may be in flight at once
    const file = eventsCsv(200, 'events.csv', () => false, 200);
    const child = spawn(process.execPath, [BIN, 'upload', file, '--url', faults.url, '--api-key', 'k', '--concurrency', '2', '--quiet'], { cwd: tmp.dir });
    const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
    while (faults.received.length < 2) await new Promise((r) => setTimeout(r, 10));
    child.kill('SIGKILL');
    await exited;
    faults.script(() => undefined);
    const before = faults.received.length;
    const r = await up([file, '--url', faults.url, '--resume', '--on-unknown', 'reject', '--json']);
    expect(r.status).toBe(1);
    const rejects = readFileSync(join(tmp.dir, 'events.csv.rejects.ndjson'), 'utf8').trimEnd().split('\n').map((l) => JSON.parse(l));
    expect(rejects).toHaveLength(100);
    expect(rejects[0].errors[0]).toMatch(/run before stopped while this row was in flight/);
    const sent = faults.received.slice(before).flatMap((q) => q.body?.events ?? []).map((e) => Number((e.properties as { n: number }).n));
    expect(sent).toHaveLength(100);
    expect(new Set([...sent, ...rejects.map((x) => Number(x.row['properties.n']))]).size).toBe(200);
    expect(JSON.parse(r.stdout).rowsPossiblyDuplicated).toBe(0);
  });
});

describe('the files a run writes', () => {
  it('never deletes a link, a pipe or a device named as the rejects file, and refuses a journal that is not a regular file', async () => {
    const emu = await emulator();
    const file = eventsCsv(20);
    writeFileSync(join(tmp.dir, 'target.txt'), 'important\n');
    symlinkSync(join(tmp.dir, 'target.txt'), join(tmp.dir, 'link'));
    expect((await up([file, '--url', emu.url, '--rejects', join(tmp.dir, 'link'), '--quiet'])).status).toBe(0);
    // the link stays; what it names is this run's rejects file, which holds nothing
    expect(lstatSync(join(tmp.dir, 'link')).isSymbolicLink()).toBe(true);
    expect(readFileSync(join(tmp.dir, 'target.txt'), 'utf8')).toBe('');
    // a link to an input is the input: never written to
    symlinkSync(file, join(tmp.dir, 'input-link'));
    const self = await up([file, '--url', emu.url, '--rejects', join(tmp.dir, 'input-link'), '--restart']);
    expect(self).toMatchObject({ status: 2, stderr: expect.stringMatching(/--rejects .*input-link is also an input file/) });
    expect(spawnSync('mkfifo', [join(tmp.dir, 'fifo')]).status).toBe(0);
    const validate = await runCli(['validate', file, '--rejects', join(tmp.dir, 'fifo')], { cwd: tmp.dir });
    expect(validate.status).toBe(0);
    expect(lstatSync(join(tmp.dir, 'fifo')).isFIFO()).toBe(true);
    const fifoJournal = await up([file, '--url', emu.url, '--journal', join(tmp.dir, 'fifo'), '--restart']);
    expect(fifoJournal).toMatchObject({ status: 2, stderr: expect.stringMatching(/--journal .*fifo is not a regular file/) });
    const sentBefore = emu.requests().length;
    const nowhere = await up([file, '--url', emu.url, '--journal', join(tmp.dir, 'no', 'such', 'j.journal'), '--restart']);
    expect(nowhere).toMatchObject({ status: 2, stderr: expect.stringContaining(`cannot write --journal ${join(tmp.dir, 'no', 'such', 'j.journal')}: the folder ${join(tmp.dir, 'no', 'such')} does not exist; create it`) });
    // the folder as the path names it: `no/..` is no folder when `no` is none, though the text resolves to one
    const through = join(tmp.dir, 'no') + '/../state.sqlite';
    expect(await up([file, '--url', emu.url, '--delta', '--state', through, '--restart'])).toMatchObject({ status: 2, stderr: expect.stringContaining(`cannot write --state ${through}: the folder ${join(tmp.dir, 'no')}/.. does not exist`) });
    const underFile = join(file, 'rejects.ndjson');
    expect(await up([file, '--url', emu.url, '--rejects', underFile, '--restart'])).toMatchObject({ status: 2, stderr: expect.stringContaining(`cannot write --rejects ${underFile}: ${file} is not a folder`) });
    const folderNamed = join(tmp.dir, 'new-folder') + '/';
    expect(await up([file, '--url', emu.url, '--out', folderNamed, '--restart'])).toMatchObject({ status: 2, stderr: expect.stringContaining(`cannot write --out ${folderNamed}: names a folder; give the path of a file`) });
    // a link is written through: one into a folder that is not there is refused as that folder
    symlinkSync(join('nowhere', 'target.ndjson'), join(tmp.dir, 'dangling'));
    for (const flag of ['--rejects', '--journal', '--out', '--events', '--report', '--summary-file']) {
      const refused = await up([file, '--url', emu.url, flag, join(tmp.dir, 'dangling'), '--restart']);
      expect(refused, flag).toMatchObject({ status: 2, stderr: expect.stringContaining(`cannot write ${flag} ${join(tmp.dir, 'dangling')}: it links to ${join(tmp.dir, 'nowhere', 'target.ndjson')}, and the folder ${join(tmp.dir, 'nowhere')} does not exist`) });
    }
    // standard input is read, never written: with it sent from a file, that file was emptied
    writeFileSync(join(tmp.dir, 'kept.csv'), 'external_id\nkept\n');
    const fromFile = spawn('bash', ['-c', `'${process.execPath}' '${BIN}' upload '${file}' --url ${emu.url} --api-key k --restart --rejects /dev/stdin < '${join(tmp.dir, 'kept.csv')}'`]);
    let refusal = '';
    fromFile.stderr.on('data', (d: Buffer) => (refusal += d.toString()));
    expect(await new Promise((resolve) => fromFile.on('exit', resolve))).toBe(2);
    expect(refusal).toContain('cannot write --rejects /dev/stdin: it names standard input, which is read, not written');
    expect(readFileSync(join(tmp.dir, 'kept.csv'), 'utf8')).toBe('external_id\nkept\n');
    // the delta state is a file: never standard output or a device
    expect(await up([file, '--url', emu.url, '--delta', '--state', '/dev/null', '--restart'])).toMatchObject({ status: 2, stderr: expect.stringContaining('--state /dev/null: names standard output or a device') });
    // a loop of links is no place to write
    symlinkSync('loop-b', join(tmp.dir, 'loop-a'));
    symlinkSync('loop-a', join(tmp.dir, 'loop-b'));
    expect(await up([file, '--url', emu.url, '--summary-file', join(tmp.dir, 'loop-a'), '--restart'])).toMatchObject({ status: 2, stderr: expect.stringContaining('it is a link whose links go round in a loop') });
    // a link to a file not made yet is that file: two outputs that are one are refused
    symlinkSync('later.journal', join(tmp.dir, 'to-journal'));
    expect(await up([file, '--url', emu.url, '--journal', join(tmp.dir, 'later.journal'), '--rejects', join(tmp.dir, 'to-journal'), '--restart'])).toMatchObject({ status: 2, stderr: expect.stringContaining('writing it would destroy the journal') });
    expect(existsSync(join(tmp.dir, 'later.journal'))).toBe(false);
    expect(existsSync(join(tmp.dir, 'state.sqlite'))).toBe(false);
    expect(emu.requests().length).toBe(sentBefore);
    // a relative link is read from its folder where the file system finds it: `..` from a folder reached through a link
    mkdirSync(join(tmp.dir, 'deep', 'a', 'b'), { recursive: true });
    mkdirSync(join(tmp.dir, 'deep', 'real'));
    symlinkSync(join('deep', 'a', 'b'), join(tmp.dir, 'via'));
    symlinkSync(join('..', '..', 'real', 'x.json'), join(tmp.dir, 'deep', 'a', 'b', 'out'));
    expect((await up([file, '--url', emu.url, '--summary-file', join(tmp.dir, 'via', 'out'), '--restart', '--quiet'])).status).toBe(0);
    expect(JSON.parse(readFileSync(join(tmp.dir, 'deep', 'real', 'x.json'), 'utf8'))).toMatchObject({ command: 'upload' });
    // `link/..` is the link's target's parent, as the file system reads it: two outputs that are one by it are refused
    symlinkSync(join('deep', 'a', 'b'), join(tmp.dir, 'via-b'));
    expect(await up([file, '--url', emu.url, '--rejects', `${join(tmp.dir, 'via-b')}/../o.ndjson`, '--out', join(tmp.dir, 'deep', 'a', 'o.ndjson'), '--restart'])).toMatchObject({ status: 2, stderr: expect.stringContaining('--rejects and --out name the same file') });
    // an events file named again as the summary file is refused before it is emptied
    writeFileSync(join(tmp.dir, 'precious.txt'), 'precious\n');
    expect(await up([file, '--url', emu.url, '--events', join(tmp.dir, 'precious.txt'), '--summary-file', join(tmp.dir, '.', 'precious.txt'), '--restart'])).toMatchObject({ status: 2, stderr: expect.stringContaining('--events and --summary-file name the same file') });
    expect(readFileSync(join(tmp.dir, 'precious.txt'), 'utf8')).toBe('precious\n');
    // the summary to standard output sent to a file: written after the run's output, the file kept
    const log = join(tmp.dir, 'stdout.log');
    // (spawned, not spawnSync: the emulator answers from this process)
    const shell = spawn('bash', ['-c', `'${process.execPath}' '${BIN}' upload '${file}' --url ${emu.url} --api-key k --restart --summary-file /dev/stdout > '${log}'`]);
    expect(await new Promise((resolve) => shell.on('exit', resolve))).toBe(0);
    const [summaryLine, ...text] = readFileSync(log, 'utf8').split('\n');
    expect(JSON.parse(summaryLine)).toMatchObject({ command: 'upload', exitStatus: 0 });
    expect(text[0]).toMatch(/^upload: 1 file, /);
    expect(lstatSync('/dev/stdout').isSymbolicLink()).toBe(true);
    // rejects, the report and the bodies to standard output sent to a file: written through it, beside
    // the run's other lines, the file neither emptied nor written over (a run with no rejects included)
    const appended = join(tmp.dir, 'appended.log');
    writeFileSync(appended, 'before\n');
    const twoBad = eventsCsv(20, 'two-bad.csv', (i) => i < 2);
    for (const more of [`'${twoBad}' --rejects /dev/stdout`, `'${file}' --rejects /dev/stdout`, `'${twoBad}' --report /dev/stdout`, `'${twoBad}' --out /dev/fd/3 --dry-run`]) {
      const run = spawn('bash', ['-c', `'${process.execPath}' '${BIN}' upload ${more} --url ${emu.url} --api-key k --restart >> '${appended}' 3>&1`]);
      expect([0, 1]).toContain(await new Promise((resolve) => run.on('exit', resolve)));
    }
    const lines = readFileSync(appended, 'utf8').split('\n');
    expect(lines[0]).toBe('before');
    expect(lines.filter((l) => l.startsWith('{"file":')).map((l) => JSON.parse(l).line)).toEqual([2, 3]);
    expect(lines.filter((l) => /^upload(?: --dry-run)?: 1 file, /.test(l))).toHaveLength(4);
    expect(lines.filter((l) => /^<!doctype html>/i.test(l))).toHaveLength(1);
    expect(lines.filter((l) => l.startsWith('{"events":'))).toHaveLength(1);
    // a file under /dev (a tmpfs) is a file: replaced whole by each run, never added to
    if (existsSync('/dev/shm')) {
      const shm = join('/dev/shm', `track-test-${process.pid}.json`);
      for (let i = 0; i < 2; i += 1) expect((await up([file, '--url', emu.url, '--summary-file', shm, '--restart', '--quiet'])).status).toBe(0);
      expect(JSON.parse(readFileSync(shm, 'utf8'))).toMatchObject({ command: 'upload' });
      rmSync(shm);
    }
    // a summary file named through a link is written to the file it names: the link stays
    writeFileSync(join(tmp.dir, 'summary-target.json'), '{}');
    symlinkSync('summary-target.json', join(tmp.dir, 'summary-link.json'));
    expect((await up([file, '--url', emu.url, '--summary-file', join(tmp.dir, 'summary-link.json'), '--restart', '--quiet'])).status).toBe(0);
    expect(lstatSync(join(tmp.dir, 'summary-link.json')).isSymbolicLink()).toBe(true);
    expect(JSON.parse(readFileSync(join(tmp.dir, 'summary-target.json'), 'utf8'))).toMatchObject({ command: 'upload', exitStatus: 0 });
    if (isRoot) {
      expect(spawnSync('mknod', ['-m', '666', join(tmp.dir, 'null'), 'c', '1', '3']).status).toBe(0);
      const bad = eventsCsv(20, 'bad.csv', () => true);
      expect((await up([bad, '--url', emu.url, '--rejects', join(tmp.dir, 'null'), '--quiet'])).status).toBe(1);
      expect((await up([file, '--url', emu.url, '--rejects', join(tmp.dir, 'null'), '--restart', '--quiet'])).status).toBe(0);
      expect(lstatSync(join(tmp.dir, 'null')).isCharacterDevice()).toBe(true);
    }
  }, 90_000);
});

describe('--out during an upload', () => {
  it('writes each request body as sent, one a line, in send order', async () => {
    faults = await faultServer();
    const file = eventsCsv(175);
    const r = await up([file, '--url', faults.url, '--out', join(tmp.dir, 'sent.ndjson'), '--concurrency', '1', '--json']);
    expect(r.status).toBe(0);
    expect(JSON.parse(r.stdout).outPath).toBe(join(tmp.dir, 'sent.ndjson'));
    const lines = readFileSync(join(tmp.dir, 'sent.ndjson'), 'utf8').trimEnd().split('\n');
    expect(lines).toHaveLength(4);
    expect(lines).toEqual(faults.received.map((q) => q.raw));
  });
});

describe('an honest summary', () => {
  it('counts requests that reached no server as not delivered, with the reason', async () => {
    const file = eventsCsv(120);
    const r = await up([file, '--url', 'http://127.0.0.1:9', '--retries', '1', '--json']);
    expect(r.status).toBe(3);
    const d = JSON.parse(r.stdout).delivery;
    expect(d.requestsSent).toBe(0);
    expect(d.items.events.sent).toBe(0);
    expect(d.requestsNotDelivered).toBeGreaterThan(0);
    expect(Object.keys(d.notDelivered).join('\n')).toMatch(/ECONNREFUSED/);
    const plain = await up([file, '--url', 'http://127.0.0.1:9', '--retries', '0', '--restart']);
    expect(plain.stdout).toMatch(/requests +0 sent/);
    expect(plain.stdout).toMatch(/undelivered +\d+ requests got no verdict on their rows:/);
    expect(plain.stdout).toMatch(/ +\d+ +gave up on .*ECONNREFUSED/);
  });

  it('on a stop, counts the rows read as the planning thread read them: never fewer than the rows sent', async () => {
    const emu = await emulator({ latency: '20' });
    const file = eventsCsv(20_000);
    const child = spawn(process.execPath, [BIN, 'upload', file, '--url', emu.url, '--api-key', 'k', '--concurrency', '4', '--json'], { cwd: tmp.dir });
    let stdout = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    while (emu.store.counts().events < 1000) await new Promise((r) => setTimeout(r, 5));
    child.kill('SIGINT');
    expect(await exited).toBe(130);
    const summary = JSON.parse(stdout);
    expect(summary.interrupted).toBe(true);
    expect(summary.rows).toBeGreaterThanOrEqual(summary.delivery.items.events.sent);
    expect(summary.items.events).toBeGreaterThanOrEqual(summary.delivery.items.events.sent);
  });

  it('a 401 is no request sent: the summary says the key was refused', async () => {
    const emu = await emulator();
    const r = await runCli(['upload', eventsCsv(60), '--url', emu.url, '--api-key', 'wrong', '--json'], { cwd: tmp.dir });
    expect(r.status).toBe(3);
    const d = JSON.parse(r.stdout).delivery;
    expect(d.requestsSent).toBe(0);
    expect(Object.keys(d.notDelivered).join('\n')).toMatch(/refused the API key/);
    // a refused key is an answer, though no verdict on the rows: "got no answer" beside "HTTP 401" contradicted itself
    const plain = await runCli(['upload', eventsCsv(60), '--url', emu.url, '--api-key', 'wrong', '--restart'], { cwd: tmp.dir });
    expect(plain.stdout).toMatch(/undelivered +\d+ requests? got no verdict on their rows:/);
    expect(plain.stdout).toMatch(/ +\d+ +the server refused the API key \(HTTP 401/);
    expect(plain.stdout).not.toContain('no answer');
  });

  it('says when sending resumes after a long wait for the hourly limit', async () => {
    faults = await faultServer();
    const file = eventsCsv(120);
    const child = spawn(process.execPath, [BIN, 'upload', file, '--url', faults.url, '--api-key', 'k', '--hourly', '1'], { cwd: tmp.dir });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    const deadline = Date.now() + 15_000;
    while (!/waiting for/.test(stderr) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    child.kill('SIGINT');
    expect(await exited).toBe(130);
    expect(stderr).toMatch(/waiting for the hourly limit \(--hourly 1\) until \d\d:\d\d:\d\d UTC/);
    expect(faults.received).toHaveLength(1);
  });
});


describe.skipIf(!isRoot)('a full disk', () => {
  it('of the rejects file: the run stops, names the file, prints its summary; a resume on a roomy disk loses no row', async () => {
    const emu = await emulator();
    // every third row is refused with a long row: the rejects file fills a 64 KiB disk
    const path = join(tmp.dir, 'events.csv');
    const lines = ['external_id,name,time,properties.n,properties.pad'];
    for (let i = 0; i < 3000; i += 1) lines.push(`user-${i % 40},${i % 3 === 0 ? '' : 'seeded'},2024-03-07T10:00:00Z,${i},${'x'.repeat(200)}`);
    writeFileSync(path, `${lines.join('\n')}\n`);
    await withSmallDisk(tmp.dir, '64k', async (small) => {
      const r = await up([path, '--url', emu.url, '--rejects', join(small, 'r.ndjson'), '--json']);
      expect(r.status).toBe(3);
      expect(r.stderr).toMatch(new RegExp(`cannot write the rejects file ${join(small, 'r.ndjson')}: ENOSPC`));
      const summary = JSON.parse(r.stdout);
      expect(summary.fatal?.message ?? summary.delivery.fatal?.message).toMatch(/ENOSPC/);
      const onSmall = readFileSync(join(small, 'r.ndjson'), 'utf8').split('\n').filter((l) => l.endsWith('}')).map((l) => JSON.parse(l).line as number);
      copyFileSync(join(small, 'r.ndjson'), join(tmp.dir, 'first.rejects.ndjson'));
      const resumed = await up([path, '--url', emu.url, '--resume', '--rejects', join(tmp.dir, 'r2.ndjson'), '--json']);
      expect(resumed.status, resumed.stderr).toBe(1);
      const again = readFileSync(join(tmp.dir, 'r2.ndjson'), 'utf8').trimEnd().split('\n').map((l) => JSON.parse(l).line as number);
      const rejected = new Set([...onSmall, ...again]);
      const stored = new Set(storedNs(emu));
      // every row is on the server or in a rejects file: none settled before its reject line was on disk
      for (let i = 0; i < 3000; i += 1) expect(i % 3 === 0 ? rejected.has(i + 2) : stored.has(i), `row ${i}`).toBe(true);
      const duplicates = storedNs(emu).length - stored.size;
      expect(duplicates).toBeLessThanOrEqual(JSON.parse(resumed.stdout).rowsPossiblyDuplicated);
    });
  }, 60_000);

  it('of the journal: the run stops, names the journal, prints valid JSON; a resume from a copy on a roomy disk counts every duplicate', async () => {
    const emu = await emulator({ latency: '2-10' });
    const file = eventsCsv(20_000);
    await withSmallDisk(tmp.dir, '8k', async (small) => {
      const journal = join(small, 'events.journal');
      const r = await up([file, '--url', emu.url, '--journal', journal, '--json']);
      expect(r.status).toBe(3);
      expect(r.stderr).toMatch(new RegExp(`cannot write the journal ${journal}: ENOSPC`));
      expect(JSON.parse(r.stdout).delivery.fatal.message).toMatch(/ENOSPC/);
      copyFileSync(journal, join(tmp.dir, 'moved.journal'));
    });
    const resumed = await up([file, '--url', emu.url, '--resume', '--journal', join(tmp.dir, 'moved.journal'), '--json']);
    expect(resumed.status, resumed.stderr).toBe(0);
    const ns = storedNs(emu);
    expect(new Set(ns).size).toBe(20_000);
    expect(ns.length - 20_000).toBeLessThanOrEqual(JSON.parse(resumed.stdout).rowsPossiblyDuplicated);
    expect(existsSync(join(tmp.dir, 'moved.journal'))).toBe(true);
  }, 60_000);
});

