// --summary-file and `track report`: every run leaves its summary (a failed one too), and the
// summaries of a run's shards add up into one verdict.
import { linkSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { addSummaries, formatReport, mergeSummaries, worseStatus, type SummaryJson } from '../../src/cli/output/merge-summaries.js';
import { track, workdir } from './run-cli.js';

let dir: string;
beforeAll(() => {
  dir = workdir();
});

const read = (file: string): SummaryJson => JSON.parse(readFileSync(join(dir, file), 'utf8')) as SummaryJson;

describe('--summary-file', () => {
  it('holds exactly what --json prints, with the exit status', () => {
    const r = track(['validate', 'attributes.csv', 'events.csv', '--json', '--summary-file', 's.json'], { cwd: dir });
    expect(r.status).toBe(0);
    expect(readFileSync(join(dir, 's.json'), 'utf8')).toBe(r.stdout);
    expect(read('s.json')).toMatchObject({ command: 'validate', rows: 6, exitStatus: 0, limits: { maxTotal: 50 } });
  });

  it('is written when rows are rejected, with status 1', () => {
    writeFileSync(join(dir, 'bad.csv'), 'external_id,email\nu1,not-an-email\nu2,b@example.com\n');
    const r = track(['validate', 'bad.csv', '--summary-file', 'bad.json'], { cwd: dir });
    expect(r.status).toBe(1);
    expect(read('bad.json')).toMatchObject({ rejected: 1, exitStatus: 1 });
  });

  it('is written when the run fails before it has a summary (a usage error), with status 2', () => {
    const r = track(['validate', 'missing.csv', '--summary-file', 'fail.json'], { cwd: dir });
    expect(r.status).toBe(2);
    const s = read('fail.json');
    expect(s.exitStatus).toBe(2);
    expect(s.fatal).toMatchObject({ message: expect.stringMatching(/missing\.csv/) });
  });

  it('that cannot be written, or that is an input, stops the run before anything is read or sent, and is not written', () => {
    const input = join(dir, 'keep.csv');
    writeFileSync(input, 'external_id,plan\nu1,gold\n');
    const before = readFileSync(input, 'utf8');
    const over = track(['upload', 'keep.csv', '--url', 'http://127.0.0.1:9', '--api-key', 'k', '--summary-file', 'keep.csv'], { cwd: dir });
    expect(over.status).toBe(2);
    expect(over.stderr).toMatch(/--summary-file keep\.csv is also an input file/);
    expect(readFileSync(input, 'utf8')).toBe(before);
    const nowhere = track(['upload', 'keep.csv', '--url', 'http://127.0.0.1:9', '--api-key', 'k', '--summary-file', 'no/such/folder/s.json'], { cwd: dir });
    expect(nowhere.status).toBe(2);
    expect(nowhere.stderr).toContain('cannot write --summary-file no/such/folder/s.json: the folder no/such/folder does not exist; create it, or give a path in a folder that does');
    // nothing was tried: the closed port would have made it a failure to deliver (exit 3)
    expect(nowhere.stderr).not.toMatch(/unreachable|ECONNREFUSED/);
  });

  it('is written when a flag stops the run before it starts (bad --shard, --rate, no --url, an unknown option), with status 2', () => {
    const cases: Array<[string[], RegExp]> = [
      [['upload', 'attributes.csv', '--url', 'http://127.0.0.1:9', '--api-key', 'k', '--shard', '5/4'], /--shard 5\/4/],
      [['upload', 'attributes.csv', '--url', 'http://127.0.0.1:9', '--api-key', 'k', '--rate', 'abc'], /--rate/],
      [['upload', 'attributes.csv', '--api-key', 'k'], /--url/],
      [['validate', 'attributes.csv', '--shard', 'auto/3'], /TRACK_SHARD_INDEX/],
      [['upload', 'attributes.csv', '--url', 'http://127.0.0.1:9', '--api-key', 'k', '--bogus'], /--bogus/],
    ];
    for (const [i, [args, message]] of cases.entries()) {
      const r = track([...args, `--summary-file=early${i}.json`], { cwd: dir });
      expect(r.status, args.join(' ')).toBe(2);
      const s = read(`early${i}.json`);
      expect(s).toMatchObject({ command: args[0], exitStatus: 2 });
      expect(s.fatal, args.join(' ')).toMatchObject({ message: expect.stringMatching(message) });
    }
  });
});

describe('track report', () => {
  it('adds summaries, keeps the longest elapsed time, and exits with the worst status', () => {
    track(['validate', 'attributes.csv', '--summary-file', 'r1.json'], { cwd: dir });
    writeFileSync(join(dir, 'bad2.csv'), 'external_id,email\nu9,nope\n');
    track(['validate', 'bad2.csv', '--summary-file', 'r2.json'], { cwd: dir });
    const r = track(['report', 'r1.json', 'r2.json', '--json'], { cwd: dir });
    expect(r.status).toBe(1);
    const report = JSON.parse(r.stdout);
    expect(report.total.rows).toBe(read('r1.json').rows as number + 1);
    expect(report.total.rejected).toBe(1);
    expect(report.total.elapsedMs).toBe(Math.max(read('r1.json').elapsedMs as number, read('r2.json').elapsedMs as number));
    expect(report.shards.map((s: { exitStatus: number }) => s.exitStatus)).toEqual([0, 1]);
    const text = track(['report', 'r1.json', 'r2.json'], { cwd: dir });
    expect(text.status).toBe(1);
    expect(text.stdout).toMatch(/report: 2 summaries/);
    expect(text.stdout).toMatch(/rejected +1 row/);
    expect(text.stdout).toMatch(/status +1 \(the worst of the summaries\)/);
  });

  it("keeps the shards' batch limits as they are: a limit is not a count", () => {
    for (const k of [1, 2]) track(['validate', 'attributes.csv', '--shard', `${k}/2`, '--summary-file', `lim${k}.json`], { cwd: dir });
    const json = JSON.parse(track(['report', 'lim1.json', 'lim2.json', '--json'], { cwd: dir }).stdout);
    expect(json.total.limits).toEqual({ maxTotal: 50 });
    expect(track(['report', 'lim1.json', 'lim2.json'], { cwd: dir }).stdout).toMatch(/at most 50 items each/);
  });

  it("of dry runs' shards, estimates all their requests at the one pace, not the shards' times added", () => {
    const rows = Array.from({ length: 300 }, (_, i) => `u${i},${i}`).join('\n');
    writeFileSync(join(dir, 'many.csv'), `external_id,visits\n${rows}\n`);
    const dry = (k: number, rate: string) =>
      track(['upload', 'many.csv', '--dry-run', '--max-total', '1', '--rate', rate, '--shard', `${k}/2`, '--summary-file', `dry${k}-${rate}.json`], { cwd: dir });
    for (const k of [1, 2]) expect(dry(k, '10').status).toBe(0);
    const one = [read('dry1-10.json'), read('dry2-10.json')].map((s) => s.estimate as { requests: number; seconds: number });
    expect(one[0].requests + one[1].requests).toBe(300);
    const json = JSON.parse(track(['report', 'dry1-10.json', 'dry2-10.json', '--json'], { cwd: dir }).stdout);
    expect(json.total.estimate).toMatchObject({ requests: 300, rate: 10, seconds: 30 });
    // the report a person reads says it too, as a dry run's summary does
    expect(track(['report', 'dry1-10.json', 'dry2-10.json'], { cwd: dir }).stdout).toContain('\nestimate    300 requests take at least 30s at 10 requests/s\n');
    // shards given different paces: no one pace to estimate at
    expect(dry(2, '20').status).toBe(0);
    const mixed = JSON.parse(track(['report', 'dry1-10.json', 'dry2-20.json', '--json'], { cwd: dir }).stdout);
    expect(mixed.total.estimate.requests).toBe(300);
    expect(mixed.total.estimate.rate).toBeUndefined();
    expect(mixed.total.estimate.seconds).toBeUndefined();
    expect(track(['report', 'dry1-10.json', 'dry2-20.json'], { cwd: dir }).stdout).not.toContain('\nestimate ');
  });

  it('reports summaries that all stopped before reading their inputs, in words and as JSON, with their worst status', () => {
    for (const [name, shard] of [['gone1.json', '1/2'], ['gone2.json', '2/2']]) {
      expect(track(['upload', 'no-such.csv', '--url', 'http://127.0.0.1:9', '--api-key', 'k', '--shard', shard, '--summary-file', name], { cwd: dir }).status).toBe(2);
    }
    const text = track(['report', 'gone1.json', 'gone2.json'], { cwd: dir });
    expect(text.stderr).toBe('');
    expect(text.status).toBe(2);
    expect(text.stdout).toContain('report: 2 summaries, every shard of 2');
    expect(text.stdout).toMatch(/shard 1\/2 +exit 2 .*gone1\.json: no-such\.csv: no such file/);
    expect(text.stdout).toContain('total       none of the summaries is of a run that read its inputs: each stopped before, as it says above');
    expect(text.stdout).toContain('status      2 (the worst of the summaries)');
    expect(JSON.parse(track(['report', 'gone1.json', 'gone2.json', '--json'], { cwd: dir }).stdout)).toMatchObject({ exitStatus: 2 });
    // beside a run that read its inputs, the total is that run's
    track(['validate', 'attributes.csv', '--summary-file', 'read.json'], { cwd: dir });
    const mixed = track(['report', 'gone1.json', 'read.json'], { cwd: dir });
    expect(mixed.stdout).toMatch(/: 1 file, \d+ rows read in /);
  });

  it('names a file that is not a summary, exit 2', () => {
    writeFileSync(join(dir, 'junk.json'), '{"hello": 1}');
    const r = track(['report', 'junk.json'], { cwd: dir });
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/junk\.json: not the summary of an upload or validate run/);
  });

  it('refuses one summary named twice (by any name), exit 2: it would be added twice', () => {
    track(['validate', 'attributes.csv', '--summary-file', 'once.json'], { cwd: dir });
    linkSync(join(dir, 'once.json'), join(dir, 'hard.json'));
    for (const again of ['once.json', './once.json', join(dir, 'once.json'), 'hard.json']) {
      const r = track(['report', 'once.json', again], { cwd: dir });
      expect(r.status, again).toBe(2);
      expect(r.stderr, again).toContain(`${again}: the summary once.json given again; name each summary once`);
    }
  });
});

describe('merging summaries', () => {
  const shard = (index: number, exitStatus: number, rows: number): SummaryJson => ({
    command: 'upload',
    rows,
    rejectReasons: { 'email: not valid': index },
    delivery: { requestsSent: rows / 10, items: { attributes: { sent: rows, accepted: rows, rejected: 0 } }, stopped: index === 3 },
    exitStatus,
    shard: { index, count: 4 },
  });

  it('sums counts and reasons, or-s flags, and names missing and doubled shards', () => {
    const report = mergeSummaries([
      { file: 'a', summary: shard(1, 0, 100) },
      { file: 'b', summary: shard(2, 1, 200) },
      { file: 'c', summary: shard(2, 0, 200) },
      { file: 'd', summary: shard(3, 130, 50) },
    ]);
    expect(report.missingShards).toEqual([4]);
    expect(report.duplicateShards).toEqual([2]);
    expect(report.exitStatus).toBe(3);
    expect(report.total.rows).toBe(550);
    expect(report.total.rejectReasons).toEqual({ 'email: not valid': 8 });
    expect(report.total.delivery).toMatchObject({ requestsSent: 55, stopped: true, items: { attributes: { accepted: 550 } } });
  });

  it('says every row was read only when every shard read all of its rows', () => {
    const read = (k: number, readToEnd: boolean): SummaryJson => ({ ...shard(k, readToEnd ? 0 : 130, 10), interrupted: !readToEnd, readToEnd });
    const one = mergeSummaries([{ file: 'a', summary: read(1, false) }, ...[2, 3, 4].map((k) => ({ file: String(k), summary: read(k, true) }))]);
    expect(one.total).toMatchObject({ interrupted: true, readToEnd: false });
    expect(mergeSummaries([1, 2, 3, 4].map((k) => ({ file: String(k), summary: read(k, true) }))).total).toMatchObject({ interrupted: false, readToEnd: true });
    // a shard that stopped before its summary (a usage error: it read nothing) says nothing of it, first or later
    const refused: SummaryJson = { command: 'upload', fatal: { name: 'UsageError', message: 'the journal is in use' }, exitStatus: 2, shard: { index: 1, count: 4 } };
    const stopped = [2, 3, 4].map((k) => ({ file: String(k), summary: { ...read(k, true), interrupted: true } }));
    expect(mergeSummaries([{ file: 'a', summary: refused }, ...stopped]).total).toMatchObject({ interrupted: true, readToEnd: false });
    expect(mergeSummaries([...stopped, { file: 'a', summary: refused }]).total).toMatchObject({ interrupted: true, readToEnd: false });
  });

  it('says a file was not read again only when no shard read it', () => {
    const resumed = (k: number, unread: boolean): SummaryJson => ({
      ...shard(k, 0, 10),
      ...(unread ? { unread: 10 } : {}),
      files: [{ file: 'small.csv', format: 'csv', rows: 10, ...(unread ? { unread: true } : {}) }, { file: 'done.csv', format: 'csv', rows: 5, unread: true }],
    });
    for (const order of [[true, false], [false, true]]) {
      const merged = mergeSummaries(order.map((unread, i) => ({ file: String(i), summary: resumed(i + 1, unread) }))).total;
      expect(merged.files, String(order)).toEqual([
        { file: 'small.csv', format: 'csv', rows: 20 },
        { file: 'done.csv', format: 'csv', rows: 10, unread: true },
      ]);
      expect(merged.unread).toBe(10);
    }
    expect(mergeSummaries([1, 2].map((k) => ({ file: String(k), summary: resumed(k, true) }))).total.files).toEqual([
      { file: 'small.csv', format: 'csv', rows: 20, unread: true },
      { file: 'done.csv', format: 'csv', rows: 10, unread: true },
    ]);
  });

  it('is not whole when its summaries are of different commands: a dry run\'s shard sent nothing', () => {
    const dry = { ...shard(1, 0, 10), command: 'upload --dry-run', delivery: undefined };
    const report = mergeSummaries([{ file: 'a', summary: dry }, ...[2, 3, 4].map((k) => ({ file: String(k), summary: shard(k, 0, 10) }))]);
    expect(report.commands).toEqual(['upload --dry-run', 'upload']);
    expect(report.exitStatus).toBe(3);
    const text = formatReport(report, () => 'total\n');
    expect(text).toContain('report: 4 summaries, shards of 4\n');
    expect(text).toContain('\ncommands    the summaries are of different commands: upload --dry-run, upload\n');
    expect(text).toContain('\nstatus      3 (the worst of the summaries, and the run is not whole)\n');
    expect(mergeSummaries([1, 2, 3, 4].map((k) => ({ file: String(k), summary: shard(k, 0, 10) }))).commands).toEqual([]);
  });

  it('of summaries of different splits, names no shard doubled nor every shard there', () => {
    const ofThree = [1, 2].map((k) => ({ file: `s${k}`, summary: { ...shard(k, 0, 10), shard: { index: k, count: 3 } } }));
    const ofTwo = { file: 't1', summary: { ...shard(1, 0, 10), shard: { index: 1, count: 2 } } };
    const report = mergeSummaries([...ofThree, ofTwo]);
    expect(report).toMatchObject({ shardCounts: [3, 2], duplicateShards: [], missingShards: [], exitStatus: 3 });
    const text = formatReport(report, () => 'total\n');
    expect(text).toContain('report: 3 summaries, shards of different splits\n');
    expect(text).not.toContain('doubled');
    expect(text).toContain('\nshards      the summaries are of different splits (of 3, of 2): no one run\'s shards, so which are missing cannot be told\n');
    // a run without --shard beside shards is a split of its own: its rows are every shard's
    const whole = { file: 'all', summary: { ...shard(1, 0, 10), shard: undefined } };
    const halves = [1, 2].map((k) => ({ file: `h${k}`, summary: { ...shard(k, 0, 5), shard: { index: k, count: 2 } } }));
    expect(mergeSummaries([whole, ...halves])).toMatchObject({ shardCounts: [1, 2], exitStatus: 3 });
    expect(formatReport(mergeSummaries([whole, ...halves]), () => '')).toContain('the summaries are of different splits (one without --shard, of 2)');
    expect(mergeSummaries(halves)).toMatchObject({ shardCounts: [], exitStatus: 0 });
    // summaries of runs without --shard alone add up as before
    expect(mergeSummaries([whole, { ...whole, file: 'other' }])).toMatchObject({ shardCounts: [], exitStatus: 0 });
    // 1/3 given twice is doubled still
    expect(mergeSummaries([...ofThree, ofThree[0], ofTwo]).duplicateShards).toEqual([1]);
  });

  it('counts a shard\'s rows as read, those of files not read again apart', () => {
    const resumed = { ...shard(1, 0, 10), unread: 4 };
    const text = formatReport(mergeSummaries([{ file: 'a', summary: resumed }, ...[2, 3, 4].map((k) => ({ file: String(k), summary: shard(k, 0, 10) }))]), () => 'total\n');
    expect(text).toMatch(/\n {2}shard 1\/4 +exit 0 +6 rows \(4 not read again\), 1 request,/);
    expect(text).toMatch(/\n {2}shard 2\/4 +exit 0 +10 rows, 1 request,/);
  });

  it('of a whole run, is the worst status of its shards', () => {
    const all = [1, 2, 3, 4].map((k) => ({ file: String(k), summary: shard(k, k === 2 ? 130 : k === 4 ? 1 : 0, 10) }));
    expect(mergeSummaries(all).exitStatus).toBe(130);
  });

  it('ranks statuses: fatal, usage, interrupted, rejected, ok', () => {
    expect(worseStatus(0, 1)).toBe(1);
    expect(worseStatus(1, 130)).toBe(130);
    expect(worseStatus(130, 2)).toBe(2);
    expect(worseStatus(2, 3)).toBe(3);
    expect(worseStatus(0, 143)).toBe(143);
  });

  it('adds nested counts and keeps agreeing texts', () => {
    expect(addSummaries({ a: 1, b: { c: 2 }, t: 'x', l: [1] }, { a: 2, b: { c: 3, d: 1 }, t: 'x', l: [2] })).toEqual({ a: 3, b: { c: 5, d: 1 }, t: 'x', l: [1, 2] });
  });
});
